"""OutlineParallelLoops: parallel loop bodies of no-alias functions become private functions."""

from __future__ import annotations

from typing import Any

import numpy as np

import kiln
from kiln import tir
from kiln.ir import GlobalVar, IRModule
from kiln.tir.attrs import NO_ERROR, NOALIAS
from kiln.tir.transform import FlattenBuffer, MakePackedAPI, OutlineParallelLoops
from tests.codegen.helpers import loop, prim_func

ROWS, COLS = 8, 32


def _scale(body_extra: Any = None, noalias: bool = True) -> tir.PrimFunc:
    """``for i in parallel: for j: B[i, j] = A[i, j] * s`` (plus ``body_extra(i)`` per row)."""

    def body(A: Any, B: Any, s: Any) -> tir.Stmt:
        def row(i: tir.Var) -> tir.Stmt:
            inner = loop(COLS, lambda j: tir.BufferStore(B, A[i, j] * s, (i, j)), name="j")
            return tir.seq(inner, body_extra(i)) if body_extra else inner

        return loop(ROWS, row, kind=tir.ForKind.PARALLEL)

    spec = {"A": ((ROWS, COLS), "float32"), "B": ((ROWS, COLS), "float32"), "s": "float32"}
    f = prim_func("main", spec, body)
    return f.with_attr(NOALIAS, True) if noalias else f


def outline(func: tir.PrimFunc) -> IRModule:
    mod = MakePackedAPI()(FlattenBuffer()(IRModule({GlobalVar("main"): func})))
    return OutlineParallelLoops()(mod)


def nodes(stmt: Any) -> list[Any]:
    found: list[Any] = []
    tir.post_order_visit(stmt, found.append)
    return found


def test_body_moves_into_a_noalias_no_error_function() -> None:
    mod = outline(_scale())
    main, helper = mod["main"], mod["main_par"]
    assert helper.get_attr(NOALIAS) and helper.get_attr(NO_ERROR)
    assert not helper.get_attr("global_symbol")  # private
    assert [p.name for p in helper.params] == ["i", "B_data", "A_data", "s"]
    (par,) = [n for n in nodes(main.body) if isinstance(n, tir.For)]
    assert par.kind == tir.ForKind.PARALLEL
    call = par.body.value
    assert isinstance(call, tir.Call) and call.op.name_hint == "main_par"
    assert call.args[0] is par.loop_var
    # the helper owns fresh variables: none of main's appear in it
    main_vars = {n for n in nodes(main.body) if isinstance(n, tir.Var)} | set(main.params)
    assert not main_vars & {n for n in nodes(helper.body) if isinstance(n, tir.Var)}
    assert [n for n in nodes(helper.body) if isinstance(n, tir.BufferStore)]


def test_bodies_that_can_raise_or_functions_without_noalias_stay() -> None:
    def check(i: tir.Var) -> tir.Stmt:
        return tir.AssertStmt(i >= 0, tir.StringImm("bad"), tir.Evaluate(0))

    def big_alloc(i: tir.Var) -> tir.Stmt:
        data = tir.Var("scratch", tir.pointer_to("float32"))
        return tir.Allocate(data, "float32", (8192,), tir.const(True), tir.Evaluate(0))

    for func in (_scale(check), _scale(big_alloc), _scale(noalias=False)):
        mod = MakePackedAPI()(FlattenBuffer()(IRModule({GlobalVar("main"): func})))
        assert OutlineParallelLoops()(mod) is mod


def test_outlined_kernel_matches_numpy() -> None:
    def small_alloc(i: tir.Var) -> tir.Stmt:  # a stack scratch buffer is fine
        data = tir.Var("scratch", tir.pointer_to("float32"))
        buf = tir.decl_buffer((4,), "float32", "scratch", data=data)
        store = tir.BufferStore(buf, tir.Cast("float32", i), (0,))
        return tir.Allocate(data, "float32", (4,), tir.const(True), tir.DeclBuffer(buf, store))

    built = kiln.build(_scale(small_alloc))
    assert "main_par(" in built.inspect_source()
    a = np.random.default_rng(0).standard_normal((ROWS, COLS)).astype("float32")
    b = np.zeros_like(a)
    built["main"](a, b, 1.5)
    np.testing.assert_allclose(b, a * 1.5, rtol=1e-6)
