"""FoldConstant: weight-only subgraphs evaluated at compile time (in numpy for the operators
that move elements and for float arithmetic, with the kernel's bits; through the host kernel
otherwise), chains in one pass; calls that read a variable, creation operators, integer
arithmetic without a builder and results much bigger than their inputs stay; a function with
nothing to fold is returned as it was."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from kiln import relax
from kiln.driver.pipeline import host_kernel
from kiln.ir import IRModule
from kiln.ir.visitor import pre_order_nodes
from kiln.relax import op as O
from kiln.relax.expr import Call, Constant, Function
from kiln.relax.transform import FoldConstant, Normalize, fold_constant

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
        scaled = bb.emit(O.multiply(relax.const(B), relax.const(np.float32(2.0))))  # numpy
        bias = bb.emit(O.add(bb.emit(O.sum(w)), scaled))  # a kernel (sum)
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


A = relax.const(RNG.standard_normal((4, 8)).astype("float32"))
A2 = relax.const((RNG.standard_normal(8) + 3).astype("float32"))
Q = relax.const(RNG.integers(-128, 128, (4, 8)).astype("int8"))
IDS = relax.const(np.array([[3, -1], [0, 2]], "int64"))
NUMPY_CASES = {
    "add": lambda: O.add(A, A2),
    "subtract": lambda: O.subtract(A, A2),
    "multiply": lambda: O.multiply(A, A2),
    "divide": lambda: O.divide(A, A2),
    "int8-to-float": lambda: O.astype(Q, "float32"),
    "float64-round-trip": lambda: O.astype(O.astype(A, "float64"), "float32"),
    "take": lambda: O.take(A, IDS, 1),
    "gather-elements": lambda: O.gather_elements(Q, relax.const(np.int64([[1, 0, 3, 2]] * 4)), 1),
    "broadcast-to": lambda: O.broadcast_to(A2, [3, 8]),
    "concat": lambda: O.concat([A, A], 0),
    "full": lambda: O.full([2, 3], relax.const(np.int64(7)), "int64"),
}


@pytest.mark.parametrize("case", sorted(NUMPY_CASES))
def test_numpy_folding_gives_the_kernels_bits(case: str, monkeypatch: Any) -> None:
    """Float arithmetic, casts and element moves fold in numpy (no kernel built); the values
    are the bits the operator's host kernel computes."""
    mod = _module(lambda bb: bb.emit(NUMPY_CASES[case]()), [])
    in_numpy = FoldConstant()(mod)  # no builder: numpy only
    assert _ops(in_numpy) == []
    for name in list(fold_constant.EXACT):
        monkeypatch.delitem(fold_constant.EXACT, name)
    by_kernel = FoldConstant(build=host_kernel)(mod)
    assert _ops(by_kernel) == []
    got, want = _constants(in_numpy)[-1], _constants(by_kernel)[-1]
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)


def test_out_of_range_indices_are_left_to_the_kernel() -> None:
    bad = relax.const(np.array([0, 8], "int64"))
    mod = _module(lambda bb: bb.emit(O.take(A, bad, 1)), [])
    assert _ops(FoldConstant()(mod)) == ["relax.take"]


def test_integer_arithmetic_and_float_to_int_casts_are_left_to_the_kernel() -> None:
    i = relax.const(np.arange(6, dtype="int32"))
    f = relax.const(np.float32([1.5, -2.5, 3e9]))

    def body(bb: relax.BlockBuilder) -> object:
        s = bb.emit(O.add(i, i))
        c = bb.emit(O.astype(f, "int32"))
        return bb.emit(O.concat([s, c], 0))

    mod = _module(body, [])
    assert sorted(_ops(FoldConstant()(mod))) == ["relax.add", "relax.astype", "relax.concat"]


def test_a_folded_scalar_stays_a_scalar() -> None:
    x = relax.Var("x", relax.TensorStructInfo([3], "float32"))

    def body(bb: relax.BlockBuilder) -> object:
        s = bb.emit(O.multiply(relax.const(np.float32(2)), relax.const(np.float32(3))))
        return bb.emit(O.add(x, s))

    folded = FoldConstant()(_module(body, [x]))
    (value,) = _constants(folded)
    assert value.shape == () and value == 6


def test_a_widening_cast_of_a_big_weight_folds() -> None:
    """Growth counts elements: int8 to float32 is four times the bytes, the same elements."""
    q = RNG.integers(-128, 128, (256, 512)).astype("int8")  # 128 KiB, above SMALL_BYTES
    x = relax.Var("x", relax.TensorStructInfo([2, 256], "float32"))

    def body(bb: relax.BlockBuilder) -> object:
        return bb.emit(O.matmul(x, bb.emit(O.astype(relax.const(q), "float32"))))

    folded = FoldConstant()(_module(body, [x]))
    assert _ops(folded) == ["relax.matmul"]
    np.testing.assert_array_equal(_constants(folded)[0], q.astype("float32"))
