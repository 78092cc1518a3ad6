"""FuseOps: groups by fusion pattern (injective chains, reductions with their producers, an
anchor with its element-wise epilogue), never two anchors, never across an opaque op; the
refusals are named under KILN_DEBUG=1; fused functions compute what the unfused graph does."""

# ruff: noqa: F841 - names in R scripts are script variables, not Python locals

from __future__ import annotations

import numpy as np
import pytest

import kiln
from kiln import tir
from kiln.ir import Target
from kiln.relax import Function
from kiln.relax.analysis.well_formed import verify_module
from kiln.relax.transform import FuseOps, LegalizeOps, LowerTE
from kiln.script import ir as I
from kiln.script import relax as R
from kiln.script import tir as T
from tests.relax.executor import run as run_legalized
from tests.relax.transform.lowered import run as run_lowered


def fused(mod) -> dict[str, Function]:
    return {gv.name_hint: f for gv, f in mod.items() if f.get_attr("Primitive")}


def calls(func) -> list[str]:
    """The callee names of the bindings of ``func`` (ops by short name, functions by name)."""
    out = []
    for block in func.body.blocks:
        for b in block.bindings:
            op = getattr(b.value, "op", None)
            name = getattr(op, "name", None) or getattr(op, "name_hint", None)
            if name is not None:
                out.append(name.removeprefix("relax."))
    return out


@I.ir_module
class ConvBlock:
    @R.function
    def main(
        x: R.Tensor((1, 8, 10, 10), "float32"),
        w: R.Tensor((8, 8, 3, 3), "float32"),
        b: R.Tensor((1, 8, 1, 1), "float32"),
    ):
        with R.dataflow():
            c = R.nn.conv2d(x, w, padding=1)
            a = R.add(c, b)
            y = R.nn.relu(a)
            z = R.add(y, x)
            R.output(z)
        return z


def test_anchor_takes_bias_activation_and_residual() -> None:
    mod = FuseOps()(ConvBlock)
    verify_module(mod)
    prims = fused(mod)
    assert list(prims) == ["fused_conv2d_add_relu_add"]
    f = prims["fused_conv2d_add_relu_add"]
    assert f.get_attr("Primitive") == 1 and f.is_private
    assert calls(f) == ["nn.conv2d", "add", "nn.relu", "add"]
    assert calls(mod["main"]) == ["fused_conv2d_add_relu_add"]
    assert [p.name_hint for p in f.params] == ["x", "w", "b"]


@I.ir_module
class Mixed:
    @R.function
    def main(x: R.Tensor((4, 16), "float32"), w: R.Tensor((8, 16), "float32")):
        with R.dataflow():
            e = R.exp(x)
            s = R.multiply(e, e)
            r = R.sum(s, axis=1)
            h = R.linear(x, w)
            g = R.nn.relu(h)
            m = R.matmul(g, R.permute_dims(g))
            p = R.nn.softmax(m)
            q = R.add(p, p)
            R.output(r, q)
        return (r, q)


def test_patterns_group_as_the_records_say(capsys: pytest.CaptureFixture[str]) -> None:
    mod = FuseOps()(Mixed)
    verify_module(mod)
    assert calls(mod["main"]) == [
        "fused_exp_multiply_sum",
        "fused_permute_dims",
        "fused_matmul_relu",  # linear's add(bias) is absent: no bias given
        "fused_permute_dims_1",
        "fused_matmul",  # never two anchors: g feeds two consumers
        "fused_softmax",  # an opaque op stands alone
        "fused_add",  # and nothing fuses across it
    ]


