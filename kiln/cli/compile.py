"""The compile step of the command line, with a progress bar over its stages on a terminal.

A model compiled before (same file bytes, shapes, target and kiln) loads from kiln's model
cache (`kiln.driver.model_cache`), as with `kiln.compile`. Stages: import the model (a `.onnx`
file, or an exported `.so` to load), each graph-level pass of `default_relax_pipeline`, then VM
code generation and the C compiler over all kernels (one library). The bar (tqdm) is drawn only
when stderr is a terminal; otherwise compiling is quiet. ``--time-passes`` (or
``KILN_DEBUG=time``) prints where the time went, per phase and pass (`kiln.driver.timing`).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

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


class _Ticking(Pass):
    """A pass that runs ``inner`` and advances the progress bar."""

    name = "ticking"

    def __init__(self, inner: Pass, bar: Any) -> None:
        self.inner = inner
        self.bar = bar

    def __call__(self, mod: Any, ctx: PassContext | None = None) -> Any:
        self.bar.set_postfix_str(self.inner.name)
        out = self.inner(mod, ctx)
        self.bar.update(1)
        return out


def _bar(total: int, quiet: bool) -> Any:
    import shutil

    from tqdm import tqdm

    return tqdm(
        total=total,
        desc="kiln compile",
        unit="stage",
        ncols=min(shutil.get_terminal_size().columns, 100),
        disable=quiet or not sys.stderr.isatty(),
    )


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
    timer: CompileTimer | None = None,
) -> CompiledModel:
    """A compiled model from an ONNX file (or an exported `.so`, loaded as it is); a model
    compiled before with the same options loads from kiln's model cache, as `kiln.compile`.
    ``timer`` records the phases (and its table is printed to stderr at the end)."""
    if Path(path).suffix == ".so":
        check_shapes(path, shapes or {})
        return load(path)
    clock = timer or CompileTimer()
    options = {"shape_dict": shapes} if shapes else {}
    tgt = Target(target)
    with clock.phase("cache key"):
        key = model_key(path, tgt, exec_mode, "main", (), options)
    with clock.phase("cache lookup + load"):
        hit = cached_model(key)
    if hit is None:
        if key is not None:  # NOTE: kiln.compile's reason (kiln.driver.model)
            prebuild_runtime(model_flags(tgt))
        hit = _compile(path, tgt, exec_mode, options, quiet, clock, key)
    if timer is not None:
        print(timer.table(), file=sys.stderr)
    return hit


def _compile(
    path: str,
    tgt: Target,
    exec_mode: str,
    options: dict[str, Any],
    quiet: bool,
    clock: CompileTimer,
    key: str | None,
) -> CompiledModel:
    passes = default_relax_pipeline(tgt)
    check_shapes(path, options.get("shape_dict", {}))
    with _bar(len(passes) + 2, quiet) as bar:
        bar.set_postfix_str("import")
        with clock.phase("import"):
            mod = as_ir_module(path, **options)
        bar.update(1)
        pipeline = [_Ticking(p, bar) for p in passes]
        bar.set_postfix_str("vm codegen + C compiler")
        exe = build(mod, tgt, exec_mode, pipeline=pipeline, timer=clock)
        bar.update(1)
    with clock.phase("cache store + load"):
        return stored_model(key, exe, input_specs(mod))


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
