"""Benchmark: parse, print and re-parse a generated 500-statement PrimFunc script.

Run ``python benchmarks/bench_script.py [statements] [repeats]``; prints the median time of each
phase. Not a test: the numbers are for people (parsing should stay well under a second).
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


if __name__ == "__main__":
    main()
