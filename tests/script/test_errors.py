"""Malformed scripts: each raises a ScriptError at the right line:col with a clear reason."""

from __future__ import annotations

import inspect
import os
import traceback

import pytest

import kiln
import kiln.script
from kiln.errors import ScriptError
from kiln.script import tir as T
from kiln.tir import Var

KILN_DIR = os.path.dirname(os.path.abspath(kiln.__file__))
F4 = '@T.prim_func\ndef f(A: T.Buffer((4,), "float32")):\n'  # lines 1-2 of most cases
I4 = '@T.prim_func\ndef f(A: T.Buffer((4,), "int32")):\n'

# (id, script, line, column, part of the reason)
CASES = [
    (
        "undefined-name",
        F4 + "    A[0] = undefined_thing\n",
        3,
        12,
        "name 'undefined_thing' is not defined",
    ),
    (
        "buffer-too-many-args",
        '@T.prim_func\ndef f(A: T.Buffer((4,), "float32", None, None, None, "", 0, 0, "", None, 7'
        ")):\n    T.evaluate(0)\n",
        2,
        10,
        "T.Buffer: too many positional arguments",
    ),
    (
        "buffer-missing-shape",
        '@T.prim_func\ndef f(A: T.Buffer(dtype="float32")):\n    pass\n',
        2,
        10,
        "T.Buffer: missing a required argument: 'shape'",
    ),
    ("lambda", F4 + "    g = lambda x: x\n", 3, 9, "lambda expressions are not supported"),
    (
        "try",
        F4 + "    try:\n        A[0] = T.float32(1)\n    except Exception:\n        pass\n",
        3,
        5,
        "try statements are not supported",
    ),
    (
        "bad-dtype",
        '@T.prim_func\ndef f(A: T.Buffer((4,), "flaot32")):\n    pass\n',
        2,
        25,
        "unknown dtype 'flaot32'",
    ),
    (
        "bad-dtype-in-body",
        F4 + '    B = T.alloc_buffer((4,), "f32")\n',
        3,
        30,
        "unknown dtype 'f32'",
    ),
    (
        "assign-loop-var",
        F4 + "    for i in range(4):\n        i = i + 1\n",
        4,
        9,
        "cannot assign to loop variable 'i'",
    ),
    (
        "unknown-T-function",
        F4 + "    A[0] = T.frobnicate(A[1])\n",
        3,
        12,
        "unknown T function or type 'T.frobnicate'",
    ),
    (
        "tensorir-block",
        F4 + '    with T.block("b"):\n        pass\n',
        3,
        10,
        "T.block (TensorIR blocks) is not supported",
    ),
    (
        "too-many-indices",
        F4 + "    A[0] = A[1, 2]\n",
        3,
        12,
        "buffer 'A' has 1 dimension(s) but is indexed with 2 indices",
    ),
    (
        "too-many-store-indices",
        F4 + "    A[0, 1] = T.float32(0)\n",
        3,
        5,
        "buffer 'A' has 1 dimension(s) but is indexed with 2 indices",
    ),
    (
        "float-index",
        F4 + "    A[1.5] = T.float32(0)\n",
        3,
        7,
        "a buffer index must be an integer, got 1.5",
    ),
    (
        "float-in-int-expr",
        '@T.prim_func\ndef f(A: T.Buffer((4,), "int32"), n: T.int32):\n    A[0] = n * 0.5\n',
        3,
        12,
        "cannot use the Python float 0.5 as a int32 value",
    ),
    (
        "float-to-int-literal",
        F4 + "    A[T.int32(2.5)] = T.float32(0)\n",
        3,
        7,
        "T.int32 needs an integer, got the float 2.5",
    ),
    (
        "float-extent",
        F4 + "    for i in range(2.5):\n        pass\n",
        3,
        14,
        "loop bounds must be integers",
    ),
    (
        "missing-annotation",
        "@T.prim_func\ndef f(A):\n    pass\n",
        2,
        7,
        "parameter 'A' needs a type",
    ),
    ("break", F4 + "    for i in range(4):\n        break\n", 4, 9, "break is not supported"),
    (
        "dtype-mismatch",
        "@T.prim_func\ndef f(a: T.int32, b: T.float32):\n    T.evaluate(a + b)\n",
        3,
        16,
        "operand dtypes differ (int32 vs float32)",
    ),
    (
        "store-to-scalar",
        "@T.prim_func\ndef f(n: T.int32):\n    n[0] = 1\n",
        3,
        5,
        "'n' is not a buffer",
    ),
    (
        "match-buffer-in-loop",
        "@T.prim_func\ndef f(a: T.handle):\n    for i in range(2):\n"
        "        A = T.match_buffer(a, (4,))\n",
        4,
        9,
        "T.match_buffer is only allowed at the top",
    ),
    (
        "match-buffer-not-param",
        F4 + "    B = T.match_buffer(A.data, (4,))\n",
        3,
        5,
        "the first argument of T.match_buffer must be a handle parameter",
    ),
    (
        "func-attr-in-loop",
        F4 + '    for i in range(2):\n        T.func_attr({"a": 1})\n',
        4,
        9,
        "T.func_attr is only allowed at the top of a function body",
    ),
    (
        "ifexp-on-expr",
        F4[:-3] + ", n: T.int32):\n    A[0] = A[1] if n > 0 else A[2]\n",
        3,
        12,
        "use T.if_then_else or T.Select",
    ),
    (
        "nested-def",
        F4 + "    def g():\n        pass\n",
        3,
        5,
        "nested function definitions are not supported",
    ),
    (
        "unknown-callee",
        "@I.ir_module\nclass Module:\n    @T.prim_func\n    def main(n: T.int32):\n"
        "        Module.nope(n)\n",
        5,
        9,
        "module 'Module' has no function 'nope'",
    ),
    (
        "python-syntax",
        "@T.prim_func\ndef f(A: T.Buffer((4,), float32):\n    pass\n",
        2,
        33,
        "invalid Python syntax",
    ),
    (
        "while-python-cond",
        F4 + "    while True:\n        pass\n",
        3,
        11,
        "a while condition must be a TIR expression",
    ),
    (
        "slice-without-end",
        F4 + "    A[0:] = A[0:4]\n",
        3,
        7,
        "a buffer slice needs an explicit end",
    ),
    ("annotated-no-value", F4 + "    x: T.int32\n", 3, 5, "a typed name needs a value"),
    (
        "update-scalar",
        "@T.prim_func\ndef f(n: T.int32):\n    n += 1\n",
        3,
        5,
        "cannot update 'n' in place",
    ),
    ("chained-assign", F4 + "    x = y = 1\n", 3, 5, "chained assignment"),
    (
        "thread-binding-no-tag",
        F4 + "    for i in T.thread_binding(4):\n        pass\n",
        3,
        14,
        "T.thread_binding needs a thread tag",
    ),
    (
        "intrinsic-arity",
        "@T.prim_func\ndef f(x: T.float32):\n    T.evaluate(T.exp(x, x))\n",
        3,
        16,
        "T.exp takes 1 argument(s), got 2",
    ),
    (
        "loop-var-out-of-scope",
        F4 + "    for i in range(4):\n        pass\n    A[i] = T.float32(0)\n",
        5,
        7,
        "name 'i' is not defined",
    ),
    (
        "no-decorator",
        "def f(n: T.int32):\n    pass\n",
        1,
        1,
        "needs exactly one @T.prim_func decorator",
    ),
    ("call-not-callable", F4 + "    A[0] = A(1)\n", 3, 12, "is not callable"),
    (
        "return-without-type",
        "@T.prim_func\ndef f(x: T.float32):\n    return x\n",
        3,
        5,
        "needs a return type, as in -> T.int32",
    ),
    (
        "star-args",
        "@T.prim_func\ndef f(*args: T.int32):\n    pass\n",
        2,
        1,
        "script functions take plain parameters",
    ),
    # invalid programs once accepted (issue 10, item 4)
    (
        "index-negative",
        F4 + "    A[-1] = T.float32(0)\n",
        3,
        5,
        "index -1 is out of bounds for buffer 'A' (size 4",
    ),
    (
        "index-past-end-load",
        F4 + "    A[0] = A[4]\n",
        3,
        12,
        "index 4 is out of bounds for buffer 'A'",
    ),
    ("index-huge", F4 + "    A[100000] = T.float32(0)\n", 3, 5, "index 100000 is out of bounds"),
    (
        "slice-past-end",
        F4 + "    A[2:6] = A[0:4]\n",
        3,
        5,
        "index 5 is out of bounds for buffer 'A'",
    ),
    (
        "store-lanes",
        F4 + "    A[T.Ramp(0, 1, 2)] = A[T.Ramp(0, 1, 4)]\n",
        3,
        5,
        "stores a float32x4 value (4 lanes) where the index of buffer 'A' addresses 2 lane(s)",
    ),
    (
        "string-shape",
        '@T.prim_func\ndef f(A: T.Buffer(("a",), "float32")):\n    pass\n',
        2,
        10,
        "buffer 'A' shape: every extent must be an integer, got 'a'",
    ),
    (
        "negative-alloc-buffer",
        F4 + '    B = T.alloc_buffer((-4,), "float32")\n',
        3,
        9,
        "buffer 'B' shape: a dimension cannot be negative, got -4",
    ),
    (
        "negative-allocate",
        F4 + '    p = T.allocate([-4], "float32")\n',
        3,
        9,
        "T.allocate: a dimension cannot be negative, got -4",
    ),
    (
        "missing-return",
        "@T.prim_func\ndef f(x: T.int32) -> T.int32:\n    T.evaluate(x)\n",
        2,
        22,
        "function 'f' returns int32 but can reach its end without a return statement",
    ),
    (
        "missing-return-branch",
        "@T.prim_func\ndef f(x: T.int32) -> T.int32:\n    if x > 0:\n        return x\n",
        2,
        22,
        "can reach its end without a return statement",
    ),
    ("shift-negative", I4 + "    A[0] = A[1] << -1\n", 3, 12, "shift left of a int32 value by -1"),
    (
        "shift-too-far",
        I4 + "    A[0] = T.shift_right(A[1], 32)\n",
        3,
        12,
        "shift right of a int32 value by 32: the amount must be in [0, 31]",
    ),
    (
        "if-buffer",
        F4 + "    if A:\n        A[0] = T.float32(1)\n",
        3,
        8,
        "buffer 'A' cannot be a condition; compare a value, as in A[0] > 0",
    ),
    (
        "not-buffer",
        F4 + "    A[0] = T.float32(1) if not A else A[1]\n",
        3,
        32,
        "buffer 'A' cannot be a condition",
    ),
    (
        "print",
        F4 + '    print("x")\n',
        3,
        5,
        "print(...) is Python code that would run while parsing",
    ),
    (
        "python-value-statement",
        F4 + "    1 + 1\n",
        3,
        5,
        "this statement means nothing in TIR: it evaluates to the Python value 2 while parsing",
    ),
    (
        "duplicate-param",
        '@T.prim_func\ndef f(A: T.Buffer((4,), "float32"), A: T.int32):\n    A[0] = A[1]\n',
        2,
        37,
        "parameter 'A' is listed twice",
    ),
    (
        "range-string",
        F4 + '    for i in range("4"):\n        A[i] = T.float32(0)\n',
        3,
        20,
        "loop bounds must be integers, got '4'",
    ),
    (
        "void-buffer",
        F4 + '    B = T.alloc_buffer((4,), "void")\n',
        3,
        9,
        "buffer 'B': dtype void has no elements",
    ),
    ("void-param", "@T.prim_func\ndef f(v: T.void):\n    pass\n", 2, 10, "cannot have dtype void"),
    (
        "vector-index-not-last",
        '@T.prim_func\ndef f(A: T.Buffer((4, 4), "float32")):\n    A[0:2, 0] = T.float32(0)\n',
        3,
        5,
        "index 0 of buffer 'A' is a vector; only the last index may be",
    ),
]


