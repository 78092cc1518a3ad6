"""``kiln`` / ``python -m kiln``: compile, run, benchmark and profile models from the shell.

    kiln --version
    kiln compile model.onnx -o model.so          # progress to stderr (-q: none)
    kiln compile model.onnx -o m.so --time-passes   # ... and the time of each phase and pass
    kiln run model.so --input x=x.npy [-o out/]  # writes out/<output name>.npy ...
    kiln bench model.onnx [--threads 1,2] [--against onnxruntime]
    kiln inspect model.onnx | model.so           # inputs, outputs, ops or kernels
    kiln profile model.onnx                      # the per-kernel time table (GFLOP/s, GB/s)
    kiln profile model.onnx --peak-gflops 98 --bandwidth 20   # ... and each kernel's % of bound
    kiln profile model.onnx --json --sort name                 # medians of 20 warm calls, JSON
    kiln cache info | clear                      # kiln's build cache (kiln.cli.cache)
    kiln opt --list                              # every pass by name (kiln.cli.opt)
    kiln opt -p fuse-ops,lower-te model.py       # run passes on a script (or .onnx), print script

A wrong option prints one line ``kiln <verb>: error: ...`` and exits 2 (argparse's checks and
the option types below); a model error (a bad model, a wrong input) prints one line and exits 1;
Ctrl-C prints ``kiln <verb>: interrupted`` and exits 130. ``KILN_DEBUG=1`` re-raises instead,
with the traceback.
"""

from __future__ import annotations

import argparse
import importlib
import re
import sys
from typing import NoReturn

from kiln import __version__, config
from kiln.errors import KilnError

VERBS = {
    "compile": "kiln.cli.commands",
    "run": "kiln.cli.run",
    "bench": "kiln.cli.commands",
    "profile": "kiln.cli.profile",
    "inspect": "kiln.cli.inspect",
    "cache": "kiln.cli.cache",
    "opt": "kiln.cli.opt",
}
"""Each verb's module: its ``COMMANDS`` table maps the verb to the function that runs it."""

EXAMPLES = {
    "compile": ("kiln compile resnet18.onnx -o resnet18.so",
                "kiln compile bert.onnx -o bert.so --shape input_ids=1,128 --time-passes"),
    "run": ("kiln run resnet18.so --input data=image.npy -o out/",
            "kiln run model.onnx --input x.npy --input y.npy"),
    "bench": ("kiln bench resnet18.onnx --against onnxruntime",
              "kiln bench bert.so --dim batch=8 --threads 1,2,4 --runs 50"),
    "profile": ("kiln profile resnet18.onnx --repeat 20",
                "kiln profile model.so --dim batch=4 --peak-gflops 98 --bandwidth 20"),
    "inspect": ("kiln inspect resnet18.onnx", "kiln inspect resnet18.so"),
    "cache": ("kiln cache info", "kiln cache clear"),
    "opt": ("kiln opt --list", "kiln opt -p fuse-ops,lower-te model.py -o lowered.py"),
}  # fmt: skip
"""Two command lines per verb, shown at the end of its ``--help``."""

_NAME = re.compile(r"[A-Za-z_][\w.:/-]*$")
"""A symbolic dim's or an input's name on the command line."""


class _Parser(argparse.ArgumentParser):
    """argparse, with its usage errors on one line (and exit code 2)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def _verb(sub: argparse._SubParsersAction, name: str, help: str) -> argparse.ArgumentParser:
    """The subparser of ``name``, its examples in the epilog."""
    lines = "\n".join(f"  {line}" for line in EXAMPLES[name])
    return sub.add_parser(
        name, help=help, epilog=f"examples:\n{lines}",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )  # fmt: skip


def positive_int(text: str) -> int:
    """An option's value that must be a whole number >= 1."""
    if not text.strip().isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {text!r}")
    return int(text)


