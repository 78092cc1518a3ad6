"""The error classes: value mistakes are ValueErrors, wrong kinds of pieces TypeErrors."""

from __future__ import annotations

import pytest

from kiln import te, tir, topi
from kiln.errors import IRError, IRValueError, KilnError, PassError


def test_value_mistakes_are_value_errors() -> None:
    A = te.placeholder((4, 4), name="A")
    B = te.compute((4,), lambda i: A[i, i], name="B")
    C = te.compute((4,), lambda i: B[i] * 2, name="C")
    s = te.create_schedule([C])
    cases = [
        lambda: tir.IntImm("int8", 300),  # does not fit
        lambda: s[C].split(B.op.axis[0], factor=2),  # an axis of another stage
        lambda: topi.nn.softmax(A, axis=5),  # axis out of range
        lambda: topi.reshape(A, (3, 5)),  # sizes differ
    ]
    for case in cases:
        with pytest.raises(IRValueError) as info:
            case()
        assert isinstance(info.value, ValueError) and isinstance(info.value, KilnError)
        assert not isinstance(info.value, TypeError)


def test_wrong_kinds_are_type_errors() -> None:
    cases = [
        lambda: tir.Var(3),  # a name that is not a string
        lambda: tir.For(1, 0, 4, tir.ForKind.SERIAL, tir.Evaluate(0)),  # loop var not a Var
        lambda: tir.Var("x") + 1.5,  # a float with no dtype to use
    ]
    for case in cases:
        with pytest.raises(IRError) as info:
            case()
        assert isinstance(info.value, TypeError) and not isinstance(info.value, ValueError)


def test_pass_error_names_the_pass_and_the_node() -> None:
    class Node:
        span = "model.py:3:1"

    err = PassError("fuse-ops", "cannot fuse 'conv2d'", Node())
    assert str(err) == "fuse-ops: cannot fuse 'conv2d' (at model.py:3:1)"
