"""CodeGenC, statements: vectors, loop kinds, allocation, asserts, while, packed calls."""

from __future__ import annotations

import numpy as np
import pytest
import tvm_ffi

import kiln
from kiln import tir
from kiln.codegen import CodegenError, codegen_c
from kiln.driver import lower
from kiln.ir import GlobalVar, IRModule
from kiln.runtime import Module
from tests.codegen.helpers import f32, loop, prim_func

F32x8 = {"A": ((64,), "float32"), "B": ((64,), "float32"), "C": ((64,), "float32")}


def _vadd(A: tir.Buffer, B: tir.Buffer, C: tir.Buffer) -> tir.Stmt:
    """C[8i:8i+8] = A[...] + 2 * B[...] with Ramp loads/stores and a Broadcast."""

    def body(i: tir.Var) -> tir.Stmt:
        idx = tir.Ramp(i * 8, 1, 8)
        return tir.BufferStore(C, A[idx] + B[idx] * tir.Broadcast(f32(2), 8), (idx,))

    return loop(8, body)


def _vgather(A: tir.Buffer, B: tir.Buffer, C: tir.Buffer) -> tir.Stmt:
    """Transposing gather, vector select / max / exp / cast, scattered store."""

    def body(i: tir.Var) -> tir.Stmt:
        x = A[tir.Ramp(i, 8, 8)]
        big = x > tir.Broadcast(f32(0.5), 8)
        y = tir.Select(big, tir.exp(x), tir.Max(x, tir.Broadcast(f32(0.25), 8)))
        ints = tir.Cast("float32x8", tir.Cast("int32x8", x * tir.Broadcast(f32(10), 8)))
        return tir.seq(
            tir.BufferStore(B, y, (tir.Ramp(i * 8, 1, 8),)),
            tir.BufferStore(C, ints, (tir.Ramp(i, 8, 8),)),
        )

    return loop(8, body)


def _par_vec_unroll(A: tir.Buffer, B: tir.Buffer, C: tir.Buffer) -> tir.Stmt:
    def row(i: tir.Var) -> tir.Stmt:
        def col(j: tir.Var) -> tir.Stmt:
            k = i * 8 + j
            return tir.BufferStore(C, A[k] * B[k] + tir.Cast("float32", i), (k,))

        return loop(8, col, tir.ForKind.VECTORIZED, "j")

    unrolled = loop(
        4, lambda u: tir.BufferStore(C, C[u] + f32(100), (u,)), tir.ForKind.UNROLLED, "u"
    )
    return tir.seq(loop(8, row, tir.ForKind.PARALLEL), unrolled)


def _masks(A: tir.Buffer, B: tir.Buffer, C: tir.Buffer, M: tir.Buffer) -> tir.Stmt:
    idx = tir.Ramp(0, 1, 8)
    stored = tir.BufferStore(M, A[idx] > B[idx], (idx,))
    back = tir.BufferStore(C, tir.Select(M[idx], A[idx], B[idx]), (idx,))
    return tir.seq(stored, back)


KERNELS = {
    "vadd": prim_func("vadd", F32x8, _vadd),
    "vgather": prim_func("vgather", F32x8, _vgather),
    "loops": prim_func("loops", F32x8, _par_vec_unroll),
    "masks": prim_func("masks", {**F32x8, "M": ((8,), "bool")}, _masks),
}


@pytest.fixture(scope="module")
def vec() -> Module:
    return kiln.build(IRModule({GlobalVar(k): f for k, f in KERNELS.items()}))


RNG = np.random.default_rng(0)
A = RNG.random(64, dtype="float32")
B = RNG.random(64, dtype="float32")


def test_vector_ramp_and_broadcast(vec: Module) -> None:
    c = np.zeros(64, dtype="float32")
    vec["vadd"](A, B, c)
    np.testing.assert_allclose(c, A + 2 * B, rtol=1e-6)
    assert "typedef float float32x8 __attribute__((vector_size(32)));" in vec.inspect_source()


def test_vector_gather_select_cast_scatter(vec: Module) -> None:
    b, c = np.zeros(64, dtype="float32"), np.zeros(64, dtype="float32")
    vec["vgather"](A, b, c)
    g = A.reshape(8, 8).T.reshape(-1)
    np.testing.assert_allclose(b, np.where(g > 0.5, np.exp(g), np.maximum(g, 0.25)), rtol=1e-6)
    np.testing.assert_array_equal(c, np.trunc(A * 10).astype("float32"))


def test_vector_masks_to_and_from_bool_memory(vec: Module) -> None:
    c, m = np.zeros(64, dtype="float32"), np.zeros(8, dtype="bool")
    vec["masks"](A, B, c, m)
    np.testing.assert_array_equal(m, A[:8] > B[:8])
    np.testing.assert_array_equal(c[:8], np.where(A[:8] > B[:8], A[:8], B[:8]))


