"""The verifier rejects accesses the loops provably take out of their buffer, and never a
guarded or unprovable one (issue 22, finding 8)."""

from __future__ import annotations

import pytest

import kiln.script
from kiln.errors import ScriptError, VerifyError
from kiln.tir import verify_well_formed
from kiln.tir.analysis.access_bounds import out_of_bounds_accesses
from kiln.tir.buffer import decl_buffer
from kiln.tir.expr import Add, BufferLoad, IntImm, Var
from kiln.tir.function import PrimFunc
from kiln.tir.stmt import BufferStore, For, ForKind

HEAD = (
    "@T.prim_func\n"
    'def f(A: T.Buffer((16,), "float32"), B: T.Buffer((16,), "float32"), n: T.int32):\n'
)


def _found(body: str) -> list[str]:
    """The messages for the function ``HEAD + body`` (parsed without the verifier's check)."""
    with pytest.raises(ScriptError) as info:
        kiln.script.from_source(HEAD + body, "oob.py")
    return [info.value.reason]


def _clean(body: str) -> None:
    func = kiln.script.from_source(HEAD + body, "ok.py")
    assert out_of_bounds_accesses(func) == []


def _shifted_copy(shift: int, extent: int = 16) -> PrimFunc:
    a, b = decl_buffer((16,), "float32", "A"), decl_buffer((16,), "float32", "B")
    i = Var("i", "int32")
    pa, pb = Var("A_handle", "handle"), Var("B_handle", "handle")
    load = BufferLoad(a, (Add(i, IntImm("int32", shift)),))
    loop = For(
        i, IntImm("int32", 0), IntImm("int32", extent), ForKind.SERIAL, BufferStore(b, load, (i,))
    )
    return PrimFunc((pa, pb), loop, buffer_map={pa: a, pb: b})


def test_an_index_past_the_end_is_a_verify_error_naming_buffer_index_and_range() -> None:
    with pytest.raises(VerifyError) as info:
        verify_well_formed(_shifted_copy(16))
    text = str(info.value)
    assert "A[i + 16] is out of bounds" in text
    assert "ranges over [16, 31]" in text and "axis 0 of buffer 'A' ([0, 15])" in text
    verify_well_formed(_shifted_copy(0))  # the same kernel in bounds


def test_a_script_reading_past_the_end_is_rejected_at_parse() -> None:
    (reason,) = _found("    for i in range(16):\n        B[i] = A[i + 16]\n")
    assert "not well formed" in reason and "A[i + 16] is out of bounds" in reason


@pytest.mark.parametrize(
    "body,where",
    [
        ("    for i in range(20):\n        B[i % 16] = A[i]\n", "A[i]"),  # partly outside
        ("    for i in range(16):\n        B[i] = A[i - 1]\n", "A[i - 1]"),  # below 0
        ("    for i in range(n):\n        B[0] = A[i + 16]\n", "A[i + 16]"),  # symbolic extent
        ("    for i, j in T.grid(4, 4):\n        B[i * 4 + j] = A[i * 5 + j]\n", "A[i * 5 + j]"),
        ("    for i in T.vectorized(4):\n        B[i] = A[i * 6]\n", "A[i * 6]"),
        ("    for i in range(16):\n        A[i + 1] = T.float32(0)\n", "A[i + 1]"),  # a store
    ],
)
def test_provable_cases(body: str, where: str) -> None:
    (reason,) = _found(body)
    assert f"{where} is out of bounds" in reason


@pytest.mark.parametrize(
    "body",
    [
        # guarded: a select / if_then_else branch, an if, a tail under likely, and/or
        "    for i in range(16):\n        B[i] = T.if_then_else(i < 8, A[i + 8], T.float32(0))\n",
        "    for i in range(16):\n        B[i] = T.Select(i >= 1, A[i - 1], T.float32(0))\n",
        "    for i in range(32):\n        if i < 16:\n            B[i] = A[i]\n",
        "    for i in range(32):\n        if T.likely(i < 16):\n            B[i] = A[i]\n",
        "    for i in range(20):\n        B[0] = T.if_then_else(i < 16 and A[i] > 0, A[0], A[1])\n",
        # not provable: symbolic extent from 0, a division, a parameter, a loop that never runs
        "    for i in range(n):\n        B[0] = A[i]\n",
        "    for i in range(32):\n        B[0] = A[i // 2]\n",
        "    for i in range(16):\n        B[i] = A[n + i]\n",
        "    for i in range(0):\n        B[0] = A[i + 100]\n",
        # in bounds, vectorized
        "    for i in T.vectorized(16):\n        B[i] = A[15 - i]\n",
    ],
)
def test_guarded_or_unprovable_accesses_are_accepted(body: str) -> None:
    _clean(body)


def test_an_access_after_an_early_return_is_not_judged() -> None:
    text = (
        "@T.prim_func\n"
        'def f(A: T.Buffer((16,), "float32")) -> T.float32:\n'
        "    for i in range(20):\n"
        "        if i >= 16:\n"
        "            return A[0]\n"
        "        A[i] = T.float32(1)\n"
        "    return A[0]\n"
    )
    assert out_of_bounds_accesses(kiln.script.from_source(text, "ret.py")) == []


def test_a_view_of_larger_memory_may_reach_past_its_own_shape() -> None:
    text = (
        "@T.prim_func\n"
        'def f(X: T.Buffer((128,), "float32")):\n'
        '    buf = T.alloc_buffer((1024,), "uint8")\n'
        '    V = T.Buffer((128,), "float32", data=buf.data)\n'
        "    for i in range(128):\n"
        "        V[i + 128] = X[i]\n"
        '    own = T.alloc_buffer((8,), "float32")\n'
        "    for i in range(8):\n"
        "        own[i + 1] = X[i]\n"
    )
    with pytest.raises(ScriptError) as info:
        kiln.script.from_source(text, "views.py")
    # the view over the uint8 allocation is not judged; the float32 allocation of 8 is
    assert "own[i + 1] is out of bounds" in info.value.reason
    assert "V[" not in info.value.reason
