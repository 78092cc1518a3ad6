"""`from_exported_program`: a ``torch.export.ExportedProgram`` to a relax `IRModule`.

    ep = torch.export.export(model, (x,), dynamic_shapes={"x": {0: torch.export.Dim("batch")}})
    mod = from_exported_program(ep)

The program is first decomposed to core ATen (``ep.run_decompositions``), keeping whole the
activations kiln has one operator for (`kiln.relax.frontend.torch.activations.KEPT`); each ATen
call becomes relax operator calls (the tables in `kiln.relax.frontend.torch.aten` and
`kiln.relax.frontend.torch.activations`). Parameters, buffers and constants become relax
constants; ``main`` takes the user inputs in order, named as in the program. A dim marked
dynamic (``torch.export.Dim``) becomes a symbolic ``tir.Var`` named after its torch symbol;
``sym_size`` and the arithmetic torch records on sizes are `tir` expressions. Every call
carries a `NodeSpan` naming the FX node; ops kiln lacks are collected over the whole graph and
reported together in one `FrontendError`, each use with the user's file:line
(`kiln.relax.frontend.torch.source`), before anything is converted. A program that draws random
numbers gets a seed per such node before its dataflow block (`aten_random.seeds`: an impure
call, so ``main`` is then not pure).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from kiln.errors import FrontendError, KilnError
from kiln.ir.module import IRModule
from kiln.relax.block_builder import BlockBuilder
from kiln.relax.expr import Tuple, Var, const
from kiln.relax.frontend.common import ident, node_span
from kiln.relax.frontend.torch import aten_attention, aten_index, aten_math, aten_nn, aten_random
from kiln.relax.frontend.torch.activations import decompositions
from kiln.relax.frontend.torch.aten import ATEN, TorchCtx, dtype_name
from kiln.relax.frontend.torch.aten_random import SEEDED
from kiln.relax.frontend.torch.source import unsupported_error
from kiln.relax.struct_info import TensorStructInfo
from kiln.tir.expr import Var as TirVar


def _dims(val: Any, syms: dict[str, TirVar]) -> list[Any]:
    out = []
    for d in val.shape:
        if isinstance(d, int):
            out.append(d)
            continue
        key = str(d.node.expr) if hasattr(d, "node") else str(d)
        if key not in syms:
            if not key.isidentifier():
                raise FrontendError(f"input dim {key!r} is an expression; mark plain Dims dynamic")
            syms[key] = TirVar(key, "int64")
        out.append(syms[key])
    return out


def _to_numpy(t: Any) -> np.ndarray:
    import torch

    t = t.detach().cpu().contiguous()
    if t.dtype == torch.bfloat16:
        raise FrontendError("bfloat16 parameters are not supported by the torch frontend yet")
    return t.numpy().copy()


def _state(ep: Any) -> dict[str, Any]:
    """Placeholder name -> constant for parameters, buffers and lifted constants."""
    from torch.export.graph_signature import InputKind

    values = {}
    for spec in ep.graph_signature.input_specs:
        if spec.kind == InputKind.USER_INPUT:
            continue
        target = spec.target
        tensor = ep.state_dict.get(target) if target in ep.state_dict else None
        if tensor is None:
            tensor = ep.constants.get(target)
        if tensor is None:
            raise FrontendError(f"the program has no value for {spec.kind.name} {target!r}")
        values[spec.arg.name] = const(_to_numpy(tensor))
    return values


CONVERTER_FAMILIES = (aten_attention, aten_index, aten_math, aten_nn, aten_random)
"""The modules whose converters join `ATEN` on import (beside ``aten`` and ``activations``)."""


def _key(target: Any) -> str:
    if hasattr(target, "_overloadpacket") or hasattr(target, "overloadpacket"):
        return str(target)
    return f"{getattr(target, '__module__', '')}.{getattr(target, '__name__', target)}"


def from_exported_program(
    ep: Any, *, name: str = "<exported program>", decomposed: bool = False
) -> IRModule:
    """Import an ``ExportedProgram`` (see the module docstring); ``decomposed``: ``ep`` is
    already ``ep.run_decompositions(decompositions())``, which is not done again."""
    try:
        import torch  # noqa: F401
    except ImportError:
        raise FrontendError("the torch frontend needs PyTorch (pip install kiln[torch])") from None
    if not hasattr(ep, "graph_signature"):
        raise FrontendError(f"expected a torch.export.ExportedProgram, got {type(ep).__name__}")
    try:
        ep = ep if decomposed else ep.run_decompositions(decompositions())
    except Exception as e:
        raise FrontendError(f"torch could not decompose the program to core ATen: {e}") from None
    graph = ep.graph
    missing = [n for n in graph.nodes if n.op == "call_function" and _key(n.target) not in ATEN]
    if missing:
        raise unsupported_error(name, [(_key(n.target), n) for n in missing])
    env: dict[Any, Any] = {}
    consts = _state(ep)
    syms: dict[str, TirVar] = {}
    params = []
    for node in graph.nodes:
        if node.op != "placeholder":
            continue
        if node.name in consts:
            env[node] = consts[node.name]
            continue
        val = node.meta.get("val")
        if val is None or not hasattr(val, "shape"):
            raise FrontendError(f"{name}: input {node.name!r} is not a tensor")
        sinfo = TensorStructInfo(_dims(val, syms), dtype_name(val.dtype))
        var = Var(ident(node.name, "input"), sinfo)
        env[node] = var
        params.append(var)
    bb = BlockBuilder()
    random = [n for n in graph.nodes if n.op == "call_function" and _key(n.target) in SEEDED]
    with bb.function("main", params, pure=not random):
        seeds = aten_random.seeds(bb, random)  # NOTE: impure calls: before the dataflow block
        with bb.dataflow():
            out = _run_graph(bb, graph, env, name, seeds)
        bb.emit_func_output(out)
    return bb.get()


def _run_graph(
    bb: BlockBuilder, graph: Any, env: dict[Any, Any], where: str, seeds: dict[Any, Any]
) -> Any:
    result = None
    for node in graph.nodes:
        if node.op == "call_function":
            env[node] = _convert(bb, node, env, where, seeds.get(node))
        elif node.op == "output":
            outs = node.args[0]
            items = list(outs) if isinstance(outs, (list, tuple)) else [outs]
            values = [_as_output(bb, env[o]) for o in items]
            result = values[0] if len(values) == 1 else bb.emit_output(Tuple(tuple(values)))
    if result is None:
        raise FrontendError(f"{where}: the program has no output")
    return result


def _as_output(bb: BlockBuilder, value: Any) -> Any:
    if isinstance(value, np.ndarray):
        value = const(value)
    return bb.emit_output(value)


def _convert(bb: BlockBuilder, node: Any, env: dict[Any, Any], where: str, seed: Any) -> Any:
    key = _key(node.target)
    ctx = TorchCtx(bb, node_span(where, node.name, key), node, env, seed)
    try:
        return ATEN[key](ctx, *ctx.args(), **ctx.kwargs())
    except FrontendError as e:
        raise FrontendError(f"{where}: node {node.name!r} ({key}): {e}") from None
    except KilnError as e:
        raise FrontendError(f"{where}: node {node.name!r} ({key}): {e}") from None
    except Exception as e:
        raise FrontendError(
            f"{where}: node {node.name!r} ({key}): internal error: {type(e).__name__}: {e}"
        ) from e


def export_module(module: Any, example_args: Any, dynamic_shapes: Any = None) -> Any:
    """``torch.export.export`` of ``module`` (a failure is a `FrontendError` with torch's
    reason)."""
    import torch

    args = tuple(example_args) if isinstance(example_args, (list, tuple)) else (example_args,)
    try:
        return torch.export.export(module.eval(), args, dynamic_shapes=dynamic_shapes)
    except Exception as e:
        reason = str(e).strip().splitlines()
        shown = "\n".join(reason[:12]) if reason else type(e).__name__
        raise FrontendError(
            f"torch.export could not export {type(module).__name__}: {type(e).__name__}: {shown}"
        ) from None


def from_module(module: Any, example_args: Any, dynamic_shapes: Any = None) -> IRModule:
    """Export ``module`` with ``example_args`` and import the program."""
    return from_exported_program(
        export_module(module, example_args, dynamic_shapes), name=type(module).__name__
    )
