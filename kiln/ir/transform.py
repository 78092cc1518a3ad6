"""Pass infrastructure: `Pass`, `Sequential`, `PassContext` and pass instruments.

A pass is a small named object mapping an `IRModule` to an `IRModule`; the context is passed
explicitly. Instruments observe every pass (print the IR, verify it, time it); `PassContext` builds
the debugging instruments for a `KILN_DEBUG` level when the caller gives it a verifier.
"""

from __future__ import annotations

import fnmatch
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, TextIO

from kiln.errors import VerifyError
from kiln.ir.function import BaseFunc, GlobalVar
from kiln.ir.module import IRModule


class PassInstrument:
    """Hooks run around each pass; override what you need."""

    def before_pass(self, mod: IRModule, pass_: Pass) -> None:
        """Called with the module a pass is about to receive."""

    def after_pass(self, mod: IRModule, pass_: Pass) -> None:
        """Called with the module a pass returned."""


@dataclass
class PrintAfterPass(PassInstrument):
    """Prints functions of the module after each pass (``KILN_DEBUG=2``), to ``stream``.

    With ``passes`` (pass names) it prints only after those passes, each time every selected
    function; without, after every pass the selected functions that pass changed (a pass that
    changed none prints one line). ``funcs`` (shell-style globs of function names) selects
    functions; None selects all. A printed module may refer to functions it does not hold (they
    did not change): ``kiln.script.from_source(text, partial=True)`` parses it anyway."""

    stream: TextIO | None = None
    passes: frozenset[str] | None = None
    funcs: tuple[str, ...] | None = None
    _before: dict[str, BaseFunc] = field(default_factory=dict)

    def before_pass(self, mod: IRModule, pass_: Pass) -> None:
        self._before = {gv.name_hint: f for gv, f in mod.items()}

    def after_pass(self, mod: IRModule, pass_: Pass) -> None:
        if self.passes is not None and pass_.name not in self.passes:
            return
        chosen = {gv: f for gv, f in mod.items() if self._selected(gv.name_hint)}
        if self.passes is None:
            chosen = {gv: f for gv, f in chosen.items() if self._before.get(gv.name_hint) is not f}
        out = self.stream or sys.stderr
        print(f"# ---- after {pass_.name} ----", file=out)
        if not chosen:
            print("# unchanged", file=out)
        else:
            if self.passes is None:
                print(f"# {len(chosen)} of {len(mod)} functions changed", file=out)
            print(IRModule(chosen, mod.attrs), file=out)

    def _selected(self, name: str) -> bool:
        return self.funcs is None or any(fnmatch.fnmatchcase(name, g) for g in self.funcs)


@dataclass
class VerifyAfterPass(PassInstrument):
    """Runs a verifier after each pass and names the pass that broke the module."""

    verify: Callable[[IRModule], None]

    def after_pass(self, mod: IRModule, pass_: Pass) -> None:
        try:
            self.verify(mod)
        except VerifyError as e:
            raise VerifyError(f"after pass {pass_.name!r}: {e}") from e


@dataclass
class TimePasses(PassInstrument):
    """Records the seconds spent in each pass, by name: wall time in ``times``, this process's
    CPU time in ``cpu_times``. A pass run inside another (a pass calling passes with the same
    context) counts for itself only, so the times of all passes add up to the time spent in
    passes."""

    times: dict[str, float] = field(default_factory=dict)
    cpu_times: dict[str, float] = field(default_factory=dict)
    _open: list[list[float]] = field(default_factory=list)
    """Per pass running: [wall at start, cpu at start, wall of inner passes, cpu of inner]."""

    def before_pass(self, mod: IRModule, pass_: Pass) -> None:
        self._open.append([time.perf_counter(), time.process_time(), 0.0, 0.0])

    def after_pass(self, mod: IRModule, pass_: Pass) -> None:
        wall0, cpu0, inner_wall, inner_cpu = self._open.pop()
        wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
        if self._open:
            self._open[-1][2] += wall
            self._open[-1][3] += cpu
        name = pass_.name
        self.times[name] = self.times.get(name, 0.0) + wall - inner_wall
        self.cpu_times[name] = self.cpu_times.get(name, 0.0) + cpu - inner_cpu


