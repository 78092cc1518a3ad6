"""VMShapeLower: a shape heap per function; parameters checked (kind, rank, dtype, every dim,
first use of a symbolic dim stored, later uses asserted); compound dims computed by a generated
shape function and asserted; shapes and prim values made from the heap; match_cast checked."""

# ruff: noqa: F821, F841 - names in R scripts are script variables, not Python names

from __future__ import annotations

from typing import Any

import pytest

from kiln import relax, tir
from kiln.errors import PassError
from kiln.ir import IRModule
from kiln.ir.visitor import pre_order_nodes
from kiln.relax import Call, ExternFunc, PrimValue, ShapeExpr, StringImm
from kiln.relax.analysis import verify_module
from kiln.relax.transform import VMShapeLower
from kiln.runtime.vm_builtins import MakeCode, MatchCode
from kiln.script import ir as I
from kiln.script import relax as R
from kiln.script import tir as T
from kiln.tir import PrimFunc

STORE, LOAD = MatchCode.STORE_TO_HEAP, MatchCode.ASSERT_EQUAL_TO_LOAD
IMM, NOOP = MatchCode.ASSERT_EQUAL_TO_IMM, MatchCode.NO_OP


def builtin_calls(func: Any, short: str) -> list[tuple[Any, ...]]:
    """The arguments of each call of ``vm.builtin.<short>``, as Python values where plain."""
    out = []
    for n in pre_order_nodes(func.body):
        if isinstance(n, Call) and isinstance(n.op, ExternFunc):
            if n.op.global_symbol == f"vm.builtin.{short}":
                out.append(tuple(plain(a) for a in n.args))
    return out


def plain(a: Any) -> Any:
    if isinstance(a, PrimValue):
        return a.value.value
    if isinstance(a, StringImm):
        return a.value
    return a


@I.ir_module
class Inputs:
    @R.function
    def main(
        x: R.Tensor(("n", 16), "float32"),
        y: R.Tensor(("n", "k"), "float32"),
        w: R.Tensor(ndim=2, dtype="float32"),
    ):
        n = T.int64()
        k = T.int64()
        m = T.int64()
        y2 = R.match_cast(y, R.Tensor((n, n * 2), "float32"))
        w2 = R.match_cast(w, R.Tensor((m, m * 3), "float32"))
        z = R.call_packed("my.f", x, y2, w2, sinfo_args=R.Tensor((n, 16), "float32"))
        return z


def test_parameters_are_checked_and_their_dims_stored_then_asserted() -> None:
    out = VMShapeLower()(Inputs)
    verify_module(out)
    main = out["main"]
    checks = [(c[1], c[3]) for c in builtin_calls(main, "check_tensor_info")]
    assert checks == [
        (2, "main: argument x"),
        (2, "main: argument y"),
        (2, "main: argument w"),
        (2, "main: match_cast of y2"),
        (2, "main: match_cast of w2"),
    ]
    matches = [m[2:] for m in builtin_calls(main, "match_shape")]
    slot = {"n": 0, "k": 1, "m": 2, "n * 2": 3, "m * 3": 4}
    assert matches == [
        (2, STORE, slot["n"], IMM, 16, "main: argument x"),
        (2, LOAD, slot["n"], STORE, slot["k"], "main: argument y"),
        # n * 2 was computed right after the parameters: checked at once
        (2, LOAD, slot["n"], LOAD, slot["n * 2"], "main: match_cast of y2"),
        # m * 3 needs m, which this match_cast stores: checked after a shape function
        (2, STORE, slot["m"], NOOP, 0, "main: match_cast of w2"),
        (2, NOOP, 0, LOAD, slot["m * 3"], "main: match_cast of w2"),
    ]
    shape_funcs = [f.script() for f in out.functions.values() if isinstance(f, PrimFunc)]
    assert len(shape_funcs) == 2
    assert "H[T.int64(3)] = H[T.int64(0)] * 2" in shape_funcs[0]
    assert "H[T.int64(4)] = H[T.int64(2)] * 3" in shape_funcs[1]


@I.ir_module
class Outputs:
    @R.function
    def main(x: R.Tensor(("n",), "float32")):
        n = T.int64()
        s = R.shape([n + 1, 4])
        k = R.prim_value(n * 3)
        return (s, k)


def test_shapes_and_prim_values_are_made_from_the_heap() -> None:
    main = VMShapeLower()(Outputs)["main"]
    made = builtin_calls(main, "make_shape")
    assert len(made) == 1 and made[0][1:] == (2, MakeCode.LOAD_SHAPE, 1, MakeCode.USE_IMM, 4)
    values = builtin_calls(main, "make_prim_value")
    assert values[0][1:] == (MakeCode.LOAD_SHAPE, 2)
    values = [b.value for blk in main.body.blocks for b in blk.bindings]
    args = [a for v in values if isinstance(v, Call) for a in v.args]
    assert not [a for a in [*values, *args] if isinstance(a, ShapeExpr) and "n" in str(a)]


@I.ir_module
class Casting:
    @R.function
    def main(x: R.Tensor(ndim=1, dtype="float32")):
        m = T.int64()
        y = R.match_cast(x, R.Tensor((m,), "float32"))
        z = R.call_packed("my.f", y, sinfo_args=R.Tensor((m,), "float32"))
        return z


def test_match_cast_is_checked_and_defines_its_dims() -> None:
    main = VMShapeLower()(Casting)["main"]
    checks = builtin_calls(main, "check_tensor_info")
    assert checks[0][1:] == (1, checks[0][2], "main: argument x")
    assert checks[1][3] == "main: match_cast of y"
    assert builtin_calls(main, "match_shape")[-1][2:] == (1, STORE, 0, "main: match_cast of y")


def test_a_dim_nothing_defines_is_an_error_naming_it() -> None:
    """(Ill-formed IR, which the parser refuses: built by hand.)"""
    m = tir.Var("m", "int64")
    x = relax.Var("x", relax.TensorStructInfo([4], "float32"))
    s = relax.Var("s", relax.ShapeStructInfo([m]))
    body = relax.SeqExpr((relax.BindingBlock((relax.VarBinding(s, relax.ShapeExpr([m])),)),), s)
    mod = IRModule({"main": relax.Function((x,), body).with_attr("global_symbol", "main")})
    with pytest.raises(PassError, match="main uses the symbolic dim m before any argument"):
        VMShapeLower()(mod)


def test_no_symbolic_dims_means_no_heap() -> None:
    @I.ir_module
    class Static:
        @R.function
        def main(x: R.Tensor((2, 3), "float32")):
            return x

    main = VMShapeLower()(Static)["main"]
    assert builtin_calls(main, "alloc_shape_heap") == []
    assert builtin_calls(main, "match_shape")[0][2:] == (2, IMM, 2, IMM, 3, "main: argument x")
