"""SimplifyIdentities: each identity fold against an expected script, the look-alikes that must
stay (broadcasting by ones, ``x + 0.0`` on floats, an inner reshape read elsewhere), the same
module back when nothing folds, chains to a fixpoint, and compiled results against numpy."""

# ruff: noqa: F841 - names in R scripts are script variables, not Python locals

from __future__ import annotations

import numpy as np

import kiln
from kiln import relax
from kiln.driver import default_relax_pipeline
from kiln.ir import IRModule, Target, assert_structural_equal
from kiln.relax import op as O
from kiln.relax.transform import SimplifyIdentities
from kiln.runtime import VirtualMachine
from kiln.script import ir as I
from kiln.script import relax as R
from kiln.script import tir as T


def test_products_by_one_and_exact_sums_with_zero_fold() -> None:
    @I.ir_module
    class Before:
        @R.function
        def main(x: R.Tensor((2, 3), "float32"), k: R.Tensor((4,), "int32")):
            with R.dataflow():
                a = R.multiply(x, R.const(1.0, "float32"))
                b = R.multiply(R.const([[1.0, 1.0, 1.0]], "float32"), a)
                c = R.divide(b, R.const(1.0, "float32"))
                d = R.add(c, R.const(-0.0, "float32"))
                e = R.add(R.const(-0.0, "float32"), d)
                f = R.subtract(e, R.const(0.0, "float32"))
                g = R.exp(f)
                i = R.add(k, R.const(0, "int32"))
                j = R.subtract(R.add(R.const([0, 0, 0, 0], "int32"), i), R.const(0, "int32"))
                R.output(g, j)
            return (g, j)

    @I.ir_module
    class Expected:
        @R.function
        def main(x: R.Tensor((2, 3), "float32"), k: R.Tensor((4,), "int32")):
            with R.dataflow():
                g = R.exp(x)
                R.output(g)
            return (g, k)

    assert_structural_equal(SimplifyIdentities()(Before), Expected)


def test_look_alikes_that_change_a_value_stay() -> None:
    """``x * ones`` that broadcasts ``x`` up, ``x + 0.0`` and ``x - (-0.0)`` of floats (both
    turn ``-0.0`` into ``+0.0``), a product by another constant: nothing changes."""

    @I.ir_module
    class Before:
        @R.function
        def main(x: R.Tensor((3,), "float32")):
            with R.dataflow():
                a = R.multiply(x, R.const([[1.0, 1.0, 1.0], [1.0, 1.0, 1.0]], "float32"))
                b = R.add(x, R.const(0.0, "float32"))
                c = R.add(R.const([0.0, 0.0, 0.0], "float32"), x)
                d = R.subtract(x, R.const(-0.0, "float32"))
                e = R.multiply(x, R.const([1.0, 2.0, 1.0], "float32"))
                f = R.astype(x, "float16")
                R.output(a, b, c, d, e, f)
            return (a, b, c, d, e, f)

    assert SimplifyIdentities()(Before) is Before


def test_reshapes_and_permutations_compose() -> None:
    @I.ir_module
    class Before:
        @R.function
        def main(x: R.Tensor((2, 3, 4), "float32")):
            with R.dataflow():
                a = R.reshape(x, (6, 4))
                b = R.reshape(a, (4, 6))
                c = R.reshape(b, (24,))
                p = R.permute_dims(x, axes=[1, 2, 0])
                q = R.permute_dims(p, axes=[0, 2, 1])
                t = R.permute_dims(x, axes=[1, 0, 2])
                u = R.permute_dims(t, axes=[1, 0, 2])
                v = R.astype(u, "float32")
                w = R.reshape(v, (2, 3, 4))
                y = R.add(w, R.const(1.0, "float32"))
                R.output(c, q, y)
            return (c, q, y)

    @I.ir_module
    class Expected:
        @R.function
        def main(x: R.Tensor((2, 3, 4), "float32")):
            with R.dataflow():
                c = R.reshape(x, (24,))
                q = R.permute_dims(x, axes=[1, 0, 2])
                y = R.add(x, R.const(1.0, "float32"))
                R.output(c, q, y)
            return (c, q, y)

    after = SimplifyIdentities()(Before)
    assert_structural_equal(after, Expected)
    assert SimplifyIdentities()(after) is after  # a fixpoint: nothing left to fold


def test_an_inner_reshape_read_elsewhere_stays() -> None:
    @I.ir_module
    class Before:
        @R.function
        def main(x: R.Tensor(("n", 6), "float32")):
            n = T.int64()
            with R.dataflow():
                a = R.reshape(x, (n, 2, 3))
                b = R.reshape(a, (n * 6,))
                c = R.exp(a)
                d = R.reshape(c, (n, 2, 3))
                R.output(b, d)
            return (b, d)

    @I.ir_module
    class Expected:
        @R.function
        def main(x: R.Tensor(("n", 6), "float32")):
            n = T.int64()
            with R.dataflow():
                a = R.reshape(x, (n, 2, 3))
                b = R.reshape(x, (n * 6,))
                d = R.exp(a)
                R.output(b, d)
            return (b, d)

    assert_structural_equal(SimplifyIdentities()(Before), Expected)


def _model() -> tuple[IRModule, np.ndarray]:
    """A small network whose every reshape, transpose, cast and scaling is an identity."""
    rng = np.random.default_rng(3)
    w = rng.standard_normal((12, 5)).astype("float32")
    x = relax.Var("x", relax.TensorStructInfo([4, 3, 4], "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            t = bb.emit(O.permute_dims(bb.emit(O.permute_dims(x, [2, 0, 1])), [1, 2, 0]))
            flat = bb.emit(O.reshape(bb.emit(O.reshape(t, [2, 24])), [4, 12]))
            y = bb.emit(O.matmul(O.multiply(flat, relax.const(np.float32(1))), relax.const(w)))
            y = bb.emit(O.astype(O.add(y, relax.const(np.float32(-0.0))), "float32"))
            out = bb.emit_output(O.nn.relu(y))
        bb.emit_func_output(out)
    return bb.get(), w


def test_compiled_results_match_numpy_with_and_without_the_pass() -> None:
    mod, w = _model()
    after = SimplifyIdentities()(mod)
    ops = str(after)
    assert "permute_dims" not in ops and "astype" not in ops and ops.count("R.reshape") == 1
    xv = np.random.default_rng(4).standard_normal((4, 3, 4)).astype("float32")
    want = np.maximum(xv.reshape(4, 12) @ w, 0)
    got = kiln.compile(mod)(xv).numpy()  # the default pipeline, the pass included
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    without = [p for p in default_relax_pipeline(Target("c")) if p.name != "simplify-identities"]
    plain = VirtualMachine(relax.build(mod, target="c", pipeline=without))["main"](xv).numpy()
    np.testing.assert_array_equal(got, plain)


def test_the_pass_runs_after_the_first_fold_constant_and_before_alter_op_layout() -> None:
    names = [p.name for p in default_relax_pipeline(Target("c"))]
    at = names.index("simplify-identities")
    assert names.index("fold-constant") < at < names.index("alter-op-layout")