def test_print_is_refused_before_it_runs(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(ScriptError, match="print"):
        kiln.script.from_source(F4 + '    print("ran while parsing")\n', "bad.py")
    assert "ran while parsing" not in capsys.readouterr().out


def test_helper_returning_nothing_is_not_a_statement() -> None:
    text = F4 + "    helper()\n"
    with pytest.raises(ScriptError, match="means nothing in TIR: .* Python value None"):
        kiln.script.from_source(text, "bad.py", extra_vars={"helper": lambda: None})


def _parse_error(text: str) -> ScriptError:
    with pytest.raises(ScriptError) as info:
        kiln.script.from_source(text, "bad.py")
    return info.value


def test_enough_cases() -> None:
    assert len(CASES) >= 15


@pytest.mark.parametrize("text,line,col,reason", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_error_location_and_reason(text: str, line: int, col: int, reason: str) -> None:
    err = _parse_error(text)
    assert (err.span.line, err.span.column) == (line, col), str(err)
    assert reason in err.reason, err.reason
    assert "\n" not in err.reason
    head = str(err).splitlines()[0]
    assert head == f"bad.py:{line}:{col}: error: {err.reason}"


def test_rendering_shows_line_and_caret() -> None:
    err = _parse_error(F4 + "    A[0] = undefined_thing\n")
    _, shown, caret = str(err).splitlines()
    assert shown == "        A[0] = undefined_thing"
    assert caret == "    " + " " * 11 + "^" * len("undefined_thing")


def test_ill_formed_ir_is_reported_at_the_function() -> None:
    text = F4 + "    A[0] = T.Cast('float32', v)\n"
    with pytest.raises(ScriptError) as info:
        kiln.script.from_source(text, "bad.py", extra_vars={"v": Var("v", "int32")})
    assert (info.value.span.line, info.value.span.column) == (2, 1)
    assert "not well formed" in info.value.reason and "'v'" in info.value.reason
    func = kiln.script.from_source(
        text, "bad.py", extra_vars={"v": Var("v", "int32")}, check_well_formed=False
    )
    assert func.global_symbol == "f"


def _format(info: pytest.ExceptionInfo) -> str:
    return "".join(traceback.format_exception(info.type, info.value, info.tb, chain=True))


def test_decorator_error_points_into_this_file_without_kiln_frames() -> None:
    with pytest.raises(ScriptError) as info:

        @T.prim_func
        def broken(A: T.Buffer((4,), "float32")):
            A[0] = A[0] + nothing_here  # noqa: F821 - the mistake under test

    lines, start = inspect.getsourcelines(
        test_decorator_error_points_into_this_file_without_kiln_frames
    )
    bad_line = start + next(i for i, t in enumerate(lines) if "nothing_here  #" in t)
    span = info.value.span
    assert (span.source_name, span.line, span.column) == (__file__, bad_line, 27)
    text = _format(info)
    assert KILN_DIR not in text, text
    assert "name 'nothing_here' is not defined" in text
    err = info.value
    assert err.__cause__ is None and (err.__context__ is None or err.__suppress_context__)


def test_module_error_without_kiln_frames() -> None:
    from kiln.script import ir as I

    with pytest.raises(ScriptError) as info:

        @I.ir_module
        class Module:
            @T.prim_func
            def main(A: T.Buffer((4,), "float32")):
                A[0, 0] = T.float32(1)

    assert "indexed with 2 indices" in info.value.reason
    assert KILN_DIR not in _format(info)


def test_error_in_user_helper_called_from_script() -> None:
    def helper(x):
        return x + "oops"

    with pytest.raises(ScriptError) as info:

        @T.prim_func
        def uses_helper(A: T.Buffer((4,), "float32")):
            A[0] = helper(A[1])

    assert "cannot use the string 'oops' as a float32 value" in info.value.reason
    assert KILN_DIR not in _format(info)