def thread_counts(text: str) -> tuple[int, ...]:
    """``1,2,4``: thread counts, each >= 1."""
    items = [t.strip() for t in text.split(",")]
    if not all(t.isdigit() and int(t) >= 1 for t in items):
        raise argparse.ArgumentTypeError(
            f"expected thread counts >= 1, comma-separated (such as 1,2), got {text!r}"
        )
    return tuple(int(t) for t in items)


def dim_value(text: str) -> tuple[str, int]:
    """``NAME=N``: a symbolic dim's size (>= 1)."""
    name, _, value = text.partition("=")
    if not _NAME.match(name.strip()) or not value.strip().isdigit() or int(value) < 1:
        raise argparse.ArgumentTypeError(f"expected NAME=N (N >= 1, such as batch=8), got {text!r}")
    return name.strip(), int(value)


def shape_value(text: str) -> tuple[str, tuple[int | str, ...]]:
    """``NAME=D0,D1,...``: an input's shape, each dim a size or a symbolic dim's name."""
    name, _, dims = text.partition("=")
    items = [d.strip() for d in dims.split(",")] if dims.strip() else []
    bad = [d for d in items if not (d.isdigit() or _NAME.match(d))]
    if not name.strip() or not items or bad:
        what = f"dim {bad[0]!r} is neither a size nor a name; " if bad else ""
        raise argparse.ArgumentTypeError(
            f"{what}expected NAME=D0,D1,... (sizes or symbolic names, comma-separated, such "
            f"as data=1,3,224,224 or x=batch,8), got {text!r}"
        )
    return name.strip(), tuple(int(d) if d.isdigit() else d for d in items)


def _add_model_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("model", help="an .onnx file (or, for run/bench/profile, an exported .so)")
    p.add_argument("--target", default="c", help="compilation target (default: c, this CPU)")
    p.add_argument(
        "--exec-mode", default="compiled", choices=["compiled", "bytecode"], help="VM mode"
    )
    p.add_argument(
        "--shape",
        action="append",
        type=shape_value,
        metavar="NAME=D0,D1,...",
        help="an input's shape (overrides the model's; repeatable)",
    )


def _add_cache_parser(sub: argparse._SubParsersAction) -> None:
    """``kiln cache``: see `kiln.cli.cache`."""
    c = _verb(sub, "cache", "show or clear kiln's build cache")
    c.add_argument("action", choices=["info", "clear"], help="info: what it holds; clear: empty it")


def _add_opt_parser(sub: argparse._SubParsersAction) -> None:
    """``kiln opt``: see `kiln.cli.opt`."""
    o = _verb(sub, "opt", "run named passes on a module, print it as script")
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


def _add_run_parsers(sub: argparse._SubParsersAction) -> None:
    """``kiln run`` and ``kiln bench``: see `kiln.cli.commands`."""
    r = _verb(sub, "run", "run a model on .npy inputs, write .npy outputs")
    _add_model_options(r)
    r.add_argument("--input", action="append", metavar="NAME=FILE.npy", default=[],
                   help="an input (repeatable; or FILE.npy for inputs in order)")  # fmt: skip
    r.add_argument("-o", "--output-dir", default=".",
                   help="where the outputs go, one <output name>.npy each")  # fmt: skip
    b = _verb(sub, "bench", "time a model (and onnxruntime) on the same inputs")
    _add_model_options(b)
    b.add_argument("--threads", default=(1, 2), type=thread_counts, metavar="N,M,...",
                   help="thread counts, comma-separated (default: 1,2)")  # fmt: skip
    b.add_argument("--against", action="append", choices=["onnxruntime"], default=[],
                   help="also time this runtime (repeatable)")  # fmt: skip
    b.add_argument("--runs", type=positive_int, default=20,
                   help="timed calls per measurement (default: 20)")  # fmt: skip
    b.add_argument("--dim", action="append", type=dim_value, metavar="NAME=N",
                   help="a symbolic dim's value (default: 1)")  # fmt: skip


