"""What `kiln.compile` accepts, and how a compiled model takes its inputs.

`as_ir_module(obj, example_args, ...)` turns any accepted model into a relax `IRModule`:

- an `IRModule` (R.functions) as it is;
- a path to an ``.onnx`` file, ONNX bytes or an ``onnx.ModelProto`` (`from_onnx`; keywords
  ``shape_dict``, ``dtype_dict``, ``opset``);
- a ``torch.export.ExportedProgram`` (`from_exported_program`);
- a ``torch.nn.Module`` with ``example_args`` (exported with ``torch.export``, keyword
  ``dynamic_shapes``, then imported; `kiln.driver.torch_export`).

`import_model` also returns the ranges a torch program was traced for (by symbolic dim name),
which the compiled model checks at each call.

`InputSpec` records each parameter of ``main`` (its model name, dtype and dims);
`arrange_inputs` maps positional and keyword inputs onto the parameters and checks dtype and
shape, naming the input in a `FrontendError` when one does not fit. Where the model's inputs are
known, an input the kernels cannot take as it is gets copied once, here: a Python list or tuple
becomes a numpy array of the input's dtype (a same-kind cast: floats do not become ints), and a
non-contiguous numpy array or torch tensor a contiguous copy (the kernels read compact row-major
memory). `bind_outputs` writes a call's results into caller-provided arrays (``out=``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from kiln.errors import FrontendError, KilnError
from kiln.ir.module import IRModule
from kiln.relax.expr import Function
from kiln.relax.frontend.common import ident
from kiln.relax.struct_info import TensorStructInfo
from kiln.runtime.vm_format import TensorSpec
from kiln.tir.expr import IntImm

InputSpec = TensorSpec
"""One input of a model: its name, dtype and dims (ints, or names of symbolic dims); the same
record the exported artifact's signature holds."""


def _is_onnx(obj: Any) -> bool:
    return type(obj).__module__.startswith("onnx") and type(obj).__name__ == "ModelProto"


def _is_torch(obj: Any, name: str) -> bool:
    for cls in type(obj).__mro__:
        if cls.__module__.startswith("torch") and cls.__name__ == name:
            return True
    return False


def is_onnx_model(obj: Any) -> bool:
    """Whether ``obj`` is an ONNX model `kiln.compile` imports (a path, bytes, a ModelProto)."""
    return isinstance(obj, (str, os.PathLike, bytes, bytearray)) or _is_onnx(obj)


def as_ir_module(obj: Any, example_args: Any = None, **options: Any) -> IRModule:
    """The relax module of any model `kiln.compile` accepts (see the module docstring)."""
    return import_model(obj, example_args, **options)[0]


def import_model(
    obj: Any, example_args: Any = None, **options: Any
) -> tuple[IRModule, dict[str, tuple[int, int | None]]]:
    """`as_ir_module`, and the ranges of its symbolic dims a torch program was traced for
    (``{name: (low, high or None)}``; empty for other models)."""
    if isinstance(obj, IRModule):
        _no_extra(options, "an IRModule")
        return obj, {}
    if is_onnx_model(obj):
        # NOTE: must stay a function-level import: the ONNX frontend (its converter tables) adds
        # about a tenth to loading kiln.driver, which builds from IRModules do not need
        from kiln.relax.frontend.onnx import from_onnx

        known = {k: options.pop(k) for k in ("shape_dict", "dtype_dict", "opset") if k in options}
        _no_extra(options, "an ONNX model")
        return from_onnx(obj, **known), {}
    if _is_torch(obj, "ExportedProgram") or _is_torch(obj, "Module"):
        return _from_torch(obj, example_args, options)
    raise KilnError(
        f"kiln.compile takes an IRModule, an ONNX model (path, bytes or onnx.ModelProto), a "
        f"torch.export.ExportedProgram or a torch.nn.Module with example_args; got "
        f"{type(obj).__name__}"
    )


