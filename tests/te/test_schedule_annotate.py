"""parallel / vectorize / unroll / bind / pragma: loop kinds in the lowered TIR, and errors."""

import pytest

from kiln import te, tir
from kiln.errors import IRError, IRValueError
from tests.te.tir_text import loop_summary, loops, show


def _matmul(n=8):
    A = te.placeholder((n, n), name="A")
    B = te.placeholder((n, n), name="B")
    k = te.reduce_axis((0, n), name="k")
    C = te.compute((n, n), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    return A, B, C, k, te.create_schedule(C)


def _lower(s, args):
    f = te.lower(s, args)
    assert tir.verify_well_formed(f) == [], show(f)
    return f


def _err(fn, *needles):
    with pytest.raises((IRError, IRValueError)) as e:
        fn()
    for n in needles:
        assert n in str(e.value), str(e.value)


def test_loop_kinds():
    A, B, C, k, s = _matmul()
    i, j = C.op.axis
    jo, ji = s[C].split(j, factor=4)
    s[C].reorder(i, jo, k, ji)
    s[C].parallel(i)
    s[C].unroll(k)
    s[C].vectorize(ji)
    f = _lower(s, [A, B, C])
    assert loop_summary(f) == [
        ("i", 8, "parallel"),
        ("j_outer", 2, "serial"),
        ("j_inner_init", 4, "vectorized"),
        ("k", 8, "unroll"),
        ("j_inner", 4, "vectorized"),
    ]


def test_repeating_the_same_kind_is_allowed():
    A, B, C, k, s = _matmul()
    s[C].parallel(C.op.axis[0])
    s[C].parallel(C.op.axis[0])
    assert loop_summary(_lower(s, [A, B, C]))[0][2] == "parallel"


def test_unroll_reduction_axis_allowed():
    A, B, C, k, s = _matmul(4)
    s[C].unroll(k)
    assert loop_summary(_lower(s, [A, B, C]))[-1] == ("k", 4, "unroll")


def test_bind_threads():
    A, B, C, k, s = _matmul(64)
    bx, tx = s[C].split(C.op.axis[0], factor=32)
    s[C].bind(bx, "blockIdx.x")
    s[C].bind(tx, te.thread_axis("threadIdx.x"))
    f = _lower(s, [A, B, C])
    outer, inner = loops(f)[:2]
    assert outer.kind is tir.ForKind.THREAD_BINDING
    assert outer.thread_binding.thread_tag == "blockIdx.x"
    assert outer.thread_binding.var is outer.loop_var
    assert outer.thread_binding.dom.extent.value == 2
    assert inner.thread_binding.thread_tag == "threadIdx.x"


def test_pragma_becomes_loop_annotation():
    A, B, C, k, s = _matmul()
    s[C].pragma(C.op.axis[0], "auto_unroll_max_step", 16)
    s[C].pragma(C.op.axis[0], "pragma_debug", "x")
    f = _lower(s, [A, B, C])
    ann = dict(loops(f)[0].annotations)
    assert ann == {"pragma_auto_unroll_max_step": 16, "pragma_debug": "x"}


def test_vectorize_reduction_axis_rejected():
    A, B, C, k, s = _matmul()
    _err(lambda: s[C].vectorize(k), "vectorize", "'k'", "reduction axis", "race")
    _err(lambda: s[C].parallel(k), "parallel", "reduction axis")
    _err(lambda: s[C].bind(k, "threadIdx.x"), "bind", "reduction axis")


def test_vectorize_split_reduction_part_rejected():
    A, B, C, k, s = _matmul()
    ko, ki = s[C].split(k, factor=4)
    _err(lambda: s[C].vectorize(ki), "'k_inner'", "reduction axis")


def test_vectorize_non_constant_extent_rejected_when_lowering():
    n = te.size_var("n")
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i], name="B")
    s = te.create_schedule(B)
    s[B].vectorize(B.op.axis[0])
    _err(lambda: te.lower(s, [A, B]), "vectorize", "'i'", "not a constant", "split it")


def test_conflicting_kinds_rejected():
    A, B, C, k, s = _matmul()
    i, j = C.op.axis
    s[C].parallel(i)
    _err(lambda: s[C].vectorize(i), "vectorize", "already parallel")
    s[C].bind(j, "threadIdx.x")
    _err(lambda: s[C].unroll(j), "unroll", "already bound to threadIdx.x")


def test_bind_errors():
    A, B, C, k, s = _matmul()
    i, j = C.op.axis
    _err(lambda: s[C].bind(i, "threadIdx.w"), "unknown thread tag 'threadIdx.w'")
    _err(lambda: te.thread_axis("warp"), "unknown thread tag")
    s[C].bind(i, "threadIdx.x")
    _err(lambda: s[C].bind(j, "threadIdx.x"), "already bound to axis 'i'")


def test_pragma_and_annotation_errors():
    A, B, C, k, s = _matmul()
    _err(lambda: s[C].pragma(C.op.axis[0], ""), "non-empty string")
    io, ii = s[C].split(C.op.axis[0], factor=2)
    _err(lambda: s[C].parallel(C.op.axis[0]), "parallel", "no longer exists", "split into")
