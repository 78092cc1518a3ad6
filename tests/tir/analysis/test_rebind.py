"""`defined_vars` / `renew_defs`: the variables a statement defines, and a copy defining fresh
ones (LoopPartition's pieces)."""

from __future__ import annotations

from kiln import tir
from kiln.ir import structural_equal
from kiln.tir.analysis.rebind import defined_vars, renew_defs
from kiln.tir.stmt import For, ForKind, LetStmt


def _loop() -> tuple[For, tir.Var, tir.Var, tir.Var, tir.Var]:
    """``for i: for j: let t = i + j + n: B[i] = A[t]`` (``n`` only used)."""
    i, j, t, n = tir.Var("i"), tir.Var("j"), tir.Var("t"), tir.Var("n")
    A, B = tir.decl_buffer((64,), "float32", "A"), tir.decl_buffer((8,), "float32", "B")
    store = tir.BufferStore(B, A[t], (i,))
    inner = For(j, tir.IntImm("int32", 0), tir.IntImm("int32", 4), ForKind.SERIAL,
                LetStmt(t, i + j + n, store))  # fmt: skip
    loop = For(i, tir.IntImm("int32", 0), tir.IntImm("int32", 8), ForKind.SERIAL, inner)
    return loop, i, j, t, n


def test_defined_vars_lists_definitions_in_order_and_not_uses() -> None:
    loop, i, j, t, n = _loop()
    assert defined_vars(loop) == [i, j, t]


def test_renew_defs_with_the_definitions_given_equals_finding_them() -> None:
    loop, i, j, t, n = _loop()
    found, given = renew_defs(loop), renew_defs(loop, defined_vars(loop))
    for copy in (found, given):
        assert structural_equal(copy, loop)
        assert copy.loop_var is not i and copy.body.loop_var is not j
        assert copy.body.body.var is not t
        assert copy.body.body.value.b is n  # a variable only used stays as it is
    assert str(found) == str(given)