def test_parallel_vectorized_unrolled_loops(vec: Module) -> None:
    c = np.zeros(64, dtype="float32")
    vec["loops"](A, B, c)
    want = A * B + np.repeat(np.arange(8, dtype="float32"), 8)
    want[:4] += 100
    np.testing.assert_allclose(c, want, rtol=1e-6)
    source = vec.inspect_source()
    assert "#pragma omp parallel for" in source
    assert "#pragma omp simd" in source
    assert "#pragma GCC unroll 4" in source


# -- allocation, asserts, while ------------------------------------------------------------------


def _scratch(A: tir.Buffer, B: tir.Buffer, n: tir.Var) -> tir.Stmt:
    """Per row: a stack scratch of 8 floats and a heap scratch of n floats; assert inside."""

    def row(i: tir.Var) -> tir.Stmt:
        small = tir.decl_buffer((8,), "float32", "small", scope="local")
        big = tir.decl_buffer((n,), "float32", "big")
        fill = loop(
            n, lambda j: tir.BufferStore(big, A[i] * tir.Cast("float32", j), (j,)), name="j"
        )
        total = loop(n, lambda j: tir.BufferStore(small, small[0] + big[j], (0,)), name="k")
        check = tir.AssertStmt(
            small[0] < f32(1e10),
            tir.StringImm("ValueError: row sum too large"),
            tir.BufferStore(B, small[0], (i,)),
        )
        body = tir.seq(tir.BufferStore(small, f32(0), (0,)), fill, total, check)
        inner = tir.Allocate(big.data, "float32", (n,), tir.const(True), tir.DeclBuffer(big, body))
        return tir.Allocate(
            small.data, "float32", (8,), tir.const(True), tir.DeclBuffer(small, inner)
        )

    return loop(16, row, tir.ForKind.PARALLEL)


