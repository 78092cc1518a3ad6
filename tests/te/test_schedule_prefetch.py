"""Stage.prefetch: the hint's place and address in the lowered TIR, the compiled kernel's result,
and errors."""

import numpy as np

import kiln
from kiln import te, tir
from kiln.ir.visitor import pre_order_nodes
from tests.te.test_schedule_annotate import _err


def _rows(n=6, m=32):
    A = te.placeholder((n, m), name="A")
    B = te.compute((n, m), lambda i, j: A[i, j] * 2.0 + 1.0, name="B")
    s = te.create_schedule(B)
    jo, ji = s[B].split(B.op.axis[1], factor=8)
    return A, B, s, jo, ji


def _hints(f):
    return [
        n
        for n in pre_order_nodes(f.body)
        if isinstance(n, tir.Call) and getattr(n.op, "name", "") == "tir.prefetch"
    ]


def test_hint_sits_in_the_axis_loop_and_reads_ahead():
    A, B, s, jo, ji = _rows()
    s[B].prefetch(A, jo, 4)
    f = te.lower(s, [A, B])
    assert tir.verify_well_formed(f) == []
    (hint,) = _hints(f)
    load = hint.args[0]
    assert isinstance(load, tir.BufferLoad) and load.buffer.name == "A"
    # row i, the column of 4 iterations of j_outer later, j_inner at its first value
    assert 'tir.prefetch", A[i, (j_outer + 4) * 8 + 0]' in f.script()


def test_prefetch_kernel_computes_the_same_and_emits_the_hint():
    A, B, s, jo, ji = _rows()
    s[B].vectorize(ji)
    s[B].prefetch(A, jo, 4)  # runs past the end of A on the last row: a prefetch never faults
    mod = kiln.build(te.lower(s, [A, B]), target="c")
    a = np.random.default_rng(0).standard_normal((6, 32)).astype("float32")
    b = np.empty_like(a)
    mod["main"](a, b)
    np.testing.assert_allclose(b, a * 2 + 1, rtol=1e-6)
    assert "__builtin_prefetch(" in mod.inspect_source()


def test_reads_that_do_not_move_with_the_axis_get_no_hint():
    A = te.placeholder((6, 32), name="A")
    c = te.placeholder((6,), name="c")
    B = te.compute((6, 32), lambda i, j: A[i, j] + c[i], name="B")
    s = te.create_schedule(B)
    s[B].prefetch(c, B.op.axis[1], 1)
    assert _hints(te.lower(s, [A, c, B])) == []


def test_prefetch_through_an_inlined_producer_hints_its_input():
    A = te.placeholder((6, 32), name="A")
    T = te.compute((6, 32), lambda i, j: A[i, j] + 1.0, name="T")
    B = te.compute((6, 32), lambda i, j: T[i, j] * 3.0, name="B")
    s = te.create_schedule(B)
    s[T].compute_inline()
    s[B].prefetch(T, B.op.axis[0], 1)
    (hint,) = _hints(te.lower(s, [A, B]))
    assert hint.args[0].buffer.name == "A"


def test_errors_name_the_stage_and_what_was_expected():
    A, B, s, jo, ji = _rows()
    other = te.placeholder((6, 32), name="Other")
    _err(lambda: s[B].prefetch(other, jo, 1), "does not read 'Other'", "'A'")
    _err(lambda: s[B].prefetch(A, jo, 1.5), "offset must be an integer")
    _err(lambda: s[B].prefetch(A, B.op.axis[1], 1), "prefetch", "'B'")
    s[B].prefetch(A, jo, 1)
    s[B].split(jo, factor=2)
    _err(lambda: te.lower(s, [A, B]), "was split or fused after the prefetch")
