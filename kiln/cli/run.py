"""``kiln run``: run a model on ``.npy`` inputs and write one ``.npy`` per output, each named
after the model's output (made safe as a file name), ``output_<k>.npy`` when it names none.

A compiled library runs on kiln's runtime alone: this module imports no compiler (the graph
IR, the passes, the C emitter), so ``kiln run model.so`` starts in well under a second. An
``.onnx`` model is compiled first (`kiln.cli.commands`, loaded only then). The runtime checks
each input's dtype and shape and names the input it refuses.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from kiln.errors import KilnError
from kiln.runtime import VirtualMachine, load_module
from kiln.runtime.vm_export import load_executable
from kiln.runtime.vm_format import TensorSpec


@dataclass(frozen=True)
class Runnable:
    """What `kiln run` calls: the entry's parameters, its signature (None: not recorded) and
    the call itself (inputs in parameter order)."""

    params: tuple[str, ...]
    inputs: list[TensorSpec] | None
    outputs: list[TensorSpec] | None
    call: Callable[..., Any]


def library(path: str) -> Runnable:
    """The ``main`` function of a library exported by kiln, on the runtime alone."""
    if not Path(path).is_file():
        raise KilnError(f"no model file {path!r} (expected an .onnx file or a .so)")
    exe = load_executable(load_module(path))
    func = VirtualMachine(exe)["main"]
    sig = exe.signature("main")
    if sig is None:
        return Runnable(tuple(func.params), None, None, func)
    return Runnable(tuple(func.params), list(sig.inputs), list(sig.outputs), func)


def _compiled(args: argparse.Namespace) -> Runnable:
    # NOTE: imported here, not above: it loads the whole compiler, which running a library
    # does not need (the start-up of `kiln run model.so`)
    from kiln.cli.commands import compile_for

    model = compile_for(args)
    return Runnable(model._call.params, model.inputs, model.outputs, model)


def read_inputs(items: list[str], model: Runnable) -> list[np.ndarray]:
    """The ``--input`` files (``NAME=FILE.npy`` or, in order, ``FILE.npy``) in parameter order."""
    positional, named = [], {}
    for item in items:
        name, sep, file = item.partition("=")
        if not sep:
            name, file = "", item
        if not Path(file).is_file():
            raise KilnError(f"--input {item}: no input file {file!r}")
        if name and name not in model.params:
            raise KilnError(f"--input {item}: the model has no input {name!r} "
                            f"(inputs: {', '.join(model.params)})")  # fmt: skip
        if name:
            named[name] = np.load(file)
        else:
            positional.append(np.load(file))
    if len(positional) + len(named) != len(model.params):
        expected = "; ".join(s.describe() for s in model.inputs or ()) or ", ".join(model.params)
        raise KilnError(
            f"the model takes {len(model.params)} input(s), {expected}; got "
            f"{len(positional) + len(named)} (pass each with --input NAME=FILE.npy)"
        )
    rest = iter(positional)
    return [named[p] if p in named else next(rest) for p in model.params]


def output_arrays(value: Any) -> list[np.ndarray]:
    """A model's result (an array, or nested tuples of them) as a flat list of numpy arrays."""
    if isinstance(value, (tuple, list)):
        return [a for v in value for a in output_arrays(v)]
    return [value.numpy() if hasattr(value, "numpy") else np.asarray(value)]


def output_files(specs: list[TensorSpec] | None, count: int) -> list[str]:
    """A file name per output: the model's output names made safe for file names (distinct),
    ``output_<k>.npy`` when the model does not name them."""
    if specs is None or len(specs) != count:
        return [f"output_{k}.npy" for k in range(count)]
    names: list[str] = []
    for k, spec in enumerate(specs):
        stem = re.sub(r"[^\w.-]", "_", spec.name).strip(".") or f"output_{k}"
        while f"{stem}.npy" in names:
            stem = f"{stem}_{k}"
        names.append(f"{stem}.npy")
    return names


def cmd_run(args: argparse.Namespace) -> int:
    folder = Path(args.output_dir)
    if folder.exists() and not folder.is_dir():
        raise KilnError(f"-o {args.output_dir}: is a file; expected a folder for the outputs")
    if Path(args.model).suffix == ".so" and args.shape:
        raise KilnError(f"--shape applies to an .onnx model; {args.model} is compiled")
    model = library(args.model) if Path(args.model).suffix == ".so" else _compiled(args)
    values = read_inputs(args.input, model)
    try:
        outs = output_arrays(model.call(*values))
    except (ValueError, TypeError) as e:  # NOTE: the runtime's input checks name the input
        expected = "; ".join(s.describe() for s in model.inputs or ()) or "its inputs"
        raise KilnError(f"{e} (the model takes {expected})") from e
    folder.mkdir(parents=True, exist_ok=True)
    for name, out in zip(output_files(model.outputs, len(outs)), outs):
        path = folder / name
        np.save(path, out)
        print(f"{path}: {out.dtype}{list(out.shape)}")
    return 0


COMMANDS = {"run": cmd_run}