def _collatz(A: tir.Buffer, B: tir.Buffer) -> tir.Stmt:
    """B[i] = number of Collatz steps of A[i], with a While loop over a local scratch."""

    def body(i: tir.Var) -> tir.Stmt:
        s = tir.decl_buffer((2,), "int32", "s", scope="local")
        x, steps = s[0], s[1]
        odd = tir.FloorMod(x, 2).eq(1)
        step = tir.seq(
            tir.IfThenElse(
                odd, tir.BufferStore(s, x * 3 + 1, (0,)), tir.BufferStore(s, x // 2, (0,))
            ),
            tir.BufferStore(s, steps + 1, (1,)),
        )
        work = tir.seq(
            tir.BufferStore(s, A[i], (0,)),
            tir.BufferStore(s, tir.const(0, "int32"), (1,)),
            tir.While(x > 1, step),
            tir.BufferStore(B, steps, (i,)),
        )
        return tir.Allocate(s.data, "int32", (2,), tir.const(True), tir.DeclBuffer(s, work))

    return loop(16, body)


def _plain_assert(A: tir.Buffer) -> tir.Stmt:
    return tir.AssertStmt(A[0] > f32(0), tir.StringImm("A[0] must be positive"), tir.Evaluate(0))


@pytest.fixture(scope="module")
def stmts() -> Module:
    funcs = {
        "scratch": prim_func(
            "scratch", {"A": ((16,), "float32"), "B": ((16,), "float32"), "n": "int32"}, _scratch
        ),
        "collatz": prim_func("collatz", {"A": ((16,), "int32"), "B": ((16,), "int32")}, _collatz),
        "positive": prim_func("positive", {"A": ((1,), "float32")}, _plain_assert),
    }
    return kiln.build(IRModule({GlobalVar(k): f for k, f in funcs.items()}))


def test_stack_and_heap_scratch_in_parallel_loop(stmts: Module) -> None:
    a = np.arange(16, dtype="float32")
    b = np.zeros(16, dtype="float32")
    stmts["scratch"](a, b, 5000)
    np.testing.assert_allclose(b, a * (5000 * 4999 / 2), rtol=1e-4)
    source = stmts.inspect_source()
    assert "float small_data_storage[8] __attribute__((aligned(64)));" in source
    assert "float* restrict small_data = small_data_storage;" in source
    assert "kiln_alloc(" in source and "free(big_data);" in source


def test_assert_in_parallel_loop_raises_and_frees(stmts: Module) -> None:
    a = np.arange(16, dtype="float32") * 1e4
    b = np.zeros(16, dtype="float32")
    with pytest.raises(ValueError, match="row sum too large"):
        stmts["scratch"](a, b, 5000)
    # the error path frees the heap scratch before leaving the iteration
    error_path = stmts.inspect_source().split('kiln_raise("ValueError", "row sum too large");')[1]
    assert error_path.split("goto")[0].count("free(big_data);") == 1
    stmts["scratch"](np.ones(16, dtype="float32"), b, 10)  # still usable afterwards
    np.testing.assert_allclose(b, 45)


def test_assert_default_kind_is_runtime_error(stmts: Module) -> None:
    with pytest.raises(RuntimeError, match="A\\[0\\] must be positive"):
        stmts["positive"](np.zeros(1, dtype="float32"))
    stmts["positive"](np.ones(1, dtype="float32"))


def test_while_if_then_else(stmts: Module) -> None:
    a = np.arange(1, 17, dtype="int32")
    b = np.zeros(16, dtype="int32")
    stmts["collatz"](a, b)

    def steps(x: int) -> int:
        n = 0
        while x > 1:
            x = 3 * x + 1 if x % 2 else x // 2
            n += 1
        return n

    np.testing.assert_array_equal(b, [steps(int(x)) for x in a])


def test_vectorized_loop_with_an_exit_drops_omp_simd() -> None:
    def body(A: tir.Buffer) -> tir.Stmt:
        check = tir.AssertStmt(
            A[0] > f32(0), tir.StringImm("bad"), tir.BufferStore(A, f32(1), (0,))
        )
        return loop(4, lambda i: check, tir.ForKind.VECTORIZED)

    source = codegen_c(lower(prim_func("f", {"A": ((4,), "float32")}, body)))
    assert "#pragma GCC ivdep" in source and "#pragma omp simd" not in source


# -- packed calls --------------------------------------------------------------------------------


@tvm_ffi.register_global_func("kiln_test.add")
def _add(a: float, b: float) -> float:
    return a + b


@tvm_ffi.register_global_func("kiln_test.fail")
def _fail(x: int) -> None:
    raise IndexError(f"kiln_test.fail got {x}")


def test_call_packed_and_cpacked() -> None:
    sq = prim_func(
        "square",
        {"x": "float64"},
        lambda x: tir.Evaluate(tir.call_intrin("float64", "ret", x * x)),
        ret="float64",
    )

    def body(A: tir.Buffer, x: tir.Var) -> tir.Stmt:
        add = tir.call_packed("kiln_test.add", f32(1.5), tir.const(2.0, "float32"), dtype="float32")
        cp = tir.call_cpacked("square", tir.Cast("float64", x), dtype="float64")
        fail = tir.IfThenElse(x > 5, tir.Evaluate(tir.call_packed("kiln_test.fail", x)))
        loop_add = loop(4, lambda i: tir.BufferStore(A, A[i] + add, (i,)), tir.ForKind.PARALLEL)
        return tir.seq(loop_add, tir.BufferStore(A, tir.Cast("float32", cp), (3,)), fail)

    main = prim_func("main", {"A": ((4,), "float32"), "x": "int32"}, body)
    built = kiln.build(IRModule({GlobalVar("square"): sq, GlobalVar("main"): main}))
    a = np.zeros(4, dtype="float32")
    built["main"](a, 3)
    np.testing.assert_array_equal(a, [3.5, 3.5, 3.5, 9.0])
    with pytest.raises(IndexError, match="kiln_test.fail got 7"):
        built["main"](a, 7)
    assert built.inspect_source().count("TVMFFIFunctionGetGlobal") == 1


def test_call_packed_of_unregistered_function() -> None:
    f = prim_func("f", {"x": "int32"}, lambda x: tir.Evaluate(tir.call_packed("kiln_test.nope", x)))
    with pytest.raises(RuntimeError, match="no global function kiln_test.nope"):
        kiln.build(f)["f"](1)


# -- GPU-only constructs -------------------------------------------------------------------------


def test_gpu_constructs_are_rejected_clearly() -> None:
    tx = tir.IterVar(None, tir.Var("tx"), tir.IterKind.THREAD_INDEX, "threadIdx.x")
    v = tir.Var("i")
    bound = tir.For(v, 0, 4, tir.ForKind.THREAD_BINDING, tir.Evaluate(0), thread_binding=tx)
    f = prim_func("f", {"A": ((4,), "float32")}, lambda A: bound)
    with pytest.raises(CodegenError, match="bound to a GPU thread"):
        codegen_c(lower(f))
    shared = tir.decl_buffer((4,), "float32", "sh", scope="shared")
    alloc = tir.Allocate(shared.data, "float32", (4,), tir.const(True), tir.Evaluate(0))
    with pytest.raises(CodegenError, match="scope 'shared'"):
        codegen_c(lower(prim_func("g", {"A": ((4,), "float32")}, lambda A: alloc)))
