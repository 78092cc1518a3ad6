"""Float constants out of their dtype's range are script errors at their line (issue 22,
finding 8); infinities and NaN written as such stay allowed."""

from __future__ import annotations

import math

import numpy as np
import pytest

import kiln.script
from kiln.errors import ScriptError
from kiln.ir.dtype import DataType
from kiln.script.tir_ns.types import float_overflows

HEAD = '@T.prim_func\ndef f(A: T.Buffer((4,), "{dtype}")):\n'


def _parse(dtype: str, line: str):
    return kiln.script.from_source(HEAD.format(dtype=dtype) + f"    {line}\n", "consts.py")


@pytest.mark.parametrize(
    "dtype,text",
    [
        ("float16", "T.float16(1e10)"),
        ("float16", "T.float16(-65520.0)"),
        ("float32", "T.float32(1e40)"),
        ("bfloat16", "T.bfloat16(1e39)"),
        ("float8_e4m3fn", "T.float8_e4m3fn(500.0)"),
        ("float16", "T.float16(10**400)"),
    ],
)
def test_a_constant_out_of_range_is_a_script_error_at_its_line(dtype: str, text: str) -> None:
    with pytest.raises(ScriptError) as info:
        _parse(dtype, f"A[0] = {text}")
    err = info.value
    assert (err.span.line, err.span.column) == (3, 12), str(err)
    assert f"out of the range of {dtype}" in err.reason
    assert str(err).splitlines()[0].startswith("consts.py:3:12: error: ")


def test_a_python_float_stored_out_of_range_is_a_script_error() -> None:
    with pytest.raises(ScriptError, match="10000000000.0 stored into buffer 'A' is out of"):
        _parse("float16", "A[1] = 1e10")


@pytest.mark.parametrize(
    "dtype,text",
    [
        ("float16", 'T.float16("inf")'),
        ("float16", 'T.float16("-inf")'),
        ("float16", 'T.float16("nan")'),
        ("float16", "T.float16(65504.0)"),
        ("float16", "T.float16(65519.0)"),  # rounds down to 65504
        ("float32", "T.float32(3.4028234663852886e38)"),
        ("float64", "T.float64(1e300)"),
        ("float8_e4m3fn", "T.float8_e4m3fn(464.0)"),  # a tie, to the even 448
    ],
)
def test_in_range_constants_and_explicit_infinities_parse(dtype: str, text: str) -> None:
    func = _parse(dtype, f"A[0] = {text}")
    assert func.body is not None


def test_float_inf_from_python_is_allowed() -> None:
    func = kiln.script.from_source(
        HEAD.format(dtype="float16") + "    A[0] = T.float16(big)\n",
        "consts.py",
        extra_vars={"big": float("inf")},
    )
    assert math.isinf(func.body.value.value)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float8_e5m2", "float8_e4m3fn"])
def test_overflow_matches_the_rounding_of_ml_dtypes(dtype: str) -> None:
    ml_dtypes = pytest.importorskip("ml_dtypes")
    kind = np.float16 if dtype == "float16" else getattr(ml_dtypes, dtype)
    top = float(ml_dtypes.finfo(kind).max)
    rng = np.random.default_rng(0)
    values = [top * f for f in rng.uniform(0.95, 1.15, 400)] + [top, top * 1.0625, top * 1.125]
    for v in values:
        with np.errstate(over="ignore"):
            rounded = float(np.float32(v).astype(kind))  # kiln computes them in C floats
        assert float_overflows(v, DataType.parse(dtype)) == (not math.isfinite(rounded)), v
