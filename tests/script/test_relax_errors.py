"""Malformed R scripts: each raises a located ScriptError (file:line:col, a caret, a clear
reason) whose traceback shows no kiln frame."""

from __future__ import annotations

import inspect
import os
import traceback

import pytest

import kiln
import kiln.script
from kiln.errors import ScriptError
from kiln.script import ir as I
from kiln.script import relax as R

KILN_DIR = os.path.dirname(os.path.abspath(kiln.__file__))
R4 = '@R.function\ndef f(x: R.Tensor((4,), "float32")):\n'  # lines 1-2 of most cases
M = "@I.ir_module\nclass M:\n"

# (id, script, line, column, part of the reason)
CASES = [
    (
        "undefined-name",
        R4 + "    y = R.add(x, z)\n    return y\n",
        3,
        18,
        "name 'z' is not defined",
    ),
    (
        "broadcast",
        R4 + '    y = R.add(x, R.const([1.0, 2.0], "float32"))\n    return y\n',
        3,
        9,
        "relax.add: operands do not broadcast: dim 4 vs 2 (x (R.Tensor((4,), dt",
    ),
    (
        "dtype-mismatch",
        R4 + '    y = R.add(x, R.const([1, 2, 3, 4], "int64"))\n    return y\n',
        3,
        9,
        'relax.add: operands x (R.Tensor((4,), dtype="float32")) and constant (',
    ),
    (
        "op-arity",
        R4 + "    y = R.add(x)\n    return y\n",
        3,
        9,
        "add() missing 1 required positional argument: 'x2'",
    ),
    (
        "output-outside-dataflow",
        R4 + "    y = R.exp(x)\n    R.output(y)\n    return y\n",
        4,
        5,
        "R.output(...) is only allowed at the end of a dataflow block",
    ),
    (
        "dataflow-without-output",
        R4 + "    with R.dataflow():\n        y = R.exp(x)\n    return y\n",
        4,
        9,
        "a dataflow block ends with R.output(...)",
    ),
    (
        "dataflow-local-escapes",
        R4
        + "    with R.dataflow():\n"
        + "        y = R.exp(x)\n"
        + "        z = R.exp(y)\n"
        + "        R.output(z)\n"
        + "    return y\n",
        7,
        12,
        "'y' is local to a dataflow block; list it in R.output(...) to use it a",
    ),
    (
        "annotation-mismatch",
        R4 + '    y: R.Tensor((5,), "float32") = R.exp(x)\n    return y\n',
        3,
        8,
        'the annotation R.Tensor((5,), dtype="float32") does not fit the value ',
    ),
    (
        "annotation-unprovable",
        (
            "@R.function\n"
            'def f(x: R.Tensor(("n",), "float32")):\n'
            '    y: R.Tensor((4,), "float32") = R.exp(x)\n'
            "    return y\n"
        ),
        3,
        8,
        'the annotation R.Tensor((4,), dtype="float32") cannot be proven to fit',
    ),
    (
        "bad-dtype",
        '@R.function\ndef f(x: R.Tensor((4,), "flaot32")):\n    return x\n',
        2,
        25,
        "unknown dtype 'flaot32': expected int/uint 1-64 bits, float16/32/64, b",
    ),
    (
        "param-without-annotation",
        "@R.function\ndef f(x):\n    return x\n",
        2,
        7,
        "parameter 'x' needs an annotation such as R.Tensor",
    ),
    (
        "missing-return",
        R4 + "    y = R.exp(x)\n",
        2,
        1,
        "function 'f' needs a return statement at its end",
    ),
    (
        "after-return",
        R4 + "    return x\n    y = R.exp(x)\n",
        4,
        5,
        "statements after return are unreachable",
    ),
    (
        "if-without-else",
        (
            "@R.function\n"
            'def f(c: R.Tensor((), "bool"), x: R.Tensor((4,), "float32")):\n'
            "    if c:\n"
            "        y = R.exp(x)\n"
            "    return x\n"
        ),
        3,
        5,
        "an if statement in R needs an else branch",
    ),
    (
        "if-different-names",
        (
            "@R.function\n"
            'def f(c: R.Tensor((), "bool"), x: R.Tensor((4,), "float32")):\n'
            "    if c:\n"
            "        y = R.exp(x)\n"
            "    else:\n"
            "        z = R.exp(x)\n"
            "    return x\n"
        ),
        3,
        5,
        "both branches must end by assigning the same name ('y' vs 'z')",
    ),
    (
        "if-in-dataflow",
        (
            "@R.function\n"
            'def f(c: R.Tensor((), "bool"), x: R.Tensor((4,), "float32")):\n'
            "    with R.dataflow():\n"
            "        if c:\n"
            "            y = x\n"
            "        else:\n"
            "            y = x\n"
            "        R.output(y)\n"
            "    return y\n"
        ),
        4,
        9,
        "if/else is not allowed inside a dataflow block",
    ),
    (
        "if-cond-not-bool",
        R4 + "    if x:\n        y = x\n    else:\n        y = x\n    return y\n",
        3,
        5,
        "an if condition must be a bool scalar tensor, got x (R.Tensor((4,), dt",
    ),
    (
        "tuple-index-range",
        R4 + "    t = (x, x)\n    y = t[2]\n    return y\n",
        4,
        9,
        'index 2 is out of range for t (R.Tuple(R.Tensor((4,), dtype="float32")',
    ),
    (
        "index-a-tensor",
        R4 + "    y = x[0]\n    return y\n",
        3,
        9,
        'cannot index x (R.Tensor((4,), dtype="float32")): it is not a tuple',
    ),
    (
        "call-tir-no-outsinfo",
        M
        + "    @T.prim_func\n"
        + '    def g(a: T.Buffer((4,), "float32"), b: T.Buffer((4,), "float32")):\n'
        + "        b[0] = a[0]\n"
        + "\n"
        + "    @R.function\n"
        + '    def f(x: R.Tensor((4,), "float32")):\n'
        + "        y = R.call_tir(M.g, (x,))\n"
        + "        return y\n",
        9,
        13,
        "call_tir() missing 1 required positional argument: 'out_sinfo'",
    ),
    (
        "call-tir-unknown-out",
        M
        + "    @T.prim_func\n"
        + '    def g(a: T.Buffer((4,), "float32"), b: T.Buffer((4,), "float32")):\n'
        + "        b[0] = a[0]\n"
        + "\n"
        + "    @R.function\n"
        + '    def f(x: R.Tensor((4,), "float32")):\n'
        + "        y = R.call_tir(M.g, (x,), out_sinfo=R.Tensor)\n"
        + "        return y\n",
        9,
        13,
        "relax.call_tir: every output needs a known shape and dtype, got R.Tens",
    ),
    (
        "call-tir-arity",
        M
        + "    @T.prim_func\n"
        + '    def g(a: T.Buffer((4,), "float32"), b: T.Buffer((4,), "float32")):\n'
        + "        b[0] = a[0]\n"
        + "\n"
        + "    @R.function\n"
        + '    def f(x: R.Tensor((4,), "float32")):\n'
        + '        y = R.call_tir(M.g, (x, x), out_sinfo=R.Tensor((4,), "float32"))\n'
        + "        return y\n",
        2,
        1,
        "the parsed IR is not well formed: f: call_tir of 'g' passes 2 input(s)",
    ),
    (
        "unknown-R-function",
        R4 + "    y = R.frobnicate(x)\n    return y\n",
        3,
        9,
        "unknown R function or type 'R.frobnicate'",
    ),
    (
        "axis-out-of-range",
        R4 + "    y = R.sum(x, axis=3)\n    return y\n",
        3,
        9,
        'relax.sum: axis 3 is out of range for x (R.Tensor((4,), dtype="float32',
    ),
    (
        "matmul-mismatch",
        (
            "@R.function\n"
            'def f(x: R.Tensor((2, 3), "float32"), y: R.Tensor((4, 5), "float32")):\n'
            "    z = R.matmul(x, y)\n"
            "    return z\n"
        ),
        3,
        9,
        'relax.matmul: reduction extents differ: x (R.Tensor((2, 3), dtype="flo',
    ),
    (
        "reshape-count",
        R4 + "    y = R.reshape(x, R.shape([3]))\n    return y\n",
        3,
        9,
        'relax.reshape: cannot reshape x (R.Tensor((4,), dtype="float32")) into',
    ),
    (
        "func-attr-in-branch",
        (
            "@R.function\n"
            'def f(c: R.Tensor((), "bool"), x: R.Tensor((4,), "float32")):\n'
            "    if c:\n"
            '        R.func_attr({"a": 1})\n'
            "        y = x\n"
            "    else:\n"
            "        y = x\n"
            "    return y\n"
        ),
        4,
        9,
        "R.func_attr({...}) belongs at the top of a function",
    ),
    (
        "chained-assign",
        R4 + "    a = b = R.exp(x)\n    return a\n",
        3,
        5,
        "assign to one name per statement in R functions",
    ),
    (
        "unpack-assign",
        R4 + "    a, b = (x, x)\n    return a\n",
        3,
        5,
        "assign to one name per statement in R functions",
    ),
    (
        "nested-undecorated",
        R4 + "    def g(y: R.Tensor):\n        return y\n    return x\n",
        3,
        5,
        "a local function needs exactly one @R.function decorator",
    ),
    (
        "for-loop",
        R4 + "    for i in range(3):\n        x = R.exp(x)\n    return x\n",
        3,
        5,
        "For statements are not supported in R",
    ),
    (
        "while-loop",
        R4 + "    while True:\n        pass\n    return x\n",
        3,
        5,
        "While statements are not supported in R",
    ),
    (
        "return-nothing",
        R4 + "    return\n",
        3,
        5,
        "return needs a value (use R.tuple() for nothing)",
    ),
    (
        "call-a-tensor",
        R4 + "    y = x(1)\n    return y\n",
        3,
        9,
        "x is not a function",
    ),
    (
        "match-cast-impossible",
        R4 + "    y = R.match_cast(x, R.Shape([4]))\n    return y\n",
        3,
        9,
        'R.match_cast can never succeed: x (R.Tensor((4,), dtype="float32")) as',
    ),
    (
        "bad-ndim",
        '@R.function\ndef f(x: R.Tensor(ndim="2")):\n    return x\n',
        2,
        24,
        "R.Tensor: ndim must be an int >= -1, got '2'",
    ),
    (
        "module-call-arity",
        M
        + "    @R.function\n"
        + '    def h(a: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):\n'
        + "        return a\n"
        + "\n"
        + "    @R.function\n"
        + '    def f(x: R.Tensor((4,), "float32")):\n'
        + "        y = M.h(x, x)\n"
        + "        return y\n",
        9,
        13,
        "h takes 1 argument(s), got 2",
    ),
    (
        "module-call-type",
        M
        + "    @R.function\n"
        + '    def h(a: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):\n'
        + "        return a\n"
        + "\n"
        + "    @R.function\n"
        + '    def f(x: R.Tensor((4,), "int32")):\n'
        + "        y = M.h(x)\n"
        + "        return y\n",
        9,
        13,
        'h: argument 0 x (R.Tensor((4,), dtype="int32")) does not fit the param',
    ),
    (
        "conv-channels",
        (
            "@R.function\n"
            'def f(x: R.Tensor((1, 3, 8, 8), "float32"), w: R.Tensor((4, 2, 3, 3), "float32")):\n'
            "    y = R.nn.conv2d(x, w)\n"
            "    return y\n"
        ),
        3,
        9,
        'relax.nn.conv2d: data x (R.Tensor((1, 3, 8, 8), dtype="float32")) has ',
    ),
    (
        "where-not-bool",
        R4 + "    y = R.where(x, x, x)\n    return y\n",
        3,
        9,
        'relax.where: needs a bool tensor, got x (R.Tensor((4,), dtype="float32',
    ),
    (
        "astype-bad-dtype",
        R4 + '    y = R.astype(x, "flaot16")\n    return y\n',
        3,
        21,
        "unknown dtype 'flaot16': expected int/uint 1-64 bits, float16/32/64, b",
    ),
    (
        "output-not-bound",
        R4 + "    with R.dataflow():\n        y = R.exp(x)\n        R.output(x)\n    return y\n",
        5,
        9,
        "R.output: 'x' is not bound in this dataflow block",
    ),
    (
        "float-symbolic",
        '@R.function\ndef f(x: R.Tensor(("n",), "float32")):\n    n = T.float32()\n    return x\n',
        3,
        9,
        "symbolic variable 'n' must be an integer (T.int64()), not float32",
    ),
    (
        "ret-annotation-mismatch",
        R4[:-2] + ' -> R.Tensor((5,), "float32"):\n' + "    return x\n",
        2,
        1,
        'function returns R.Tensor((4,), dtype="float32"), which does not fit i',
    ),
    (
        "logical-on-floats",
        R4 + "    y = R.logical_and(x, x)\n    return y\n",
        3,
        9,
        'relax.logical_and: needs a bool tensor, got x (R.Tensor((4,), dtype="f',
    ),
    (
        "float-math-on-int",
        '@R.function\ndef f(x: R.Tensor((4,), "int32")):\n    y = R.exp(x)\n    return y\n',
        3,
        9,
        'relax.exp: needs a float tensor, got x (R.Tensor((4,), dtype="int32"))',
    ),
    (
        "op-on-shape",
        R4 + "    s = R.shape([4])\n    y = R.exp(s)\n    return y\n",
        4,
        9,
        "relax.exp: the operand must be a tensor, got s (R.Shape([4]))",
    ),
    (
        "undefined-in-annotation",
        '@R.function\ndef f(x: R.Tensor((q, 4), "float32")):\n    return x\n',
        2,
        20,
        "name 'q' is not defined",
    ),
    (
        "with-not-dataflow",
        R4 + "    with R.func_attr({}):\n        pass\n    return x\n",
        3,
        10,
        "expected `with R.dataflow():`",
    ),
    (
        "nested-dataflow",
        R4
        + "    with R.dataflow():\n"
        + "        with R.dataflow():\n"
        + "            y = x\n"
        + "            R.output(y)\n"
        + "        R.output()\n"
        + "    return x\n",
        4,
        9,
        "a dataflow block must be at the top level of a function",
    ),
]


