"""Single kernels: build, run, check against numpy, time (the second half of ``make demo``).

Run with ``python -m kiln.examples.kernels`` (``make demo`` runs it after the model). The first
four kernels are written by hand in TIR; the ``_topi`` ones come from tensor expressions and the
operator library's default schedules (sums of 512 products differ from numpy's summation order by
~1e-5, hence their atol). Each is compiled with `kiln.build` (C through the system compiler,
cached on disk), called with numpy arrays, compared with the same computation in numpy, and timed
against it. The generated C of each kernel is kept beside its cached library; the last column
says where.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

import kiln
from kiln import te, tir, topi

F32 = "float32"


def _loop(extent: Any, kind: tir.ForKind, name: str, body: Callable[[tir.Var], Any]) -> tir.For:
    v = tir.Var(name)
    return tir.For(v, 0, extent, kind, body(v))


def _func(symbol: str, bufs: Sequence[tir.Buffer], body: tir.Stmt) -> tir.PrimFunc:
    params = tuple(tir.Var(b.name, "handle") for b in bufs)
    return tir.PrimFunc(
        params, body, buffer_map=dict(zip(params, bufs)), attrs={"global_symbol": symbol}
    )


def vector_add(n: int) -> tir.PrimFunc:
    """C = A + B: parallel blocks of 1024, each a vectorized loop."""
    A, B, C = (tir.decl_buffer((n,), F32, name) for name in "ABC")

    def block(o: tir.Var) -> tir.Stmt:
        def lane(i: tir.Var) -> tir.Stmt:
            k = o * 1024 + i
            return tir.BufferStore(C, A[k] + B[k], (k,))

        return _loop(1024, tir.ForKind.VECTORIZED, "i", lane)

    return _func("vector_add", (A, B, C), _loop(n // 1024, tir.ForKind.PARALLEL, "o", block))


def matmul(n: int) -> tir.PrimFunc:
    """C = A @ B: rows in parallel, i-k-j order so the inner loop vectorizes."""
    A, B, C = (tir.decl_buffer((n, n), F32, name) for name in "ABC")
    zero = tir.const(0.0, F32)

    def row(i: tir.Var) -> tir.Stmt:
        init = _loop(n, tir.ForKind.VECTORIZED, "j", lambda j: tir.BufferStore(C, zero, (i, j)))

        def step(k: tir.Var) -> tir.Stmt:
            def col(j: tir.Var) -> tir.Stmt:
                return tir.BufferStore(C, C[i, j] + A[i, k] * B[k, j], (i, j))

            return _loop(n, tir.ForKind.VECTORIZED, "j", col)

        return tir.seq(init, _loop(n, tir.ForKind.SERIAL, "k", step))

    return _func("matmul", (A, B, C), _loop(n, tir.ForKind.PARALLEL, "i", row))


def softmax(rows: int, cols: int) -> tir.PrimFunc:
    """Row-wise softmax with a two-float local scratch (running max, running sum) per row."""
    X, Y = tir.decl_buffer((rows, cols), F32, "X"), tir.decl_buffer((rows, cols), F32, "Y")
    acc = tir.decl_buffer((2,), F32, "acc", scope="local")

    def row(r: tir.Var) -> tir.Stmt:
        def mx(c: tir.Var) -> tir.Stmt:
            return tir.BufferStore(acc, tir.Max(acc[0], X[r, c]), (0,))

        def total(c: tir.Var) -> tir.Stmt:
            return tir.BufferStore(acc, acc[1] + tir.exp(X[r, c] - acc[0]), (1,))

        def norm(c: tir.Var) -> tir.Stmt:
            return tir.BufferStore(Y, tir.exp(X[r, c] - acc[0]) / acc[1], (r, c))

        body = tir.seq(
            tir.BufferStore(acc, tir.min_value(F32), (0,)),
            tir.BufferStore(acc, tir.const(0.0, F32), (1,)),
            _loop(cols, tir.ForKind.SERIAL, "c", mx),
            _loop(cols, tir.ForKind.SERIAL, "c", total),
            _loop(cols, tir.ForKind.VECTORIZED, "c", norm),
        )
        return tir.Allocate(acc.data, F32, (2,), tir.const(True), tir.DeclBuffer(acc, body))

    return _func("softmax", (X, Y), _loop(rows, tir.ForKind.PARALLEL, "r", row))


def relu_dynamic() -> tir.PrimFunc:
    """Y = max(X, 0) over a symbolic length n, bound from the argument at call time."""
    n = tir.SizeVar("n")
    X, Y = tir.decl_buffer((n,), F32, "X"), tir.decl_buffer((n,), F32, "Y")

    def body(i: tir.Var) -> tir.Stmt:
        return tir.BufferStore(
            Y, tir.Select(X[i] > tir.const(0.0, F32), X[i], tir.const(0.0, F32)), (i,)
        )

    return _func("relu", (X, Y), _loop(n, tir.ForKind.PARALLEL, "i", body))


def topi_matmul(n: int) -> tir.PrimFunc:
    """The same product from the operator library: packed panels, register-tiled FMA kernel."""
    A = te.placeholder((n, n), "float32", name="A")
    B = te.placeholder((n, n), "float32", name="B")
    C = topi.x86.matmul(A, B)
    return te.lower(topi.x86.schedule_matmul([C]), [A, B, C], name="matmul_topi")


def topi_softmax(rows: int, cols: int) -> tir.PrimFunc:
    """Softmax from the operator library with its default (row-parallel, vectorized) schedule."""
    x = te.placeholder((rows, cols), "float32", name="x")
    y = topi.nn.softmax(x, axis=-1)
    return te.lower(topi.schedule_for([y]), [x, y], name="softmax_topi")


def _softmax_ref(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


@dataclass(frozen=True)
class Example:
    """A kernel, its inputs, and numpy's answer; the last argument is the output."""

    name: str
    make: Callable[[], tir.PrimFunc]
    shapes: tuple[tuple[int, ...], ...]
    reference: Callable[..., np.ndarray]
    rtol: float = 1e-5
    atol: float = 1e-5


