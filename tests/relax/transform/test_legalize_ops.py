"""LegalizeOps: operator calls become call_tir of TE PrimFuncs; a legalized model runs and
matches numpy (through the test executor and kiln.build)."""

# ruff: noqa: F841 - names in R scripts are script variables, not Python locals

from __future__ import annotations

import numpy as np

from kiln.relax.analysis.well_formed import verify_module
from kiln.relax.function_pass import debug_pass_context
from kiln.relax.transform import LegalizeOps
from kiln.script import ir as I
from kiln.script import relax as R
from kiln.script import tir as T
from kiln.tir import PrimFunc
from tests.relax.executor import run


@I.ir_module
class MLP:
    @R.function
    def main(
        x: R.Tensor(("n", 16), "float32"),
        w1: R.Tensor((32, 16), "float32"),
        b1: R.Tensor((32,), "float32"),
        w2: R.Tensor((32, 4), "float32"),
    ) -> R.Tensor(("n", 4), "float32"):
        n = T.int64()
        with R.dataflow():
            h = R.linear(x, w1, b1)
            a = R.nn.relu(h)
            o = R.matmul(a, w2)
            parts = R.split(o, 2, axis=1)
            s = R.add(parts[0], parts[1])
            c = R.concat((s, parts[1]), axis=1)
            p = R.nn.softmax(c)
            R.output(p)
        return p


def _reference(x, w1, b1, w2):
    o = np.maximum(x @ w1.T + b1, 0) @ w2
    c = np.concatenate([o[:, :2] + o[:, 2:], o[:, 2:]], axis=1)
    e = np.exp(c - c.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def test_legalized_mlp_matches_numpy() -> None:
    mod = LegalizeOps()(MLP, debug_pass_context())
    verify_module(mod)
    ops = [getattr(b.value, "op", None) for blk in mod["main"].body.blocks for b in blk.bindings]
    assert all(op.name == "relax.call_tir" for op in ops if op is not None)
    assert sum(isinstance(f, PrimFunc) for _, f in mod.items()) >= 7
    rng = np.random.default_rng(1)
    args = [rng.standard_normal(s).astype("float32") for s in [(5, 16), (32, 16), (32,), (32, 4)]]
    got = run(mod, "main", *args)
    np.testing.assert_allclose(got, _reference(*args), rtol=1e-4, atol=1e-6)


def test_calls_with_unknown_shapes_stay() -> None:
    @I.ir_module
    class Module:
        @R.function
        def main(x: R.Tensor(ndim=2, dtype="float32")) -> R.Tensor(ndim=2, dtype="float32"):
            y = R.exp(x)
            return y

    assert LegalizeOps()(Module) is Module


def test_a_tuple_variable_argument_is_passed_field_by_field() -> None:
    @I.ir_module
    class Module:
        @R.function
        def main(x: R.Tensor((2, 3), "float32")):
            t = (x, x)
            c = R.concat(t, axis=1)
            parts = R.split(c, 3, axis=1)
            return parts

    mod = LegalizeOps()(Module)
    verify_module(mod)
    x = np.arange(6, dtype="float32").reshape(2, 3)
    got = run(mod, "main", x)
    want = np.split(np.concatenate([x, x], axis=1), 3, axis=1)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
