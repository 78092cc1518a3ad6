"""``kiln inspect model.onnx | model.so``: what a model takes and returns, and what it is made of.

For an ONNX file: its inputs and outputs (names, dtypes, shapes with symbolic dims, weights
left out), its symbolic dims and how many nodes of each op type its main graph has (nodes of
subgraphs, such as an If's branches, are not counted). For a compiled library: its signature
(as the library records it) and its kernels, each with its FLOPs and bytes and the model nodes
it computes when known (`kiln.runtime.profile.node_list`), then the functions an external
codegen made (``external_codegens=["dnnl"]``), each with its codegen and model nodes.

The ONNX file is read with `onnx` alone (nothing is imported into kiln's IR, nothing compiled).
"""

from __future__ import annotations

import argparse
from collections import Counter
from pathlib import Path
from typing import Any

from kiln.driver.model import load
from kiln.errors import KilnError
from kiln.runtime.profile import node_list
from kiln.runtime.vm_format import TensorSpec


def _onnx_specs(values: Any, skip: set[str]) -> list[TensorSpec]:
    """The `TensorSpec` of each ONNX ValueInfo not in ``skip`` (dims: sizes, names or ``?``)."""
    from onnx import helper

    out = []
    for vi in values:
        if vi.name in skip:
            continue
        tt = vi.type.tensor_type
        dtype = helper.tensor_dtype_to_np_dtype(tt.elem_type).name if tt.elem_type else "?"
        dims = None
        if tt.HasField("shape"):
            dims = tuple(d.dim_value if d.HasField("dim_value") else (d.dim_param or "?")
                         for d in tt.shape.dim)  # fmt: skip
        out.append(TensorSpec(vi.name, dtype, dims))
    return out


def _signature_lines(inputs: list[TensorSpec], outputs: list[TensorSpec]) -> list[str]:
    """The inputs, outputs and symbolic dims, one tensor a line."""
    lines = ["inputs:", *(f"  {s.describe()}" for s in inputs)]
    lines += ["outputs:", *(f"  {s.describe()}" for s in outputs)]
    names = [str(d) for s in inputs for d in s.dims or () if not isinstance(d, int) and d != "?"]
    lines.append(f"symbolic dims: {', '.join(dict.fromkeys(names)) or 'none (fixed shapes)'}")
    return lines


def inspect_onnx(path: str) -> str:
    """The listing of an ONNX file (see the module docstring)."""
    try:
        import onnx
    except ImportError:
        raise KilnError(f"inspecting {path} needs onnx (pip install kiln[onnx])") from None
    try:
        model = onnx.load(path, load_external_data=False)
    except Exception as e:  # NOTE: protobuf's errors name no file
        raise KilnError(f"{path} is not an ONNX model ({type(e).__name__}: {e})") from None
    graph = model.graph
    weights = {t.name for t in graph.initializer}
    opsets = ", ".join(f"{o.domain or 'ai.onnx'} {o.version}" for o in model.opset_import)
    lines = [f"{path}: ONNX graph {graph.name!r} ({opsets}; {len(weights)} weights)"]
    lines += _signature_lines(_onnx_specs(graph.input, weights), _onnx_specs(graph.output, set()))
    counts = Counter(n.op_type if not n.domain else f"{n.domain}.{n.op_type}" for n in graph.node)
    lines.append(f"ops ({len(graph.node)} nodes, {len(counts)} types):")
    width = max((len(op) for op in counts), default=0)
    lines += [f"  {op:<{width}} {n:>5}" for op, n in sorted(counts.items(), key=lambda x: -x[1])]
    return "\n".join(lines)


def inspect_library(path: str) -> str:
    """The listing of a library exported by kiln (see the module docstring)."""
    model = load(path)
    exe = model.executable
    kernels = exe.kernels
    lines = [f"{path}: kiln library ({exe.exec_mode} mode, {len(kernels)} kernels)"]
    if model.inputs is None or model.outputs is None:
        lines.append("signature: not recorded (a library exported by an older kiln)")
    else:
        lines += _signature_lines(list(model.inputs), list(model.outputs))
    costs = {name: (flops, moved) for name, flops, moved in exe.costs}
    nodes = dict(exe.nodes)
    width = max((len(k) for k in kernels), default=0)
    lines.append(f"kernels ({len(kernels)}; FLOPs and bytes moved per call and model nodes, "
                 "where known):")  # fmt: skip
    for name in kernels:
        flops, moved = costs.get(name, ("?", "?"))
        row = f"  {name:<{width}}  {flops!s:>12}  {moved!s:>12}  {node_list(nodes.get(name, ()))}"
        lines.append(row.rstrip())
    return "\n".join(lines + _external_lines(exe.externals, nodes))


def _external_lines(
    externals: tuple[tuple[str, str], ...] | None, nodes: dict[str, tuple[str, ...]]
) -> list[str]:
    """A line per external function: its symbol, the codegen that made it and its model nodes."""
    if externals is None:
        return ["external functions: not recorded (a library exported by an older kiln)"]
    if not externals:
        return ["external functions: none"]
    width = max(len(symbol) for symbol, _ in externals)
    cg_width = max(len(codegen) for _, codegen in externals)
    lines = [f"external functions ({len(externals)}; codegen and model nodes):"]
    for symbol, codegen in externals:
        row = f"  {symbol:<{width}}  {codegen:<{cg_width}}  {node_list(nodes.get(symbol, ()))}"
        lines.append(row.rstrip())
    return lines


def cmd_inspect(args: argparse.Namespace) -> int:
    path = Path(args.model)
    if not path.is_file():
        raise KilnError(f"no model file {args.model!r} (expected an .onnx file or a .so)")
    if path.suffix == ".so":
        print(inspect_library(args.model))
    else:
        print(inspect_onnx(args.model))
    return 0


COMMANDS = {"inspect": cmd_inspect}
