"""`ProfileReport`: where one VM call spent its time, per kernel, and how close each kernel came
to the machine's bounds.

Each row is a kernel (or a non-builtin packed function) with its calls and time. A kernel whose
work the executable records (`Executable.costs`: FLOPs and compulsory bytes, from
`kiln.relax.analysis.cost`) also gets its achieved GFLOP/s and GB/s. Given the machine's FMA peak
and memory bandwidth (`ProfileReport.with_bounds`; ``kiln profile --peak-gflops --bandwidth``),
each such row also gets ``% of bound``: the time the kernel would take at whichever bound binds it
(its FLOPs at the peak, or its bytes at the bandwidth, whichever is longer) over its measured
time. 100% is the bound; a kernel far below it is where time is lost.

One call's times are at the mercy of everything else the machine runs: a process that takes
the core for a few milliseconds lands on whichever kernel runs then. `ProfileReport.median`
merges the reports of several calls into one whose times are each row's median over them
(``kiln profile --repeat N``).

The last lines count the layout transforms the call ran (kernels whose fused operators include
``layout_transform``, by name): the graph level should transform layouts only at a chain's
boundary, so more than a few per model is a missed optimization.
"""

from __future__ import annotations

import ast
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

LAYOUT_TRANSFORM = "layout_transform"
"""What the name of a kernel that transforms a layout contains (`ProfileReport.layout_rows`)."""


@dataclass(frozen=True)
class ProfileRow:
    """One callee of a profiled call: a kernel or a (non-builtin) packed function."""

    kernel: str
    calls: int
    total_us: float
    mean_us: float
    share: float
    flops: int | None = None
    """FLOPs of one call, when known (a multiply-add counts two)."""
    bytes: int | None = None
    """Bytes one call must read and write at least, when known."""

    @property
    def gflops(self) -> float | None:
        """Achieved GFLOP/s (FLOPs per nanosecond)."""
        return None if self.flops is None or self.mean_us <= 0 else self.flops / self.mean_us / 1e3

    @property
    def gbs(self) -> float | None:
        """Achieved GB/s."""
        return None if self.bytes is None or self.mean_us <= 0 else self.bytes / self.mean_us / 1e3

    def bound_share(self, peak_gflops: float, bandwidth_gbs: float) -> float | None:
        """The bound time (FLOPs at the peak or bytes at the bandwidth, the longer) over the
        measured time; None without the kernel's work."""
        if self.flops is None or self.bytes is None or self.mean_us <= 0:
            return None
        bound_us = max(self.flops / peak_gflops, self.bytes / bandwidth_gbs) / 1e3
        return bound_us / self.mean_us


def _num(v: float | None, fmt: str) -> str:
    return "" if v is None else format(v, fmt)


