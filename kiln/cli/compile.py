"""The compile step of the command line, with progress on stderr that follows the real work.

A model compiled before (same file bytes, shapes, target and kiln) loads from kiln's model
cache (`kiln.driver.model_cache`), as with `kiln.compile`. Stages: import the model (a `.onnx`
file, or an exported `.so` to load), each graph-level pass of `default_relax_pipeline`, VM code
generation, then the C compiler over the translation units (``compiling k/n C units``: n counts
the units generated so far, which grows while kernels are still lowered), the link and the load.
`Progress` is the compile's `CompileTimer`: the phases it enters and the units the compiler
finishes (its ``detail`` hook, `kiln.runtime.parallel_build.compile_units`' ``report``) are the
progress. On a terminal one line is redrawn; otherwise a line is printed every few seconds
(logs, CI). ``-q`` prints nothing. ``--time-passes`` (or ``KILN_DEBUG=time``) prints where the
time went, per phase and pass (`kiln.driver.timing`).
"""

from __future__ import annotations

import sys
import threading
from pathlib import Path
from typing import Any, TextIO

import numpy as np

from kiln.driver.inputs import InputSpec, as_ir_module, input_specs
from kiln.driver.model import CompiledModel, cached_model, load, stored_model
from kiln.driver.model_cache import model_key
from kiln.driver.pipeline import default_relax_pipeline
from kiln.driver.relax_build import build, model_flags
from kiln.driver.timing import CompileTimer
from kiln.errors import KilnError
from kiln.ir.target import Target
from kiln.ir.transform import Pass, PassContext
from kiln.runtime.vm_export import prebuild_runtime
from kiln.runtime.vm_format import FuncKind

STAGES = {
    "import": "importing the model",
    "runtime": "building kiln's runtime (once per machine)",
    "vm codegen": "VM code generation",
    "kernel cache lookup": "looking up kernels in the cache",
    "load": "loading the library",
    "cache store + load": "storing the model in the cache",
}
"""Phase (`CompileTimer` row) -> what progress says while it runs; other phases say nothing new."""


