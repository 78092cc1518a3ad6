"""Decorator entry points: seeds as written in TVM tests, closures, IR shapes, real spans."""

from __future__ import annotations

import inspect

from kiln.ir import GlobalVar, IRModule, assert_structural_equal
from kiln.script import ir as I
from kiln.script import tir as T
from kiln.tir import (
    EQ,
    LE,
    LT,
    Allocate,
    And,
    AttrStmt,
    BufferStore,
    Call,
    DeclBuffer,
    Evaluate,
    For,
    ForKind,
    IntImm,
    LetStmt,
    PointerType,
    PrimFunc,
    PrimType,
    Ramp,
    verify_well_formed,
)
from tests.script.helpers import nodes_without_span, roundtrip


def test_seed000_subroutine_call() -> None:
    @I.ir_module
    class mod:
        @T.prim_func
        def main(A: T.Buffer(1, dtype="float32")):
            mod.subroutine(A.data)

        @T.prim_func(private=True)
        def subroutine(A_data: T.handle("float32")):
            A = T.decl_buffer(1, dtype="float32", data=A_data)
            A[0] = 42.0

    assert isinstance(mod, IRModule)
    main, sub = mod["main"], mod["subroutine"]
    assert main.global_symbol == "main" and sub.global_symbol is None
    call = main.body.value
    assert isinstance(main.body, Evaluate) and isinstance(call, Call)
    assert call.op is mod.get_global_var("subroutine")
    assert str(call.dtype) == "int32"  # a void callee is called as int32, as in TVM
    assert call.args[0] is main.buffer_map[main.params[0]].data
    assert sub.params[0].type_annotation == PointerType(PrimType("float32"))
    assert isinstance(sub.body, DeclBuffer) and sub.body.buffer.data is sub.params[0]
    store = sub.body.body
    assert isinstance(store, BufferStore) and store.value.value == 42.0
    verify_well_formed(mod)
    roundtrip(mod)


def test_seed002_host_and_device_calls() -> None:
    @I.ir_module
    class Module:
        @T.prim_func(private=True)
        def add(a: T.int32, b: T.int32) -> T.int32:
            return a + b

        @T.prim_func
        def main(
            A: T.Buffer((128, 128), "int32"),
            B: T.Buffer((128, 128), "int32"),
            C: T.Buffer((128, 128), "int32"),
        ):
            T.func_attr({"global_symbol": "main"})
            length: T.int32 = Module.add(64, 64)  # Call from host
            for bx in T.thread_binding(length, "blockIdx.x"):
                for tx in T.thread_binding(length, "threadIdx.x"):
                    C[bx, tx] = Module.add(A[bx, tx], B[bx, tx])  # Call from device

    add_gv = Module.get_global_var("add")
    add = Module[add_gv]
    assert add.ret_type == PrimType("int32") and add.is_private
    ret = add.body.value
    assert ret.op.name == "tir.ret" and str(ret.dtype) == "int32"
    let = Module["main"].body
    assert isinstance(let, LetStmt) and let.value.op is add_gv
    outer = let.body
    assert isinstance(outer, For) and outer.kind is ForKind.THREAD_BINDING
    assert outer.thread_binding.thread_tag == "blockIdx.x" and outer.extent is let.var
    inner = outer.body
    assert inner.thread_binding.thread_tag == "threadIdx.x"
    assert inner.body.value.op is add_gv
    roundtrip(Module)


