"""The activation records through the whole pipeline: vectorized kernels (`kiln.compile`, where
``exp``/``log`` are `kiln.tir.math_approx` forms, not the libm calls the op harness runs) on the
special values of `cases_activation`, script round trips of their attributes, their errors, and
a conv -> prelu -> hardswish chain kept channel-blocked and fused."""

from __future__ import annotations

import numpy as np
import pytest

import kiln
from kiln import relax
from kiln.ir import Target
from kiln.relax import op as R
from kiln.relax.transform import FoldConstant
from tests.relax.op.cases import np_conv2d
from tests.relax.op.cases_activation import ACTIVATION, TINY
from tests.relax.op.harness import assert_emit_fails, cases_module
from tests.relax.transform.test_alter_op_layout import calls, lowered_callees, until
from tests.script.helpers import roundtrip


def test_compiled_kernels_match_numpy_on_special_values() -> None:
    model = kiln.compile(cases_module(ACTIVATION))
    got = model(*[a for case in ACTIVATION for a in case.inputs])
    assert len(got) == len(ACTIVATION)
    for case, g in zip(ACTIVATION, got):
        want = case.ref(*case.inputs)
        label = f"{case.op} {case.name}"
        # NOTE: the vectorized exp/log/tanh are a few ulp off libm's (math_approx's bounds)
        rtol = max(case.rtol, 1e-5) if case.inputs[0].dtype == np.float32 else case.rtol
        atol = TINY if case.atol == TINY else case.atol
        np.testing.assert_allclose(g.numpy(), want, rtol=rtol, atol=atol, err_msg=label)


def test_attributes_round_trip_through_script() -> None:
    x = relax.Var("x", relax.TensorStructInfo([2, 3, 4, 4], "float32"))
    s = relax.Var("s", relax.TensorStructInfo([3, 1, 1], "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x, s]):
        with bb.dataflow():
            y = bb.emit(R.nn.softplus(x, threshold=float("inf")))
            y = bb.emit(R.nn.softplus(y, beta=2.0))
            y = bb.emit(R.nn.hardsigmoid(y, 1 / 6, 0.5))
            y = bb.emit(R.nn.selu(R.nn.celu(y, 0.5)))
            y = bb.emit(R.nn.shrink(R.nn.mish(y), bias=0.25))
            y = bb.emit(R.nn.prelu(R.nn.leakyrelu(y, 0.2), s))
            out = bb.emit_output(y)
        bb.emit_func_output(out)
    mod = bb.get()
    text = mod.script()
    assert 'R.nn.softplus(x, threshold=float("inf"))' in text
    assert "R.nn.selu(lv_3)" in text  # default attributes are not printed
    roundtrip(mod)


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda x, s: R.nn.mish(R.astype(x, "int32")), "relax.nn.mish: needs a float tensor"),
        (lambda x, s: R.nn.celu(x, 0.0), "relax.nn.celu: alpha must be non-zero, got 0.0"),
        (lambda x, s: R.nn.softplus(x, beta=0), "relax.nn.softplus: beta must be non-zero"),
        (lambda x, s: R.nn.prelu(x, s), "the slope s .* must broadcast to the data's shape"),
        (lambda x, s: R.nn.prelu(x, R.astype(x, "float64")), "different dtypes"),
    ],
)
def test_errors_name_the_operator_and_what_was_expected(build, message) -> None:
    x = relax.Var("x", relax.TensorStructInfo([2, 1], "float32"))
    s = relax.Var("s", relax.TensorStructInfo([2, 5], "float32"))
    assert_emit_fails(build, [x, s], message)


RNG = np.random.default_rng(3)
W = (RNG.standard_normal((32, 16, 3, 3)) / 12).astype("float32")
SLOPE = RNG.uniform(0.05, 0.5, (32, 1, 1)).astype("float32")
XIMG = RNG.standard_normal((1, 16, 10, 10)).astype("float32")


def _conv_prelu() -> relax.IRModule:
    x = relax.Var("x", relax.TensorStructInfo([1, 16, 10, 10], "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            h = bb.emit(R.nn.conv2d(x, relax.const(W), padding=1))
            h = bb.emit(R.nn.prelu(h, relax.const(SLOPE)))
            out = bb.emit_output(bb.emit(R.nn.hardswish(h)))
        bb.emit_func_output(out)
    return bb.get()


def test_prelu_and_hardswish_stay_blocked_and_fuse_into_the_conv() -> None:
    target = Target("c -mcpu=skylake-avx512")
    graph = FoldConstant()(until(_conv_prelu(), "alter-op-layout", target))
    transforms = calls(graph, "relax.layout_transform")
    assert [(c.attrs["src_layout"], c.attrs["dst_layout"]) for c in transforms] == [
        ("NCHW", "NCHW16c"),  # the input, once
        ("NCHW32c", "NCHW"),  # the output, once: none around the prelu
    ]
    assert calls(graph, "relax.nn.prelu")[0].struct_info.ndim == 5
    kernels = lowered_callees(until(_conv_prelu(), "lower-te", target))
    assert "default_fused_conv2d_prelu_hardswish" in kernels
    h = np_conv2d(XIMG, W, pad=(1, 1, 1, 1))
    h = np.where(h < 0, SLOPE * h, h)
    want = h * np.clip(h / 6 + 0.5, 0, 1)
    got = kiln.compile(_conv_prelu())(XIMG).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