@dataclass
class PassContext:
    """Options and instruments for one pipeline run; passed explicitly, never global."""

    opt_level: int = 2
    config: dict[str, Any] = field(default_factory=dict)
    instruments: list[PassInstrument] = field(default_factory=list)
    disabled: frozenset[str] = frozenset()

    @staticmethod
    def for_debug_level(
        level: int,
        verify: Callable[[IRModule], None] | None = None,
        *,
        print_from: int = 2,
        print_after: frozenset[str] | None = None,
        print_funcs: tuple[str, ...] | None = None,
        **kwargs: Any,
    ) -> PassContext:
        """A context with the instruments of ``KILN_DEBUG=level``: 1 verifies after each pass;
        from ``print_from`` on (2 for graph-level pipelines, 3 for TIR) it also prints, as does 2
        when ``print_after`` names passes (`PrintAfterPass` with ``print_after`` and
        ``print_funcs``)."""
        instruments: list[PassInstrument] = []
        if level >= 1 and verify is not None:
            instruments.append(VerifyAfterPass(verify))
        if level >= print_from or (level >= 2 and print_after is not None):
            instruments.append(PrintAfterPass(passes=print_after, funcs=print_funcs))
        return PassContext(instruments=instruments, **kwargs)


class Pass:
    """Base of module passes: subclasses set ``name`` and implement ``run``."""

    name: ClassVar[str] = "pass"

    def run(self, mod: IRModule, ctx: PassContext) -> IRModule:
        raise TypeError(f"{type(self).__name__} must implement run(mod, ctx)")

    def __call__(self, mod: IRModule, ctx: PassContext | None = None) -> IRModule:
        ctx = ctx or PassContext()
        if self.name in ctx.disabled:
            return mod
        if not isinstance(mod, IRModule):
            raise TypeError(f"pass {self.name!r} expects an IRModule, got {type(mod).__name__}")
        for inst in ctx.instruments:
            inst.before_pass(mod, self)
        out = self.run(mod, ctx)
        if not isinstance(out, IRModule):
            raise TypeError(f"pass {self.name!r} returned {type(out).__name__}, not an IRModule")
        for inst in ctx.instruments:
            inst.after_pass(out, self)
        return out


@dataclass(frozen=True)
class FunctionPass(Pass):
    """A pass that rewrites each function of one kind on its own.

    Subclasses set ``function_type`` and implement `transform`; functions of other kinds pass
    through untouched, and a module whose functions all come back unchanged (``is``) is returned
    as it was.
    """

    function_type: ClassVar[type] = BaseFunc

    def run(self, mod: IRModule, ctx: PassContext) -> IRModule:
        changed: dict[GlobalVar, BaseFunc] = {}
        for gv, func in mod.items():
            if isinstance(func, self.function_type):
                new = self.transform(gv, func, mod, ctx)
                if new is not func:
                    changed[gv] = new
        return mod.update_all(changed) if changed else mod

    def transform(self, gv: GlobalVar, func: Any, mod: IRModule, ctx: PassContext) -> BaseFunc:
        """The new version of ``func`` (``func`` itself when nothing changes)."""
        raise TypeError(f"{type(self).__name__} must implement transform(gv, func, mod, ctx)")


@dataclass(frozen=True)
class Sequential(Pass):
    """Runs passes in order; instruments see each inner pass."""

    passes: Sequence[Pass] = ()
    seq_name: str = "sequential"
    name: ClassVar[str] = "sequential"

    def __call__(self, mod: IRModule, ctx: PassContext | None = None) -> IRModule:
        ctx = ctx or PassContext()
        for p in self.passes:
            mod = p(mod, ctx)
        return mod


@dataclass(frozen=True)
class ModuleFunctionPass(Pass):
    """Wraps a plain function ``(mod, ctx) -> mod`` as a named pass."""

    fn: Callable[[IRModule, PassContext], IRModule] = field(default=lambda m, c: m)
    pass_name: str = "module-function-pass"

    def run(self, mod: IRModule, ctx: PassContext) -> IRModule:
        return self.fn(mod, ctx)

    @property
    def name(self) -> str:  # type: ignore[override]
        return self.pass_name
