"""FlattenBuffer: N-D accesses become 1-D accesses of the same data pointer."""

from __future__ import annotations

import numpy as np

import kiln
from kiln import tir
from kiln.ir import GlobalVar, IRModule, assert_structural_equal
from kiln.tir.transform import FlattenBuffer


def _run(func: tir.PrimFunc) -> tir.PrimFunc:
    mod = FlattenBuffer()(IRModule({GlobalVar("f"): func}))
    tir.verify_well_formed(mod)
    return mod["f"]  # type: ignore[return-value]


def _copy(A: tir.Buffer, B: tir.Buffer, i: tir.Var, j: tir.Var) -> tir.Stmt:
    inner = tir.For(j, 0, B.shape[1], tir.ForKind.SERIAL, tir.BufferStore(B, A[i, j], (i, j)))
    return tir.For(i, 0, B.shape[0], tir.ForKind.SERIAL, inner)


def _func(body: tir.Stmt, *bufs: tir.Buffer) -> tir.PrimFunc:
    params = tuple(tir.Var(b.name, "handle") for b in bufs)
    return tir.PrimFunc(params, body, buffer_map=dict(zip(params, bufs)))


def test_row_major_index() -> None:
    A = tir.decl_buffer((4, 128), "float32", "A")
    B = tir.decl_buffer((4, 128), "float32", "B")
    i, j = tir.Var("i"), tir.Var("j")
    out = _run(_func(_copy(A, B, i, j), A, B))
    fa = tir.decl_buffer((512,), "float32", "A", data=A.data)
    fb = tir.decl_buffer((512,), "float32", "B", data=B.data)
    flat = i * 128 + j
    expect = tir.For(
        i,
        0,
        4,
        tir.ForKind.SERIAL,
        tir.For(j, 0, 128, tir.ForKind.SERIAL, tir.BufferStore(fb, fa[flat], (flat,))),
    )
    assert_structural_equal(out.body, expect, map_free_vars=True)
    assert out.buffer_map[out.params[0]] is A  # the argument description keeps its N-D buffer


def test_declared_strides_and_offset() -> None:
    s0, off = tir.Var("s0"), tir.Var("off")
    A = tir.decl_buffer((4, 8), "float32", "A", strides=(s0, 1), elem_offset=off)
    B = tir.decl_buffer((4, 8), "float32", "B")
    i, j = tir.Var("i"), tir.Var("j")
    out = _run(_func(_copy(A, B, i, j), A, B))
    load = out.body.body.body.value  # type: ignore[attr-defined]
    # NOTE: s0 and off may be anything: offsets may pass 2**31, so the index is int64
    i64, j64, s64, off64 = (tir.Cast("int64", v) for v in (i, j, s0, off))
    assert_structural_equal(load.indices[0], off64 + i64 * s64 + j64)
    assert load.buffer.strides == () and load.buffer.elem_offset is None


def test_vector_index_stays_a_ramp() -> None:
    A = tir.decl_buffer((4, 8), "float32", "A")
    i = tir.Var("i")
    ramp = tir.Ramp(tir.const(4), 1, 4)
    body = tir.For(
        i,
        0,
        4,
        tir.ForKind.SERIAL,
        tir.BufferStore(A, A[i, ramp] * tir.Broadcast(tir.const(2.0), 4), (i, ramp)),
    )
    out = _run(_func(body, A))
    store = out.body.body  # type: ignore[attr-defined]
    assert_structural_equal(store.indices[0], tir.Ramp(i * 8 + 4, 1, 4))


def test_int64_shapes_make_int64_indices() -> None:
    A = tir.decl_buffer((tir.const(4, "int64"), tir.const(8, "int64")), "float32", "A")
    B = tir.decl_buffer((4, 8), "float32", "B")
    i, j = tir.Var("i"), tir.Var("j")
    out = _run(_func(_copy(A, B, i, j), A, B))
    store = out.body.body.body  # type: ignore[attr-defined]
    assert store.value.indices[0].dtype == "int64"
    assert store.indices[0].dtype == "int32"


