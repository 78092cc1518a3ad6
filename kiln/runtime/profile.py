"""`ProfileReport`: where a model's calls spend their time, per kernel, which model nodes each
kernel came from, and how close each kernel came to the machine's bounds.

Each row is a kernel (or a non-builtin packed function) with its calls and time. The first call
after a pause pays for a cold thread pool, cold caches and page faults (a 50 us model's idle
call measured 1.1 ms), so `profile_calls` first calls the function a few times (``warmup``, and
at least `WARMUP_S` of calls), then profiles ``repeat`` calls; `ProfileReport.median` merges
their reports into one whose times are each row's median over them, and whose total is the
median call time: a process that takes the core during one call does not reach the table.

A kernel whose work the executable records (`Executable.costs`: FLOPs and compulsory bytes,
from `kiln.relax.analysis.cost`) also gets its achieved GFLOP/s and GB/s and, given the FMA peak
of the threads it ran on (`kiln.runtime.fma_peak`, measured once per machine; ``kiln profile
--peak-gflops`` overrides it), its ``% peak``. Given the memory bandwidth too
(`ProfileReport.with_bounds`; ``--bandwidth``), each such row also gets ``% bound``: the time
the kernel would take at whichever bound binds it (its FLOPs at the peak, or its bytes at the
bandwidth, whichever is longer) over its measured time. 100% is the bound; a kernel far below it
is where time is lost. A row lists the model nodes (ONNX or FX node names) whose operators the
kernel computes, from the executable's kernel -> nodes map (`Executable.nodes`, recorded at
every call site of the kernel; `make_report`'s ``nodes``).

``str()`` prints a table whose kernel names are cut in the middle to fit their column, and whose
node lists are their first `SHOWN_NODES` names and a count of the rest (``+3 more``);
`ProfileReport.to_json` has the full names and lists. The last lines count the layout
transforms the call ran (kernels whose fused operators include ``layout_transform``, by name):
the graph level should transform layouts only at a chain's boundary, so more than a few per
model is a missed optimization.
"""

from __future__ import annotations

import ast
import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from kiln.errors import KilnError

LAYOUT_TRANSFORM = "layout_transform"
"""What the name of a kernel that transforms a layout contains (`ProfileReport.layout_rows`)."""

DEFAULT_REPEAT = 20
"""Profiled calls whose median the report gives (``kiln profile --repeat``)."""

DEFAULT_WARMUP = 3
"""Unprofiled calls before them (``--warmup``); with `WARMUP_S`, whichever takes longer."""

WARMUP_S = 0.05
"""The least time spent on warm-up calls (when any are asked for): a thread pool asleep and
caches cold take several calls of a small model to recover."""

SORT_KEYS = ("time", "name")
"""How `ProfileReport.sorted_by` orders the rows: by time (the longest first) or by name."""

KERNEL_WIDTH = 36
NODE_WIDTH = 32
"""The characters of one node name in a table row (cut in the middle beyond that)."""
SHOWN_NODES = 2
"""The node names a table row shows (the JSON has all of them)."""


def shorten(name: str, width: int) -> str:
    """``name`` cut in the middle to ``width`` characters (``...`` marks the cut), so a long
    kernel name keeps its distinctive start and end without breaking the table's columns."""
    if len(name) <= width:
        return name
    keep = width - 3
    return f"{name[: (keep + 1) // 2]}...{name[len(name) - keep // 2 :]}"


