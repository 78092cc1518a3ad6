"""Pass infrastructure: sequencing, instruments, the debug-level context, pass errors."""

import io
import time
from dataclasses import replace

import pytest

from kiln import tir
from kiln.errors import VerifyError
from kiln.ir import IRModule, Pass, PassContext, PrintAfterPass, Sequential, TimePasses
from tests.tir.builders import caller_module


class RenameAttr(Pass):
    name = "rename-attr"

    def run(self, mod, ctx):
        return mod.with_attr("seen", mod.get_attr("seen", 0) + 1)


class BreakIt(Pass):
    name = "break-it"

    def run(self, mod, ctx):
        f = mod["main"]
        return mod.update("main", replace(f, body=tir.Evaluate(tir.Var("ghost"))))


def test_sequential_runs_in_order_and_instruments_see_each_pass():
    timer = TimePasses()
    out = io.StringIO()
    ctx = PassContext(instruments=[timer, PrintAfterPass(out)])
    mod = Sequential([RenameAttr(), RenameAttr()])(caller_module(), ctx)
    assert mod.get_attr("seen") == 2
    assert list(timer.times) == ["rename-attr"]
    assert out.getvalue().count("after rename-attr") == 2


class Outer(Pass):
    name = "outer"

    def run(self, mod, ctx):
        time.sleep(0.02)
        return Sequential([Sleepy()])(mod, ctx)


class Sleepy(Pass):
    name = "sleepy"

    def run(self, mod, ctx):
        time.sleep(0.1)
        return mod


def test_time_passes_counts_a_nested_pass_for_itself():
    timer = TimePasses()
    Sequential([Outer()])(caller_module(), PassContext(instruments=[timer]))
    assert set(timer.times) == set(timer.cpu_times) == {"outer", "sleepy"}
    assert 0.015 <= timer.times["outer"] < 0.1 <= timer.times["sleepy"]
    assert all(t >= 0 for t in timer.cpu_times.values())


def test_debug_level_one_verifies_and_names_the_pass():
    ctx = PassContext.for_debug_level(1, verify=tir.verify_well_formed)
    with pytest.raises(VerifyError, match="(?s)after pass .break-it.*ghost"):
        Sequential([RenameAttr(), BreakIt()])(caller_module(), ctx)


def test_level_zero_has_no_instruments_and_disabled_passes_skip():
    assert PassContext.for_debug_level(0, verify=tir.verify_well_formed).instruments == []
    ctx = PassContext(disabled=frozenset({"rename-attr"}))
    assert RenameAttr()(caller_module(), ctx).get_attr("seen") is None


def test_pass_type_errors():
    with pytest.raises(TypeError, match="expects an IRModule"):
        RenameAttr()("not a module")  # type: ignore[arg-type]

    class Bad(Pass):
        name = "bad"

        def run(self, mod, ctx):
            return None

    with pytest.raises(TypeError, match="returned NoneType"):
        Bad()(IRModule())


class TouchSub(Pass):
    """Replaces ``subroutine`` with a copy (a changed function); ``main`` stays as it is."""

    name = "touch-sub"

    def run(self, mod, ctx):
        return mod.update("subroutine", mod["subroutine"].with_attr("touched", 1))


def _chunks(text: str) -> dict[str, str]:
    parts = text.split("# ---- after ")[1:]
    return {p.split(" ----", 1)[0]: p for p in parts}


def test_print_after_pass_prints_only_the_functions_a_pass_changed():
    out = io.StringIO()
    ctx = PassContext(instruments=[PrintAfterPass(out)])
    Sequential([RenameAttr(), TouchSub()])(caller_module(), ctx)
    chunks = _chunks(out.getvalue())
    assert chunks["rename-attr"].splitlines()[1] == "# unchanged"
    touched = chunks["touch-sub"]
    assert "# 1 of 2 functions changed" in touched
    assert "def subroutine(" in touched and "def main(" not in touched


def test_print_after_named_passes_prints_whole_selected_module():
    out = io.StringIO()
    printer = PrintAfterPass(out, passes=frozenset({"rename-attr"}), funcs=("main",))
    Sequential([RenameAttr(), TouchSub()])(caller_module(), PassContext(instruments=[printer]))
    chunks = _chunks(out.getvalue())
    assert list(chunks) == ["rename-attr"]
    assert "def main(" in chunks["rename-attr"] and "def subroutine(" not in chunks["rename-attr"]


def test_debug_context_prints_tir_from_level_three_unless_passes_are_named():
    def printers(level, **kwargs):
        ctx = PassContext.for_debug_level(level, verify=tir.verify_well_formed, **kwargs)
        return [i for i in ctx.instruments if isinstance(i, PrintAfterPass)]

    assert printers(2) and not printers(2, print_from=3) and printers(3, print_from=3)
    named = printers(2, print_from=3, print_after=frozenset({"simplify"}), print_funcs=("f*",))
    assert named[0].passes == {"simplify"} and named[0].funcs == ("f*",)