def test_closure_values_from_enclosing_scope() -> None:
    n, dtype, scale = 16, "float16", 3

    def helper(x):  # a Python function called while parsing
        return x * T.float16(2)

    @T.prim_func
    def func(A: T.Buffer((n,), dtype)):
        for i in range(n // 2):
            A[i] = helper(A[i]) + T.float16(scale)

    buf = func.buffer_map[func.params[0]]
    assert buf.shape[0].value == 16 and str(buf.dtype) == "float16"
    assert func.body.extent.value == 8
    roundtrip(func)


def test_closure_cells_and_module_class() -> None:
    def make(rows: int, name: str) -> IRModule:
        @I.ir_module
        class Module:
            @T.prim_func
            def main(A: T.Buffer((rows,), "int32")):
                for i in range(rows):
                    A[i] = Module.ident(i)
                T.call_extern("int32", name)

            @T.prim_func(private=True)
            def ident(x: T.int32) -> T.int32:
                return x + rows

        return Module

    mod = make(5, "done")
    body = mod["main"].body
    assert body.seq[0].extent.value == 5
    assert body.seq[1].value.args[0].value == "done"
    assert mod["ident"].body.value.args[0].b.value == 5
    roundtrip(mod)


def test_private_function_has_no_global_symbol() -> None:
    @T.prim_func(private=True)
    def hidden(n: T.int32):
        T.evaluate(n)

    @T.prim_func
    def shown(n: T.int32):
        T.evaluate(n)

    assert hidden.global_symbol is None and "global_symbol" not in hidden.attrs
    assert shown.global_symbol == "shown"
    assert "@T.prim_func(private=True)" in hidden.script()
    roundtrip(hidden)


def test_prim_func_in_a_plain_class_parses_on_access() -> None:
    class Cases:
        @T.prim_func
        def before(A: T.Buffer((4,), "float32")):
            A[0] = T.float32(1)

    assert isinstance(Cases.before, PrimFunc)
    assert Cases.before is Cases().before  # parsed once
    roundtrip(Cases.before)


def test_constructs_build_the_documented_ir() -> None:
    @T.prim_func
    def shapes(A: T.Buffer((16,), "float32"), i: T.int64, n: T.int32):
        tx = T.launch_thread("threadIdx.x", 8)
        S = T.alloc_buffer((8,), "float32", scope="shared")
        V = T.decl_buffer((4, 4), "float32", data=A.data)
        S[tx] = A[tx] if len("ab") == 2 else A[0]
        V[0, 0] = T.if_then_else(n == 1, S[0], S[1])
        A[T.Cast("int32", i + 1)] = T.Cast("float32", 0 <= n < 4)

    attr = shapes.body
    assert isinstance(attr, AttrStmt) and attr.attr_key == "thread_extent"
    iv = attr.node
    assert iv.thread_tag == "threadIdx.x" and iv.dom.extent.value == 8 and iv.dom.min.value == 0
    alloc = attr.body
    assert isinstance(alloc, Allocate) and isinstance(alloc.body, DeclBuffer)
    assert alloc.buffer_var is alloc.body.buffer.data and alloc.body.buffer.scope == "shared"
    decl = alloc.body.body
    assert (
        isinstance(decl, DeclBuffer)
        and decl.buffer.data is shapes.buffer_map[shapes.params[0]].data
    )
    stores = decl.body.seq
    assert isinstance(stores[1].value.args[0], EQ)
    index = stores[2].indices[0].value
    assert isinstance(index.b, IntImm) and str(index.b.dtype) == "int64"  # 1 takes i's dtype
    chained = stores[2].value.value
    assert isinstance(chained, And) and isinstance(chained.a, LE) and isinstance(chained.b, LT)
    roundtrip(shapes)


def test_slices_are_ramps() -> None:
    @T.prim_func
    def vec(A: T.Buffer((16,), "float32")):
        A[0:4] = A[4:8]

    store = vec.body
    assert isinstance(store.indices[0], Ramp) and store.indices[0].lanes == 4
    assert str(store.value.dtype) == "float32x4"


def test_spans_point_into_this_file() -> None:
    @T.prim_func
    def spanned(A: T.Buffer((4,), "float32")):
        A[0] = T.float32(1)  # the store

    lines, start = inspect.getsourcelines(test_spans_point_into_this_file)
    store_line = start + next(i for i, t in enumerate(lines) if "# the store" in t)
    assert spanned.span.source_name == __file__
    assert spanned.body.span.line == store_line and spanned.body.span.column == 9
    assert spanned.body.value.span.column == 16
    assert nodes_without_span(spanned) == []


def test_module_equal_to_hand_written_text() -> None:
    @I.ir_module
    class Module:
        @T.prim_func
        def main(A: T.Buffer((8,), "float32")):
            for i in range(8):
                A[i] = A[i] * T.float32(2)

    import kiln.script

    text = """
@I.ir_module
class Other:
    @T.prim_func
    def main(B: T.Buffer((8,), "float32")):
        for j in T.serial(0, 8):
            B[j] = B[j] * 2.0
"""
    assert_structural_equal(Module, kiln.script.from_source(text))
    assert isinstance(Module.get_global_var("main"), GlobalVar)
