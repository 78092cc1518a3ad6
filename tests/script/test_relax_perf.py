"""Parsing and printing a 2,000-binding R function stays fast (the target is under a second
each; the bound here is generous because test machines are shared: see
benchmarks/bench_script.py for the measured times)."""

from __future__ import annotations

import time

import kiln.script
from kiln.ir import assert_structural_equal

BOUND_S = 4.0


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


def test_two_thousand_bindings_parse_and_print_quickly() -> None:
    text = make_relax_script(2000)
    start = time.perf_counter()
    func = kiln.script.from_source(text, "<perf>")
    parse_s = time.perf_counter() - start
    start = time.perf_counter()
    printed = func.script()
    print_s = time.perf_counter() - start
    start = time.perf_counter()
    again = kiln.script.from_source(printed, "<perf-printed>")
    reparse_s = time.perf_counter() - start
    assert len(func.body.blocks[0].bindings) == 2000
    assert_structural_equal(func, again)
    assert parse_s < BOUND_S and print_s < BOUND_S and reparse_s < BOUND_S, (
        parse_s,
        print_s,
        reparse_s,
    )