def test_refusals_are_named_under_debug(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("KILN_DEBUG", "1")
    FuseOps()(Mixed)
    err = capsys.readouterr().err
    assert "FuseOps: softmax (p) not fused with group fused_matmul: an opaque operator" in err
    assert "FuseOps: add (q) not fused with group fused_softmax: an opaque operator" in err
    assert "matmul (m) not fused with group fused_matmul_relu: an anchor" in err


def test_an_anchor_value_read_twice_by_its_epilogue_joins_it() -> None:
    """The diamond of ``x * sigmoid(x)`` (SiLU) or ``relu(m) + m``: every use of the anchor's
    value ends up in the group, so the epilogue takes both."""

    @I.ir_module
    class Module:
        @R.function
        def main(x: R.Tensor((4, 4), "float32")):
            with R.dataflow():
                m = R.matmul(x, x)
                a = R.nn.relu(m)
                b = R.add(a, m)
                s = R.multiply(b, R.sigmoid(b))
                R.output(s)
            return s

    mod = FuseOps()(Module)
    assert calls(mod["main"]) == ["fused_matmul_relu_add_sigmoid_multiply"]


def test_gelu_after_a_matmul_joins_it_as_one_epilogue() -> None:
    """GELU's erf form reads the matmul's value twice, once through a chain of four ops: the
    whole chain joins the matmul's group."""

    @I.ir_module
    class Module:
        @R.function
        def main(x: R.Tensor((4, 4), "float32")):
            with R.dataflow():
                m = R.matmul(x, x)
                d = R.divide(m, R.const(1.4142135, "float32"))
                a = R.add(R.erf(d), R.const(1.0, "float32"))
                y = R.multiply(R.multiply(m, a), R.const(0.5, "float32"))
                R.output(y)
            return y

    mod = FuseOps()(Module)
    assert calls(mod["main"]) == ["fused_matmul_divide_erf_add_multiply_multiply"]


def test_an_anchor_value_used_outside_keeps_its_epilogue_apart(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    @I.ir_module
    class Module:
        @R.function
        def main(x: R.Tensor((4, 4), "float32")):
            with R.dataflow():
                m = R.matmul(x, x)
                a = R.nn.relu(m)
                b = R.add(a, R.matmul(m, x))
                R.output(b)
            return b

    monkeypatch.setenv("KILN_DEBUG", "1")
    mod = FuseOps()(Module)
    assert calls(mod["main"])[0] == "fused_matmul"
    assert "also used elsewhere (it is written once)" in capsys.readouterr().err


def test_an_epilogue_that_broadcasts_the_anchor_to_a_larger_shape_stays_apart(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Squeeze-excite: ``x * sigmoid(conv(s))`` with ``s`` pooled to 1x1; fused into the
    conv's group, the conv would be computed once per pixel of ``x``."""

    @I.ir_module
    class Module:
        @R.function
        def main(
            x: R.Tensor((1, 8, 6, 6), "float32"),
            s: R.Tensor((1, 4, 1, 1), "float32"),
            w: R.Tensor((8, 4, 1, 1), "float32"),
        ):
            with R.dataflow():
                c = R.nn.conv2d(s, w)
                g = R.sigmoid(c)
                y = R.multiply(x, g)
                R.output(y)
            return y

    monkeypatch.setenv("KILN_DEBUG", "1")
    mod = FuseOps()(Module)
    assert calls(mod["main"]) == ["fused_conv2d_sigmoid", "fused_multiply"]
    assert "broadcasts the anchor's result to a larger shape" in capsys.readouterr().err
    rng = np.random.default_rng(0)
    xv, sv, wv = (
        rng.standard_normal(t).astype("float32") for t in ((1, 8, 6, 6), (1, 4, 1, 1), (8, 4, 1, 1))
    )
    got = kiln.compile(Module)(xv, sv, wv).numpy()
    gate = 1 / (1 + np.exp(-(wv[:, :, 0, 0] @ sv[0, :, 0, 0])))
    np.testing.assert_allclose(got, xv * gate[None, :, None, None], rtol=1e-5, atol=1e-6)


def test_equal_groups_get_distinct_names_and_constants_become_parameters() -> None:
    @I.ir_module
    class Module:
        @R.function
        def main(x: R.Tensor((3,), "float32")):
            with R.dataflow():
                a = R.add(x, R.const([1.0, 2.0, 3.0], "float32"))
                b = R.nn.softmax(a)
                c = R.add(b, x)
                R.output(c)
            return c

    mod = FuseOps()(Module)
    verify_module(mod)
    assert list(fused(mod)) == ["fused_add", "fused_softmax", "fused_add_1"]
    assert len(fused(mod)["fused_add"].params) == 2


def test_one_element_constants_stay_in_the_group_and_become_immediates() -> None:
    @I.ir_module
    class Module:
        @R.function
        def main(x: R.Tensor((2, 8), "float32")):
            with R.dataflow():
                a = R.multiply(x, R.const(0.5, "float32"))
                b = R.power(a, R.const([[3.0]], "float32"))
                c = R.add(b, R.const(1, "float32"))
                R.output(c)
            return c

    mod = FuseOps()(Module)
    (group,) = fused(mod).values()
    assert len(group.params) == 1  # the scale, the exponent and the offset are not parameters
    lowered = LowerTE("default", Target("c"))(mod)
    (kernel,) = [f for f in lowered.functions.values() if isinstance(f, tir.PrimFunc)]
    assert len(kernel.params) == 2  # x and the output: no constant buffers
    x = np.random.default_rng(0).standard_normal((2, 8)).astype("float32")
    got = run_lowered(lowered, "main", x)
    np.testing.assert_allclose(got, (x * 0.5) ** 3 + 1, rtol=1e-6, atol=1e-6)
    source = kiln.build(kernel.with_attr("global_symbol", "k")).inspect_source()
    assert "powf" not in source and "0.5f" in source


def test_only_dataflow_blocks_are_fused() -> None:
    @I.ir_module
    class Module:
        @R.function
        def main(x: R.Tensor((3,), "float32")):
            a = R.add(x, x)
            b = R.exp(a)
            return b

    assert FuseOps()(Module) is Module


def test_multi_output_group_and_reordering_keep_the_function_equivalent() -> None:
    @I.ir_module
    class Module:
        @R.function
        def main(x: R.Tensor((2, 6), "float32")):
            with R.dataflow():
                a = R.exp(x)
                s = R.nn.softmax(a)  # reads a between a and its group's next member
                b = R.multiply(a, x)
                parts = R.split(b, 2, axis=1)
                c = R.add(parts[0], parts[1])
                R.output(s, c)
            return (s, c)

    mod = FuseOps()(Module)
    verify_module(mod)
    assert calls(mod["main"])[0] == "fused_exp_multiply_split_add"
    x = np.linspace(-1, 1, 12, dtype="float32").reshape(2, 6)
    want = run_legalized(LegalizeOps()(Module), "main", x)
    got = run_lowered(LowerTE("m")(mod), "main", x)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


def test_an_item_of_a_tuple_its_anchor_keeps_stays_outside_the_next_group() -> None:
    # batch_norm (an anchor) returns a tuple; its item 0 cannot join the anchor's group
    # (injective), so it stays a binding, and the clip after it gets a tensor parameter
    @I.ir_module
    class Module:
        @R.function
        def main(
            x: R.Tensor((2, 3, 4, 4), "float32"),
            g: R.Tensor((3,), "float32"),
            mu: R.Tensor((3,), "float32"),
            var: R.Tensor((3,), "float32"),
        ):
            with R.dataflow():
                t = R.nn.batch_norm(x, g, g, mu, var, axis=1)
                y = R.clip(t[0], 0.0, 6.0)
                R.output(y)
            return y

    mod = FuseOps()(Module)
    verify_module(mod)
    assert calls(mod["main"]) == ["fused_batch_norm", "fused_clip"]
    param = fused(mod)["fused_clip"].params[0]
    assert type(param.struct_info).__name__ == "TensorStructInfo"
    rng = np.random.default_rng(0)
    args = [rng.standard_normal((2, 3, 4, 4)).astype("float32") * 4]
    args += [rng.random(3).astype("float32") + 0.5 for _ in range(3)]
    want = run_legalized(LegalizeOps()(Module), "main", *args)
    got = run_lowered(LowerTE("m")(mod), "main", *args)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_a_group_that_only_its_callers_dims_define_takes_them_as_a_shape() -> None:
    @I.ir_module
    class Module:
        @R.function
        def main(x: R.Tensor(("batch", "seq"), "float32")):
            batch = T.int64(is_size_var=True)
            seq = T.int64(is_size_var=True)
            with R.dataflow():
                a = R.arange(R.prim_value(0), R.prim_value(seq), R.prim_value(1), dtype="int64")
                b = R.expand_dims(a, axis=[0])
                c = R.broadcast_to(b, R.shape([batch, seq]))
                d = R.astype(c, "float32")
                R.output(d)
            return d

    mod = FuseOps()(Module)
    verify_module(mod)
    (group,) = fused(mod).values()
    (dims,) = group.params  # no tensor input: the mask-like group reads only batch and seq
    assert [v.name for v in dims.struct_info_.values] == ["seq", "batch"]
    lowered = LowerTE("default", Target("c"))(mod)
    x = np.zeros((3, 5), "float32")
    got = run_lowered(lowered, "main", x)
    np.testing.assert_array_equal(got, np.broadcast_to(np.arange(5, dtype="float32"), (3, 5)))
