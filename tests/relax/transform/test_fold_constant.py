"""FoldConstant: weight-only subgraphs evaluated at compile time (in numpy for the operators
that move elements, through the host kernel otherwise), chains in one pass; calls that read a
variable, creation operators and results much bigger than their inputs stay; a function with
nothing to fold is returned as it was."""

from __future__ import annotations

import numpy as np

from kiln import relax
from kiln.driver.pipeline import host_kernel
from kiln.ir import IRModule
from kiln.ir.visitor import pre_order_nodes
from kiln.relax import op as O
from kiln.relax.expr import Call, Constant, Function
from kiln.relax.transform import FoldConstant, Normalize

RNG = np.random.default_rng(5)
W = RNG.standard_normal((8, 4, 3, 3)).astype("float32")
B = RNG.standard_normal((8,)).astype("float32")


def _module(body: object, params: list[relax.Var]) -> IRModule:
    bb = relax.BlockBuilder()
    with bb.function("main", params):
        with bb.dataflow():
            out = bb.emit_output(body(bb))  # type: ignore[operator]
        bb.emit_func_output(out)
    return Normalize()(bb.get())


def _ops(mod: IRModule) -> list[str]:
    main = mod["main"]
    assert isinstance(main, Function)
    return [n.op.name for n in pre_order_nodes(main.body) if isinstance(n, Call)]


def _constants(mod: IRModule) -> list[np.ndarray]:
    main = mod["main"]
    assert isinstance(main, Function)
    return [n.data for n in pre_order_nodes(main.body) if isinstance(n, Constant)]


def test_a_chain_of_weight_operators_folds_in_one_pass() -> None:
    x = relax.Var("x", relax.TensorStructInfo([2, 8], "float32"))

    def body(bb: relax.BlockBuilder) -> object:
        w = bb.emit(O.layout_transform(relax.const(W), "OIHW", "OIHW2i4o"))
        w = bb.emit(O.reshape(w, [2, 2, 3, 3 * 2 * 4]))  # numpy moves
        scaled = bb.emit(O.multiply(relax.const(B), relax.const(np.float32(2.0))))  # a kernel
        bias = bb.emit(O.add(bb.emit(O.sum(w)), scaled))
        return bb.emit(O.add(x, bias))

    folded = FoldConstant(build=host_kernel)(_module(body, [x]))
    assert _ops(folded) == ["relax.add"]
    (value,) = _constants(folded)
    blocked = W.reshape(2, 4, 2, 2, 3, 3).transpose(2, 0, 4, 5, 3, 1)
    want = blocked.sum() + 2 * B
    np.testing.assert_allclose(value, want, rtol=2e-3)


def test_without_a_builder_only_element_moves_fold() -> None:
    def body(bb: relax.BlockBuilder) -> object:
        w = bb.emit(O.permute_dims(relax.const(W), [1, 0, 2, 3]))
        return bb.emit(O.nn.relu(w))

    folded = FoldConstant()(_module(body, []))
    assert _ops(folded) == ["relax.nn.relu"]
    np.testing.assert_array_equal(_constants(folded)[0], W.transpose(1, 0, 2, 3))


def test_what_is_left_to_run_time() -> None:
    x = relax.Var("x", relax.TensorStructInfo([8], "float32"))
    small = relax.const(np.ones((1, 8, 1, 1), "float32"))

    def body(bb: relax.BlockBuilder) -> object:
        a = bb.emit(O.add(x, relax.const(B)))  # reads a variable
        z = bb.emit(O.zeros([8], "float32"))  # creation, no tensor argument
        big = bb.emit(O.broadcast_to(small, [1, 8, 256, 256]))  # 64k times its input
        return bb.emit(O.add(bb.emit(O.add(a, z)), bb.emit(O.sum(big, axis=[0, 2, 3]))))

    mod = _module(body, [x])
    folded = FoldConstant(build=host_kernel)(mod)
    assert folded["main"] is mod["main"]
