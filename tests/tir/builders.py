"""Hand-built TIR used by several tests: non-trivial functions and modules, made fresh each call."""

from __future__ import annotations

from kiln import tir
from kiln.ir import GlobalVar, IRModule


def matmul_relu(n: int = 16) -> tir.PrimFunc:
    """C = relu(A @ B) with nested loops, a let, a scratch accumulator and a math call."""
    a_h, b_h, c_h = tir.Var("A", "handle"), tir.Var("B", "handle"), tir.Var("C", "handle")
    A = tir.decl_buffer((n, n), "float32", "A")
    B = tir.decl_buffer((n, n), "float32", "B")
    C = tir.decl_buffer((n, n), "float32", "C")
    i, j, k = tir.Var("i"), tir.Var("j"), tir.Var("k")
    acc = tir.decl_buffer((1,), "float32", "acc", scope="local")
    zero = tir.const(0.0, "float32")
    scale = tir.Var("scale", "float32")
    update = tir.BufferStore(acc, acc[0] + A[i, k] * B[k, j], (0,))
    inner = tir.seq(
        tir.BufferStore(acc, zero, (0,)),
        tir.For(k, 0, n, tir.ForKind.SERIAL, update),
        tir.LetStmt(
            scale,
            tir.const(1.0, "float32"),
            tir.BufferStore(C, tir.Max(acc[0] * scale, zero), (i, j)),
        ),
    )
    alloc = tir.Allocate(acc.data, "float32", (1,), tir.const(True), tir.DeclBuffer(acc, inner))
    loops = tir.For(i, 0, n, tir.ForKind.PARALLEL, tir.For(j, 0, n, tir.ForKind.SERIAL, alloc))
    return tir.PrimFunc(
        (a_h, b_h, c_h),
        loops,
        buffer_map={a_h: A, b_h: B, c_h: C},
        attrs={"global_symbol": "matmul_relu"},
    )


def caller_module() -> IRModule:
    """Seed 000's shape: exposed ``main`` calls private ``subroutine`` through its GlobalVar."""
    sub_gv = GlobalVar("subroutine")
    a_h = tir.Var("A", "handle")
    A = tir.decl_buffer((1,), "float32", "A")
    main = tir.PrimFunc(
        (a_h,),
        tir.Evaluate(tir.Call("int32", sub_gv, (A.data,))),
        buffer_map={a_h: A},
        attrs={"global_symbol": "main"},
    )
    a_data = tir.Var("A_data", tir.pointer_to("float32"))
    view = tir.decl_buffer((1,), "float32", "A", data=a_data)
    i = tir.Var("i")
    body = tir.DeclBuffer(
        view, tir.For(i, 0, 1, tir.ForKind.SERIAL, tir.BufferStore(view, tir.const(42.0), (i,)))
    )
    sub = tir.PrimFunc((a_data,), body)
    return IRModule({GlobalVar("main"): main, sub_gv: sub})


def symbolic_add() -> tir.PrimFunc:
    """B[i] = A[i] + 1 over a symbolic length n shared by both buffers."""
    n = tir.SizeVar("n")
    a_h, b_h = tir.Var("A", "handle"), tir.Var("B", "handle")
    A = tir.decl_buffer((n,), "float32", "A")
    B = tir.decl_buffer((n,), "float32", "B")
    i = tir.Var("i")
    body = tir.For(
        i, 0, n, tir.ForKind.SERIAL, tir.BufferStore(B, A[i] + tir.const(1.0, "float32"), (i,))
    )
    return tir.PrimFunc(
        (a_h, b_h), body, buffer_map={a_h: A, b_h: B}, attrs={"global_symbol": "add_one"}
    )
