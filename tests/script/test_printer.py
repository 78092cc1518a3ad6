"""The printer on IR built by hand (as passes build it): names, literals, scopes, str()."""

from __future__ import annotations

import kiln.script
from kiln.ir import GlobalVar, IRModule
from kiln.tir import (
    Add,
    Allocate,
    AssertStmt,
    AttrStmt,
    BufferStore,
    Call,
    DeclBuffer,
    Evaluate,
    FloatImm,
    For,
    ForKind,
    IntImm,
    IterKind,
    IterVar,
    LetStmt,
    PrimFunc,
    PrimType,
    Range,
    SeqStmt,
    StringImm,
    Var,
    decl_buffer,
    seq,
)
from kiln.tir.expr import Let
from tests.script.helpers import roundtrip

I32 = "int32"


def _func(params, body, buffer_map=None, attrs=None, ret=None) -> PrimFunc:
    attrs = {"global_symbol": "main"} if attrs is None else attrs
    kw = {"ret_type": ret} if ret is not None else {}
    return PrimFunc(tuple(params), body, buffer_map=buffer_map or {}, attrs=attrs, **kw)


def test_same_named_variables_get_unique_names() -> None:
    n = Var("n", I32)
    a = decl_buffer((16,), "int32", "A")
    pa = Var("A", "handle")
    i1, i2, i3 = Var("i", I32), Var("i", I32), Var("i", I32)
    inner = For(i3, 0, 4, ForKind.SERIAL, BufferStore(a, i1 + i3, (i3,)))
    body = seq(
        For(i1, 0, n, ForKind.SERIAL, inner),
        For(i2, 0, n, ForKind.SERIAL, BufferStore(a, i2, (i2,))),
    )
    f = _func([pa, n], body, {pa: a})
    text = f.script()
    assert "for i, i_1 in T.grid(n, 4):" in text and "A[i_1] = i + i_1" in text
    assert "for i_2 in range(n):" in text
    roundtrip(f)


def test_awkward_names_become_identifiers() -> None:
    v1, v2, v3 = Var("threadIdx.x", I32), Var("for", I32), Var("T", I32)
    body = LetStmt(v1, 1, LetStmt(v2, v1 + 1, LetStmt(v3, v2, Evaluate(v3))))
    text = _func([], body).script()
    assert (
        "threadIdx_x: T.int32 = 1" in text and "for_1: T.int32" in text and "T_1: T.int32" in text
    )
    roundtrip(_func([], body))


def test_scoped_statements_in_the_middle_of_a_block() -> None:
    a = decl_buffer((8,), "float32", "A")
    pa = Var("A", "handle")
    x = Var("x", "float32")
    tx = Var("tx", I32)
    iv = IterVar(
        Range(IntImm(PrimType(I32).dtype, 0), IntImm(PrimType(I32).dtype, 8)),
        tx,
        IterKind.THREAD_INDEX,
        "threadIdx.x",
    )
    tmp = decl_buffer((4,), "float32", "tmp", scope="local")
    store = BufferStore(a, FloatImm("float32", 1.0), (0,))
    body = SeqStmt(
        (
            LetStmt(x, a[1], BufferStore(a, x, (2,))),
            AttrStmt(iv, "thread_extent", IntImm(tx.dtype, 8), BufferStore(a, a[tx], (tx,))),
            AssertStmt(x.dtype.is_float, StringImm("same"), store),
            Allocate(tmp.data, tmp.dtype, tmp.shape, IntImm("bool", 1), DeclBuffer(tmp, store)),
            DeclBuffer(decl_buffer((2, 4), "float32", "V", data=a.data), store),
            store,
        )
    )
    f = _func([pa], body, {pa: a})
    text = f.script()
    assert "with T.LetStmt(A[1], var=x):" in text
    assert "with T.launch_thread(tx, 8):" in text
    assert "with T.Assert(" in text
    assert 'with T.alloc_buffer((4,), "float32", scope="local") as tmp:' in text
    assert "with T.decl_buffer((2, 4)" in text
    roundtrip(f, verify=False)


