"""CodeGenC, functions: forward declarations, calls, naming, call_extern, exposed vs private."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

import kiln
from kiln import tir
from kiln.codegen import CodegenError, codegen_c
from kiln.driver import lower
from kiln.ir import GlobalVar, IRModule
from kiln.runtime import DEFAULT_FLAGS
from tests.codegen.helpers import f32, loop, prim_func
from tests.tir.builders import caller_module


def _ret(value: tir.PrimExpr) -> tir.Stmt:
    return tir.Evaluate(tir.call_intrin(value.dtype, "ret", value))


def test_seed_000_subroutine_call() -> None:
    """Seed 000: exposed main calls private subroutine(A_data: T.handle("float32"))."""
    built = kiln.build(caller_module())
    assert built.get_func_names() == ["main"]
    with pytest.raises(KeyError, match="subroutine"):
        built["subroutine"]
    source = built.inspect_source()
    assert source.count("subroutine(float*") == 2, "declaration and definition"
    assert source.count("subroutine(") == 3, "declaration, definition and the call from main"
    a = np.zeros(1, dtype="float32")
    built["main"](a)
    assert a[0] == 42.0


def test_seed_000_written_in_tvmscript() -> None:
    """The seed's test, with only the import line changed."""
    script = pytest.importorskip("kiln.script")
    I, T = script.ir, script.tir  # noqa: N806

    @I.ir_module
    class mod:  # noqa: N801
        @T.prim_func
        def main(A: T.Buffer(1, dtype="float32")):  # noqa: N803
            mod.subroutine(A.data)

        @T.prim_func(private=True)
        def subroutine(A_data: T.handle("float32")):  # noqa: N803
            A = T.decl_buffer(1, dtype="float32", data=A_data)  # noqa: N806
            A[0] = 42.0

    built = kiln.build(mod, target="c")
    func_names = built.get_func_names()
    assert "main" in func_names
    assert "subroutine" not in func_names
    source = built.inspect_source()
    assert source.count("subroutine(float*") == 2
    assert source.count("subroutine(") == 3
    a = np.zeros(1, dtype="float32")
    built["main"](a)
    assert a[0] == 42.0


def test_every_function_is_declared_before_any_definition() -> None:
    source = codegen_c(lower(caller_module()))
    decls = [m.start() for m in re.finditer(r"static int32_t \w+\([^)]*\);", source)]
    defs = [m.start() for m in re.finditer(r"static int32_t \w+\([^)]*\) \{", source)]
    assert len(decls) == 2 and len(defs) == 2
    assert max(decls) < min(defs)


def _keyword_module() -> IRModule:
    """Private functions named like C keywords, a libc function and the caller's locals."""
    names = ("int", "return", "A_data", "i", "expf", "float32x8", "x", "A")
    gvs = {n: GlobalVar(n) for n in names}

    def private(name: str, value: float) -> tir.PrimFunc:
        data = tir.Var("A_data", tir.pointer_to("float32"))
        buf = tir.decl_buffer((9,), "float32", "A", data=data)
        k = names.index(name)
        return tir.PrimFunc((data,), tir.DeclBuffer(buf, tir.BufferStore(buf, f32(value), (k,))))

    def main_body(A: tir.Buffer, x: tir.Var) -> tir.Stmt:
        calls = [tir.Evaluate(tir.Call("int32", gv, (A.data,))) for gv in gvs.values()]
        return loop(1, lambda i: tir.seq(*calls, tir.BufferStore(A, tir.exp(f32(0)), (8,))))

    funcs = {gv: private(name, 10.0 + k) for k, (name, gv) in enumerate(gvs.items())}
    main = prim_func("main", {"A": ((9,), "float32"), "x": "int32"}, main_body)
    return IRModule({GlobalVar("main"): main, **funcs})


def test_private_names_are_made_c_safe() -> None:
    built = kiln.build(_keyword_module())
    source = built.inspect_source()
    for bad in ("int(", "return(", "expf(float*", "float32x8("):
        assert f" {bad}" not in source, bad
    assert "static int32_t A(float* A_data_1);" in source  # `A` is a fine C name; locals yield
    a = np.zeros(9, dtype="float32")
    built["main"](a, 0)
    np.testing.assert_array_equal(a, [10, 11, 12, 13, 14, 15, 16, 17, 1])
    assert built.get_func_names() == ["main"]


