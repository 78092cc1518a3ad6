"""Simplify: kiln.arith over every function body; in the default pipeline, visible in the C."""

from __future__ import annotations

import re

import numpy as np

import kiln
from kiln import te, tir, topi
from kiln.ir import GlobalVar, IRModule, assert_structural_equal
from kiln.tir.transform import MakePackedAPI, Simplify


def _func(body: tir.Stmt, *bufs: tir.Buffer, symbol: str | None = None) -> tir.PrimFunc:
    params = tuple(tir.Var(b.name, "handle") for b in bufs)
    attrs = {"global_symbol": symbol} if symbol else {}
    return tir.PrimFunc(params, body, buffer_map=dict(zip(params, bufs)), attrs=attrs)


def _run(func: tir.PrimFunc, *passes: object) -> tir.PrimFunc:
    mod = IRModule({GlobalVar("f"): func})
    for p in (*passes, Simplify()):
        mod = p(mod)  # type: ignore[operator]
    tir.verify_well_formed(mod)
    return mod["f"]  # type: ignore[return-value]


def test_a_fused_loop_index_folds_under_loop_bounds() -> None:
    A = tir.decl_buffer((65536,), "float32", "A")
    B = tir.decl_buffer((65536,), "float32", "B")
    f, i = tir.Var("f"), tir.Var("i")
    index = (f // 64) * 1024 + ((f % 64) * 16 + i)
    store = tir.BufferStore(B, A[index], (index,))
    body = tir.For(f, 0, 4096, tir.ForKind.SERIAL, tir.For(i, 0, 16, tir.ForKind.SERIAL, store))
    out = _run(_func(body, A, B))
    new = out.body.body.body  # type: ignore[attr-defined]
    assert_structural_equal(new.indices[0], i + f * 16)
    assert_structural_equal(new.value.indices[0], i + f * 16)
    assert out.body.loop_var is f  # binders keep their identity


def test_a_function_with_nothing_to_simplify_is_the_same_object() -> None:
    A = tir.decl_buffer((16,), "float32", "A")
    i = tir.Var("i")
    func = _func(tir.For(i, 0, 16, tir.ForKind.SERIAL, tir.BufferStore(A, A[i], (i,))), A)
    mod = IRModule({GlobalVar("f"): func})
    assert Simplify()(mod) is mod


def test_decided_conditions_go_and_entry_dimensions_are_non_negative() -> None:
    n = tir.Var("n")
    A = tir.decl_buffer((n,), "float32", "A")
    i = tir.Var("i")
    store = tir.BufferStore(A, A[i] + tir.const(1.0), (i,))
    guarded = tir.IfThenElse(i < 16, tir.IfThenElse(n >= 0, store))  # both always hold
    body = tir.For(i, 0, tir.Min(n, 16), tir.ForKind.SERIAL, guarded)
    out = _run(_func(body, A, symbol="f"), MakePackedAPI())
    assert isinstance(out.body.body, tir.BufferStore)  # type: ignore[attr-defined]


def test_values_near_the_int32_limits_are_kept() -> None:
    # max(0, (v - 2**30) * -31 // 128 * -1) for v in [2**30, 2**30 + 64): the linear form
    # v*-31 + 31*2**30 overflows int32, so it must not be used (the value at 2**30 + 40 is 10)
    B = tir.decl_buffer((64,), "int32", "B")
    v = tir.Var("v")
    k = tir.const(2**30)
    value = tir.Max(tir.const(0), ((v - k) * -31) // 128 * -1)
    body = tir.For(v, k, tir.const(64), tir.ForKind.SERIAL, tir.BufferStore(B, value, (v - k,)))
    got = np.zeros(64, "int32")
    kiln.build(_func(body, B, symbol="near"))["near"](got)
    want = np.maximum(0, -((np.arange(64) * -31) // 128))
    assert got[40] == 10
    np.testing.assert_array_equal(got, want)


def _main_body(src: str) -> str:
    """The typed function's definition in emitted C (helpers and the entry cut away)."""
    start = src.index("static int32_t main_1(")
    start = src.index("{", src.index(")", start))
    return src[start : src.index("TVM_FFI_DLL_EXPORT", start)]


def host_lanes() -> int:
    """float32 values in one vector of the host target (the default schedules' width)."""
    from kiln.ir.dtype import DataType
    from kiln.topi.x86.cpu import cpu_target, lanes

    return lanes(cpu_target(), DataType.parse("float32"))


def test_topi_elementwise_index_is_simplified_in_the_emitted_c() -> None:
    x = te.placeholder((64, 1024), name="x")
    y = topi.exp(topi.add(x, 1.0))
    mod = kiln.build(te.lower(topi.schedule_for(y), [x, y]))
    body = _main_body(mod.inspect_source())
    # was: floordiv(f, 64) * 1024 + (floormod(f, 64) * 16 + i)
    assert "kiln_floordiv" not in body and "kiln_floormod" not in body
    width = host_lanes()  # the vector width of the host (8 with AVX2, 16 with AVX-512)
    assert re.search(rf"T_exp_data\[\(\w+ \+ \(\w+ \* {width}\)\)\]", body), body
    a = np.random.default_rng(0).standard_normal((64, 1024)).astype("float32")
    out = np.zeros_like(a)
    mod["main"](a, out)
    np.testing.assert_allclose(out, np.exp(a + 1), rtol=1e-5)


def test_topi_transpose_store_index_is_simplified_in_the_emitted_c() -> None:
    x = te.placeholder((4, 8, 16, 32), name="x")
    y = topi.transpose(x, (0, 2, 3, 1))
    mod = kiln.build(te.lower(topi.schedule_for(y), [x, y]))
    body = _main_body(mod.inspect_source())
    # was: floordiv(floordiv(f * 2 + floordiv(i, 8), 32), 16) * 4096 + ...
    width = host_lanes()
    assert re.search(rf"T_transpose_data\[\(\(\w+ \* {width}\) \+ \w+\)\]", body), body
    a = np.arange(4 * 8 * 16 * 32, dtype="float32").reshape(4, 8, 16, 32)
    out = np.zeros((4, 16, 32, 8), "float32")
    mod["main"](a, out)
    np.testing.assert_array_equal(out, a.transpose(0, 2, 3, 1))


def test_topi_pooling_drops_guards_it_can_prove() -> None:
    x = te.placeholder((1, 16, 32, 32), name="x")
    y = topi.nn.max_pool2d(x, (3, 3), (2, 2), (1, 1))
    mod = kiln.build(te.lower(topi.schedule_for(y), [x, y]))
    body = _main_body(mod.inspect_source())
    # was: if (floormod(floordiv(f, 16), 16) >= 0 && ... < 16) around the window, and
    # out[floormod(floordiv(f, 16), 16) * 256 + floormod(f, 16) * 16 + i]
    assert "kiln_floordiv" not in body
    a = np.random.default_rng(1).standard_normal((1, 16, 32, 32)).astype("float32")
    out = np.zeros((1, 16, 16, 16), "float32")
    mod["main"](a, out)
    padded = np.pad(a, ((0, 0), (0, 0), (1, 1), (1, 1)), constant_values=-np.inf)
    windows = np.lib.stride_tricks.sliding_window_view(padded, (3, 3), axis=(2, 3))
    np.testing.assert_array_equal(out, windows[:, :, ::2, ::2].max(axis=(-1, -2)))