def _add_profile_parser(sub: argparse._SubParsersAction) -> None:
    """``kiln profile``: see `kiln.cli.commands`."""
    p = _verb(sub, "profile", "print where one call spends its time, per kernel")
    _add_model_options(p)
    p.add_argument("--dim", action="append", metavar="NAME=N", help="a symbolic dim's value")
    p.add_argument("--peak-gflops", type=float, metavar="G",
                   help="FMA peak (GFLOP/s) of the threads used (default: measured)")  # fmt: skip
    p.add_argument("--bandwidth", type=float, metavar="GB/S",
                   help="memory bandwidth (GB/s) for %% bound (default: measured)")  # fmt: skip
    p.add_argument("--repeat", type=int, default=20, metavar="N",
                   help="profiled calls; each time is the median of them (default 20)")  # fmt: skip
    p.add_argument("--warmup", type=int, default=3, metavar="N",
                   help="calls before them, and at least 50 ms of calls (default 3)")  # fmt: skip
    p.add_argument("--sort", choices=["time", "name"], default="time",
                   help="order of the kernels (default: time, the longest first)")  # fmt: skip
    p.add_argument("--json", action="store_true",
                   help="print the report as JSON, with full kernel and node names")  # fmt: skip


def parser() -> argparse.ArgumentParser:
    ap = _Parser(prog="kiln", description="The kiln tensor compiler.")
    ap.add_argument("--version", action="version", version=f"kiln {__version__}")
    sub = ap.add_subparsers(dest="command", required=True, metavar="COMMAND")
    c = _verb(sub, "compile", "compile a model to one shared library")
    _add_model_options(c)
    c.add_argument("-o", "--output", required=True, help="the .so to write")
    c.add_argument("-q", "--quiet", action="store_true", help="no progress")
    c.add_argument("--time-passes", action="store_true",
                   help="print the time of each phase and pass to stderr")  # fmt: skip
    _add_run_parsers(sub)
    _add_profile_parser(sub)
    i = _verb(sub, "inspect", "print a model's inputs, outputs, ops or kernels")
    i.add_argument("model", help="an .onnx file or an exported .so")
    _add_cache_parser(sub)
    _add_opt_parser(sub)
    return ap


def _debugging() -> bool:
    """Whether ``KILN_DEBUG`` asks for tracebacks (a level >= 1)."""
    try:
        return config.debug_level() >= 1
    except ValueError:
        return False


def _message(e: BaseException) -> str:
    """One line for ``e``: its message (an OS error's reason and file, not its errno)."""
    if isinstance(e, OSError) and e.strerror:
        return f"{e.strerror}: {e.filename!r}" if e.filename else e.strerror
    text = str(e).strip() or type(e).__name__
    return (
        text if isinstance(e, (KilnError, ValueError, TypeError)) else f"{type(e).__name__}: {text}"
    )


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    verb = next((a for a in argv if a in VERBS), None)
    prog = f"kiln {verb}" if verb else "kiln"
    try:
        args = parser().parse_args(argv)
        # NOTE: the verb's module is imported on dispatch, and only it: `kiln --help` loads no
        # command, `kiln cache` no compiler (kiln.cli.commands and kiln.cli.opt load all of it)
        return importlib.import_module(VERBS[args.command]).COMMANDS[args.command](args)
    except KeyboardInterrupt:
        if _debugging():
            raise
        print(f"{prog}: interrupted", file=sys.stderr)
        return 130
    except (KilnError, ValueError, TypeError, OSError) as e:
        # NOTE: the runtime's input checks raise ValueError/TypeError naming the input
        if _debugging():
            raise
        print(f"{prog}: error: {_message(e)}", file=sys.stderr)
        return 1
    except Exception as e:
        if _debugging():
            raise
        print(f"{prog}: internal error: {_message(e)} (KILN_DEBUG=1 shows where)", file=sys.stderr)
        return 1


def run() -> None:
    """The console-script entry point."""
    sys.exit(main())


if __name__ == "__main__":  # pragma: no cover
    run()


__all__ = ["main", "parser", "run"]