def test_global_symbol_and_attribute_order_survive() -> None:
    body = Evaluate(IntImm("int32", 0))
    f = _func([], body, attrs={"target": "c", "global_symbol": "main", "n": 3})
    assert 'T.func_attr({"target": "c", "global_symbol": "main", "n": 3})' in f.script()
    roundtrip(f)
    odd = _func([], body, attrs={"global_symbol": "not-an-identifier"})
    assert "def main()" in odd.script()
    roundtrip(odd)


def test_module_with_a_call_by_global_var_and_free_variables() -> None:
    gv = GlobalVar("helper")
    x = Var("x", "float32")
    helper = PrimFunc((x,), Evaluate(Call(x.dtype, "tir.ret", (x * 2.0,))), PrimType("float32"))
    m = Var("m", I32)  # free: nothing defines it
    main = _func([], Evaluate(Call("float32", gv, (FloatImm("float32", 1.0), m))))
    mod = IRModule({GlobalVar("main"): main, gv: helper})
    text = mod.script()
    assert text.startswith("# from kiln.script import ir as I, tir as T")
    assert "m = T.int32()" in text and "Module.helper(T.float32(1.0), m)" in text
    assert "def helper(x: T.float32) -> T.float32:" in text and "return x * 2.0" in text
    again = kiln.script.from_source(text, check_well_formed=False)
    from kiln.ir import assert_structural_equal

    assert_structural_equal(mod, again, map_free_vars=True)


def test_literals_carry_types_where_python_would_differ() -> None:
    i64, f16 = Var("k", "int64"), Var("h", "float16")
    p = kiln.script.script
    assert p(i64 + 1) == "k + 1"
    assert p(Add(IntImm("int64", 1), IntImm("int64", 2))) == "T.int64(1) + 2"
    assert p(h := f16 * 0.5) == "h * 0.5" and h.b.dtype == f16.dtype
    assert p(IntImm("int32", 7)) == "7" and p(IntImm("int64", 7)) == "T.int64(7)"
    assert p(IntImm("bool", 1)) == "True" and p(FloatImm("float32", 2.0)) == "T.float32(2.0)"
    assert p(FloatImm("float32", float("inf"))) == 'T.float32("inf")'
    assert p(IntImm("uint64", 0)) == "T.uint64(0)"
    assert p(StringImm('a "q"\n')) == '"a \\"q\\"\\n"'


def test_str_of_statements_expressions_and_let() -> None:
    a = decl_buffer((4,), "float32", "A")
    i = Var("i", I32)
    loop = For(i, 0, 4, ForKind.VECTORIZED, BufferStore(a, a[i] + 1.0, (i,)))
    text = str(loop)  # the undeclared buffer and its pointer are declared first
    assert text.endswith("for i in T.vectorized(4):\n    A[i] = A[i] + 1.0\n")
    assert 'A = T.Buffer((4,), "float32", data=A_data)' in text
    assert str(a[i] * 2.0) == "A[i] * 2.0"
    x = Var("x", I32)
    assert str(Let(x, i + 1, x * x)) == "T.Let(x * x, where={x: i + 1})"
    assert repr(a) == str(a) or str(a) == "A"


def test_bare_statement_printing_declares_free_variables() -> None:
    n = Var("n", I32)
    text = str(Evaluate(Call("int32", "tir.call_extern", (StringImm("f"), n))))
    assert text == 'n = T.int32()\nT.call_extern("int32", "f", n)\n'


def test_calls_breaking_their_dtype_rule_use_call_intrin() -> None:
    n = Var("n", I32)
    odd = Call("float32", "tir.likely", (n < 3,))
    assert str(odd) == 'T.call_intrin("float32", "tir.likely", n < 3)'
    f = _func([n], Evaluate(odd))
    roundtrip(f, verify=False)