def _from_torch(
    obj: Any, example_args: Any, options: dict[str, Any]
) -> tuple[IRModule, dict[str, tuple[int, int | None]]]:
    """The relax module of a ``torch.export.ExportedProgram``, or of a ``torch.nn.Module``
    exported with ``example_args`` (and ``dynamic_shapes``); and its dims' ranges."""
    # NOTE: must stay a function-level import, as the ONNX frontend's above (torch itself is
    # imported by the frontend's functions, never on import)
    from kiln.driver import torch_export

    if _is_torch(obj, "ExportedProgram"):
        _no_extra(options, "an ExportedProgram")
        return torch_export.import_program(obj)
    if example_args is None:
        raise FrontendError(
            f"kiln.compile of a torch module ({type(obj).__name__}) needs example_args=(...) "
            "to export it with torch.export"
        )
    dynamic = options.pop("dynamic_shapes", None)
    _no_extra(options, "a torch module")
    return torch_export.import_module(obj, example_args, dynamic)


def is_torch_module(obj: Any) -> bool:
    """Whether ``obj`` is a ``torch.nn.Module`` (not an ExportedProgram)."""
    return _is_torch(obj, "Module") and not _is_torch(obj, "ExportedProgram")


def _no_extra(options: Mapping[str, Any], what: str) -> None:
    if options:
        raise KilnError(f"kiln.compile of {what} takes no option(s) {sorted(options)}")


def input_specs(mod: IRModule, entry: str = "main") -> list[InputSpec] | None:
    """The inputs of ``mod[entry]`` (None when it is not a graph-level function)."""
    func = next((f for gv, f in mod.items() if gv.name_hint == entry), None)
    if not isinstance(func, Function):
        return None
    specs = []
    for p in func.params:
        s = p.struct_info_
        if not isinstance(s, TensorStructInfo):
            return None
        dims = None
        if s.dims is not None:
            dims = tuple(d.value if isinstance(d, IntImm) else str(d) for d in s.dims)
        specs.append(InputSpec(p.name_hint, str(s.dtype), dims))
    return specs


def arrange_inputs(
    params: Sequence[str],
    args: Sequence[Any],
    kwargs: Mapping[str, Any],
    specs: Sequence[InputSpec] | None = None,
) -> list[Any]:
    """Positional and named inputs as the positional list ``params`` asks for (checked)."""
    if not kwargs:
        values = list(args)
    else:
        values = _by_name(params, args, kwargs)
    if len(values) != len(params):
        raise FrontendError(
            f"the model takes {len(params)} input(s) ({', '.join(params)}), got {len(values)}"
        )
    if specs is not None and len(specs) == len(values):
        values = [_compact(spec, v) for spec, v in zip(specs, values)]
        _check(specs, values)
    return values


def _compact(spec: InputSpec, value: Any) -> Any:
    """``value`` as the kernels take it: a list/tuple as an array, a strided array or torch
    tensor as a contiguous copy (see the module docstring); other values as they are."""
    if isinstance(value, np.ndarray):
        return value if value.flags.c_contiguous else np.ascontiguousarray(value)
    if isinstance(value, (list, tuple)):
        return _list_array(spec, value)
    if _is_torch(value, "Tensor") and not value.is_contiguous():
        return value.contiguous()
    return value


def _list_array(spec: InputSpec, value: list[Any] | tuple[Any, ...]) -> np.ndarray:
    try:
        array = np.asarray(value)
    except ValueError as e:  # ragged nesting
        raise FrontendError(
            f"input {spec.name!r} is a {type(value).__name__} that is not a rectangular array of "
            f"numbers ({e}); expected {spec.describe()}"
        ) from e
    want = np.dtype(spec.dtype) if spec.dtype != "bool" else np.dtype(np.bool_)
    if array.dtype.kind not in "biuf" or not np.can_cast(array.dtype, want, "same_kind"):
        raise FrontendError(
            f"input {spec.name!r} is a {type(value).__name__} of {array.dtype} values, which "
            f"do not convert to {spec.dtype} (expected {spec.describe()})"
        )
    return np.ascontiguousarray(array, dtype=want)


def _by_name(params: Sequence[str], args: Sequence[Any], kwargs: Mapping[str, Any]) -> list[Any]:
    slots: dict[str, Any] = dict(zip(params, args))
    for key, value in kwargs.items():
        name = key if key in params else ident(key, "input")
        if name not in params:
            raise FrontendError(
                f"the model has no input {key!r}; its inputs are {', '.join(params)}"
            )
        if name in slots:
            raise FrontendError(f"input {key!r} is given twice (by position and by name)")
        slots[name] = value
    missing = [p for p in params if p not in slots]
    if missing:
        raise FrontendError(f"input(s) {', '.join(missing)} missing")
    return [slots[p] for p in params]


