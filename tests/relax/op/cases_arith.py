"""The numpy checks of the arithmetic records ONNX and PyTorch name as one operator: ``sign``,
``isinf`` / ``isfinite``, ``logical_xor``, the truncating division and both remainders, and
integer ``power``. Operands cover what the textbook forms get wrong: negative dividends and
divisors, ``+-inf``, NaN, ``-0.0``, a zero float divisor, and integer powers that overflow
(numpy's wrap-around, computed here with Python integers)."""

from __future__ import annotations

import numpy as np

from kiln.relax import op as R
from tests.relax.op.harness import Case

RNG = np.random.default_rng(17)
SPECIAL = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 7.5, -7.5, 1e10, -3.25, 2.0]
FX = np.concatenate([SPECIAL, RNG.uniform(-9, 9, 24 - len(SPECIAL))]).reshape(2, 12)
FY = np.concatenate([[2.0, 3.0, -2.0, 0.0, -0.0, np.inf, -np.inf, 2.0, -2.0, 3.0, 0.5, -4.0],
                     RNG.uniform(-4, 4, 12)]).reshape(2, 12)  # fmt: skip
IX = np.concatenate([[7, -7, 7, -7, 0, 5, -128, 127, 1, -1, 6, -6], RNG.integers(-100, 100, 12)])
IX = IX.reshape(2, 12)
IY = np.array([2, 2, -2, -2, 3, -1, -1, 3, 4, -4, 3, 3])  # broadcast along the rows; no zeros


def _signed(dtype: str):
    """The int8 / int32 / int64 operands (``IX`` fits int8)."""
    return IX.astype(dtype), IY.astype(dtype)


def _trunc_div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """C's truncating integer division, exact in int64 and wrapped to the operands' dtype
    (int8 ``-128 / -1`` is -128, as C computes it in int)."""
    a64, b64 = a.astype("int64"), b.astype("int64")
    return (np.sign(a64) * np.sign(b64) * (np.abs(a64) // np.abs(b64))).astype(a.dtype)


def _int_power(a: np.ndarray, e: np.ndarray) -> np.ndarray:
    """``a ** e`` modulo ``2**bits`` with Python integers; a negative ``e`` gives
    ``trunc(1 / a**-e)``: 1, +-1 for ``a = -1``, else 0."""
    bits = a.dtype.itemsize * 8

    def one(x: int, k: int) -> int:
        if k < 0:
            return 1 if x == 1 else (-1) ** (-k) if x == -1 else 0
        return pow(x, k, 2**bits)

    a, e = np.broadcast_arrays(a, e)
    flat = [one(int(x), int(k)) for x, k in zip(a.ravel(), e.ravel())]
    out = np.array([v - 2**bits if v >= 2 ** (bits - 1) and a.dtype.kind == "i" else v
                    for v in flat], dtype="int64" if a.dtype.kind == "i" else "uint64")  # fmt: skip
    return out.astype(a.dtype).reshape(a.shape)


def _errstate(fn):
    def ref(*arrays: np.ndarray) -> np.ndarray:
        with np.errstate(all="ignore"):
            return fn(*arrays)

    return ref


def _cast(a: np.ndarray, dtype: str) -> np.ndarray:
    with np.errstate(over="ignore"):  # 1e10 is inf in float16
        return a.astype(dtype)


def _float_cases(op: str, build, ref, dtypes=("float32", "float64")) -> list[Case]:
    return [
        Case(op, build, [_cast(FX, dt), _cast(FY, dt)], _errstate(ref), rtol=0, atol=0, name=dt)
        for dt in dtypes
    ]


def _int_cases(op: str, build, ref) -> list[Case]:
    return [Case(op, build, list(_signed(dt)), ref, name=dt) for dt in ("int8", "int32", "int64")]


def _isinf(positive: bool, negative: bool, ref, name: str) -> Case:
    return Case("relax.isinf", lambda x: R.isinf(x, positive, negative), [FX], ref, name=name)


BASE = RNG.integers(-7, 8, (3, 8)).astype("int32")
BASE[0, :4] = [1, -1, 0, 2]
EXPONENT = np.array([0, 1, 2, 3, 5, 13, 31, 40]).astype("int32")
NEGATIVE_EXPONENT = np.array([-1, -2, -3, 0, 1, -5, 2, -7], "int32")
UBASE = RNG.integers(0, 256, (3, 8)).astype("uint8")

ARITH = [
    Case("relax.sign", R.sign, [FX.astype("float32")], np.sign, rtol=0, atol=0),
    Case(
        "relax.sign",
        lambda x: R.sign(x, nan_to_zero=True),
        [FX],
        lambda a: np.where(np.isnan(a), 0.0, np.sign(a)),
        name="nan_to_zero",
    ),
    Case("relax.sign", R.sign, [IX.astype("int32")], np.sign, name="int32"),
    Case("relax.sign", R.sign, [UBASE], np.sign, name="uint8"),
    Case("relax.isinf", R.isinf, [FX.astype("float32")], np.isinf),
    _isinf(True, False, np.isposinf, "positive"),
    _isinf(False, True, np.isneginf, "negative"),
    Case("relax.isinf", R.isinf, [IX.astype("int32")], np.isinf, name="int32"),
    Case("relax.isfinite", R.isfinite, [FX.astype("float32")], np.isfinite),
    Case("relax.isfinite", R.isfinite, [IX.astype("int64")], np.isfinite, name="int64"),
    Case(
        "relax.logical_xor",
        R.logical_xor,
        [RNG.integers(0, 2, (3, 4)).astype(bool), np.array([True, False, True, False])],
        np.logical_xor,
    ),
    *_int_cases("relax.trunc_divide", R.trunc_divide, _trunc_div),
    *_float_cases("relax.trunc_divide", R.trunc_divide, lambda a, b: np.trunc(a / b)),
    *_int_cases("relax.floor_mod", R.floor_mod, np.mod),
    *_float_cases("relax.floor_mod", R.floor_mod, np.mod, ("float16", "float32", "float64")),
    Case("relax.floor_mod", R.floor_mod, [UBASE, np.uint8([7])], np.mod, name="uint8"),
    *_int_cases("relax.trunc_mod", R.trunc_mod, np.fmod),
    *_float_cases("relax.trunc_mod", R.trunc_mod, np.fmod, ("float16", "float32", "float64")),
    Case("relax.power", R.power, [BASE, EXPONENT], _int_power, name="int32"),
    Case(
        "relax.power",
        R.power,
        [BASE.astype("int64"), EXPONENT.astype("int64") * 2],
        _int_power,
        name="int64",
    ),
    Case("relax.power", R.power, [BASE, NEGATIVE_EXPONENT], _int_power, name="negative"),
    Case(
        "relax.power",
        R.power,
        [UBASE, np.uint8([0, 1, 2, 3, 7, 8, 9, 200])],
        _int_power,
        name="uint8",
    ),
]
