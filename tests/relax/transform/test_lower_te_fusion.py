"""FuseOps + LowerTE end to end: a conv2d block becomes one PrimFunc whose C writes the output in
one loop nest, a small model matches numpy, a 200-op graph lowers each distinct primitive once."""

# ruff: noqa: F841 - names in R scripts are script variables, not Python locals

from __future__ import annotations

import re

import numpy as np
import pytest

from kiln import relax
from kiln.codegen.build import generate_c
from kiln.driver.build import lower as lower_tir
from kiln.ir import GlobalVar, IRModule, Target
from kiln.ir.dtype import DataType
from kiln.ir.visitor import pre_order_nodes
from kiln.relax.transform import FuseOps, LowerTE, lower_te
from kiln.script import ir as I
from kiln.script import relax as R
from kiln.tir import PrimFunc
from kiln.tir.stmt import BufferStore
from kiln.topi.x86.cpu import cpu_target, lanes
from tests.relax.transform.lowered import run


@I.ir_module
class ResidualConv:
    @R.function
    def main(
        x: R.Tensor((1, 16, 14, 14), "float32"),
        w: R.Tensor((16, 16, 3, 3), "float32"),
        b: R.Tensor((1, 16, 1, 1), "float32"),
    ):
        with R.dataflow():
            c = R.nn.conv2d(x, w, padding=1)
            a = R.add(c, b)
            y = R.nn.relu(a)
            z = R.add(y, x)
            R.output(z)
        return z


def _conv_ref(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    win = np.lib.stride_tricks.sliding_window_view(xp, (3, 3), axis=(2, 3))
    return np.einsum("nchwij,ocij->nohw", win, w)


def test_conv_bias_relu_residual_is_one_loop_nest_writing_the_output_once() -> None:
    mod = LowerTE("m")(FuseOps()(ResidualConv))
    prims = [(gv, f) for gv, f in mod.items() if isinstance(f, PrimFunc)]
    assert [gv.name_hint for gv, _ in prims] == ["m_fused_conv2d_add_relu_add"]
    prim = prims[0][1]
    out = prim.buffer_map[prim.params[-1]]
    stores = [n for n in pre_order_nodes(prim.body) if isinstance(n, BufferStore)]
    assert sum(s.buffer is out for s in stores) == 1  # the epilogue is in the output's nest
    assert not any(s.buffer.shape == out.shape and s.buffer is not out for s in stores)
    exposed = prim.with_attr("global_symbol", "k")
    source = generate_c(lower_tir(IRModule({GlobalVar("k"): exposed}), "c"), Target("c")).source
    # one store statement (plain or masked) per vector of a 16-wide tile row: 1 with AVX-512,
    # 2 with AVX2
    width = lanes(cpu_target(), DataType.parse("float32"))
    name = f"{out.name}_data"
    stores = re.findall(rf"(\b{name}\[[^;]*\] = |\({name} \+ [^;]*\) = )", source)
    assert len(stores) == 16 // width, stores
    rng = np.random.default_rng(0)
    x, w = (
        rng.standard_normal((1, 16, 14, 14), "float32"),
        rng.standard_normal((16, 16, 3, 3), "float32"),
    )
    bias = rng.standard_normal((1, 16, 1, 1), "float32")
    want = np.maximum(_conv_ref(x, w) + bias, 0) + x
    np.testing.assert_allclose(run(mod, "main", x, w, bias), want, rtol=1e-4, atol=1e-4)


@I.ir_module
class SmallNet:
    @R.function
    def main(
        x: R.Tensor((2, 3, 8, 8), "float32"),
        w: R.Tensor((4, 3, 3, 3), "float32"),
        fc: R.Tensor((10, 256), "float32"),
        fb: R.Tensor((10,), "float32"),
    ):
        with R.dataflow():
            c = R.nn.conv2d(x, w, padding=1)
            r = R.nn.relu(c)
            f = R.reshape(r, R.shape([2, 256]))
            h = R.linear(f, fc, fb)
            g = R.tanh(h)
            m = R.mean(g, axis=1, keepdims=True)
            o = R.subtract(g, m)
            p = R.nn.softmax(o)
            R.output(p)
        return p


def test_small_net_matches_numpy() -> None:
    mod = LowerTE("net")(FuseOps()(SmallNet))
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 3, 8, 8), "float32")
    w = rng.standard_normal((4, 3, 3, 3), "float32") * 0.3
    fc = rng.standard_normal((10, 256), "float32") * 0.1
    fb = rng.standard_normal(10, "float32")
    g = np.tanh(np.maximum(_conv_ref(x, w), 0).reshape(2, 256) @ fc.T + fb)
    o = g - g.mean(axis=1, keepdims=True)
    e = np.exp(o - o.max(axis=1, keepdims=True))
    got = run(mod, "main", x, w, fc, fb)
    np.testing.assert_allclose(got, e / e.sum(axis=1, keepdims=True), rtol=1e-4, atol=1e-6)


