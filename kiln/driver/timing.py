"""Where a compile's time goes: phases, passes and C translation units (``KILN_DEBUG=time``).

    timer = CompileTimer()
    with timer.phase("import"):
        mod = as_ir_module(path)
    ctx = PassContext(instruments=[timer.passes("graph")])    # one row per pass
    ...
    print(timer.table(), file=sys.stderr)

A row is a phase of the main thread (import, each graph-level pass, VM code generation, the TIR
passes of the kernels, C code generation, waiting for the C compiler, load, cache store + load
(the model stored in the cache and loaded back from its entry)) with its
wall and CPU seconds (CPU: `time.process_time`, this process). Phases nest, and a row counts its
own time only (a phase inside another is subtracted from it), so the rows add up to the time
spent in phases. Details (`detail`) are shown apart and not added: each translation unit's
compiler process (wall time, concurrent with the rows) and the link. The C compiler's own CPU
time is that of this process's children (`resource.getrusage`), reported on the total line.
`kiln.compile` and ``kiln compile --time-passes`` print the table to stderr.
"""

from __future__ import annotations

import resource
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from kiln.ir.module import IRModule
from kiln.ir.transform import Pass, PassInstrument


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


@dataclass
class CompileTimer:
    """Wall and CPU seconds per phase of one compile (see the module docstring)."""

    rows: dict[str, list[float]] = field(default_factory=dict)
    """name -> [wall, cpu, count], own time only, in the order phases first ran."""
    details: list[tuple[str, float]] = field(default_factory=list)
    """(name, wall seconds) of work outside the main thread (compiler processes, link)."""
    _open: list[tuple[list[float], list[float]]] = field(default_factory=list)
    """Per phase running: (its row, [wall, cpu at start, wall, cpu of the phases inside])."""
    _start: tuple[float, float, float] = field(
        default_factory=lambda: (time.perf_counter(), time.process_time(), _children_cpu())
    )

    def enter(self, name: str) -> None:
        """Start phase ``name`` (prefer `phase`; this pairs with `leave`)."""
        row = self.rows.setdefault(name, [0.0, 0.0, 0])
        self._open.append((row, [time.perf_counter(), time.process_time(), 0.0, 0.0]))

    def leave(self) -> None:
        """End the phase `enter` started last, adding its own time to its row."""
        row, (wall0, cpu0, inner_wall, inner_cpu) = self._open.pop()
        wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
        if self._open:
            self._open[-1][1][2] += wall
            self._open[-1][1][3] += cpu
        row[0] += wall - inner_wall
        row[1] += cpu - inner_cpu
        row[2] += 1

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        """Time the ``with`` block as phase ``name`` (repeated phases add up)."""
        self.enter(name)
        try:
            yield
        finally:
            self.leave()

    def passes(self, prefix: str) -> PassInstrument:
        """An instrument recording each pass as phase ``<prefix>: <pass name>``."""
        return _PassPhases(self, prefix)

    def detail(self, name: str, wall: float) -> None:
        """Record ``wall`` seconds of work done outside the main thread (thread-safe)."""
        self.details.append((name, wall))

    def total(self) -> tuple[float, float, float]:
        """(wall, this process's CPU, compiler processes' CPU) since the timer was made."""
        wall0, cpu0, child0 = self._start
        return (
            time.perf_counter() - wall0,
            time.process_time() - cpu0,
            _children_cpu() - child0,
        )

    def table(self) -> str:
        """The rows, the total and the details as a text table."""
        wall, cpu, child = self.total()
        lines = [f"{'kiln compile times':<40} {'wall s':>8} {'cpu s':>8} {'runs':>5}"]
        for name, (w, c, n) in self.rows.items():
            lines.append(f"{name:<40} {w:8.3f} {c:8.3f} {int(n):5d}")
        summed = sum(r[0] for r in self.rows.values()), sum(r[1] for r in self.rows.values())
        lines.append(f"{'(sum of the rows)':<40} {summed[0]:8.3f} {summed[1]:8.3f}")
        lines.append(f"{'total':<40} {wall:8.3f} {cpu:8.3f}")
        lines.append(f"{'C compiler processes (cpu)':<40} {'':8} {child:8.3f}")
        for name, w in self.details:
            lines.append(f"  {name:<38} {w:8.3f}")
        return "\n".join(lines)


class _PassPhases(PassInstrument):
    """Each pass a phase of a `CompileTimer` (nested passes count for themselves)."""

    def __init__(self, timer: CompileTimer, prefix: str) -> None:
        self.timer = timer
        self.prefix = prefix

    def before_pass(self, mod: IRModule, pass_: Pass) -> None:
        self.timer.enter(f"{self.prefix}: {pass_.name}")

    def after_pass(self, mod: IRModule, pass_: Pass) -> None:
        self.timer.leave()
