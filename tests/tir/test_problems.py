"""Hand-built invalid IR is a `VerifyError` naming the node (and `kiln.build` checks it first), not
a C compiler error, wrong code or garbage; valid neighbours of each case still pass."""

from __future__ import annotations

import pytest

import kiln
from kiln import tir
from kiln.errors import IRError, IRValueError, VerifyError
from kiln.ir import DataType, GlobalVar, IRModule


def _func(body_of, shape=(16,), dtype="float32", ret=None) -> tir.PrimFunc:
    a_h = tir.Var("A", "handle")
    A = tir.decl_buffer(shape, dtype, "A")
    ret_type = tir.PrimType(ret) if ret else tir.VOID
    return tir.PrimFunc(
        (a_h,), body_of(A), ret_type, buffer_map={a_h: A}, attrs={"global_symbol": "f"}
    )


def _fails(func: tir.PrimFunc, needle: str) -> str:
    with pytest.raises(VerifyError, match=needle) as info:
        tir.verify_well_formed(func)
    with pytest.raises(VerifyError, match=needle):  # the build verifies its input first
        kiln.build(func)
    return str(info.value)


def _store(A, index, value=None):
    return tir.BufferStore(A, value if value is not None else tir.const(1.0), (index,))


@pytest.mark.parametrize("index", [-1, 16, 100_000])
def test_constant_index_out_of_bounds(index: int) -> None:
    text = _fails(_func(lambda A: _store(A, tir.const(index))), f"index {index} is out of bounds")
    assert "BufferStore 'A'" in text and "valid indices are 0 to 15" in text
    _fails(_func(lambda A: _store(A, 0, A[tir.const(index)])), f"index {index} is out of bounds")


def test_vector_index_out_of_bounds_and_valid_neighbours() -> None:
    ramp = tir.Ramp(tir.const(14), tir.const(1), 4)
    _fails(_func(lambda A: _store(A, ramp, A[ramp])), "index 17 is out of bounds")
    ok = tir.Ramp(tir.const(12), tir.const(1), 4)
    assert tir.verify_well_formed(_func(lambda A: _store(A, ok, A[ok]))) == []
    assert tir.verify_well_formed(_func(lambda A: _store(A, 15, A[tir.const(0)]))) == []


def test_out_of_bounds_in_a_later_dimension() -> None:
    f = _func(lambda A: tir.BufferStore(A, tir.const(0.0), (1, 4)), shape=(2, 4))
    _fails(f, "index 4 is out of bounds for dimension 1 of buffer 'A'")


def test_store_lanes_differ_from_value_lanes() -> None:
    idx = tir.Ramp(tir.const(0), tir.const(1), 4)

    def body(A):
        load = A[tir.Ramp(tir.const(0), tir.const(1), 8)]
        return tir.BufferStore(A, load, (idx,))

    _fails(_func(body), "stores a float32x8 value .8 lanes. where the index of buffer 'A'")


def test_vector_index_before_the_last() -> None:
    def body(A):
        return tir.BufferStore(A, tir.const(0.0), (tir.Ramp(tir.const(0), tir.const(1), 2), 0))

    _fails(_func(body, shape=(2, 4)), "index 0 of buffer 'A' is a vector")


@pytest.mark.parametrize("amount", [-1, 32, 40])
def test_shift_by_out_of_range_constant(amount: int) -> None:
    def body(A):
        shift = tir.Call("int32", "tir.shift_left", (A[0], tir.const(amount)))
        return _store(A, 1, shift)

    _fails(_func(body, dtype="int32"), f"shift left of a int32 value by {amount}")
    with pytest.raises(IRValueError, match=f"by {amount}"):
        tir.Var("x") << amount


def test_shift_in_range_is_fine() -> None:
    f = _func(lambda A: _store(A, 1, (A[0] << 31) >> tir.const(0)), dtype="int32")
    assert tir.verify_well_formed(f) == []


def test_negative_allocation() -> None:
    def body(A):
        p = tir.Var("p", tir.PointerType(tir.PrimType("float32")))
        return tir.Allocate(p, "float32", (tir.const(-4),), tir.const(True), _store(A, 0))

    _fails(_func(body), "allocation 'p' has a negative dimension -4")
    with pytest.raises(IRValueError, match="cannot be negative, got -4"):
        tir.decl_buffer((-4,), "float32", "B")


def test_void_buffer_and_string_shape() -> None:
    with pytest.raises(IRValueError, match="dtype void"):
        tir.decl_buffer((4,), "void", "B")
    with pytest.raises(IRError, match="every extent must be an integer, got 'a'"):
        tir.decl_buffer(("a",), "float32", "B")
    p = tir.Var("p", tir.PointerType(tir.PrimType("float32")))
    void = tir.Buffer(p, DataType.parse("void"), (tir.const(4),), name="V")
    _fails(_func(lambda A: tir.DeclBuffer(void, _store(A, 0))), "buffer 'V' has dtype void")


def test_return_type_without_return() -> None:
    _fails(_func(lambda A: _store(A, 0), ret="int32"), "can end without returning")
    ret = tir.Evaluate(tir.Call("int32", "tir.ret", (tir.const(1),)))
    one_branch = tir.IfThenElse(tir.const(True), ret)
    _fails(_func(lambda A: one_branch, ret="int32"), "can end without returning")
    loop = tir.For(tir.Var("i"), 0, 4, tir.ForKind.SERIAL, ret)
    _fails(_func(lambda A: loop, ret="int32"), "can end without returning")
    both = tir.IfThenElse(tir.const(True), ret, ret)
    assert tir.verify_well_formed(_func(lambda A: tir.seq(_store(A, 0), both), ret="int32")) == []


def test_void_function_in_a_module_still_needs_no_return() -> None:
    f = _func(lambda A: _store(A, 0))
    assert tir.verify_well_formed(IRModule({GlobalVar("f"): f})) == []
