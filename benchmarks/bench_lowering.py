"""Benchmark: compile-side work that unit tests only count (they assert no wall-clock time).

- FuseOps + LowerTE of a 200-op graph with 40 distinct primitives (bar: 2 s; the test
  tests/relax/transform/test_lower_te_fusion.py checks that each primitive is lowered once);
- exporting a VM executable that holds a 45 MB constant, then loading it (bar: 10 s).

Run ``python -m benchmarks.bench_lowering [repeats]`` from the checkout (it builds the graph of the
test); prints the median of each and the bar.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import numpy as np

from benchmarks.bench_script import median_time
from kiln.relax.transform import FuseOps, LowerTE
from kiln.runtime import VirtualMachine, load_module
from kiln.runtime.vm_format import Arg, Call, Executable, FuncKind, Ret, VMFunction
from tests.relax.transform.test_lower_te_fusion import graph_200_ops


def lower_200_ops(_: int) -> None:
    LowerTE("big")(FuseOps()(graph_200_ops()))


def export_45mb(r: int) -> None:
    weights = np.random.default_rng(r).standard_normal(45 * 2**20 // 4, dtype="float32")
    main = VMFunction("main", FuncKind.BYTECODE, (), 2, 0, 2)
    copy = VMFunction("vm.builtin.copy", FuncKind.PACKED)
    exe = Executable((main, copy), (Call(0, 1, (Arg.const(0),)), Ret(0)), (weights,))
    with tempfile.TemporaryDirectory() as work:
        path = exe.export_library(Path(work) / f"big{r}.so")
        VirtualMachine(load_module(path))["main"]()


def main() -> None:
    repeats = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    for name, fn, bar in (
        ("FuseOps + LowerTE, 200 ops / 40 distinct", lower_200_ops, 2.0),
        ("export + load, 45 MB constant", export_45mb, 10.0),
    ):
        s = median_time(fn, repeats)
        print(f"{name:44s} {s:7.2f} s  (bar {bar:.0f} s: {'ok' if s <= bar else 'OVER'})")


if __name__ == "__main__":
    main()
