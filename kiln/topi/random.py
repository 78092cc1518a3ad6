"""Counter-based random numbers as tensor expressions: `uniform`, `normal`, `permutation`.

Element ``i`` of a result is a pure function of ``(seed, i)``: SplitMix64's output for state
``key + (i + 1) * GOLDEN``, where ``key`` is the mixed seed (Steele, Lea and Flood, "Fast
splittable pseudorandom number generators", OOPSLA 2014; the finalizer constants are
Stafford's "Mix13"). That is SplitMix64's own stream started at ``key``, with no state carried
from one element (or call) to the next: kernels stay pure functions of their arguments and
parallelize freely. Two seeds' streams overlap only when their keys lie within ``n`` steps of
each other on the Weyl sequence (probability about ``2n / 2**64``).

The caller supplies a fresh seed per call (`relax.random`'s records take it as a prim value; the
torch frontend reads it from ``vm.builtin.random_seed``). `bits` is the one generator: tests
recompute it with numpy's wrapping uint64 arithmetic.
"""

from __future__ import annotations

import math
from typing import Any

from kiln import te
from kiln.ir.dtype import DataType
from kiln.tir import op as tir_op
from kiln.tir.expr import Cast, PrimExpr, const
from kiln.topi import tag

GOLDEN = 0x9E3779B97F4A7C15
"""The Weyl step: 2**64 divided by the golden ratio, odd."""
MIX = (0xBF58476D1CE4E5B9, 0x94D049BB133111EB)
"""The multipliers of the finalizer (shifts 30, 27, 31)."""
PRECISION = {"float16": 11, "bfloat16": 8, "float32": 24, "float64": 53}
"""Significand bits per float dtype: a uniform draw keeps that many random bits, so every
value is exact in the dtype and below 1."""

U64 = "uint64"


def mix64(z: PrimExpr) -> PrimExpr:
    """SplitMix64's finalizer of a uint64: every input bit flips each output bit with
    probability about 1/2."""
    z = (z ^ (z >> 30)) * const(MIX[0], U64)
    z = (z ^ (z >> 27)) * const(MIX[1], U64)
    return z ^ (z >> 31)


def bits(seed: PrimExpr, index: PrimExpr) -> PrimExpr:
    """64 random bits (uint64) for element ``index`` of the stream of ``seed`` (integers)."""
    key = mix64(Cast(DataType.parse(U64), seed) + const(GOLDEN, U64))
    step = Cast(DataType.parse(U64), index) + const(1, U64)
    return mix64(key + step * const(GOLDEN, U64))


def _flat(idx: tuple[PrimExpr, ...], dims: list[Any]) -> PrimExpr:
    """The row-major position of ``idx`` (int64)."""
    flat: PrimExpr = const(0, "int64")
    for i, d in zip(idx, dims):
        flat = flat * d + i
    return flat


def _dims(shape: Any) -> list[Any]:
    return [const(d, "int64") if isinstance(d, int) else d for d in shape]


def _unit(h: PrimExpr, keep: int, dtype: str) -> PrimExpr:
    """``keep`` of ``h``'s high bits as a number in ``[0, 1)`` of ``dtype`` (exact)."""
    return Cast(DataType.parse(dtype), h >> (64 - keep)) * const(2.0**-keep, dtype)


def _work_dtype(dtype: str) -> tuple[DataType, str]:
    dt = DataType.parse(dtype)
    if str(dt) not in PRECISION:
        raise ValueError(f"random numbers of dtype {dt}: expected one of {sorted(PRECISION)}")
    return dt, "float64" if str(dt) == "float64" else "float32"


def uniform(shape: Any, seed: PrimExpr, dtype: str, name: str = "T_uniform") -> te.Tensor:
    """Numbers uniform in ``[0, 1)``, as many distinct values as ``dtype`` can hold there."""
    dt, work = _work_dtype(dtype)
    dims = _dims(shape)

    def body(*idx: PrimExpr) -> PrimExpr:
        u = _unit(bits(seed, _flat(idx, dims)), PRECISION[str(dt)], work)
        return u if str(dt) == work else Cast(dt, u)

    return te.compute(dims, body, name=name, tag=tag.INJECTIVE, attrs=tag.attrs_for(tag.INJECTIVE))


def normal(shape: Any, seed: PrimExpr, dtype: str, name: str = "T_normal") -> te.Tensor:
    """Standard normal numbers: Box-Muller's cosine branch on two independent uniforms, from
    the high and low halves of one draw (24 bits each, 32 for float64, so ``|x|`` stays under
    5.8 and 6.7 standard deviations)."""
    dt, work = _work_dtype(dtype)
    keep = 32 if work == "float64" else 24
    dims = _dims(shape)

    def body(*idx: PrimExpr) -> PrimExpr:
        h = bits(seed, _flat(idx, dims))
        low = h & const(2**keep - 1, U64)
        u1 = (Cast(DataType.parse(work), h >> (64 - keep)) + const(1.0, work)) * const(
            2.0**-keep, work
        )  # (0, 1]: the log is finite
        u2 = Cast(DataType.parse(work), low) * const(2.0**-keep, work)
        radius = tir_op.sqrt(const(-2.0, work) * tir_op.math("log", u1))
        z = radius * tir_op.math("cos", u2 * const(2 * math.pi, work))
        return z if str(dt) == work else Cast(dt, z)

    return te.compute(dims, body, name=name, tag=tag.INJECTIVE, attrs=tag.attrs_for(tag.INJECTIVE))


def permutation(n: Any, seed: PrimExpr, dtype: str, name: str = "T_permutation") -> te.Tensor:
    """A random permutation of ``0 .. n-1``: element ``i`` is the rank of draw ``i`` among the
    ``n`` draws (ties in index order). The ranks of independent draws are a uniformly random
    permutation. Each element compares its draw with every other: O(n^2), meant for the short
    ranges models shuffle."""
    count = const(n, "int64") if isinstance(n, int) else n
    dt = DataType.parse(dtype)
    j = te.reduce_axis(count, name="j")

    def body(i: PrimExpr) -> PrimExpr:
        mine, other = bits(seed, i), bits(seed, j)
        before = (other < mine) | (other.eq(mine) & (j < i))
        return te.sum(Cast(dt, before), axis=j)

    attrs = tag.attrs_for(tag.COMM_REDUCE)
    return te.compute((count,), body, name=name, tag=tag.COMM_REDUCE, attrs=attrs)
