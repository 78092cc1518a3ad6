"""Numeric checks against numpy: every lowered function runs on the reference TIR interpreter
and, when ``kiln.build`` is available, compiled through the C target (see conftest ``run``)."""

import numpy as np
import pytest

from kiln import te, tir
from kiln.ir import IRModule
from kiln.tir.transform import ThreadSync
from tests.te.tir_interp import run_tir


def _rand(rng, *shape, dtype="float32"):
    return rng.standard_normal(shape).astype(dtype)


def _matmul(n, m, kk, dtype="float32"):
    A = te.placeholder((n, kk), dtype, name="A")
    B = te.placeholder((kk, m), dtype, name="B")
    k = te.reduce_axis((0, kk), name="k")
    C = te.compute((n, m), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    return A, B, C


def test_elementwise_broadcast(run, rng):
    A = te.placeholder((5, 7), name="A")
    b = te.placeholder((7,), name="b")
    C = te.elementwise(lambda x, y: x * y + tir.const(1.0), A, b, name="fma")
    a, bv, c = _rand(rng, 5, 7), _rand(rng, 7), np.zeros((5, 7), "float32")
    run(te.create_prim_func([A, b, C]), a, bv, c)
    np.testing.assert_allclose(c, a * bv + 1, rtol=1e-6)


def test_symbolic_shape_fused_parallel_vectorized(run, rng):
    n, m = te.size_var("n"), te.size_var("m")
    A = te.placeholder((n, m), name="A")
    B = te.compute((n, m), lambda i, j: tir.Max(A[i, j], tir.const(0.0)), name="relu")
    s = te.create_schedule(B)
    fo, fi = s[B].split(s[B].fuse(*B.op.axis), factor=8)
    s[B].parallel(fo)
    s[B].vectorize(fi)
    a, b = _rand(rng, 7, 5), np.zeros((7, 5), "float32")
    run(te.lower(s, [A, B]), a, b)
    np.testing.assert_array_equal(b, np.maximum(a, 0))


def test_reductions_sum_max_min_custom(run, rng):
    A = te.placeholder((6, 9), name="A")
    k = te.reduce_axis((0, 9), name="k")
    sq = te.comm_reducer(lambda x, y: x + y * y, tir.const(0.0), name="sumsq")
    outs = [
        te.compute((6,), lambda i: te.sum(A[i, k], axis=k), name="S"),
        te.compute((6,), lambda i: te.max(A[i, k], axis=k), name="M"),
        te.compute((6,), lambda i: te.min(A[i, k], axis=k), name="N"),
        te.compute((6,), lambda i: te.sum(A[i, k] * A[i, k], axis=k, where=k % 3 > 0), name="W"),
    ]
    a = _rand(rng, 6, 9)
    bufs = [np.zeros(6, "float32") for _ in outs]
    run(te.create_prim_func([A, *outs]), a, *bufs)
    mask = np.arange(9) % 3 > 0
    expect = [a.sum(1), a.max(1), a.min(1), (a[:, mask] ** 2).sum(1)]
    for got, want in zip(bufs, expect):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    assert sq  # the custom combiner below uses a product reducer end to end


def test_custom_product_reducer_and_offset_domain(run, rng):
    A = te.placeholder((4, 8), name="A")
    r = te.reduce_axis((2, 7), name="r")
    prod = te.comm_reducer(lambda x, y: x * y, lambda t: tir.const(1, t), name="prod")
    P = te.compute((4,), lambda i: prod(A[i, r], axis=r), name="P")
    a, p = rng.uniform(0.5, 1.5, (4, 8)).astype("float32"), np.zeros(4, "float32")
    run(te.create_prim_func([A, P]), a, p)
    np.testing.assert_allclose(p, a[:, 2:7].prod(1), rtol=1e-5)


def test_full_reduction_to_scalar_int32(run, rng):
    A = te.placeholder((50,), "int32", name="A")
    k = te.reduce_axis((0, 50), name="k")
    S = te.compute((), lambda: te.sum(A[k], axis=k), name="S")
    a, s = rng.integers(-100, 100, 50).astype("int32"), np.zeros((), "int32")
    run(te.create_prim_func([A, S]), a, s)
    assert int(s) == int(a.sum())


def test_matmul_default_and_float64(run, rng):
    A, B, C = _matmul(6, 5, 7, "float64")
    a, b, c = _rand(rng, 6, 7, dtype="float64"), _rand(rng, 7, 5, dtype="float64"), np.zeros((6, 5))
    run(te.create_prim_func([A, B, C]), a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-12)


def test_matmul_split_reorder_vectorize_parallel_cache_write(run, rng):
    A, B, C = _matmul(30, 23, 17)
    s = te.create_schedule(C)
    CL = s.cache_write(C, "local")
    io, jo, ii, ji = s[C].tile(*C.op.axis, 8, 8)
    s[C].parallel(io)
    s[CL].compute_at(s[C], jo)
    ko, ki = s[CL].split(CL.op.reduce_axis[0], factor=4)
    ci, cj = CL.op.axis
    s[CL].reorder(ko, ci, ki, cj)
    s[CL].vectorize(cj)
    s[CL].unroll(ki)
    a, b, c = _rand(rng, 30, 17), _rand(rng, 17, 23), np.zeros((30, 23), "float32")
    run(te.lower(s, [A, B, C]), a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-5)


def test_matmul_reduction_outside_data_axis(run, rng):
    A, B, C = _matmul(9, 10, 11)
    s = te.create_schedule(C)
    i, j = C.op.axis
    jo, ji = s[C].split(j, nparts=3)
    s[C].reorder(i, jo, C.op.reduce_axis[0], ji)
    a, b, c = _rand(rng, 9, 11), _rand(rng, 11, 10), np.zeros((9, 10), "float32")
    run(te.lower(s, [A, B, C]), a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-5)


def test_cache_read_packed_operand(run, rng):
    A, B, C = _matmul(12, 20, 9)
    s = te.create_schedule(C)
    BP = s.cache_read(B, "global", [C])
    i, j = C.op.axis
    jo, ji = s[C].split(j, factor=8)
    s[C].reorder(jo, i, C.op.reduce_axis[0], ji)
    s[BP].compute_at(s[C], jo)
    s[C].vectorize(ji)
    a, b, c = _rand(rng, 12, 9), _rand(rng, 9, 20), np.zeros((12, 20), "float32")
    run(te.lower(s, [A, B, C]), a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-5)


def test_inlined_elementwise_prologue_then_sum(run, rng):
    n = 1000
    X = te.placeholder((n,), name="X")
    Y = te.compute((n,), lambda i: tir.Max(X[i] * tir.const(2.0) + tir.const(-0.5), 0.0), name="Y")
    k = te.reduce_axis((0, n), name="k")
    S = te.compute((1,), lambda _: te.sum(Y[k], axis=k), name="S")
    s = te.create_schedule(S)
    s[Y].compute_inline()
    x, out = _rand(rng, n), np.zeros(1, "float32")
    run(te.lower(s, [X, S]), x, out)
    np.testing.assert_allclose(out[0], np.maximum(x * 2 - 0.5, 0).sum(), rtol=1e-4)


def test_compute_at_stencil_with_padding(run, rng):
    n = 21
    A = te.placeholder((n,), name="A")
    P = te.compute(
        (n + 2,),
        lambda i: te.if_then_else(tir.And(i >= 1, i <= n), A[i - 1] * tir.const(2.0), 0.0),
        name="P",
    )
    C = te.compute((n,), lambda i: P[i] + P[i + 1] + P[i + 2], name="C")
    s = te.create_schedule(C)
    io, ii = s[C].split(C.op.axis[0], factor=8)
    s[P].compute_at(s[C], io)
    a, c = _rand(rng, n), np.zeros(n, "float32")
    run(te.lower(s, [A, C]), a, c)
    p = np.concatenate([[0], 2 * a, [0]]).astype("float32")
    np.testing.assert_allclose(c, p[:-2] + p[1:-1] + p[2:], rtol=1e-5)


def test_compute_at_reduction_producer_in_tile(run, rng):
    A = te.placeholder((10, 6), name="A")
    k = te.reduce_axis((0, 6), name="k")
    R = te.compute((10,), lambda i: te.sum(A[i, k], axis=k), name="R")
    D = te.compute((10, 4), lambda i, j: R[i] * tir.Cast("float32", j), name="D")
    s = te.create_schedule(D)
    io, ii = s[D].split(D.op.axis[0], factor=3)
    s[R].compute_at(s[D], io)
    a, d = _rand(rng, 10, 6), np.zeros((10, 4), "float32")
    run(te.lower(s, [A, D]), a, d)
    np.testing.assert_allclose(d, a.sum(1)[:, None] * np.arange(4), rtol=1e-5, atol=1e-6)


def test_gpu_style_schedule_runs_on_interpreter(rng):
    n = 32
    A, B, C = _matmul(n, n, n)
    s = te.create_schedule(C)
    AS, BS = s.cache_read(A, "shared", [C]), s.cache_read(B, "shared", [C])
    CL = s.cache_write(C, "local")
    bx, by, tx, ty = s[C].tile(*C.op.axis, 8, 8)
    for axis, tag in ((bx, "blockIdx.x"), (by, "blockIdx.y"), (tx, "threadIdx.x")):
        s[C].bind(axis, tag)
    s[C].bind(ty, "threadIdx.y")
    s[CL].compute_at(s[C], ty)
    ko, ki = s[CL].split(CL.op.reduce_axis[0], factor=8)
    s[AS].compute_at(s[CL], ko)
    s[BS].compute_at(s[CL], ko)
    f = te.lower(s, [A, B, C])
    assert tir.verify_well_formed(f) == []
    a, b, c = _rand(rng, n, n), _rand(rng, n, n), np.zeros((n, n), "float32")
    run_tir(f, a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("shape", [(16, 16, 16), (20, 18, 13)])
def test_cooperative_shared_fetch_runs_on_interpreter(rng, shape):
    n, m, kk = shape
    A, B, C = _matmul(n, m, kk)
    s = te.create_schedule(C)
    CL = s.cache_write(C, "local")
    AS, BS = s.cache_read(A, "shared", [CL]), s.cache_read(B, "shared", [CL])
    bx, by, tx, ty = s[C].tile(*C.op.axis, 8, 8)
    for axis, tag in ((bx, "blockIdx.y"), (by, "blockIdx.x"), (tx, "threadIdx.y")):
        s[C].bind(axis, tag)
    s[C].bind(ty, "threadIdx.x")
    s[CL].compute_at(s[C], ty)
    ko, _ = s[CL].split(CL.op.reduce_axis[0], factor=4)
    for X in (AS, BS):
        s[X].compute_at(s[CL], ko)
        s[X].bind(s[X].op.axis[0], "threadIdx.y")  # 8 x 4 and 4 x 8 tiles on 8 x 8 threads
        s[X].bind(s[X].op.axis[1], "threadIdx.x")
    f = te.lower(s, [A, B, C])
    assert tir.verify_well_formed(f) == []
    f = ThreadSync("shared")(IRModule.from_expr(f, "main"))["main"]
    assert str(f).count("tvm_storage_sync") == 2
    a, b, c = _rand(rng, n, kk), _rand(rng, kk, m), np.zeros((n, m), "float32")
    run_tir(f, a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-4)
