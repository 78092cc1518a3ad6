"""The arithmetic records of `cases_arith` through the whole pipeline (`kiln.compile`: fused,
vectorized, LowerIntrin's float16 and floor-division lowering), the signs of their zeros, an
integer divisor of 0 (a ``ValueError`` naming the division, never a crash), script round trips
of their attributes, and their errors."""

from __future__ import annotations

import numpy as np
import pytest

import kiln
from kiln import relax
from kiln.relax import op as R
from tests.relax.op.cases_arith import ARITH, FX, FY, IX
from tests.relax.op.harness import assert_emit_fails, cases_module
from tests.script.helpers import roundtrip


def test_compiled_kernels_match_numpy() -> None:
    got = kiln.compile(cases_module(ARITH))(*[a for case in ARITH for a in case.inputs])
    assert len(got) == len(ARITH)
    for case, g in zip(ARITH, got):
        want = np.asarray(case.ref(*case.inputs))
        label = f"{case.op} {case.name}"
        assert g.numpy().dtype == want.dtype, label
        np.testing.assert_allclose(g.numpy(), want, rtol=case.rtol, atol=case.atol, err_msg=label)


def _run_all(calls: list[tuple]) -> list[np.ndarray]:
    """The results of ``build(*arrays)`` for each ``(build, *arrays)`` of ``calls``, compiled as
    one function (one compile for all: the suite's time)."""
    params = [[relax.Var(f"c{i}_{k}", relax.TensorStructInfo(a.shape, str(a.dtype)))
               for k, a in enumerate(arrays)] for i, (_, *arrays) in enumerate(calls)]  # fmt: skip
    bb = relax.BlockBuilder()
    with bb.function("main", [p for ps in params for p in ps]):
        with bb.dataflow():
            outs = [bb.emit(build(*ps)) for (build, *_), ps in zip(calls, params)]
            out = bb.emit_output(relax.Tuple(outs))
        bb.emit_func_output(out)
    got = kiln.compile(bb.get())(*[a for _, *arrays in calls for a in arrays])
    return [g.numpy() for g in got]


def _run(build, *arrays: np.ndarray) -> np.ndarray:
    params = [relax.Var(f"x{k}", relax.TensorStructInfo(a.shape, str(a.dtype)))
              for k, a in enumerate(arrays)]  # fmt: skip
    bb = relax.BlockBuilder()
    with bb.function("main", params):
        with bb.dataflow():
            out = bb.emit_output(build(*params))
        bb.emit_func_output(out)
    return kiln.compile(bb.get())(*arrays).numpy()


def test_zeros_have_numpys_sign() -> None:
    """``sign(-0.0)`` is ``+0.0``; a zero ``floor_mod`` has the divisor's sign, a zero
    ``trunc_mod`` the dividend's (numpy, onnxruntime)."""
    x = np.float32([-0.0, 0.0, -4.0, 4.0, -4.0, 4.0])
    y = np.float32([1.0, -1.0, 2.0, -2.0, -2.0, 2.0])
    sign, *mods = _run_all([(R.sign, x), (R.floor_mod, x, y), (R.trunc_mod, x, y)])
    np.testing.assert_array_equal(np.signbit(sign), np.signbit(np.sign(x)))
    for got, ref in zip(mods, (np.mod, np.fmod)):
        want = ref(x, y)
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(np.signbit(got), np.signbit(want), err_msg=str(ref))


@pytest.mark.parametrize("build", [R.trunc_divide, R.floor_mod, R.trunc_mod, R.floor_divide])
def test_an_integer_divisor_of_zero_raises(build) -> None:
    a, b = IX[0].astype("int32"), np.int32([3, 0, 1, 2, 5, 1, 1, 1, 1, 1, 1, 1])
    with pytest.raises(ValueError, match="division by zero"):
        _run(build, a, b)


def test_float_division_by_zero_is_ieee() -> None:
    builds = (R.trunc_divide, R.floor_mod, R.trunc_mod)
    with np.errstate(all="ignore"):
        got = _run_all([(build, FX, FY * 0) for build in builds])
        for g, ref in zip(got, (lambda a, b: np.trunc(a / b), np.mod, np.fmod)):
            np.testing.assert_array_equal(g, ref(FX, FY * 0), err_msg=str(ref))


def test_attributes_round_trip_through_script() -> None:
    x = relax.Var("x", relax.TensorStructInfo([2, 3], "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            s = bb.emit(R.sign(R.sign(x), nan_to_zero=True))
            a = bb.emit(R.isinf(s, detect_positive=False))
            b = bb.emit(R.logical_xor(a, R.isfinite(x)))
            out = bb.emit_output(R.logical_xor(b, R.isinf(x)))
        bb.emit_func_output(out)
    mod = bb.get()
    text = mod.script()
    assert "R.sign(lv, nan_to_zero=True)" in text
    assert "R.isinf(lv_1, detect_positive=False)" in text
    assert "R.isinf(x)" in text  # default attributes are not printed
    roundtrip(mod)


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda x, i: R.sign(R.isnan(x)),
         r"relax.sign: needs a numeric \(integer or float\) tensor, got .*bool"),
        (lambda x, i: R.isinf(R.isnan(x)), r"relax.isinf: needs a numeric"),
        (lambda x, i: R.trunc_divide(x, i), r"relax.trunc_divide: operands x .* and i .* have "
                                            r"different dtypes \(float32 vs int32\)"),
        (lambda x, i: R.floor_mod(R.isnan(x), R.isnan(x)), "relax.floor_mod: needs a numeric"),
        (lambda x, i: R.power(R.isnan(x), R.isnan(x)), "relax.power: needs a numeric"),
        (lambda x, i: R.logical_xor(x, R.isnan(x)), "relax.logical_xor: needs a bool tensor"),
    ],
)  # fmt: skip
def test_errors_name_the_operator_and_what_was_expected(build, message) -> None:
    x = relax.Var("x", relax.TensorStructInfo([2, 3], "float32"))
    i = relax.Var("i", relax.TensorStructInfo([2, 3], "int32"))
    assert_emit_fails(build, [x, i], message)
