"""Parsing and printing a large R function costs work in proportion to its size.

No wall-clock bound here (a shared test machine makes one flaky): the test counts the Python
function calls that parsing and printing make, and checks that twice the bindings cost at most
a little more than twice the calls. The measured times are in benchmarks/bench_script.py."""

from __future__ import annotations

import sys
from collections.abc import Callable

import kiln.script
from kiln.ir import assert_structural_equal

LINEAR_SLACK = 2.3
"""Calls for 2n bindings over calls for n: 2.0 is linear; a quadratic step gives about 4."""


def make_relax_script(n_bindings: int) -> str:
    """A relax function of ``n_bindings`` chained operator bindings (as in the benchmark)."""
    lines = [
        "@R.function",
        'def big(x: R.Tensor(("n", 16), "float32"), w: R.Tensor((16,), "float32")):',
        "    n = T.int64()",
        "    with R.dataflow():",
        "        v0 = R.add(x, w)",
    ]
    ops = ["R.add({p}, w)", "R.multiply({p}, w)", "R.nn.relu({p})", "R.exp({p})", "R.sum({p})"]
    ops[-1] = "R.subtract({p}, x)"
    for i in range(1, n_bindings):
        lines.append(f"        v{i} = " + ops[i % len(ops)].format(p=f"v{i - 1}"))
    lines += [f"        R.output(v{n_bindings - 1})", f"    return v{n_bindings - 1}"]
    return "\n".join(lines) + "\n"


def count_calls(fn: Callable[[], object]) -> int:
    """How many Python functions ``fn()`` calls (every frame, kiln's and the standard library's)."""
    calls = 0

    def tick(frame: object, event: str, arg: object) -> None:
        nonlocal calls
        if event == "call":
            calls += 1

    sys.setprofile(tick)
    try:
        fn()
    finally:
        sys.setprofile(None)
    return calls


def parse_and_print_calls(n_bindings: int) -> tuple[int, int]:
    text = make_relax_script(n_bindings)
    parse = count_calls(lambda: kiln.script.from_source(text, f"<perf-{n_bindings}>"))
    func = kiln.script.from_source(text, f"<perf-{n_bindings}-again>")
    return parse, count_calls(func.script)


def test_two_thousand_bindings_parse_print_and_reparse_equal() -> None:
    func = kiln.script.from_source(make_relax_script(2000), "<perf>")
    again = kiln.script.from_source(func.script(), "<perf-printed>")
    assert len(func.body.blocks[0].bindings) == 2000
    assert_structural_equal(func, again)


def test_parse_and_print_work_grows_linearly_with_bindings() -> None:
    parse_1, print_1 = parse_and_print_calls(300)
    parse_2, print_2 = parse_and_print_calls(600)
    assert parse_2 / parse_1 < LINEAR_SLACK, (parse_1, parse_2)
    assert print_2 / print_1 < LINEAR_SLACK, (print_1, print_2)
