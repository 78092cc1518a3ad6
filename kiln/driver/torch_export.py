"""Exporting a torch module for `kiln.compile`: which dims are dynamic, their names, their ranges.

    kiln.compile(net, example_args=(x,), dynamic_shapes={"x": {0: torch.export.Dim("batch")}})
    kiln.compile(net, example_args=(x,), dynamic=True)              # dim 0 of every input
    kiln.compile(net, example_args=(ids, mask), dims={"batch": 0, "seq": 1})

``dynamic=True`` is ``dims={"batch": 0}``. An int in ``dims=`` is an axis: that axis of every
tensor input that has it becomes the symbolic dim of that name, one ``torch.export.Dim`` shared
by those inputs (so their sizes must agree at each call); list and tuple values keep their
meaning (`kiln.driver.dims`: buckets, bounds). ``dynamic_shapes=`` is torch.export's own.

The module is exported with ``torch.export`` (`export_module`: torch's error, if any, with the
dims kiln marked) and imported (`from_exported_program`). Its symbolic dims, which torch names
``s0``, ``s77``..., get the names of their ``Dim`` (`RenameSymbolicDims`), so ``model.inputs``
and the call-time errors say ``batch``; torch's range for each (``Dim("b", min=2, max=64)``;
``Dim.DYNAMIC``: 2 and up) comes back as bounds, which the model checks at each call
(`kiln.driver.dims.SizeRouter`): outside them torch gives the program no meaning. A dim the
model fixes to one size (a ``view(2, -1)``, an example of size 1) cannot be dynamic: that is
torch.export's error, passed on with kiln's context. Where a dim kiln marked needs a range
(BERT's ``seq`` is at most its 64 positions), kiln takes torch's suggested range (`MarkedDims`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kiln.errors import FrontendError, KilnError
from kiln.ir.module import IRModule
from kiln.relax.expr import Function
from kiln.relax.frontend.torch import export_module, from_exported_program
from kiln.relax.struct_info import TensorStructInfo
from kiln.relax.transform import RenameSymbolicDims
from kiln.tir.expr import Var as TirVar

Ranges = dict[str, tuple[int, int | None]]
"""Symbolic dim name -> (low, high) torch traced the program for; high None: no maximum."""

UNBOUNDED = 1 << 62
"""A torch range's upper end at or above this is no maximum (torch's ``int_oo``)."""


def shorthand_shapes(module: Any, example_args: Any, axes: Mapping[str, int]) -> dict[str, Any]:
    """torch.export's ``dynamic_shapes`` for ``dims={name: axis}``: in every tensor input with
    that axis, the axis is ``Dim(name)`` (one Dim per name, shared)."""
    import torch
    from torch.export.dynamic_shapes import _combine_args, _tree_map_with_path

    dims = {name: torch.export.Dim(name) for name in axes}

    def spec(path: Any, value: Any) -> Any:
        if not isinstance(value, torch.Tensor):
            return None
        marked = {axis: dims[name] for name, axis in axes.items() if axis < value.ndim}
        return marked or None

    combined = _combine_args(module, _as_tuple(example_args), {})
    return _tree_map_with_path(spec, dict(combined))


@dataclass(frozen=True)
class MarkedDims:
    """The ``dynamic_shapes`` kiln made from ``dims=`` axes or ``dynamic=True``
    (`apply_shorthand`). kiln made these Dims without ranges, so where torch.export says a
    range they need (``seq <= 64``: the model's position table), kiln takes torch's suggested
    fix; one that fixes a dim to a size stays torch's error."""

    spec: dict[str, Any]
    given: str
    """What the user wrote, for the error."""


def import_module(
    module: Any, example_args: Any, dynamic_shapes: Any = None
) -> tuple[IRModule, Ranges]:
    """``module`` exported with ``example_args`` and ``dynamic_shapes`` (torch's, or a
    `MarkedDims`), imported, its dims named after their ``Dim``; and their ranges."""
    marked = dynamic_shapes if isinstance(dynamic_shapes, MarkedDims) else None
    spec = marked.spec if marked is not None else dynamic_shapes
    try:
        ep, spec = _export(module, example_args, spec, refine=marked is not None)
    except FrontendError as e:
        if spec is None:
            raise
        context = _context(module, example_args, spec, marked)
        raise FrontendError(f"{e}\n{context}") from None
    names = _dim_names(module, example_args, spec, ep) if spec else {}
    mod = from_exported_program(ep, name=type(module).__name__)
    return _named(mod, names, _ranges(ep))


def _export(module: Any, example_args: Any, spec: Any, refine: bool) -> tuple[Any, Any]:
    """(the ExportedProgram, the spec it was exported with); with ``refine``, a spec torch
    refused is refined by its suggested fixes first (`MarkedDims`)."""
    if refine:
        import torch

        try:
            ep = torch.export.export(module.eval(), _as_tuple(example_args), dynamic_shapes=spec)
            return ep, spec
        except Exception as e:  # NOTE: export_module below gives the error with torch's reason
            spec = _refined(str(e), spec) or spec
    return export_module(module, example_args, spec), spec


def _refined(message: str, spec: dict[str, Any]) -> dict[str, Any] | None:
    """``spec`` with torch's suggested fixes from ``message``, when they keep every dim
    dynamic (ranges, relations); None otherwise."""
    import torch
    from torch.export.dynamic_shapes import refine_dynamic_shapes_from_suggested_fixes

    if "Suggested fixes:" not in message:
        return None
    # NOTE: torch's parser reads every line after the marker as a fix: keep only the fixes
    fixes = message.split("Suggested fixes:", 1)[1].strip().split("\n\n", 1)[0]
    try:
        new = refine_dynamic_shapes_from_suggested_fixes(f"Suggested fixes:\n{fixes}", spec)
    except Exception:  # NOTE: fixes torch cannot apply: its own error stands
        return None
    for arg, axes in spec.items():
        for axis in axes or {}:
            if not isinstance((new.get(arg) or {}).get(axis), torch.export.Dim):
                return None
    return new


def import_program(ep: Any) -> tuple[IRModule, Ranges]:
    """An ``ExportedProgram``, imported (its dims keep torch's names), and their ranges."""
    return _named(from_exported_program(ep), {}, _ranges(ep))


def _as_tuple(example_args: Any) -> tuple[Any, ...]:
    return tuple(example_args) if isinstance(example_args, (list, tuple)) else (example_args,)


def _user_inputs(ep: Any) -> list[Any]:
    """The user inputs' placeholders of ``ep``, in order (the order of ``main``'s params)."""
    nodes = {n.name: n for n in ep.graph.nodes if n.op == "placeholder"}
    return [nodes[name] for name in ep.graph_signature.user_inputs if name in nodes]


def _plain_symbol(size: Any) -> Any:
    """The sympy symbol a SymInt size is, or None (an int, or an expression of symbols)."""
    expr = getattr(getattr(size, "node", None), "expr", None)
    return expr if expr is not None and getattr(expr, "is_Symbol", False) else None


def _dim_names(module: Any, example_args: Any, dynamic_shapes: Any, ep: Any) -> dict[Any, str]:
    """{(input position, axis): the name of the ``Dim`` marking it} for the inputs ``ep`` kept
    symbolic. NOTE: torch's placeholders follow the pytree order of the combined arguments,
    which `_tree_map_with_path` walks too."""
    import torch
    from torch.export.dynamic_shapes import _combine_args, _tree_map_with_path

    specs: list[Any] = []

    def collect(path: Any, value: Any, spec: Any) -> None:
        specs.append(spec if isinstance(value, torch.Tensor) else None)

    combined: Any = dict(_combine_args(module, _as_tuple(example_args), {}))
    if isinstance(dynamic_shapes, (tuple, list)):
        combined = type(dynamic_shapes)(combined.values())
    try:
        _tree_map_with_path(collect, combined, dynamic_shapes)
    except Exception:  # NOTE: a spec torch accepted but this walk does not: keep torch's names
        return {}
    names = {}
    for i, spec in enumerate(specs):
        items = spec.items() if isinstance(spec, Mapping) else enumerate(spec or ())
        for axis, dim in items:
            name = getattr(dim, "__name__", None)
            if isinstance(dim, torch.export.Dim) and isinstance(name, str) and name.isidentifier():
                names[(i, axis)] = name
    return names


def _ranges(ep: Any) -> dict[Any, tuple[int, int | None]]:
    """{(input position, axis): torch's range} for the user inputs' plain symbolic dims."""
    out = {}
    for i, node in enumerate(_user_inputs(ep)):
        for axis, size in enumerate(getattr(node.meta.get("val"), "shape", ())):
            sym = _plain_symbol(size)
            r = ep.range_constraints.get(sym) if sym is not None else None
            if r is not None:
                hi = None if r.upper >= UNBOUNDED else int(r.upper)
                out[(i, axis)] = (max(int(r.lower), 0), hi)
    return out


def _named(
    mod: IRModule, names: dict[Any, str], ranges: dict[Any, tuple[int, int | None]]
) -> tuple[IRModule, Ranges]:
    """``mod`` with its input dims renamed (by position), and the ranges by (new) name."""
    main = mod["main"]
    if not isinstance(main, Function):
        return mod, {}
    renames: dict[str, str] = {}
    by_name: Ranges = {}
    for i, param in enumerate(main.params):
        sinfo = param.struct_info_
        dims = sinfo.dims if isinstance(sinfo, TensorStructInfo) and sinfo.dims else ()
        for axis, d in enumerate(dims):
            if not isinstance(d, TirVar):
                continue
            name = renames.setdefault(d.name, names.get((i, axis), d.name))
            if (i, axis) in ranges:
                by_name[name] = ranges[(i, axis)]
    renames = {old: new for old, new in renames.items() if old != new}
    if renames:
        mod = RenameSymbolicDims(tuple(sorted(renames.items())))(mod)
    return mod, by_name


def _context(module: Any, example_args: Any, spec: Any, marked: MarkedDims | None) -> str:
    """What kiln asked torch for, under torch's refusal."""
    import torch

    sizes = [tuple(a.shape) for a in _as_tuple(example_args) if isinstance(a, torch.Tensor)]
    given = f" (from {marked.given})" if marked is not None else ""
    return (
        f"kiln exported {type(module).__name__} with dynamic_shapes={spec!r}{given} and "
        f"example input sizes {', '.join(map(str, sizes)) or 'none'}. A dim the model fixes to "
        "one size cannot be dynamic: leave it out of dims=/dynamic_shapes=, or give an example "
        "whose size there is not 0 or 1 (torch specializes those)"
    )


def apply_shorthand(
    module: Any,
    example_args: Any,
    dims: Mapping[str, Any] | None,
    dynamic: bool,
    options: dict[str, Any],
) -> Mapping[str, Any] | None:
    """Turn ``dynamic=True`` / ``dims={name: axis}`` for torch module ``module`` into
    ``options["dynamic_shapes"]``; returns the rest of ``dims`` (buckets, bounds), or None."""
    axes = {k: v for k, v in (dims or {}).items() if isinstance(v, int) and not isinstance(v, bool)}
    rest = {k: v for k, v in (dims or {}).items() if k not in axes}
    if dynamic:
        if axes:
            raise KilnError("give dynamic=True (dim 0 of every input) or dims= axes, not both")
        axes = {"batch": 0}
    if not axes:
        return dims
    if options.get("dynamic_shapes") is not None:
        what = "dynamic=True" if dynamic else f"dims= axes ({', '.join(axes)})"
        raise KilnError(f"give dynamic_shapes= or {what}, not both")
    for name, axis in axes.items():
        if axis < 0:
            raise KilnError(f"dims={{{name!r}: {axis}}}: an axis is 0 or more")
    given = "dynamic=True" if dynamic else f"dims={axes!r}"
    options["dynamic_shapes"] = MarkedDims(shorthand_shapes(module, example_args, axes), given)
    return rest or None