def test_mutual_recursion_through_forward_declarations() -> None:
    """is_even / is_odd call each other; both are defined after the exposed caller."""
    ev, od = GlobalVar("is_even"), GlobalVar("is_odd")

    def parity(other: GlobalVar, base: int) -> tir.PrimFunc:
        n = tir.Var("n", "int32")
        recurse = tir.Call("int32", other, (n - 1,))
        body = _ret(tir.if_then_else(n.eq(0), tir.const(base, "int32"), recurse))
        return tir.PrimFunc((n,), body, tir.PrimType("int32"))

    def main_body(A: tir.Buffer) -> tir.Stmt:
        return loop(6, lambda i: tir.BufferStore(A, tir.Call("int32", ev, (i,)), (i,)))

    main = prim_func("main", {"A": ((6,), "int32")}, main_body)
    mod = IRModule({GlobalVar("main"): main, ev: parity(od, 1), od: parity(ev, 0)})
    built = kiln.build(mod)
    a = np.zeros(6, dtype="int32")
    built["main"](a)
    np.testing.assert_array_equal(a, [1, 0, 1, 0, 1, 0])


def test_duplicate_global_symbol_is_an_error() -> None:
    f = prim_func("same", {"A": ((1,), "float32")}, lambda A: tir.BufferStore(A, f32(1), (0,)))
    g = prim_func("same", {"A": ((1,), "float32")}, lambda A: tir.BufferStore(A, f32(2), (0,)))
    mod = IRModule({GlobalVar("f"): f, GlobalVar("g"): g})
    with pytest.raises(CodegenError, match="'f' and 'g' both have global_symbol 'same'"):
        kiln.build(mod)


def test_exposed_function_calls_another_exposed_function() -> None:
    fill_gv = GlobalVar("fill")
    fill = prim_func(
        "fill",
        {"A": ((4,), "float32")},
        lambda A: loop(4, lambda i: tir.BufferStore(A, f32(7), (i,))),
    )
    main = prim_func(
        "main",
        {"A": ((4,), "float32")},
        lambda A: tir.Evaluate(tir.Call("int32", fill_gv, (A.data,))),
    )
    built = kiln.build(IRModule({GlobalVar("main"): main, fill_gv: fill}))
    assert built.get_func_names() == ["main", "fill"]
    for name in ("main", "fill"):
        a = np.zeros(4, dtype="float32")
        built[name](a)
        np.testing.assert_array_equal(a, 7)


def test_scalar_parameters_and_results() -> None:
    sq = prim_func("square", {"x": "float64"}, lambda x: _ret(x * x), ret="float64")
    add = prim_func(
        "add",
        {"a": "int64", "b": "int32"},
        lambda a, b: _ret(a + tir.Cast("int64", b)),
        ret="int64",
    )
    neg = prim_func("negate", {"p": "bool"}, lambda p: _ret(tir.Not(p)), ret="bool")
    built = kiln.build(
        IRModule({GlobalVar("square"): sq, GlobalVar("add"): add, GlobalVar("negate"): neg})
    )
    assert built["square"](1.5) == 2.25
    assert built["square"](3) == 9.0
    assert built["add"](2**40, -5) == 2**40 - 5
    assert built["negate"](True) is False


def test_call_extern_to_in_module_function_adds_no_declaration() -> None:
    gv = GlobalVar("helper")
    data = tir.Var("p", tir.pointer_to("float32"))
    buf = tir.decl_buffer((1,), "float32", "P", data=data)
    helper = tir.PrimFunc((data,), tir.DeclBuffer(buf, tir.BufferStore(buf, f32(5), (0,))))
    main = prim_func(
        "main",
        {"A": ((1,), "float32")},
        lambda A: tir.Evaluate(tir.call_extern("int32", "helper", tir.access_ptr(A, "w"))),
    )
    built = kiln.build(IRModule({GlobalVar("main"): main, gv: helper}))
    source = built.inspect_source()
    assert source.count("helper(float*") == 2
    assert source.count("helper(") == 3
    a = np.zeros(1, dtype="float32")
    built["main"](a)
    assert a[0] == 5