def _parse_error(text: str) -> ScriptError:
    with pytest.raises(ScriptError) as info:
        kiln.script.from_source(text, "bad.py")
    return info.value


def test_there_are_enough_cases() -> None:
    assert len(CASES) >= 30


@pytest.mark.parametrize("text,line,col,reason", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_error_location_and_reason(text: str, line: int, col: int, reason: str) -> None:
    err = _parse_error(text)
    assert (err.span.line, err.span.column) == (line, col), str(err)
    assert reason in err.reason, err.reason
    assert "\n" not in err.reason
    head, shown, caret = str(err).splitlines()
    assert head == f"bad.py:{line}:{col}: error: {err.reason}"
    assert shown.strip() and set(caret.strip()) == {"^"}


def _format(info: pytest.ExceptionInfo) -> str:
    return "".join(traceback.format_exception(info.type, info.value, info.tb, chain=True))


def test_decorator_error_points_into_this_file_without_kiln_frames() -> None:
    with pytest.raises(ScriptError) as info:

        @R.function
        def broken(x: R.Tensor((4,), "float32")):
            y = R.add(x, R.const([1.0, 2.0], "float32"))  # the mistake under test
            return y

    lines, start = inspect.getsourcelines(
        test_decorator_error_points_into_this_file_without_kiln_frames
    )
    bad_line = start + next(i for i, t in enumerate(lines) if "the mistake under test" in t)
    span = info.value.span
    assert (span.source_name, span.line, span.column) == (__file__, bad_line, 17)
    text = _format(info)
    assert KILN_DIR not in text, text
    assert "relax.add: operands do not broadcast: dim 4 vs 2" in text
    err = info.value
    assert err.__cause__ is None and (err.__context__ is None or err.__suppress_context__)


def test_module_error_without_kiln_frames() -> None:
    with pytest.raises(ScriptError) as info:

        @I.ir_module
        class Module:
            @R.function
            def main(x: R.Tensor((4,), "float32")):
                with R.dataflow():
                    y = R.exp(x)
                    R.output(x)
                return y

    assert "R.output: 'x' is not bound in this dataflow block" in info.value.reason
    assert KILN_DIR not in _format(info)


def test_errors_can_be_caught_as_syntax_errors() -> None:
    with pytest.raises(SyntaxError):
        kiln.script.from_source(R4 + "    return y\n", "bad.py")
