"""``kiln`` / ``python -m kiln``: compile, run, benchmark and profile models from the shell.

    kiln compile model.onnx -o model.so          # progress bar on a terminal, quiet otherwise
    kiln compile model.onnx -o m.so --time-passes   # ... and the time of each phase and pass
    kiln run model.so --input x=x.npy [-o out/]  # writes out/output_0.npy ...
    kiln bench model.onnx [--threads 1,2] [--against onnxruntime]
    kiln profile model.onnx                      # the per-kernel time table (GFLOP/s, GB/s)
    kiln profile model.onnx --peak-gflops 98 --bandwidth 20   # ... and each kernel's % of bound
    kiln profile model.onnx --json --sort name                 # medians of 20 warm calls, JSON
    kiln cache info | clear                      # kiln's build cache (kiln.cli.cache)
    kiln opt --list                              # every pass by name (kiln.cli.opt)
    kiln opt -p fuse-ops,lower-te model.py       # run passes on a script (or .onnx), print script

Errors kiln raises on purpose (a bad model, a wrong input) print as one message and exit 1.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from kiln.errors import KilnError

VERBS = {
    "compile": "kiln.cli.commands",
    "run": "kiln.cli.commands",
    "bench": "kiln.cli.commands",
    "profile": "kiln.cli.profile",
    "cache": "kiln.cli.cache",
    "opt": "kiln.cli.opt",
}
"""Each verb's module: its ``COMMANDS`` table maps the verb to the function that runs it."""


def _add_model_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("model", help="an .onnx file (or, for run/profile, an exported .so)")
    p.add_argument("--target", default="c", help="compilation target (default: c, this CPU)")
    p.add_argument(
        "--exec-mode", default="compiled", choices=["compiled", "bytecode"], help="VM mode"
    )
    p.add_argument(
        "--shape",
        action="append",
        metavar="NAME=D0,D1,...",
        help="an input's shape (overrides the model's; repeatable)",
    )


def _add_cache_parser(sub: argparse._SubParsersAction) -> None:
    """``kiln cache``: see `kiln.cli.cache`."""
    c = sub.add_parser("cache", help="show or clear kiln's build cache")
    c.add_argument("action", choices=["info", "clear"], help="info: what it holds; clear: empty it")


def _add_opt_parser(sub: argparse._SubParsersAction) -> None:
    """``kiln opt``: see `kiln.cli.opt`."""
    o = sub.add_parser("opt", help="run named passes on a module, print it as script")
    o.add_argument("file", nargs="?", help="an @I.ir_module script (.py) or an .onnx model")
    o.add_argument("-p", "--passes", metavar="A,B,...",
                   help="the passes to run, in order, comma-separated (see --list)")  # fmt: skip
    o.add_argument("--list", action="store_true", help="list every pass and exit")
    o.add_argument("-o", "--output", help="write the script here instead of to stdout")
    o.add_argument("--print-after-all", action="store_true",
                   help="print the module after each pass to stderr")  # fmt: skip
    o.add_argument("--time-passes", action="store_true",
                   help="print the time of each pass to stderr")  # fmt: skip
    o.add_argument("--disable", action="append", default=[], metavar="NAME",
                   help="skip this pass where it is listed (repeatable)")  # fmt: skip
    o.add_argument("--target", default="c", help="for passes that take a target (default: c)")
    o.add_argument("--module-name", default="default",
                   help="lower-te: the prefix of kernel names (default: default)")  # fmt: skip
    o.add_argument("--compiler", default="dnnl",
                   help="partition-for-compiler: the external codegen (default: dnnl)")  # fmt: skip


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="kiln", description="The kiln tensor compiler.")
    sub = ap.add_subparsers(dest="command", required=True, metavar="COMMAND")
    c = sub.add_parser("compile", help="compile a model to one shared library")
    _add_model_options(c)
    c.add_argument("-o", "--output", required=True, help="the .so to write")
    c.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    c.add_argument("--time-passes", action="store_true",
                   help="print the time of each phase and pass to stderr")  # fmt: skip
    r = sub.add_parser("run", help="run a model on .npy inputs, write .npy outputs")
    _add_model_options(r)
    r.add_argument("--input", action="append", metavar="NAME=FILE.npy", default=[],
                   help="an input (repeatable; or FILE.npy for inputs in order)")  # fmt: skip
    r.add_argument("-o", "--output-dir", default=".", help="where output_<k>.npy go")
    b = sub.add_parser("bench", help="time a model (and onnxruntime) on the same inputs")
    _add_model_options(b)
    b.add_argument("--threads", default="1", help="thread counts, comma-separated (1,2)")
    b.add_argument("--against", choices=["onnxruntime"], help="also time this runtime")
    b.add_argument("--runs", type=int, default=20, help="timed calls per measurement")
    b.add_argument("--dim", action="append", metavar="NAME=N", help="a symbolic dim's value")
    p = sub.add_parser("profile", help="print where one call spends its time, per kernel")
    _add_model_options(p)
    p.add_argument("--dim", action="append", metavar="NAME=N", help="a symbolic dim's value")
    p.add_argument("--peak-gflops", type=float, metavar="G",
                   help="FMA peak (GFLOP/s) of the threads used (default: measured)")  # fmt: skip
    p.add_argument("--bandwidth", type=float, metavar="GB/S",
                   help="the memory bandwidth (GB/s): adds each kernel's %% of bound")  # fmt: skip
    p.add_argument("--repeat", type=int, default=20, metavar="N",
                   help="profiled calls; each time is the median of them (default 20)")  # fmt: skip
    p.add_argument("--warmup", type=int, default=3, metavar="N",
                   help="calls before them, and at least 50 ms of calls (default 3)")  # fmt: skip
    p.add_argument("--sort", choices=["time", "name"], default="time",
                   help="order of the kernels (default: time, the longest first)")  # fmt: skip
    p.add_argument("--json", action="store_true",
                   help="print the report as JSON, with full kernel and node names")  # fmt: skip
    _add_cache_parser(sub)
    _add_opt_parser(sub)
    return ap


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    # NOTE: the verb's module is imported on dispatch, and only it: `kiln --help` loads no
    # command, `kiln cache` no compiler (kiln.cli.commands and kiln.cli.opt load all of it)
    handler = importlib.import_module(VERBS[args.command]).COMMANDS[args.command]
    try:
        return handler(args)
    except KilnError as e:
        print(f"kiln {args.command}: error: {e}", file=sys.stderr)
        return 1
    except (ValueError, TypeError, FileNotFoundError) as e:
        # NOTE: the runtime's input checks raise ValueError/TypeError naming the input
        print(f"kiln {args.command}: error: {e}", file=sys.stderr)
        return 1


def run() -> None:
    """The console-script entry point."""
    sys.exit(main())


if __name__ == "__main__":  # pragma: no cover
    run()


__all__ = ["main", "parser", "run"]
