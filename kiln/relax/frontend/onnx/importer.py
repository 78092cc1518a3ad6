"""`from_onnx`: an ONNX model to a relax `IRModule` whose ``main`` takes the graph's inputs.

    mod = from_onnx("model.onnx")                         # or an onnx.ModelProto, or bytes
    mod = from_onnx(model, shape_dict={"x": (1, 3, 224, 224)}, dtype_dict={"x": "float32"})

Invariants of the result:

- ``main``'s parameters are the graph inputs that are not initializers, in order, named after
  them (made identifiers: ``input.1`` becomes ``input_1``); a ``dim_param`` becomes one symbolic
  ``tir.Var`` shared by every input that names it, an unnamed dynamic dim a fresh one.
- Initializers and ``Constant`` nodes are numpy values at import time. Of the nodes whose
  inputs are all known then, only what converters need to know to build shapes is evaluated
  (shape subgraphs, small integer arithmetic; the rule is `values.fold`'s); float math on
  constants (a weight's ``Transpose`` or ``DequantizeLinear``) becomes graph ops, folded by
  the pipeline's `FoldConstant` as for any other frontend. Shape values that depend on
  symbolic dims are kept as arrays of `tir` expressions (`values`) and become run-time
  computations only where a tensor is needed.
- Every call a node becomes carries a `NodeSpan` naming it; its outputs are bound to variables
  named after the node's outputs.
- A model file's external data is read from the file's folder, never the working directory, and
  never from outside that folder (`external_data`); a model given in memory holds its data.
- Every problem is a `FrontendError`: unsupported operators are collected over the whole graph
  and reported together, each with its node names.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from kiln.errors import FrontendError, InputNeededAtCompileTimeError, KilnError
from kiln.ir.module import IRModule
from kiln.relax.block_builder import BlockBuilder
from kiln.relax.expr import Expr, Tuple, Var
from kiln.relax.frontend.common import ident, node_span
from kiln.relax.frontend.onnx import values as V
from kiln.relax.frontend.onnx.external_data import load_external_data
from kiln.relax.frontend.onnx.ops import CONVERTERS, Ctx, Node
from kiln.relax.struct_info import TensorStructInfo
from kiln.tir.expr import SizeVar

# NOTE: opsets 13-21 are the contract (what the model families here were tested with); the
# converters read attributes or inputs in whichever form a node uses (axes, splits, pads, clip
# bounds moved from attributes to inputs over the versions) and follow the old semantics where
# they differ (Softmax before 13), so 7-12 and 22 to onnx's newest (28 with onnx 1.23), which
# mostly add types, are accepted too.
MIN_OPSET = 7
MAX_OPSET = 28
DOMAINS = ("", "ai.onnx")


def load_model(model: Any) -> Any:
    """An ``onnx.ModelProto`` from a path, bytes or a ModelProto (a `FrontendError` otherwise)
    that holds all its data: a file's external data is read from the file's folder
    (`external_data.load_external_data`, which refuses a location outside it); a model given in
    memory must hold its data already."""
    import onnx

    if isinstance(model, onnx.ModelProto):
        # NOTE: with no folder this only refuses external data; the caller's proto is unchanged.
        load_external_data(model, None, model.graph.name or "<onnx model>")
        return model
    if isinstance(model, (bytes, bytearray)):
        proto = parse_model(bytes(model), "<bytes>")
        load_external_data(proto, None, "<bytes>")
        return proto
    if isinstance(model, (str, os.PathLike)):
        path = Path(model)
        if not path.is_file():
            raise FrontendError(f"no ONNX file {str(path)!r}")
        proto = parse_model(path.read_bytes(), str(path))
        load_external_data(proto, path.parent, str(path))
        return proto
    raise FrontendError(
        f"expected an ONNX model (a path, bytes or onnx.ModelProto), got {type(model).__name__}"
    )


def parse_model(data: bytes, where: str) -> Any:
    """The ``onnx.ModelProto`` in ``data``, as it is (external data not read)."""
    import onnx
    from google.protobuf.message import DecodeError

    proto = onnx.ModelProto()
    try:
        proto.ParseFromString(data)
    except (DecodeError, RuntimeError, ValueError) as e:
        raise FrontendError(f"{where} is not an ONNX model (or is truncated): {e}") from None
    if not proto.HasField("graph") or not proto.graph.node and not proto.graph.output:
        raise FrontendError(f"{where} is not an ONNX model (or is truncated): it has no graph")
    return proto


def model_opset(model: Any, opset: int | None, where: str) -> int:
    """The default-domain opset to import with (checked against the supported range)."""
    found = [o.version for o in model.opset_import if o.domain in DOMAINS]
    version = opset if opset is not None else (found[0] if found else 1)
    if not MIN_OPSET <= version <= MAX_OPSET:
        raise FrontendError(
            f"{where}: opset {version} of the default ONNX domain is not supported; kiln imports "
            f"opsets {MIN_OPSET} to {MAX_OPSET} (convert the model with "
            "onnx.version_converter.convert_version)"
        )
    return version


@dataclass
class GraphImporter:
    """One import: the builder, the values by ONNX name, the symbolic dims by name."""

    model: Any
    opset: int
    where: str
    bb: BlockBuilder = field(default_factory=BlockBuilder)
    values: dict[str, Any] = field(default_factory=dict)
    dims: dict[str, SizeVar] = field(default_factory=dict)
    unsupported: dict[str, list[str]] = field(default_factory=dict)
    input_names: dict[int, str] = field(default_factory=dict)
    bound: set[str] = field(default_factory=set)
    read_as_values: set[str] = field(default_factory=set)

    def params(
        self, shape_dict: Mapping[str, Any], dtype_dict: Any, bind: Mapping[str, Any]
    ) -> list[Var]:
        graph = self.model.graph
        inits = {t.name for t in graph.initializer}
        params = []
        for vi in graph.input:
            if vi.name in inits:
                continue
            if vi.name in bind:
                self.values[vi.name] = np.asarray(bind[vi.name])
                self.bound.add(vi.name)
                continue
            sinfo = self._input_sinfo(vi, shape_dict.get(vi.name), _dtype_for(dtype_dict, vi.name))
            var = Var(ident(vi.name, "input"), sinfo)
            self.values[vi.name] = var
            self.input_names[id(var)] = vi.name
            params.append(var)
        for t in graph.initializer:
            self.values[t.name] = V.tensor_to_numpy(t)
        return params

    def _input_sinfo(self, vi: Any, shape: Any, dtype: Any) -> TensorStructInfo:
        ttype = vi.type.tensor_type if vi.type.HasField("tensor_type") else None
        if ttype is None:
            raise FrontendError(
                f"{self.where}: input {vi.name!r} is not a tensor (sequences, maps "
                "and optionals are not supported)"
            )
        if dtype is None:
            dtype = V.onnx_dtype(ttype.elem_type, f"input {vi.name!r}")
        if shape is None:
            if not ttype.HasField("shape"):
                raise FrontendError(
                    f"{self.where}: input {vi.name!r} has no shape; give one with shape_dict"
                )
            shape = [
                d.dim_value if d.HasField("dim_value") else (d.dim_param or None)
                for d in ttype.shape.dim
            ]
        dims = [self._dim(d, vi.name, k) for k, d in enumerate(shape)]
        return TensorStructInfo(dims, dtype)

    def _dim(self, d: Any, name: str, k: int) -> Any:
        if isinstance(d, (int, np.integer)) and not isinstance(d, bool) and d >= 0:
            return int(d)
        key = d if isinstance(d, str) and d else f"{ident(name, 'input')}_dim{k}"
        if key not in self.dims:
            self.dims[key] = SizeVar(ident(key, "n"), "int64")  # NOTE: a dim is never negative
        return self.dims[key]

    def run(self, params: list[Var]) -> IRModule:
        graph = self.model.graph
        self.read_as_values = V.read_as_values(graph.node)
        with self.bb.function("main", params):
            with self.bb.dataflow():
                for i, node in enumerate(graph.node):
                    self.convert(Node.of(node, i))
                self._raise_unsupported()
                outs = [self._output(o.name) for o in graph.output]
                out = outs[0] if len(outs) == 1 else self.bb.emit_output(Tuple(tuple(outs)))
            self.bb.emit_func_output(out)
        return self.bb.get()

    def _output(self, name: str) -> Expr:
        if name not in self.values:
            raise FrontendError(f"{self.where}: graph output {name!r} is computed by no node")
        ctx = Ctx(self, None)
        value = ctx.expr(self.values[name])
        return self.bb.emit_output(value, ident(name, "out"))

    def convert(self, node: Node) -> None:
        ins = [self.values.get(n, V.MISSING) if n else None for n in node.inputs]
        if any(v is V.POISON for v in ins):
            self._set(node, [V.POISON] * len(node.outputs))
            return
        missing = [n for n, v in zip(node.inputs, ins) if v is V.MISSING]
        if missing:
            raise FrontendError(f"{self._who(node)}: input {missing[0]!r} is produced by no node")
        conv = CONVERTERS.get(node.op_type) if node.domain in DOMAINS else None
        wanted = conv is None or any(o in self.read_as_values for o in node.outputs)
        # NOTE: a node reading a bound input is converted, not folded: kiln computes it
        bound = any(n in self.bound for n in node.inputs)
        outs = None if bound else V.fold(node, ins, self.opset, wanted)
        if outs is None:
            if conv is None:
                key = node.op_type if node.domain in DOMAINS else f"{node.domain}.{node.op_type}"
                self.unsupported.setdefault(key, []).append(node.name or f"#{node.index}")
                self._set(node, [V.POISON] * len(node.outputs))
                return
            outs = self._call(conv, node, ins)
        self._set(node, outs)

    def _call(self, conv: Any, node: Node, ins: list[Any]) -> list[Any]:
        ctx = Ctx(self, node_span(self.where, node.name or f"#{node.index}", node.op_type), node)
        try:
            outs = conv(ctx, node, ins)
        except InputNeededAtCompileTimeError as e:
            raise InputNeededAtCompileTimeError(f"{self._who(node)}: {e}", e.inputs) from None
        except FrontendError as e:
            raise FrontendError(f"{self._who(node)}: {e}") from None
        except KilnError as e:
            raise FrontendError(f"{self._who(node)}: {e}") from None
        except Exception as e:  # an importer bug: still say which node
            raise FrontendError(
                f"{self._who(node)}: internal error: {type(e).__name__}: {e}"
            ) from e
        return list(outs) if isinstance(outs, (list, tuple)) else [outs]

    def _set(self, node: Node, outs: list[Any]) -> None:
        for name, value in zip(node.outputs, outs):
            if name:
                self.values[name] = value

    def _who(self, node: Node) -> str:
        return f"{self.where}: node {node.name or '#' + str(node.index)!r} ({node.op_type})"

    def _raise_unsupported(self) -> None:
        if not self.unsupported:
            return
        lines = [
            f"  {op}: {', '.join(repr(n) for n in names[:8])}"
            + (f" and {len(names) - 8} more" if len(names) > 8 else "")
            for op, names in sorted(self.unsupported.items())
        ]
        raise FrontendError(
            f"{self.where}: {len(self.unsupported)} operator(s) kiln does not support "
            f"(opset {self.opset}):\n" + "\n".join(lines)
        )


def _dtype_for(dtype_dict: Any, name: str) -> Any:
    if dtype_dict is None:
        return None
    if isinstance(dtype_dict, Mapping):
        return dtype_dict.get(name)
    return dtype_dict


def from_onnx(
    model: Any,
    shape_dict: Mapping[str, Any] | None = None,
    dtype_dict: Any = None,
    opset: int | None = None,
    *,
    name: str | None = None,
    bind_inputs: Mapping[str, Any] | None = None,
) -> IRModule:
    """Import an ONNX model (see the module docstring). ``bind_inputs`` gives values to inputs
    that decide shapes (they are then no parameters of ``main``)."""
    where = name or (str(model) if isinstance(model, (str, os.PathLike)) else "<onnx model>")
    proto = load_model(model)
    if name is None and proto.graph.name and not isinstance(model, (str, os.PathLike)):
        where = proto.graph.name
    version = model_opset(proto, opset, where)
    imp = GraphImporter(proto, version, where)
    for k in shape_dict or {}:
        if k not in {i.name for i in proto.graph.input}:
            names = ", ".join(repr(i.name) for i in proto.graph.input)
            raise FrontendError(f"{where}: shape_dict names {k!r}, not an input (inputs: {names})")
    params = imp.params(shape_dict or {}, dtype_dict, bind_inputs or {})
    return imp.run(params)
