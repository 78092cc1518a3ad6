"""MakePackedAPI: typed signatures for every function, an ordered check plan for exposed ones."""

from __future__ import annotations

import pytest

from kiln import tir
from kiln.errors import KilnError
from kiln.ir import GlobalVar, IRModule
from kiln.tir.attrs import PACKED_API as ATTR
from kiln.tir.transform import DimCheck, MakePackedAPI, PackedAPI
from tests.tir.builders import caller_module, symbolic_add


def _run(mod: IRModule) -> IRModule:
    out = MakePackedAPI()(mod)
    tir.verify_well_formed(out)
    return out


def test_exposed_function_gets_typed_params_and_a_plan() -> None:
    f = symbolic_add()
    A, B = (f.buffer_map[p] for p in f.params)
    n = A.shape[0]
    out = _run(IRModule({GlobalVar("add_one"): f}))["add_one"]
    assert out.params == (A.data, B.data, n)
    assert len(out.buffer_map) == 0
    assert out.global_symbol == "add_one"
    api = out.get_attr(ATTR)
    assert isinstance(api, PackedAPI)
    assert [a.name for a in api.args] == ["A", "B"]
    assert api.compact == (0, 1)
    assert api.checks == (
        DimCheck(0, "shape", 0, n, binds=True),
        DimCheck(1, "shape", 0, n, binds=False),
    )
    assert api.typed_params == out.params


def test_private_function_with_buffer_map_takes_data_pointers() -> None:
    mod = caller_module()
    main = mod["main"]
    A = main.buffer_map[main.params[0]]
    out = _run(mod)
    assert out["main"].params == (A.data,)
    assert out["subroutine"] is mod["subroutine"]  # already typed: unchanged


def test_scalar_params_bind_dims_and_expressions_are_checked_last() -> None:
    x = tir.Var("x")
    a_h, b_h = tir.Var("A", "handle"), tir.Var("B", "handle")
    A = tir.decl_buffer((x, 4), "float32", "A")
    B = tir.decl_buffer((x * 2,), "float32", "B")
    f = tir.PrimFunc(
        (x, a_h, b_h), tir.Evaluate(0), buffer_map={a_h: A, b_h: B}, attrs={"global_symbol": "f"}
    )
    api = _run(IRModule({GlobalVar("f"): f}))["f"].get_attr(ATTR)
    assert api.dims == ()
    assert [(c.arg, c.axis, c.binds) for c in api.checks] == [
        (1, 0, False),
        (1, 1, False),
        (2, 0, False),
    ]
    assert api.args[0].buffer is None and api.args[0].param is x


def test_element_counts_are_checked_where_the_index_type_may_not_reach() -> None:
    n, m = tir.Var("n"), tir.Var("m")
    bufs = {
        "A": tir.decl_buffer((n * m,), "int8", "A"),  # 1-D, int32 index, n * m may pass 2**31
        "B": tir.decl_buffer((n, m), "int8", "B"),  # flattened in int64
        "C": tir.decl_buffer((n,), "int8", "C"),  # n fits int32
        "D": tir.decl_buffer((1024, 1024), "int8", "D"),  # constant: the shape check is exact
    }
    handles = [tir.Var(name, "handle") for name in bufs]
    f = tir.PrimFunc(
        (n, m, *handles),
        tir.Evaluate(0),
        buffer_map=dict(zip(handles, bufs.values())),
        attrs={"global_symbol": "f"},
    )
    api = _run(IRModule({GlobalVar("f"): f}))["f"].get_attr(ATTR)
    assert [(api.args[c.arg].name, str(c.index_dtype), c.limit) for c in api.counts] == [
        ("A", "int32", 2**31 - 1)
    ]


def test_undeterminable_symbolic_var_is_an_error() -> None:
    n = tir.Var("n")
    a_h = tir.Var("A", "handle")
    A = tir.decl_buffer((n * 2,), "float32", "A")
    f = tir.PrimFunc((a_h,), tir.Evaluate(0), buffer_map={a_h: A}, attrs={"global_symbol": "f"})
    with pytest.raises(KilnError, match="f: cannot determine n from the arguments"):
        MakePackedAPI()(IRModule({GlobalVar("f"): f}))


def test_private_function_with_unprovided_dims_is_an_error() -> None:
    n = tir.Var("n")
    a_h = tir.Var("A", "handle")
    A = tir.decl_buffer((n,), "float32", "A")
    f = tir.PrimFunc((a_h,), tir.Evaluate(0), buffer_map={a_h: A})
    with pytest.raises(KilnError, match="symbolic dimension\\(s\\) n that no parameter provides"):
        MakePackedAPI()(IRModule({GlobalVar("helper"): f}))


def test_declared_strides_are_bound_not_required_compact() -> None:
    s0 = tir.Var("s0")
    a_h = tir.Var("A", "handle")
    A = tir.decl_buffer((4, 4), "float32", "A", strides=(s0, 1))
    f = tir.PrimFunc((a_h,), tir.Evaluate(0), buffer_map={a_h: A}, attrs={"global_symbol": "f"})
    api = _run(IRModule({GlobalVar("f"): f}))["f"].get_attr(ATTR)
    assert api.compact == ()
    assert DimCheck(0, "strides", 0, s0, binds=True) in api.checks
    assert api.dims == (s0,)


def test_running_twice_changes_nothing() -> None:
    once = MakePackedAPI()(IRModule({GlobalVar("add_one"): symbolic_add()}))
    assert MakePackedAPI()(once)["add_one"] is once["add_one"]


def test_plan_lists_written_arguments_and_noalias_pairs() -> None:
    """Outputs come from the body (stores); a noalias function checks each pair with an output,
    not the pair of two inputs."""
    n = 4
    handles = [tir.Var(name, "handle") for name in "ABC"]
    A, B, C = (tir.decl_buffer((n,), "float32", h.name) for h in handles)
    i = tir.Var("i")
    body = tir.For(i, 0, n, tir.ForKind.SERIAL, tir.BufferStore(C, A[i] + B[i], (i,)))
    x = tir.Var("x", "int32")
    f = tir.PrimFunc(
        (*handles, x), body, buffer_map=dict(zip(handles, (A, B, C))), attrs={"global_symbol": "f"}
    )
    plain = _run(IRModule({GlobalVar("f"): f}))["f"].get_attr(ATTR)
    assert plain.writes == (2,) and plain.overlaps == ()
    noalias = _run(IRModule({GlobalVar("f"): f.with_attr("tir.noalias", True)}))["f"]
    assert noalias.get_attr(ATTR).overlaps == ((0, 2), (1, 2))


def test_writes_follow_calls_into_module_functions() -> None:
    api = _run(caller_module())["main"].get_attr(ATTR)
    assert api.writes == (0,)  # main only passes A on; subroutine stores into it