_DTYPE_NAMES: dict[Any, str] = {}
"""dtype object -> kiln's name for it. NOTE: ``str(np.dtype)`` took 4.8 us (numpy 2.4), half
of a small model's input check."""


def _dtype_name(dtype: Any) -> str:
    name = _DTYPE_NAMES.get(dtype)
    if name is None:
        name = "bool" if dtype == np.bool_ else str(dtype).removeprefix("torch.")
        _DTYPE_NAMES[dtype] = name
    return name


def _dtype_shape(value: Any) -> tuple[str, tuple[int, ...]] | None:
    if isinstance(value, np.ndarray):
        return _dtype_name(value.dtype), value.shape
    if hasattr(value, "dtype") and hasattr(value, "shape"):
        return _dtype_name(value.dtype), tuple(int(d) for d in value.shape)
    return None


def _check(specs: Sequence[InputSpec], values: Sequence[Any]) -> None:
    bound: dict[str, tuple[int, str]] = {}
    for spec, value in zip(specs, values):
        got = _dtype_shape(value)
        if got is None:
            continue
        dtype, shape = got
        if dtype != spec.dtype:
            raise FrontendError(
                f"input {spec.name!r} must be {spec.dtype}, got {dtype} "
                f"(expected {spec.describe()})"
            )
        if spec.dims is None:
            continue
        if len(shape) != len(spec.dims):
            raise FrontendError(
                f"input {spec.name!r} must have {len(spec.dims)} dims, got shape {shape} "
                f"(expected {spec.describe()})"
            )
        for k, (want, have) in enumerate(zip(spec.dims, shape)):
            if isinstance(want, int) and want != have:
                raise FrontendError(
                    f"input {spec.name!r} has shape {shape}: dim {k} must be {want} "
                    f"(expected {spec.describe()})"
                )
            if isinstance(want, str) and want.isidentifier():
                seen = bound.setdefault(want, (have, spec.name))
                if seen[0] != have:
                    raise FrontendError(
                        f"input {spec.name!r} has {want} = {have} (dim {k}) but input "
                        f"{seen[1]!r} has {want} = {seen[0]}"
                    )


def bind_outputs(results: Sequence[Any], out: Any, specs: Sequence[InputSpec] | None) -> list[Any]:
    """Copy ``results`` (the chosen outputs of one call, `NDArray` s) into the caller's arrays
    ``out`` (a list, or one array for one output) and return those arrays. Each must be a
    writable, C-contiguous numpy array of the result's dtype and shape; a `FrontendError` names
    the output otherwise. NOTE: the VM allocates its results per call (freed after the copy),
    so memory does not grow over calls; writing in place would need the VM to take them."""
    arrays = [out] if isinstance(out, np.ndarray) else out
    if not isinstance(arrays, (list, tuple)) or len(arrays) != len(results):
        raise FrontendError(
            f"out= must be a list of {len(results)} numpy array(s), one per output "
            f"({', '.join(_output_name(specs, k) for k in range(len(results)))}); got "
            f"{_describe(arrays)}"
        )
    for k, (result, dst) in enumerate(zip(results, arrays)):
        src = np.asarray(result)
        ok = (
            isinstance(dst, np.ndarray)
            and dst.dtype == src.dtype
            and dst.shape == src.shape
            and dst.flags.c_contiguous
            and dst.flags.writeable
        )
        if not ok:
            raise FrontendError(
                f"out[{k}] for output {_output_name(specs, k)!r} must be a writable C-contiguous "
                f"numpy array of dtype {src.dtype} and shape {src.shape}; got {_describe(dst)}"
            )
        np.copyto(dst, src)
    return list(arrays)


def _output_name(specs: Sequence[InputSpec] | None, k: int) -> str:
    return specs[k].name if specs is not None and k < len(specs) else f"output_{k}"


def _describe(value: Any) -> str:
    if isinstance(value, np.ndarray):
        layout = "C-contiguous" if value.flags.c_contiguous else "non-contiguous"
        ro = "" if value.flags.writeable else ", read-only"
        return f"a {layout} {value.dtype} array of shape {value.shape}{ro}"
    if isinstance(value, (list, tuple)):
        return f"a {type(value).__name__} of {len(value)}"
    return f"a {type(value).__name__}"