def node_list(nodes: Sequence[str]) -> str:
    """The first `SHOWN_NODES` of ``nodes`` (each cut to `NODE_WIDTH`) and how many more there
    are: a fused kernel shared by the blocks of a deep model computes dozens of nodes."""
    shown = ", ".join(shorten(n, NODE_WIDTH) for n in nodes[:SHOWN_NODES])
    rest = len(nodes) - SHOWN_NODES
    return f"{shown} +{rest} more" if rest > 0 else shown


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
    nodes: tuple[str, ...] = ()
    """The model nodes whose operators the kernel computes, when the executable records them."""

    @property
    def gflops(self) -> float | None:
        """Achieved GFLOP/s (FLOPs per nanosecond)."""
        return None if self.flops is None or self.mean_us <= 0 else self.flops / self.mean_us / 1e3

    @property
    def gbs(self) -> float | None:
        """Achieved GB/s."""
        return None if self.bytes is None or self.mean_us <= 0 else self.bytes / self.mean_us / 1e3

    def peak_share(self, peak_gflops: float) -> float | None:
        """Achieved GFLOP/s over the FMA peak; None without the kernel's FLOPs."""
        gflops = self.gflops
        return None if gflops is None or peak_gflops <= 0 else gflops / peak_gflops

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
    """Where the profiled calls of one VM function spent their time; ``str()`` prints the
    table, `to_json` gives the same as plain data."""

    function: str
    exec_mode: str
    total_us: float
    rows: tuple[ProfileRow, ...]
    peak_gflops: float | None = None
    """The FMA peak (GFLOP/s) of the threads the kernels ran on: adds ``% peak``."""
    bandwidth_gbs: float | None = None
    """The memory bandwidth (GB/s): with the peak, adds ``% bound``."""
    repeat: int = 1
    """The profiled calls whose medians the times are."""
    warmup: int = 0
    """The calls made before them, unprofiled."""

    @property
    def kernel_us(self) -> float:
        return sum(r.total_us for r in self.rows)

    @property
    def overhead_us(self) -> float:
        """The call's time outside the kernels (the VM, argument checks, the call itself)."""
        return max(self.total_us - self.kernel_us, 0.0)

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
        repeat = sum(r.repeat for r in reports)
        return replace(first, total_us=total, rows=tuple(rows), repeat=repeat)

    def with_total(self, total_us: float) -> ProfileReport:
        """This report with the call's time ``total_us`` (each row's share recomputed)."""
        rows = tuple(replace(r, share=r.total_us / total_us if total_us > 0 else 0.0)
                     for r in self.rows)  # fmt: skip
        return replace(self, total_us=total_us, rows=rows)

    def with_bounds(
        self, peak_gflops: float | None, bandwidth_gbs: float | None = None
    ) -> ProfileReport:
        """This report with the machine's FMA peak (GFLOP/s, for the threads used) and memory
        bandwidth (GB/s): the table then shows each kernel's share of them."""
        return replace(self, peak_gflops=peak_gflops, bandwidth_gbs=bandwidth_gbs)

    def sorted_by(self, key: str) -> ProfileReport:
        """The rows by time (the longest first) or by kernel name (`SORT_KEYS`)."""
        if key not in SORT_KEYS:
            raise KilnError(f"a profile sorts by {' or '.join(SORT_KEYS)}, not {key!r}")
        order = (lambda r: (-r.total_us, r.kernel)) if key == "time" else (lambda r: r.kernel)
        return replace(self, rows=tuple(sorted(self.rows, key=order)))

    def _row_json(self, r: ProfileRow) -> dict[str, Any]:
        peak, bw = self.peak_gflops, self.bandwidth_gbs
        return {
            "kernel": r.kernel, "nodes": list(r.nodes), "calls": r.calls,
            "total_us": r.total_us, "mean_us": r.mean_us, "share": r.share,
            "flops": r.flops, "bytes": r.bytes, "gflops": r.gflops, "gbs": r.gbs,
            "peak_share": None if peak is None else r.peak_share(peak),
            "bound_share": None if peak is None or bw is None else r.bound_share(peak, bw),
        }  # fmt: skip

    def to_json(self) -> dict[str, Any]:
        """The report as JSON-ready data: every row with its full kernel and node names, its
        work and rates, and the call's overhead and layout-transform count."""
        layouts = self.layout_rows
        return {
            "function": self.function, "exec_mode": self.exec_mode,
            "total_us": self.total_us, "repeat": self.repeat, "warmup": self.warmup,
            "peak_gflops": self.peak_gflops, "bandwidth_gbs": self.bandwidth_gbs,
            "rows": [self._row_json(r) for r in self.rows],
            "overhead_us": self.overhead_us,
            "layout_transforms": {"kernels": len(layouts),
                                  "calls": sum(r.calls for r in layouts),
                                  "total_us": sum(r.total_us for r in layouts)},
        }  # fmt: skip

    def _head(self) -> list[str]:
        peak, bounds = self.peak_gflops is not None, self.bandwidth_gbs is not None
        what = f"median of {self.repeat} calls" if self.repeat > 1 else "one call"
        lines = [
            f"profile of {self.function} ({self.exec_mode} mode): {self.total_us:.2f} us per "
            f"call ({what}, after {self.warmup} warm-up calls)"
        ]
        if peak:
            lines.append(
                f"FMA peak: {self.peak_gflops:g} GFLOP/s"
                + (f", bandwidth: {self.bandwidth_gbs:g} GB/s" if bounds else "")
            )
        head = f"{'kernel':<{KERNEL_WIDTH}} {'calls':>6} {'total us':>10} {'mean us':>10}"
        head += f" {'share':>6} {'GFLOP/s':>8} {'GB/s':>7}"
        head += (f" {'% peak':>7}" if peak else "") + (
            f" {'% bound':>8}" if peak and bounds else ""
        )
        lines.append(f"{head}  nodes")
        return lines

    def _row_line(self, r: ProfileRow) -> str:
        line = (
            f"{shorten(r.kernel, KERNEL_WIDTH):<{KERNEL_WIDTH}} {r.calls:>6} {r.total_us:>10.2f}"
            f" {r.mean_us:>10.2f} {r.share:>6.1%} {_num(r.gflops, '.1f'):>8}"
            f" {_num(r.gbs, '.1f'):>7}"
        )
        if self.peak_gflops is not None:
            line += f" {_num(r.peak_share(self.peak_gflops), '.0%'):>7}"
            if self.bandwidth_gbs is not None:
                line += f" {_num(r.bound_share(self.peak_gflops, self.bandwidth_gbs), '.0%'):>8}"
        return f"{line}  {node_list(r.nodes)}".rstrip()

    def __str__(self) -> str:
        lines = self._head() + [self._row_line(r) for r in self.rows]
        rest = self.overhead_us
        share = rest / self.total_us if self.total_us > 0 else 0.0
        lines.append(
            f"{'(VM and call overhead)':<{KERNEL_WIDTH}} {'':>6} {rest:>10.2f} {'':>10}"
            f" {share:>6.1%}"
        )
        layouts = self.layout_rows
        us = sum(r.total_us for r in layouts)
        share = us / self.total_us if self.total_us > 0 else 0.0
        lines.append(
            f"layout transforms: {len(layouts)} kernels, {sum(r.calls for r in layouts)} calls, "
            f"{us:.2f} us ({share:.1%})"
        )
        return "\n".join(lines)