def test_call_extern_to_libm_uses_its_header_declaration() -> None:
    def body(A: tir.Buffer, B: tir.Buffer) -> tir.Stmt:
        return loop(8, lambda i: tir.BufferStore(B, tir.call_extern("float32", "sinf", A[i]), (i,)))

    built = kiln.build(prim_func("sines", {"A": ((8,), "float32"), "B": ((8,), "float32")}, body))
    assert "float sinf(" not in built.inspect_source()
    a = np.linspace(0, 3, 8, dtype="float32")
    b = np.zeros(8, dtype="float32")
    built["sines"](a, b)
    np.testing.assert_allclose(b, np.sin(a), rtol=1e-6)


def test_call_extern_to_outside_c_file_gets_one_typed_declaration(tmp_path: Path) -> None:
    extra = tmp_path / "scale.c"
    extra.write_text(
        "void kiln_test_scale(float* p, int n, float s) {\n"
        "  for (int i = 0; i < n; ++i) p[i] *= s;\n"
        "}\n"
    )

    def body(A: tir.Buffer) -> tir.Stmt:
        call = tir.call_extern("void", "kiln_test_scale", tir.access_ptr(A, "rw"), 4, f32(3))
        twice = tir.call_extern("void", "kiln_test_scale", tir.address_of(A[0]), 4, f32(0.5))
        return tir.seq(tir.Evaluate(call), tir.Evaluate(twice))

    built = kiln.build(
        prim_func("scale", {"A": ((4,), "float32")}, body), flags=(*DEFAULT_FLAGS, str(extra))
    )
    source = built.inspect_source()
    assert source.count("void kiln_test_scale(float*, int32_t, float);") == 1
    a = np.arange(4, dtype="float32")
    built["scale"](a)
    np.testing.assert_array_equal(a, np.arange(4) * 1.5)


def test_call_of_unknown_global_var_is_reported() -> None:
    main = prim_func(
        "main",
        {"A": ((1,), "float32")},
        lambda A: tir.Evaluate(tir.Call("int32", GlobalVar("missing"), (A.data,))),
    )
    with pytest.raises(kiln.errors.VerifyError, match="missing"):
        kiln.build(main)


def test_call_with_wrong_arity_is_reported() -> None:
    gv = GlobalVar("two")
    a, b = tir.Var("a", "int32"), tir.Var("b", "int32")
    two = tir.PrimFunc((a, b), _ret(a + b), tir.PrimType("int32"))
    main = prim_func(
        "main", {"x": "int32"}, lambda x: _ret(tir.Call("int32", gv, (x,))), ret="int32"
    )
    with pytest.raises(CodegenError, match="calls two with 1 argument"):
        kiln.build(IRModule({GlobalVar("main"): main, gv: two}))


def test_errors_in_value_returning_functions_reach_python() -> None:
    """A function returning a value flags its error; serial and parallel callers report it."""
    gv = GlobalVar("checked_sqrt")
    x = tir.Var("x", "float32")
    check = tir.AssertStmt(
        x >= f32(0), tir.StringImm("ValueError: negative input"), _ret(tir.sqrt(x))
    )
    helper = tir.PrimFunc((x,), check, tir.PrimType("float32"))

    def caller(kind: tir.ForKind) -> Callable[..., tir.Stmt]:
        def body(A: tir.Buffer, B: tir.Buffer) -> tir.Stmt:
            return loop(
                8, lambda i: tir.BufferStore(B, tir.Call("float32", gv, (A[i],)), (i,)), kind
            )

        return body

    args = {"A": ((8,), "float32"), "B": ((8,), "float32")}
    funcs = {
        GlobalVar("serial"): prim_func("serial", args, caller(tir.ForKind.SERIAL)),
        GlobalVar("parallel"): prim_func("parallel", args, caller(tir.ForKind.PARALLEL)),
        gv: helper,
    }
    built = kiln.build(IRModule(funcs))
    a = np.arange(8, dtype="float32")
    for name in ("serial", "parallel"):
        b = np.zeros(8, dtype="float32")
        built[name](a, b)
        np.testing.assert_allclose(b, np.sqrt(a), rtol=1e-6)
        with pytest.raises(ValueError, match="negative input"):
            built[name](a - 3, b)


def test_exposed_names_like_entry_parameters() -> None:
    funcs = {
        GlobalVar(n): prim_func(n, {"v": "int32"}, lambda v: _ret(v + 1), ret="int32")
        for n in ("result", "args", "self", "num_args")
    }
    built = kiln.build(IRModule(funcs))
    assert [built[n](1) for n in ("result", "args", "self", "num_args")] == [2, 2, 2, 2]
