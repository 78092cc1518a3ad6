"""What the x86 schedules know about a CPU target, and the register tiles they pick from it.

Everything comes from the target (`kiln.ir.Target.cpu`: the ISA of its ``-mcpu``, the host's for
plain ``c``): 64-byte vectors and 32 vector registers with AVX-512F, 32 bytes and 16 registers
with AVX/AVX2, else 16 bytes. The same kernels are built for either; only the tile changes.

A register tile of a matrix-product kernel is ``rows x cols`` accumulators, ``cols`` a multiple
of the vector lanes: each step of the reduction loads ``cols / lanes`` vectors of the packed
operand, broadcasts one value per row and issues ``rows * cols / lanes`` fused multiply-adds, so
``rows * vectors + vectors + 1`` registers must fit in the register file. The tile keeps
`TILE_ROWS` rows and takes as many vectors as fit: 6 x 2 vectors (6 x 16 float32) with AVX2's
16 registers, 6 x 4 (6 x 64) with AVX-512's 32.
NOTE: more rows instead of more vectors loses on AVX-512: each row is a separate stream of A,
and rows ``k`` floats apart with ``k`` a power of two share one L1 set (8 ways). Measured 1
thread on a Zen 4 EPYC (AVX-512, peak 103 GFLOP/s), best of 30, matmul 512^3 / 1024^3 / conv2d
1x64x56x56 3x3: 12 x 2 vectors 100 / 94 / 78 GFLOP/s, 14 x 2 101 / 81 / 77, 8 x 3 85 / 91 / 77,
6 x 4 104 / 103 / 81.
A matrix whose rows a `TILE_ROWS`-row tile would pad more than a tile one row shorter takes that
(64 rows: 13 tiles of 5, 65 rows computed, rather than 11 of 6, 66). Measured 1 thread (FMA peak
115.4 GFLOP/s by ``fma_peak.sh`` that day), bench_ops matmul 64x256x512 / 512^3 / 1024^3: 6
rows 101.5-103.2 / 106.9-107.7 / 107.3-107.4 GFLOP/s, 5 rows 103.9-104.5 / 107.8-108.9 /
107.6-108.8; 4 rows (no padding at all) 85.6-86.9 / 89.2-89.6 / 87.8-88.7.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kiln.ir.dtype import DataType
from kiln.ir.target import Target

TILE_ROWS = 6
"""Accumulator rows of a full matmul tile (see the NOTE above)."""


def cpu_target(target: Any = None) -> Target:
    """``target`` as a `Target` (None: the host, ``c``); a device target gives its host's."""
    tgt = Target.from_any("c" if target is None else target)
    return tgt if tgt.device == "cpu" else tgt.host_target()


def lanes(target: Target, dtype: DataType) -> int:
    """Values of ``dtype`` in one SIMD register of ``target``."""
    return max(1, target.vector_bytes // max(1, dtype.itemsize))


@dataclass(frozen=True)
class Tile:
    """A register tile: ``rows`` accumulator rows of ``cols`` values (vectors * lanes)."""

    rows: int
    cols: int
    lanes: int

    @property
    def vectors(self) -> int:
        return self.cols // self.lanes


def tile_vectors(target: Target, rows: int = TILE_ROWS) -> int:
    """Vectors per row of a ``rows``-row tile that fit in ``target``'s registers, with one
    register per vector of the packed operand and one for the broadcast value."""
    return max(1, (target.cpu.vector_registers - 1) // (rows + 1))


def matmul_tile(n: int, m: int, dtype: DataType, target: Target) -> Tile:
    """The register tile for an ``n x m`` output on ``target``.

    Normally `TILE_ROWS` rows (or one fewer, where that pads fewer rows) of `tile_vectors`
    vectors. With fewer rows than that, the tile
    gets wider instead (up to as many accumulators as a full tile), so a short matrix still has
    enough independent FMAs to hide their latency; with a narrow ``m``, narrower (one vector:
    as many rows as the registers allow). A short matrix's width is a divisor of ``m``'s vectors
    when one is at least half the widest that fits (`_even_width`).
    """
    width = lanes(target, dtype)
    regs = target.cpu.vector_registers
    rows, full = TILE_ROWS, tile_vectors(target)
    need = -(-m // width)  # vectors that cover m
    if n >= rows:
        vectors = min(full, need)
        if vectors == 1:
            rows = regs - 4
        else:
            rows = min((rows, rows - 1), key=lambda r: round_up(n, r))
        return Tile(rows, vectors * width, width)
    vectors = _even_width(need, max(1, min(need, rows * full // n, (regs - 1) // (n + 1))))
    return Tile(max(1, n), vectors * width, width)


def _even_width(need: int, widest: int) -> int:
    """The largest divisor of ``need`` vectors up to ``widest`` if it is at least half of it,
    else ``widest``.

    NOTE: a short matrix (a batch-1 dense: one row) is memory-bound and parallel over its column
    panels only. The widest tile that fits, 15 vectors, cut 1024 columns into 4 panels of 240
    and a ragged one of 64: 5 panels split 3:2 over 2 threads. 8 vectors make 8 equal panels
    (4:4) and still keep 8 FMA chains in flight. Measured (quiet 2-core Zen 4, bench_models
    mlp-b1, 784-1024-1024-10 at batch 1): see benchmarks/README.md."""
    for v in range(widest, 0, -1):
        if need % v == 0:
            return v if 2 * v >= widest else widest
    return widest


def panel_tile(n: int, cols: int, dtype: DataType, target: Target) -> Tile:
    """The register tile for ``n`` rows times column panels ``cols`` wide (packed before, for
    `matmul_tile`'s choice on some target): `matmul_tile`'s when it has that width, else as
    many rows (up to `TILE_ROWS`, or ``n``) as ``target``'s registers hold beside the panel's
    vectors."""
    width = lanes(target, dtype)
    tile = matmul_tile(n, cols, dtype, target)
    if tile.cols == cols:
        return tile
    vectors = -(-cols // width)
    fit = (target.cpu.vector_registers - 1 - vectors) // vectors
    return Tile(max(1, min(n, TILE_ROWS, fit)), cols, width)


def round_up(x: int, multiple: int) -> int:
    """The smallest multiple of ``multiple`` that is at least ``x``."""
    return -(-x // multiple) * multiple
