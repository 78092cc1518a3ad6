"""FuseAttention: the matmul / scale / mask / softmax / matmul chain of an imported attention
becomes one ``relax.nn.attention`` call (its key permutation folded, its masks one bias) for a
CPU target, runs as one kernel and computes what the chain did (numpy); other scaling orders,
shared intermediates, other softmax axes and other targets are left alone."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import kiln
from kiln import relax
from kiln.ir import IRModule, Target
from kiln.ir.transform import PassContext
from kiln.relax import op as O
from kiln.relax.expr import Call, Function
from kiln.relax.transform import FuseAttention, Normalize

RNG = np.random.default_rng(3)
B, H, S, D = 1, 2, 16, 8
BIAS = RNG.standard_normal((S, S)).astype("float32")
SHAPES = {"q": (B, H, S, D), "k": (B, S, H, D), "v": (B, H, S, D), "keep": (B, 1, 1, S)}


def _tensor(name: str) -> relax.Var:
    dtype = "bool" if name == "keep" else "float32"
    return relax.Var(name, relax.TensorStructInfo(list(SHAPES[name]), dtype))


def graph(scores: Callable[[Any, Any, Any], Any], softmax_axis: int = -1, share: bool = False):
    """main(q, k, v, keep): ``softmax(scores(bb, q @ permute(k), keep)) @ v``; ``share``
    also returns the probabilities."""
    q, k, v, keep = (_tensor(n) for n in SHAPES)
    bb = relax.BlockBuilder()
    with bb.function("main", [q, k, v, keep]):
        with bb.dataflow():
            kt = bb.emit(O.permute_dims(k, [0, 2, 3, 1]))
            s = scores(bb, bb.emit(O.matmul(q, kt)), keep)
            p = bb.emit(O.nn.softmax(s, axis=softmax_axis))
            out = bb.emit(O.matmul(p, v))
            res = bb.emit_output(relax.Tuple([out, p]) if share else out)
        bb.emit_func_output(res)
    return Normalize()(bb.get(), PassContext())


def masked(bb: Any, s: Any, keep: Any) -> Any:
    s = bb.emit(O.divide(s, relax.const(np.float32(np.sqrt(D)))))
    return bb.emit(O.where(keep, relax.const(np.float32(-np.inf)), s))


def biased(bb: Any, s: Any, keep: Any) -> Any:
    s = bb.emit(O.multiply(relax.const(np.float32(0.3)), s))
    masked_s = bb.emit(O.where(keep, relax.const(np.float32(-np.inf)), s))
    return bb.emit(O.add(relax.const(BIAS), masked_s))


def scaled_bias(bb: Any, s: Any, keep: Any) -> Any:
    s = bb.emit(O.add(s, relax.const(np.float32(1.0))))
    return bb.emit(O.multiply(s, relax.const(np.float32(0.5))))


def wider_bias(bb: Any, s: Any, keep: Any) -> Any:
    return bb.emit(O.add(s, relax.const(np.zeros((3, H, S, S), "float32"))))


def ops(mod: IRModule) -> list[str]:
    main = mod["main"]
    assert isinstance(main, Function)
    from kiln.ir.visitor import pre_order_nodes

    return [n.op.name for n in pre_order_nodes(main.body) if isinstance(n, Call)]


def inputs() -> dict[str, np.ndarray]:
    out = {n: RNG.standard_normal(s).astype("float32") for n, s in SHAPES.items() if n != "keep"}
    keep = np.zeros(SHAPES["keep"], bool)
    keep[..., 11:] = True
    return {**out, "keep": keep}


def reference(x: dict[str, np.ndarray], scores: Callable[..., Any]) -> np.ndarray:
    s = scores(x["q"].astype("float64") @ x["k"].transpose(0, 2, 3, 1), x["keep"])
    e = np.exp(s - s.max(-1, keepdims=True))
    return (e / e.sum(-1, keepdims=True)) @ x["v"]


def _run(mod: IRModule, x: dict[str, np.ndarray]) -> np.ndarray:
    return kiln.compile(mod)(*x.values()).numpy()


@pytest.mark.parametrize("scores", [masked, biased], ids=["mask", "bias"])
def test_chain_becomes_one_attention_and_one_kernel(scores) -> None:
    mod = FuseAttention(Target("c"))(graph(scores), PassContext())
    names = ops(mod)
    assert names.count("relax.nn.attention") == 1
    assert "relax.nn.softmax" not in names and "relax.matmul" not in names
    assert names.count("relax.permute_dims") == 1  # the key's, folded into one
    x = inputs()
    want = {
        masked: lambda s, keep: np.where(keep, -np.inf, s / np.sqrt(D)),
        biased: lambda s, keep: np.where(keep, -np.inf, 0.3 * s) + BIAS,
    }[scores]
    np.testing.assert_allclose(_run(graph(scores), x), reference(x, want), rtol=1e-4, atol=1e-5)
    kernels = [r.kernel for r in kiln.compile(graph(scores)).profile(*x.values()).rows]
    assert [k for k in kernels if "attention" in k] and not [k for k in kernels if "softmax" in k]


@pytest.mark.parametrize(
    "build",
    [
        lambda: graph(scaled_bias),  # a scaling outside a bias
        lambda: graph(masked, softmax_axis=2),  # softmax over the query axis
        lambda: graph(masked, share=True),  # the probabilities are also returned
        lambda: graph(wider_bias),  # a bias that broadcasts the scores to a larger shape
    ],
    ids=["scale-outside-bias", "softmax-axis", "shared", "wider-bias"],
)
def test_other_chains_are_left_alone(build) -> None:
    assert "relax.nn.attention" not in ops(FuseAttention(Target("c"))(build(), PassContext()))


def test_other_targets_are_left_alone() -> None:
    mod = graph(masked)
    assert "relax.nn.attention" not in ops(FuseAttention(Target("cuda"))(mod, PassContext()))
