"""VectorizeLoop: explicit-vector loops become vector statements of the target's width."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import kiln
from kiln import te, tir
from kiln.ir import GlobalVar, IRModule, Target
from kiln.ir.structural import assert_structural_equal
from kiln.script import tir as T
from kiln.tir.transform import FlattenBuffer, VectorizeLoop
from kiln.tir.transform.vectorize_loop import Unsupported, vectorize_loop

HOST_LANES = Target("c").vector_bytes // 4
"""float32 lanes of one vector on this machine."""


def run(func: tir.PrimFunc, target: Target | None = None) -> tir.PrimFunc:
    mod = FlattenBuffer()(IRModule({GlobalVar("main"): func}))
    return VectorizeLoop(target or Target("c"))(mod)[GlobalVar("main").name_hint]


def _flat(func: tir.PrimFunc) -> tir.PrimFunc:
    return FlattenBuffer()(IRModule({GlobalVar("main"): func}))["main"]


def test_unit_stride_loop_becomes_ramp_loads_and_stores() -> None:
    @T.prim_func(private=True)
    def before(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):
        for i in T.vectorized(8, annotations={"pragma_explicit_vector": 1}):
            B[i] = A[i] * T.float32(2.0)

    @T.prim_func(private=True)
    def expected(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):
        B[T.Ramp(0, 1, 8)] = A[T.Ramp(0, 1, 8)] * T.Broadcast(T.float32(2.0), 8)

    assert_structural_equal(run(before), _flat(expected))


def test_plain_vectorized_loops_are_left_to_the_emitter() -> None:
    @T.prim_func
    def before(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):
        for i in T.vectorized(8):
            B[i] = A[i] * T.float32(2.0)

    flat = _flat(before)
    mod = IRModule({GlobalVar("main"): flat})
    assert VectorizeLoop(Target("c"))(mod) is mod  # identity: nothing to do


def test_chunks_follow_the_vector_width() -> None:
    """13 float32 lanes with 16-byte vectors: 4 + 4 + 4 + one scalar statement."""
    i = tir.Var("i", "int32")
    a = tir.decl_buffer((13,), "float32", "A")
    b = tir.decl_buffer((13,), "float32", "B")
    body = tir.BufferStore(b, a[i] + tir.const(1.0, "float32"), (i,))
    loop = tir.For(i, 0, 13, tir.ForKind.VECTORIZED, body)
    stmts = vectorize_loop(loop, vector_bytes=16)
    assert [s.value.dtype.lanes for s in stmts] == [4, 4, 4, 1]
    assert [s.indices[0].base.value for s in stmts[:3]] == [0, 4, 8]
    assert stmts[3].indices[0].value == 12


def test_ramp_index_arithmetic_is_folded() -> None:
    """``(i // 12) * 12 + i % 12`` over 12 lanes is the ramp itself: one vector load."""
    i = tir.Var("i", "int32")
    q, d = tir.decl_buffer((12,), "float32", "Q"), tir.decl_buffer((12,), "float32", "D")
    idx = tir.FloorDiv(i, 12) * 12 + tir.FloorMod(i, 12)
    loop = tir.For(i, 0, 12, tir.ForKind.VECTORIZED, tir.BufferStore(d, q[idx], (i,)))
    first, second = vectorize_loop(loop, vector_bytes=32)  # 8 + 4 lanes
    assert isinstance(first.value.indices[0], tir.Ramp)
    assert isinstance(second.value.indices[0], tir.Ramp)


def test_per_lane_condition_becomes_a_vector_guarded_store() -> None:
    i = tir.Var("i", "int32")
    a, b = tir.decl_buffer((8,), "float32", "A"), tir.decl_buffer((8,), "float32", "B")
    body = tir.IfThenElse(i < 5, tir.BufferStore(b, a[i], (i,)))
    (stmt,) = vectorize_loop(tir.For(i, 0, 8, tir.ForKind.VECTORIZED, body), vector_bytes=32)
    assert isinstance(stmt, tir.IfThenElse) and stmt.condition.dtype.lanes == 8


@pytest.mark.parametrize(
    ("make", "reason"),
    [
        (lambda i, a, b: tir.BufferStore(b, a[0], (0,)), "same address"),
        (
            lambda i, a, b: tir.For(
                tir.Var("k", "int32"), 0, 2, tir.ForKind.SERIAL, tir.BufferStore(b, a[i], (i,))
            ),
            "For statement",
        ),
        (
            lambda i, a, b: tir.BufferStore(b, tir.call_extern("float32", "f", a[i]), (i,)),
            "calls tir.call_extern",
        ),
    ],
    ids=["same-address", "nested-loop", "extern-call"],
)
def test_unsupported_bodies_name_the_reason(make: Any, reason: str) -> None:
    i = tir.Var("i", "int32")
    a, b = tir.decl_buffer((8,), "float32", "A"), tir.decl_buffer((8,), "float32", "B")
    with pytest.raises(Unsupported, match=reason):
        vectorize_loop(tir.For(i, 0, 8, tir.ForKind.VECTORIZED, make(i, a, b)), 32)


def _fallback_func() -> tir.PrimFunc:
    i = tir.Var("i", "int32")
    a, b = tir.decl_buffer((8,), "float32", "A"), tir.decl_buffer((8,), "float32", "B")
    body = tir.BufferStore(b, tir.call_extern("float32", "f", a[i]), (i,))
    ann = {"pragma_explicit_vector": 1}
    loop = tir.For(i, 0, 8, tir.ForKind.VECTORIZED, body, annotations=ann)
    ha, hb = tir.Var("A_h", "handle"), tir.Var("B_h", "handle")
    return tir.PrimFunc((ha, hb), loop, buffer_map={ha: a, hb: b})


def test_fallback_keeps_the_loop_and_says_why_at_debug_level_1(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    func = _fallback_func()
    mod = IRModule({GlobalVar("main"): func})
    monkeypatch.setenv("KILN_DEBUG", "0")
    assert VectorizeLoop(Target("c"))(mod) is mod
    assert capsys.readouterr().err == ""
    monkeypatch.setenv("KILN_DEBUG", "1")
    assert VectorizeLoop(Target("c"))(mod) is mod
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        "kiln: main: explicit-vector loop 'i' stays a scalar 'omp simd' loop: it calls "
        "tir.call_extern"
    ]


def test_a_bound_function_uses_its_own_target() -> None:
    """A kernel bound to CUDA gets 16-byte vectors (4 float32 lanes), whatever the pass got."""
    func = (
        _flat(_eight_lane_copy()).with_attr("target", Target("cuda")).with_attr("calling_conv", 2)
    )
    out = VectorizeLoop(Target("c"))(IRModule({GlobalVar("k"): func}))["k"]
    stores = [n for n in tir_nodes(out.body) if isinstance(n, tir.BufferStore)]
    assert [s.value.dtype.lanes for s in stores] == [4, 4]


def _eight_lane_copy() -> tir.PrimFunc:
    i = tir.Var("i", "int32")
    a, b = tir.decl_buffer((8,), "float32", "A"), tir.decl_buffer((8,), "float32", "B")
    ann = {"pragma_explicit_vector": 1}
    loop = tir.For(i, 0, 8, tir.ForKind.VECTORIZED, tir.BufferStore(b, a[i], (i,)), annotations=ann)
    ha, hb = tir.Var("A_h", "handle"), tir.Var("B_h", "handle")
    return tir.PrimFunc((ha, hb), loop, buffer_map={ha: a, hb: b})


def tir_nodes(stmt: tir.Stmt) -> list[Any]:
    found: list[Any] = []
    tir.post_order_visit(stmt, found.append)
    return found


def test_explicit_vector_kernel_matches_numpy() -> None:
    """Chunks, a ragged last chunk under a per-lane guard, and math calls on vectors, built."""
    rng = np.random.default_rng(0)
    a, b = te.placeholder((5, 37), name="a"), te.placeholder((37,), name="b")
    c = te.compute((5, 37), lambda i, j: tir.exp(a[i, j]) * tir.const(2.0) + b[j], name="c")
    sch = te.create_schedule([c])
    _, ji = sch[c].split(c.op.axis[1], factor=2 * HOST_LANES)
    sch[c].vectorize(ji)
    sch[c].pragma(ji, "explicit_vector")
    mod = kiln.build(te.lower(sch, [a, b, c]))
    src = mod.inspect_source()
    assert "#pragma omp simd" not in src and f"float32x{HOST_LANES}" in src
    av = rng.standard_normal((5, 37)).astype("float32")
    bv = rng.standard_normal(37).astype("float32")
    out = np.zeros((5, 37), "float32")
    mod["main"](av, bv, out)
    np.testing.assert_allclose(out, np.exp(av) * 2 + bv, rtol=1e-6, atol=1e-6)


def test_a_tail_guard_stores_whole_vectors_plainly_and_masks_only_the_last() -> None:
    """``if j * 8 + i < n`` over 8 lanes: ``if j * 8 + 7 < n`` the plain vector store, else the
    masked one (a per-lane store loop in C); decided guards keep one of the two."""
    i, j, n = tir.Var("i", "int32"), tir.Var("j", "int32"), tir.SizeVar("n", "int32")
    a, b = tir.decl_buffer((n,), "float32", "A"), tir.decl_buffer((n,), "float32", "B")
    body = tir.IfThenElse(j * 8 + i < n, tir.BufferStore(b, a[j * 8 + i], (j * 8 + i,)))
    (stmt,) = vectorize_loop(tir.For(i, 0, 8, tir.ForKind.VECTORIZED, body), vector_bytes=32)
    assert isinstance(stmt, tir.IfThenElse) and stmt.condition.dtype.lanes == 1
    assert isinstance(stmt.then_case, tir.BufferStore)  # every lane in: no mask
    assert stmt.else_case.condition.dtype.lanes == 8  # the last vector: masked
    inside = tir.IfThenElse(i < 8, tir.BufferStore(b, a[i], (i,)))
    (plain,) = vectorize_loop(tir.For(i, 0, 8, tir.ForKind.VECTORIZED, inside), vector_bytes=32)
    assert isinstance(plain, tir.BufferStore)
