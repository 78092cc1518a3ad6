"""Building tensor expressions: placeholders, computes, reductions, and their error messages."""

import pytest

from kiln import te, tir
from kiln.errors import IRError, IRValueError, KilnError


def _raises(fn, *needles):
    with pytest.raises((IRError, IRValueError)) as e:
        fn()
    for n in needles:
        assert n in str(e.value), str(e.value)
    return str(e.value)


def test_placeholder_and_compute_basics():
    n = te.size_var("n")
    A = te.placeholder((n, 4), "float16", name="A")
    B = te.compute((n, 4), lambda i, j: A[i, j] * A[i, j], name="B", tag="square")
    assert A.shape[0] is n and A.dtype == "float16" and A.ndim == 2
    assert B.dtype == "float16" and B.op.tag == "square" and B.name == "B"
    assert [a.name for a in B.op.axis] == ["i", "j"]
    assert B.op.input_tensors == [A]
    assert B.op.axis[0].dom.extent is n
    assert isinstance(A[0, 1], te.ProducerLoad) and A(0, 1).indices[1].value == 1


def test_star_lambda_names_axes_and_accepts_any_rank():
    A = te.placeholder((2, 3, 4, 5), name="A")
    B = te.compute(A.shape, lambda *i: A[i] + tir.const(1.0), name="B")
    assert [a.name for a in B.op.axis] == ["i0", "i1", "i2", "i3"]
    C = te.compute((7,), lambda *i: tir.const(0, "int8"))
    assert [a.name for a in C.op.axis] == ["i"] and C.dtype == "int8"


def test_reduction_compute_records_reduce_axes():
    A = te.placeholder((8, 8), name="A")
    k = te.reduce_axis((0, 8), name="k")
    B = te.compute((8,), lambda i: te.sum(A[i, k], axis=k), name="B")
    assert B.op.reduce_axis == (k,) and k.is_reduce and k.var is k
    assert isinstance(B.op.body, te.Reduce) and B.op.body.combiner.name == "sum"


def test_reduce_axis_forms():
    n = te.size_var("n")
    assert te.reduce_axis(5).dom.extent.value == 5
    r = te.reduce_axis((2, 7))
    assert (r.dom.min.value, r.dom.extent.value) == (2, 5)
    assert te.reduce_axis((0, n)).dom.extent is n
    assert te.reduce_axis(tir.Range(1, 3)).dom.min.value == 1


def test_wrong_number_of_indices_names_compute_and_tensor():
    A = te.placeholder((4, 4), name="A")
    _raises(
        lambda: te.compute((4,), lambda i: A[i], name="B"),
        "compute 'B'",
        "tensor 'A' has 2 dimension(s)",
        "indexed with 1",
    )


def test_lambda_arity_must_match_shape():
    _raises(lambda: te.compute((4, 4), lambda i: i, name="B"), "compute 'B'", "2 dimension")


def test_float_index_rejected():
    A = te.placeholder((4,), name="A")
    _raises(lambda: te.compute((4,), lambda i: A[1.5], name="B"), "tensor 'A'", "integer")
    X = te.placeholder((4,), name="X")
    _raises(lambda: te.compute((4,), lambda i: A[X[i]], name="B"), "tensor 'A'", "float32")


def test_unsupported_dtypes_named():
    _raises(lambda: te.placeholder((4,), "float32x4", name="V"), "placeholder 'V'", "unsupported")
    _raises(lambda: te.placeholder((4,), "handle", name="H"), "placeholder 'H'", "unsupported")
    _raises(lambda: te.placeholder((4,), "complex64", name="Z"), "placeholder 'Z'", "unknown dtype")
    _raises(lambda: te.compute((2,), lambda i: 1.5, name="F"), "compute 'F'", "tir.const")


def test_bad_shapes_rejected():
    _raises(lambda: te.placeholder((4.0,), name="A"), "placeholder 'A'", "shape dimension")
    _raises(lambda: te.placeholder((-1,), name="A"), "negative")
    x = tir.Var("x", "float32")
    _raises(lambda: te.compute((x,), lambda i: i, name="C"), "compute 'C'", "float32")


def test_reduction_must_be_whole_body():
    A = te.placeholder((4, 4), name="A")
    k = te.reduce_axis((0, 4), name="k")
    _raises(
        lambda: te.compute((4,), lambda i: te.sum(A[i, k], axis=k) * 2.0, name="B"),
        "compute 'B'",
        "whole body",
    )


