"""Benchmark: parse, print and re-parse a generated 500-statement PrimFunc script, and a
2,000-binding ``@R.function``.

Run ``python benchmarks/bench_script.py [statements] [repeats] [bindings]``; prints the median
time of each phase. Not a test: the numbers are for people (parsing and printing should stay
well under a second; tests/script/test_relax_perf.py holds a generous bound).
"""

from __future__ import annotations

import statistics
import sys
import time
from typing import Callable

import kiln.script
from kiln.ir import assert_structural_equal
from kiln.tir import verify_well_formed


def make_script(n_statements: int) -> str:
    """A function of ``n_statements`` statements: stores, lets, loops, branches and calls."""
    lines = [
        "@T.prim_func",
        'def bench(A: T.Buffer((1024,), "float32"), B: T.Buffer((64, 64), "float32"), n: T.int32):',
    ]
    kinds = [
        "    A[{k}] = A[{k1}] * T.float32(2) + B[{k} % 64, {k1} % 64]",
        "    for i in range({k} % 16 + 1):\n"
        "        A[i + {k} % 512] = T.exp(A[i]) + T.float32({k})",
        "    if n > {k}:\n        B[{k} % 64, n % 64] = T.max(A[{k}], T.float32(0))\n"
        "    else:\n        A[{k}] = T.float32(-1)",
        "    with T.LetStmt(n * {k} + 1, var=v{k}):\n"
        '        A[v{k} % 1024] = T.Cast("float32", v{k})',
        '    T.call_extern("int32", "tick", A.data, {k})',
        "    for i, j in T.grid(4, 4):\n        B[i + {k} % 60, j] = B[j, i] + A[{k}]",
    ]
    body = []
    for k in range(n_statements):
        kind = kinds[k % len(kinds)]
        if "v{k}" in kind:
            body.append(f"    v{k} = T.int32()")
        body.append(kind.format(k=k % 1000, k1=(k + 1) % 1000))
    return "\n".join(lines + body) + "\n"


def make_relax_script(n_bindings: int) -> str:
    """A relax function of ``n_bindings`` chained operator bindings in one dataflow block."""
    lines = [
        "@R.function",
        'def big(x: R.Tensor(("n", 16), "float32"), w: R.Tensor((16,), "float32")):',
        "    n = T.int64()",
        "    with R.dataflow():",
        "        v0 = R.add(x, w)",
    ]
    ops = [
        "R.add({p}, w)",
        "R.multiply({p}, w)",
        "R.nn.relu({p})",
        "R.exp({p})",
        "R.sum({p}, axis=1)",
    ]
    for i in range(1, n_bindings):
        op = ops[i % len(ops)] if i % len(ops) != 4 else "R.subtract({p}, x)"
        lines.append(f"        v{i} = " + op.format(p=f"v{i - 1}"))
    lines += [f"        R.output(v{n_bindings - 1})", f"    return v{n_bindings - 1}"]
    return "\n".join(lines) + "\n"


def bench_relax(n: int, repeats: int) -> None:
    text = make_relax_script(n)
    func = kiln.script.from_source(text, "<relax>")
    printed = func.script()
    assert_structural_equal(func, kiln.script.from_source(printed, "<relax-printed>"))
    parse = median_time(lambda r: kiln.script.from_source(text, f"<relax-{r}>"), repeats)
    show = median_time(lambda r: func.script(), repeats)
    reparse = median_time(lambda r: kiln.script.from_source(printed, f"<relax-re-{r}>"), repeats)
    print(f"R function: {n} bindings")
    print(f"parse (with well-formedness check): {parse * 1e3:8.1f} ms")
    print(f"print:                              {show * 1e3:8.1f} ms")
    print(f"parse the printed (annotated) text: {reparse * 1e3:8.1f} ms")


def median_time(fn: Callable[[int], object], repeats: int) -> float:
    times = []
    for r in range(repeats):
        start = time.perf_counter()
        fn(r)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 500
    repeats = int(sys.argv[2]) if len(sys.argv) > 2 else 7
    text = make_script(n)
    func = kiln.script.from_source(text, "<bench>")
    verify_well_formed(func)
    printed = func.script()
    again = kiln.script.from_source(printed, "<bench-printed>")
    assert_structural_equal(func, again)

    # A fresh source name each run keeps the parsed-AST cache from hiding the parse cost.
    parse = median_time(lambda r: kiln.script.from_source(text, f"<bench-{r}>"), repeats)
    parse_nocheck = median_time(
        lambda r: kiln.script.from_source(text, f"<bench-nc-{r}>", check_well_formed=False),
        repeats,
    )
    show = median_time(lambda r: func.script(), repeats)
    reparse = median_time(
        lambda r: kiln.script.from_source(func.script(), f"<bench-re-{r}>"), repeats
    )
    print(f"script: {n} top-level statements, {len(text.splitlines())} lines")
    print(f"parse (with well-formedness check): {parse * 1e3:8.1f} ms")
    print(f"parse (no check):                   {parse_nocheck * 1e3:8.1f} ms")
    print(f"print:                              {show * 1e3:8.1f} ms")
    print(f"print + re-parse:                   {reparse * 1e3:8.1f} ms")
    bench_relax(int(sys.argv[3]) if len(sys.argv) > 3 else 2000, repeats)


if __name__ == "__main__":
    main()
