"""``kiln opt``: run named passes on a module and print the result as script.

    kiln opt --list                                  # every pass: name, level, what it does
    kiln opt -p fuse-ops,lower-te model.py           # an @I.ir_module script; result to stdout
    kiln opt -p relax-normalize,fuse-ops model.onnx -o fused.py
    kiln opt -p fuse-ops,lower-te m.py --print-after-all --time-passes   # (both to stderr)
    kiln opt -p fold-constant,fuse-ops m.py --disable fold-constant      # repeatable

Passes run in the order given, as one `Sequential` with one `PassContext` (``KILN_DEBUG=1``
verifies the module after each, as a build does). A pass that takes an argument gets it from
``--target`` (default ``c``), ``--module-name`` or ``--compiler`` (`kiln.driver.passes`). The
printed script parses back to the result (``kiln.script.from_source``), so a module before and
after a pass can be kept as files and compared: see ``tests/passes/``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from kiln.driver import passes as registry
from kiln.errors import KilnError
from kiln.ir.function import BaseFunc
from kiln.ir.module import IRModule
from kiln.ir.transform import PrintAfterPass, Sequential, TimePasses
from kiln.relax.frontend.onnx import from_onnx
from kiln.relax.function_pass import debug_pass_context
from kiln.script import from_source


def cmd_opt(args: argparse.Namespace) -> int:
    if args.list:
        print(_listing(registry))
        return 0
    if not args.passes or not args.file:
        raise KilnError("give -p PASS,... and a FILE (`kiln opt --list` names every pass)")
    options = registry.PassOptions(args.target, args.module_name, args.compiler)
    names = [n.strip() for n in args.passes.split(",") if n.strip()]
    pipeline = [registry.pass_by_name(n, options) for n in names]
    disabled = frozenset(registry.lookup(n).name for n in args.disable)
    mod = read_module(args.file)
    ctx = _context(disabled)
    timer = _instruments(ctx, args, frozenset(names))
    out = Sequential(pipeline)(mod, ctx)
    if timer is not None:
        print(_time_table(timer, names, disabled), file=sys.stderr)
    text = out.script()
    if args.output:
        Path(args.output).write_text(text + "\n")
    else:
        print(text)
    return 0


def read_module(path: str) -> Any:
    """The module in ``path``: a script (``.py``) parsed with its file name for errors, or an
    ONNX model imported by the ONNX frontend. A script of one function becomes a module of
    it (named after its global symbol, else ``main``)."""
    file = Path(path)
    if not file.is_file():
        raise KilnError(f"no such file: {path}")
    if file.suffix == ".onnx":
        return from_onnx(str(file))
    if file.suffix != ".py":
        raise KilnError(f"{path}: expected a .py script (@I.ir_module) or an .onnx model")
    parsed = from_source(file.read_text(), str(file))
    if isinstance(parsed, BaseFunc):
        name = parsed.get_attr("global_symbol") or "main"
        return IRModule.from_expr(parsed, name)
    return parsed


def _context(disabled: frozenset[str]) -> Any:
    return debug_pass_context(disabled=disabled)


def _instruments(ctx: Any, args: argparse.Namespace, names: frozenset[str]) -> Any:
    """Adds the instruments ``args`` ask for to ``ctx``; returns the timer, if any."""
    if args.print_after_all:
        # NOTE: naming the passes prints the whole module after each, not only what changed
        ctx.instruments.append(PrintAfterPass(stream=sys.stderr, passes=names))
    if not args.time_passes:
        return None
    timer = TimePasses()
    ctx.instruments.append(timer)
    return timer


def _time_table(timer: Any, names: list[str], disabled: frozenset[str]) -> str:
    """One row per pass run (wall and CPU milliseconds), in the order given, then the total."""
    rows = [f"{'pass':<34}{'wall ms':>10}{'cpu ms':>10}"]
    for name in dict.fromkeys(names):
        if name in disabled:
            rows.append(f"{name:<34}{'(disabled)':>20}")
            continue
        wall, cpu = timer.times.get(name, 0.0), timer.cpu_times.get(name, 0.0)
        rows.append(f"{name:<34}{wall * 1e3:>10.1f}{cpu * 1e3:>10.1f}")
    wall, cpu = sum(timer.times.values()), sum(timer.cpu_times.values())
    rows.append(f"{'total':<34}{wall * 1e3:>10.1f}{cpu * 1e3:>10.1f}")
    return "\n".join(rows)


def _listing(registry: Any) -> str:
    """One line per pass: name, level, summary and the options it reads."""
    lines = []
    for entry in registry.PASSES.values():
        flags = ", ".join("--" + o.replace("_", "-") for o in entry.options)
        uses = f" [{flags}]" if flags else ""
        lines.append(f"{entry.name:<34}{entry.level:<7}{entry.summary}{uses}")
    return "\n".join(lines)


COMMANDS = {"opt": cmd_opt}