UNARY = ["exp", "tanh", "sigmoid", "negative", "abs", "sqrt", "rsqrt", "log", "sin", "cos"]


def graph_200_ops() -> IRModule:
    """50 blocks of matmul -> add or multiply (bias) -> unary -> add(residual): 200 operator
    calls that fuse into 50 primitive functions, 40 of them distinct (unary x width x bias op)."""
    x = relax.Var("x", relax.TensorStructInfo([8, 16], "float32"))
    res = {n: relax.Var(f"r{n}", relax.TensorStructInfo([8, n], "float32")) for n in (16, 32)}
    ws = {n: relax.Var(f"w{n}", relax.TensorStructInfo([16, n], "float32")) for n in (16, 32)}
    bb = relax.BlockBuilder()
    outs = []
    with bb.function("main", [x, *res.values(), *ws.values()]):
        with bb.dataflow():
            for k in range(50):
                n = 16 if (k // 10) % 2 == 0 else 32
                bias_op = relax.op.add if (k // 20) % 2 == 0 else relax.op.multiply
                m = bb.emit(relax.op.matmul(x, ws[n]))
                a = bb.emit(bias_op(m, relax.const(np.full(n, 0.5, "float32"))))
                u = bb.emit(getattr(relax.op, UNARY[k % 10])(a))
                outs.append(bb.emit_output(relax.op.add(u, res[n])))
        bb.emit_func_output(relax.Tuple(tuple(outs)))
    return bb.get()


def test_lowering_200_ops_lowers_each_of_40_distinct_primitives_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # NOTE: work counted, not time (benchmarks/bench_lowering.py times it): 50 fused functions,
    # 40 of them distinct, must reach TE lowering 40 times.
    lowered_names: list[str] = []
    real = lower_te.lower_primitive

    def counting(func, target, name, where):  # noqa: ANN001, ANN202 - same signature as real
        lowered_names.append(name)
        return real(func, target, name, where)

    monkeypatch.setattr(lower_te, "lower_primitive", counting)
    fused = FuseOps()(graph_200_ops())
    lowered = LowerTE("big")(fused)
    prims = [f for _, f in lowered.items() if isinstance(f, PrimFunc)]
    assert sum(1 for _, f in fused.items() if f.get_attr("Primitive")) == 50
    assert len(prims) == 40
    assert len(lowered_names) == 40


@I.ir_module
class SymbolicReductions:
    @R.function
    def main(x: R.Tensor(("n", 64), "float32")):
        with R.dataflow():
            s = R.nn.softmax(x, axis=-1)
            t = R.sum(s, axis=[1])
            R.output(t)
        return t


def test_reductions_over_a_symbolic_batch_lower_and_run() -> None:
    """Reductions whose rows are many lanes wide, with a symbolic row count (int64 indices)."""
    mod = LowerTE("sym")(FuseOps()(SymbolicReductions))
    prims = sorted(gv.name_hint for gv, f in mod.items() if isinstance(f, PrimFunc))
    assert prims == ["sym_fused_softmax", "sym_fused_sum"]
    for n in (1, 6):
        x = np.random.default_rng(n).standard_normal((n, 64)).astype("float32")
        e = np.exp(x - x.max(-1, keepdims=True))
        want = (e / e.sum(-1, keepdims=True)).sum(-1)
        np.testing.assert_allclose(run(mod, "main", x), want, rtol=1e-5)