def test_reduce_axis_used_outside_its_reduction():
    A = te.placeholder((4, 4), name="A")
    k = te.reduce_axis((0, 4), name="k")
    _raises(lambda: te.compute((4,), lambda i: A[i, k], name="B"), "compute 'B'", "'k'")


def test_axis_of_another_compute_rejected():
    A = te.placeholder((4,), name="A")
    B = te.compute((4,), lambda i: A[i], name="B")
    _raises(lambda: te.compute((4,), lambda j: A[B.op.axis[0]], name="C"), "another compute")


def test_reducer_argument_errors():
    A = te.placeholder((4, 4), name="A")
    k = te.reduce_axis((0, 4), name="k")
    _raises(lambda: te.sum(A[0, k]), "sum", "axis=")
    _raises(lambda: te.compute((4,), lambda i: te.sum(A[i, 0], axis=i)), "not a reduction axis")
    _raises(lambda: te.sum(A[0, k], axis=[k, k]), "twice")
    _raises(lambda: te.sum(A[0, k], axis=k, where=A[0, 0]), "where=", "boolean")
    _raises(lambda: te.sum(te.sum(A[0, k], axis=k), axis=k), "nested")
    M = te.placeholder((4,), "bool", name="M")
    _raises(lambda: te.sum(M[k], axis=k), "sum", "bool")


def test_comm_reducer_checks_dtypes():
    A = te.placeholder((4,), name="A")
    k = te.reduce_axis((0, 4), name="k")
    bad = te.comm_reducer(lambda x, y: tir.Cast("float64", x + y), 0.0, name="widen")
    _raises(lambda: bad(A[k], axis=k), "widen", "float64")
    prod = te.comm_reducer(lambda x, y: x * y, lambda t: tir.const(1, t), name="prod")
    red = prod(A[k], axis=k)
    assert red.combiner.identity.value == 1.0 and red.dtype == "float32"


def test_compute_returning_tuple_or_tensor_rejected():
    A = te.placeholder((4,), name="A")
    _raises(lambda: te.compute((4,), lambda i: (A[i], A[i]), name="T"), "several values")
    _raises(lambda: te.compute((4,), lambda i: A, name="T"), "index it")


def test_if_then_else_needs_boolean_condition():
    A = te.placeholder((4,), name="A")
    _raises(lambda: te.if_then_else(A[0], A[1], A[2]), "if_then_else", "boolean")
    e = te.if_then_else(A[0] > 0.0, A[1], 0.0)
    assert e.dtype == "float32"


def test_broadcast_shape_rules():
    n = te.size_var("n")
    shape = te.broadcast_shape((4, 1, 3), (5, 1), (1,))
    assert [d.value for d in shape] == [4, 5, 3]
    assert te.broadcast_shape((n, 1), (1, 3))[0] is n
    msg = _raises(
        lambda: te.broadcast_shape((4, 3), (5, 3), op="add", names=["A", "B"]), "add", "'B'"
    )
    assert "cannot broadcast" in msg
    _raises(lambda: te.broadcast_shape((n,), (te.size_var("m"),)), "cannot broadcast")


def test_broadcast_shape_matches_equal_expressions_that_are_different_objects():
    n = te.size_var("n")
    a, b = n * 4, n * 4  # as a graph's operands reach TE: equal, not the same object
    assert a is not b
    assert te.broadcast_shape((a, 16), (b, 16))[0] is a
    _raises(lambda: te.broadcast_shape((n * 4,), (n * 2,)), "cannot broadcast")


def test_elementwise_broadcasts_and_names_operator():
    A = te.placeholder((4, 3), name="A")
    b = te.placeholder((3,), name="b")
    C = te.elementwise(lambda x, y: x + y, A, b, name="add")
    assert [d.value for d in C.shape] == [4, 3] and C.name == "add"
    assert C.op.body.b.indices[0] is C.op.axis[1]
    bad = te.placeholder((4,), name="bad")
    _raises(lambda: te.elementwise(lambda x, y: x + y, A, bad, name="add"), "add", "'bad'")


def test_errors_are_kiln_errors():
    assert issubclass(IRError, KilnError)
