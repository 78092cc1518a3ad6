"""`written_params`: which buffer parameters a function may write (stores, escapes, callees)."""

from __future__ import annotations

from collections.abc import Callable

from kiln import tir
from kiln.ir import GlobalVar, IRModule
from kiln.tir.analysis.writes import written_params
from tests.tir.builders import caller_module, matmul_relu, symbolic_add


def _func(
    body: Callable[[tir.Buffer, tir.Buffer], tir.Stmt], *, scalar: bool = False
) -> tir.PrimFunc:
    """``f(A, B[, x])`` over two float32[8] buffers with ``body(A, B)``."""
    a_h, b_h = tir.Var("A", "handle"), tir.Var("B", "handle")
    A, B = tir.decl_buffer((8,), "float32", "A"), tir.decl_buffer((8,), "float32", "B")
    params = (a_h, b_h, *([tir.Var("x", "int32")] if scalar else []))
    return tir.PrimFunc(params, body(A, B), buffer_map={a_h: A, b_h: B})


def test_stores_are_writes_and_loads_are_not() -> None:
    assert written_params(symbolic_add()) == (False, True)
    assert written_params(matmul_relu()) == (False, False, True)


def test_a_store_into_a_view_writes_the_parameter() -> None:
    def body(A: tir.Buffer, B: tir.Buffer) -> tir.Stmt:
        view = tir.decl_buffer((2, 4), "float32", "V", data=B.data)
        return tir.DeclBuffer(view, tir.BufferStore(view, A[0], (1, 1)))

    assert written_params(_func(body, scalar=True)) == (False, True, False)


def test_access_ptr_write_bit_and_escapes() -> None:
    def read_only(A: tir.Buffer, B: tir.Buffer) -> tir.Stmt:
        return tir.Evaluate(tir.call_extern("int32", "use", tir.access_ptr(A, "r")))

    def read_write(A: tir.Buffer, B: tir.Buffer) -> tir.Stmt:
        return tir.Evaluate(tir.call_extern("int32", "use", tir.access_ptr(B, "rw")))

    def escapes(A: tir.Buffer, B: tir.Buffer) -> tir.Stmt:  # a pointer handed to C code
        return tir.Evaluate(tir.call_extern("int32", "memset", A.data, 0, 32))

    def address(A: tir.Buffer, B: tir.Buffer) -> tir.Stmt:
        return tir.Evaluate(tir.call_extern("int32", "f", tir.address_of(B[2])))

    assert written_params(_func(read_only)) == (False, False)
    assert written_params(_func(read_write)) == (False, True)
    assert written_params(_func(escapes)) == (True, False)
    assert written_params(_func(address)) == (False, True)


def test_calls_of_module_functions_are_followed() -> None:
    mod = caller_module()  # main passes A to subroutine, which stores into it
    assert written_params(mod["main"], mod) == (True,)
    assert written_params(mod["main"]) == (True,)  # without the module: an escape

    reader_gv = GlobalVar("reader")
    a_data = tir.Var("A_data", tir.pointer_to("float32"))
    out_data = tir.Var("O_data", tir.pointer_to("float32"))
    src = tir.decl_buffer((1,), "float32", "A", data=a_data)
    dst = tir.decl_buffer((1,), "float32", "O", data=out_data)
    reader = tir.PrimFunc(
        (a_data, out_data),
        tir.DeclBuffer(src, tir.DeclBuffer(dst, tir.BufferStore(dst, src[0], (0,)))),
    )

    def body(A: tir.Buffer, B: tir.Buffer) -> tir.Stmt:
        return tir.Evaluate(tir.Call("int32", reader_gv, (A.data, B.data)))

    main = _func(body)
    mod = IRModule({GlobalVar("main"): main, reader_gv: reader})
    assert written_params(main, mod) == (False, True)


def test_recursion_assumes_every_pointer_written() -> None:
    gv = GlobalVar("rec")
    a_data = tir.Var("A_data", tir.pointer_to("float32"))
    rec = tir.PrimFunc((a_data,), tir.Evaluate(tir.Call("int32", gv, (a_data,))))
    assert written_params(rec, IRModule({gv: rec})) == (True,)
