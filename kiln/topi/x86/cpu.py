"""What the x86 schedules know about the host CPU, and the register tiles they pick from it.

Generated C is compiled with ``-march=native``, so the vector width the compiler may use is the
host's: 64 bytes and 32 vector registers with AVX-512F, 32 bytes and 16 registers with AVX/AVX2,
else 16 bytes. It is read from ``/proc/cpuinfo`` (the CPUID flags ``-march=native`` also reads);
NOTE: the machine these schedules were tuned on reports AVX2 and FMA but no AVX-512.

A register tile of a matrix-product kernel is ``rows x cols`` accumulators, ``cols`` a multiple
of the vector lanes: each step of the reduction loads ``cols / lanes`` vectors of the packed
operand, broadcasts one value per row and issues ``rows * cols / lanes`` fused multiply-adds, so
``rows * vectors + vectors + 1`` registers must fit in the register file.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

from kiln.ir.dtype import DataType


@functools.lru_cache(maxsize=None)
def cpu_flags() -> frozenset[str]:
    """The CPU feature flags of the host (empty when ``/proc/cpuinfo`` cannot be read)."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return frozenset()
    for line in text.splitlines():
        if line.startswith("flags"):
            return frozenset(line.partition(":")[2].split())
    return frozenset()


def vector_bytes() -> int:
    """Bytes in one SIMD register the compiled code may use."""
    flags = cpu_flags()
    if "avx512f" in flags:
        return 64
    return 32 if "avx" in flags else 16


def vector_registers() -> int:
    """How many SIMD registers there are (32 with AVX-512, else 16)."""
    return 32 if "avx512f" in cpu_flags() else 16


def lanes(dtype: DataType) -> int:
    """Values of ``dtype`` in one SIMD register."""
    return max(1, vector_bytes() // max(1, dtype.itemsize))


@dataclass(frozen=True)
class Tile:
    """A register tile: ``rows`` accumulator rows of ``cols`` values (vectors * lanes)."""

    rows: int
    cols: int
    lanes: int

    @property
    def vectors(self) -> int:
        return self.cols // self.lanes


def matmul_tile(n: int, m: int, dtype: DataType) -> Tile:
    """The register tile for an ``n x m`` output.

    Normally two vectors wide and as many rows as the registers allow (6 x 16 with 16 AVX2
    registers, 12 x 32 with AVX-512). With fewer rows than that, the tile gets wider instead
    (up to 12 accumulators, ``rows * vectors + vectors + 1`` registers), so a short matrix
    still has enough independent FMAs to hide their latency; with a narrow ``m``, narrower.
    """
    width = lanes(dtype)
    regs = vector_registers()
    rows = 6 if regs == 16 else 12
    budget = rows * 2
    need = -(-m // width)  # vectors that cover m
    if n >= rows:
        vectors = min(2, need)
        if vectors == 1:
            rows = regs - 4
        return Tile(rows, vectors * width, width)
    vectors = max(1, min(need, budget // n, (regs - 1) // (n + 1)))
    return Tile(max(1, n), vectors * width, width)


def round_up(x: int, multiple: int) -> int:
    """The smallest multiple of ``multiple`` that is at least ``x``."""
    return -(-x // multiple) * multiple