EXAMPLES = (
    Example("vector_add", lambda: vector_add(1 << 22), ((1 << 22,),) * 3, np.add),
    Example("matmul", lambda: matmul(256), ((256, 256),) * 3, np.matmul, 1e-4),
    Example("softmax", lambda: softmax(512, 1024), ((512, 1024),) * 2, _softmax_ref, 1e-4),
    Example("relu", relu_dynamic, ((1 << 20,),) * 2, lambda x: np.maximum(x, 0)),
    Example("matmul_topi", lambda: topi_matmul(512), ((512, 512),) * 3, np.matmul, 1e-4, 1e-3),
    Example(
        "softmax_topi", lambda: topi_softmax(512, 1024), ((512, 1024),) * 2, _softmax_ref, 1e-4
    ),
)


def median_seconds(fn: Callable[[], Any], repeat: int) -> float:
    fn()  # warm up (first call pays for page faults and thread start-up)
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def run_example(ex: Example, repeat: int, rng: np.random.Generator) -> dict[str, Any]:
    """Build, run, check and time one example; returns one row of the report."""
    start = time.perf_counter()
    module = kiln.build(ex.make())
    build_s = time.perf_counter() - start
    func = module[ex.name]
    args = [rng.standard_normal(s, dtype=np.float32) for s in ex.shapes[:-1]]
    out = np.zeros(ex.shapes[-1], dtype=np.float32)
    func(*args, out)
    np.testing.assert_allclose(out, ex.reference(*args), rtol=ex.rtol, atol=ex.atol)
    kiln_s = median_seconds(lambda: func(*args, out), repeat)
    numpy_s = median_seconds(lambda: ex.reference(*args), repeat)
    source = Path(module.path).with_suffix(".c")
    return {
        "name": ex.name,
        "shape": "x".join(map(str, ex.shapes[0])),
        "build": build_s,
        "kiln": kiln_s,
        "numpy": numpy_s,
        "source": source,
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=20, help="timed runs per kernel")
    args = parser.parse_args(argv)
    rng = np.random.default_rng(0)
    print(f"{'kernel':<13} {'shape':<11} {'build s':>8} {'kiln ms':>9} {'numpy ms':>9}  check")
    rows = []
    for ex in EXAMPLES:
        row = run_example(ex, args.repeat, rng)
        rows.append(row)
        print(
            f"{row['name']:<13} {row['shape']:<11} {row['build']:>8.2f} "
            f"{row['kiln'] * 1e3:>9.3f} {row['numpy'] * 1e3:>9.3f}  ok"
        )
    print("\ngenerated C (kept beside each cached library):")
    for row in rows:
        print(f"  {row['name']:<13} {row['source']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