class Progress(CompileTimer):
    """A `CompileTimer` that also shows what the compile is doing (see the module docstring).

    Phases are entered on the main thread; finished units are reported from compiler threads
    (only counters change there); a daemon thread prints, every ``interval`` seconds."""

    def __init__(
        self, stream: TextIO | None = None, quiet: bool = False, interval: float | None = None
    ) -> None:
        super().__init__()
        self.stream = stream or sys.stderr
        self.quiet = quiet
        self.tty = self.stream.isatty()
        self.interval = interval or (0.2 if self.tty else 3.0)
        self.stage = "starting"
        self.generated = 0
        self.compiled = 0
        self.compiling = False
        self._stop = threading.Event()
        self._shown = ""
        self._names: list[str] = []

    def enter(self, name: str) -> None:
        super().enter(name)
        self._names.append(name)
        if name == "c codegen":
            self.generated += 1
        elif name == "c compile (waiting) + link":
            self.compiling = True
        elif name in STAGES:
            self.compiling = False
            self.stage = STAGES[name]

    def leave(self) -> None:
        super().leave()
        self._names.pop()

    def detail(self, name: str, wall: float) -> None:
        super().detail(name, wall)
        if name.startswith("cc unit"):
            self.compiled += 1
        elif name == "link":
            self.stage, self.compiling = "linking", False

    def graph_pass(self, k: int, n: int, name: str) -> None:
        """Pass ``k`` of the ``n`` graph-level passes, ``name``, starts."""
        self.stage = f"graph pass {k}/{n}: {name}"

    def status(self) -> str:
        """What the compile does now."""
        if not self.compiling:
            return self.stage
        done = f"compiling {self.compiled}/{max(self.generated, self.compiled)} C units"
        if self._names and self._names[-1] != "c compile (waiting) + link":
            return f"{done}, generating unit {self.generated + 1}"
        return done

    def show(self, final: bool = False) -> None:
        """Print the status: redraw the line on a terminal, else a new line."""
        text = f"kiln compile [{self.total()[0]:5.1f} s] {self.status()}"
        if self.tty:
            self.stream.write(f"\r{text[:99]:<99}" + ("\n" if final else ""))
        elif text != self._shown or final:
            self.stream.write(text + "\n")
        self._shown = text
        self.stream.flush()

    def _tick(self) -> None:
        while not self._stop.wait(self.interval):
            self.show()

    def __enter__(self) -> Progress:
        if not self.quiet:
            threading.Thread(target=self._tick, name="kiln-progress", daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if not self.quiet and self.tty:
            self.stream.write("\r" + " " * 99 + "\r")  # NOTE: the line goes; `wrote ...` stays
            self.stream.flush()


class _Ticking(Pass):
    """A pass that runs ``inner`` and tells `Progress` which graph pass runs."""

    name = "ticking"

    def __init__(self, inner: Pass, progress: Progress, k: int, n: int) -> None:
        self.inner = inner
        self.progress = progress
        self.k, self.n = k, n

    def __call__(self, mod: Any, ctx: PassContext | None = None) -> Any:
        self.progress.graph_pass(self.k, self.n, self.inner.name)
        return self.inner(mod, ctx)


def parse_shapes(items: list[tuple[str, tuple[Any, ...]]] | None) -> dict[str, tuple[Any, ...]]:
    """The ``--shape`` options (parsed by `kiln.cli.main.shape_value`) as a shape_dict."""
    out: dict[str, tuple[Any, ...]] = {}
    for name, dims in items or []:
        if name in out:
            raise KilnError(f"--shape gives input {name!r} twice; give each input once")
        out[name] = dims
    return out


def check_shapes(path: str, shapes: dict[str, tuple[Any, ...]]) -> None:
    """Check ``--shape`` against the ONNX model's inputs: each names an input and has its
    rank; an input the model leaves without a shape needs one (errors name the option)."""
    if Path(path).suffix == ".so" and shapes:
        raise KilnError(f"--shape applies to an .onnx model; {path} is compiled (its shapes fixed)")
    ranks = None if Path(path).suffix == ".so" else onnx_input_ranks(path)
    if ranks is None:
        return
    listed = ", ".join(repr(n) for n in ranks) or "none"
    for name, dims in shapes.items():
        if name not in ranks:
            raise KilnError(
                f"--shape {name}=...: the model has no input {name!r} (inputs: {listed})"
            )
        if ranks[name] is not None and ranks[name] != len(dims):
            raise KilnError(
                f"--shape {name}={','.join(map(str, dims))}: {len(dims)} dim(s), but input "
                f"{name!r} has rank {ranks[name]}: give {ranks[name]} dims"
            )
    for name, rank in ranks.items():
        if rank is None and name not in shapes:
            raise KilnError(
                f"input {name!r} has no shape in the model: give one with --shape {name}=D0,D1,..."
            )


def onnx_input_ranks(path: str) -> dict[str, int | None] | None:
    """The rank of each graph input of an ONNX file (None: no shape recorded), initializers
    left out; None when the file does not parse (the import names the problem)."""
    import onnx  # NOTE: an optional dependency (kiln[onnx]), needed only for .onnx files

    try:
        graph = onnx.load(path, load_external_data=False).graph
    except Exception:  # NOTE: the frontend reports a bad file with its own message
        return None
    weights = {t.name for t in graph.initializer}
    out: dict[str, int | None] = {}
    for vi in graph.input:
        if vi.name not in weights:
            tt = vi.type.tensor_type
            out[vi.name] = len(tt.shape.dim) if tt.HasField("shape") else None
    return out


def compile_model(
    path: str,
    target: str = "c",
    exec_mode: str = "compiled",
    shapes: dict[str, Any] | None = None,
    quiet: bool = False,
    time_passes: bool = False,
) -> CompiledModel:
    """A compiled model from an ONNX file (or an exported `.so`, loaded as it is); a model
    compiled before with the same options loads from kiln's model cache, as `kiln.compile`.
    Progress goes to stderr unless ``quiet``; ``time_passes`` prints the phases' times there."""
    if Path(path).suffix == ".so":
        check_shapes(path, shapes or {})
        return load(path)
    clock = Progress(quiet=quiet)
    options = {"shape_dict": shapes} if shapes else {}
    tgt = Target(target)
    with clock.phase("cache key"):
        key = model_key(path, tgt, exec_mode, "main", (), options)
    with clock.phase("cache lookup + load"):
        hit = cached_model(key)
    if hit is None:
        check_shapes(path, shapes or {})
        with clock:
            if key is not None:  # NOTE: kiln.compile's reason (kiln.driver.model)
                with clock.phase("runtime"):
                    prebuild_runtime(model_flags(tgt))
            hit = _compile(path, tgt, exec_mode, options, clock, key)
    if time_passes:
        print(clock.table(), file=sys.stderr)
    return hit


def _compile(
    path: str,
    tgt: Target,
    exec_mode: str,
    options: dict[str, Any],
    clock: Progress,
    key: str | None,
) -> CompiledModel:
    passes = default_relax_pipeline(tgt)
    with clock.phase("import"):
        mod = as_ir_module(path, **options)
    pipeline = [_Ticking(p, clock, k + 1, len(passes)) for k, p in enumerate(passes)]
    exe = build(mod, tgt, exec_mode, pipeline=pipeline, timer=clock)
    with clock.phase("cache store + load"):
        model = stored_model(key, exe, input_specs(mod))
    if not clock.quiet and not clock.tty:
        clock.show(final=True)
    return model


def kernel_count(model: CompiledModel) -> int:
    """How many kernels the model's VM calls."""
    return sum(f.kind is FuncKind.KERNEL for f in model.executable.functions)


def example_inputs(
    specs: list[InputSpec] | None, params: tuple[str, ...], sizes: dict[str, int], seed: int = 0
) -> dict[str, np.ndarray]:
    """Random inputs fitting the model (symbolic dims from ``sizes``, default 1)."""
    if specs is None:
        raise KilnError(
            "the model's input shapes are unknown (a loaded .so): pass every input with --input"
        )
    rng = np.random.default_rng(seed)
    out = {}
    for spec in specs:
        dims = [d if isinstance(d, int) else sizes.get(str(d), 1) for d in spec.dims or ()]
        if spec.dtype == "bool":
            out[spec.name] = rng.integers(0, 2, dims).astype(bool)
        elif spec.dtype.startswith(("int", "uint")):
            out[spec.name] = rng.integers(0, 4, dims).astype(spec.dtype)
        else:
            out[spec.name] = rng.standard_normal(dims).astype(spec.dtype)
    return out