def test_buffers_that_may_pass_2_31_elements_are_indexed_in_int64() -> None:
    n = tir.Var("n")
    i, j = tir.Var("i"), tir.Var("j")
    for shape, want in [
        ((32769, 65536), "int64"),
        ((32767, 65536), "int32"),
        ((n, 65536), "int64"),
        ((tir.SizeVar("m"), 2), "int64"),
        ((n,), "int32"),  # 1-D: kept, indexed as written
    ]:
        A = tir.decl_buffer(shape, "int8", "A")
        a = tir.Var("a", "handle")
        body = tir.BufferStore(A, tir.const(1, "int8"), (i, j)[: len(shape)])
        out = _run(tir.PrimFunc((a, i, j), body, buffer_map={a: A}))
        assert out.body.indices[0].dtype == want, shape  # type: ignore[attr-defined]
        assert out.body.buffer.shape[0].dtype == want  # type: ignore[attr-defined]


def test_decl_buffer_declares_the_flat_buffer_and_1d_is_untouched() -> None:
    data = tir.Var("p", tir.pointer_to("float32"))
    view = tir.decl_buffer((2, 3), "float32", "V", data=data)
    body = tir.DeclBuffer(view, tir.BufferStore(view, tir.const(1.0), (1, 2)))
    out = _run(tir.PrimFunc((data,), body))
    assert out.body.buffer.shape[0].value == 6  # type: ignore[attr-defined]
    assert out.body.body.indices[0].value == 5  # type: ignore[attr-defined]
    one_d = tir.decl_buffer((6,), "float32", "W")
    same = _func(tir.BufferStore(one_d, tir.const(1.0), (0,)), one_d)
    mod = IRModule({GlobalVar("f"): same})
    assert FlattenBuffer()(mod) is mod


def test_3d_transpose_end_to_end() -> None:
    A = tir.decl_buffer((2, 3, 4), "float32", "A")
    B = tir.decl_buffer((4, 3, 2), "float32", "B")
    i, j, k = tir.Var("i"), tir.Var("j"), tir.Var("k")
    store = tir.BufferStore(B, A[i, j, k], (k, j, i))
    body = tir.For(
        i,
        0,
        2,
        tir.ForKind.SERIAL,
        tir.For(j, 0, 3, tir.ForKind.SERIAL, tir.For(k, 0, 4, tir.ForKind.SERIAL, store)),
    )
    f = _func(body, A, B).with_attr("global_symbol", "transpose")
    a = np.arange(24, dtype="float32").reshape(2, 3, 4)
    b = np.zeros((4, 3, 2), dtype="float32")
    kiln.build(f)["transpose"](a, b)
    np.testing.assert_array_equal(b, a.transpose(2, 1, 0))


def test_symbolic_dims_nest_the_index_so_a_fused_loop_merges_back() -> None:
    """Rows of (batch, 2, seq, 16) from one fused loop ``f``: ``[f // seq // 2, f // seq % 2,
    f % seq, j]`` is ``f * 16 + j``; the strides' form ``(f // seq // 2) * (seq * 32) +
    (f // seq % 2) * (seq * 16) + ...`` hides the quotient/remainder pairs."""
    seq, batch = tir.SizeVar("seq", "int64"), tir.SizeVar("batch", "int64")
    B = tir.decl_buffer((batch, 2, seq, 16), "float32", "B")
    f, j = tir.Var("f", "int64"), tir.Var("j", "int64")
    q = tir.FloorDiv(f, seq)
    two = tir.IntImm("int64", 2)
    idx = (tir.FloorDiv(q, two), tir.FloorMod(q, two), tir.FloorMod(f, seq), j)
    store = tir.BufferStore(B, tir.FloatImm("float32", 1.0), idx)
    inner = tir.For(j, 0, 16, tir.ForKind.SERIAL, store)
    out = _run(_func(tir.For(f, 0, batch * 2 * seq, tir.ForKind.SERIAL, inner), B))
    (flat,) = [n for n in tir.pre_order_nodes(out.body) if isinstance(n, tir.BufferStore)]
    assert_structural_equal(flat.indices[0], f * 16 + j, map_free_vars=True)