def warm_up(call: Callable[[], Any], calls: int, min_s: float = WARMUP_S) -> int:
    """Make ``calls`` calls, and more until ``min_s`` seconds have passed (none when ``calls``
    is 0); returns how many were made."""
    if calls <= 0:
        return 0
    start, made = time.perf_counter(), 0
    while made < calls or time.perf_counter() - start < min_s:
        call()
        made += 1
    return made


def profile_calls(
    call: Callable[[], Any],
    profile_one: Callable[[], ProfileReport],
    repeat: int = DEFAULT_REPEAT,
    warmup: int = DEFAULT_WARMUP,
) -> ProfileReport:
    """Warm up with ``call`` (`warm_up`), then the median report of ``repeat`` calls of
    ``profile_one`` (`ProfileReport.median`), each after a plain call of ``call``: the report's
    total is the median of the plain calls (the model's time per call; the profiled calls pay
    for their timestamps, which would land in the overhead row), the kernels' times the
    profiled calls' medians."""
    if repeat < 1:
        raise KilnError(f"a profile needs at least 1 profiled call (repeat), got {repeat}")
    if warmup < 0:
        raise KilnError(f"warm-up calls (warmup) cannot be negative, got {warmup}")
    made = warm_up(call, warmup)
    plain_ns: list[int] = []
    reports = []
    for _ in range(repeat):
        start = time.perf_counter_ns()
        call()
        plain_ns.append(time.perf_counter_ns() - start)
        reports.append(profile_one())
    report = ProfileReport.median(reports).with_total(statistics.median(plain_ns) / 1e3)
    return replace(report, warmup=made)


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
    nodes: Mapping[str, tuple[str, ...]] | None = None,
) -> ProfileReport:
    """The report of one profiled call from the VM's ``(kernel, calls, ns)`` records, the
    executable's per-kernel ``(flops, bytes)`` and model ``nodes``, and the values of the call's
    symbolic ``dims`` (by name)."""
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
                nodes=(nodes or {}).get(kernel, ()),
            )
        )
    rows.sort(key=lambda r: -r.total_us)
    return ProfileReport(name, mode, total_us, tuple(rows))