@dataclass(frozen=True)
class ProfileReport:
    """Where one VM call spent its time; ``str()`` prints the table."""

    function: str
    exec_mode: str
    total_us: float
    rows: tuple[ProfileRow, ...]
    peak_gflops: float | None = None
    bandwidth_gbs: float | None = None

    @property
    def kernel_us(self) -> float:
        return sum(r.total_us for r in self.rows)

    @property
    def layout_rows(self) -> tuple[ProfileRow, ...]:
        """The rows of kernels that transform a layout (alone or fused with other operators)."""
        return tuple(r for r in self.rows if LAYOUT_TRANSFORM in r.kernel)

    @staticmethod
    def median(reports: Sequence[ProfileReport]) -> ProfileReport:
        """One report of several calls of the same function: each row's total time, and the
        call's, is its median over ``reports``; a kernel missing from a report counts 0 there."""
        if not reports:
            raise ValueError("ProfileReport.median needs at least one report")
        first = reports[0]
        total = statistics.median(r.total_us for r in reports)
        by_kernel = [{row.kernel: row for row in r.rows} for r in reports]
        rows = []
        for row in first.rows:
            times = [k[row.kernel].total_us if row.kernel in k else 0.0 for k in by_kernel]
            us = statistics.median(times)
            share = us / total if total > 0 else 0.0
            rows.append(replace(row, total_us=us, mean_us=us / max(row.calls, 1), share=share))
        rows.sort(key=lambda r: -r.total_us)
        return replace(first, total_us=total, rows=tuple(rows))

    def with_bounds(self, peak_gflops: float, bandwidth_gbs: float) -> ProfileReport:
        """This report with the machine's FMA peak (GFLOP/s, for the threads used) and memory
        bandwidth (GB/s): the table then shows each kernel's share of its bound."""
        return replace(self, peak_gflops=peak_gflops, bandwidth_gbs=bandwidth_gbs)

    def __str__(self) -> str:
        bounds = self.peak_gflops is not None and self.bandwidth_gbs is not None
        head = f"{'kernel':<32} {'calls':>6} {'total us':>10} {'mean us':>10} {'share':>7}"
        head += f" {'GFLOP/s':>8} {'GB/s':>7}" + (f" {'% bound':>8}" if bounds else "")
        lines = [f"profile of {self.function} ({self.exec_mode} mode): {self.total_us:.2f} us"]
        if bounds:
            lines.append(f"bounds: {self.peak_gflops:g} GFLOP/s, {self.bandwidth_gbs:g} GB/s")
        lines.append(head)
        for r in self.rows:
            line = (
                f"{r.kernel:<32} {r.calls:>6} {r.total_us:>10.2f} {r.mean_us:>10.2f} "
                f"{r.share:>6.1%} {_num(r.gflops, '.1f'):>8} {_num(r.gbs, '.1f'):>7}"
            )
            if bounds:
                share = r.bound_share(self.peak_gflops, self.bandwidth_gbs)  # type: ignore[arg-type]
                line += f" {_num(share, '.0%'):>8}"
            lines.append(line)
        rest = max(self.total_us - self.kernel_us, 0.0)
        share = rest / self.total_us if self.total_us > 0 else 0.0
        lines.append(f"{'(VM and call overhead)':<32} {'':>6} {rest:>10.2f} {'':>10} {share:>6.1%}")
        layouts = self.layout_rows
        us = sum(r.total_us for r in layouts)
        share = us / self.total_us if self.total_us > 0 else 0.0
        lines.append(
            f"layout transforms: {len(layouts)} kernels, {sum(r.calls for r in layouts)} calls, "
            f"{us:.2f} us ({share:.1%})"
        )
        return "\n".join(lines)


_SIZE_OPS = {ast.Add: int.__add__, ast.Sub: int.__sub__, ast.Mult: int.__mul__,
             ast.FloorDiv: int.__floordiv__, ast.Mod: int.__mod__}  # fmt: skip


def eval_size(size: int | str, dims: Mapping[str, int]) -> int | None:
    """A kernel's count (`kiln.relax.analysis.cost.Size`) with the symbolic dims of a call
    (None when it names a dim the call does not bind, or is not such an expression)."""
    if isinstance(size, int):
        return size

    def value(node: ast.AST) -> int:
        if isinstance(node, ast.Constant) and type(node.value) is int:
            return node.value
        if isinstance(node, ast.Name):
            return dims[node.id]
        if isinstance(node, ast.BinOp) and type(node.op) in _SIZE_OPS:
            return _SIZE_OPS[type(node.op)](value(node.left), value(node.right))
        if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "max" and node.args:
            return max(value(a) for a in node.args)
        raise ValueError(f"not a count: {ast.dump(node)}")

    try:
        return value(ast.parse(size, mode="eval").body)
    except (KeyError, ValueError, SyntaxError, ZeroDivisionError):
        return None


def make_report(
    name: str,
    mode: str,
    elapsed_ns: int,
    records: Sequence[Any],
    costs: Mapping[str, tuple[int | str, int | str]],
    dims: Mapping[str, int] | None = None,
) -> ProfileReport:
    """The report of one profiled call from the VM's ``(kernel, calls, ns)`` records, the
    executable's per-kernel ``(flops, bytes)`` and the values of the call's symbolic ``dims``
    (by name)."""
    total_us = elapsed_ns / 1e3
    rows = []
    for r in records:
        kernel, calls, ns = str(r[0]), int(r[1]), int(r[2])
        cost = costs.get(kernel)
        flops, moved = (None, None) if cost is None else (eval_size(c, dims or {}) for c in cost)
        rows.append(
            ProfileRow(
                kernel=kernel,
                calls=calls,
                total_us=ns / 1e3,
                mean_us=ns / 1e3 / max(calls, 1),
                share=ns / 1e3 / total_us if total_us > 0 else 0.0,
                flops=flops,
                bytes=moved,
            )
        )
    rows.sort(key=lambda r: -r.total_us)
    return ProfileReport(name, mode, total_us, tuple(rows))
