"""Pieces shared by the frontends: spans that name a model's node, and identifier-safe names.

A frontend keeps each source node's name as the `NodeSpan` of the calls it becomes, so a
`PassError` reads ``(at model.onnx: node '/fc1/Gemm' (Gemm))``, and names the variables it binds
after the node's outputs, so ``KILN_DEBUG=2`` dumps show the model's names.
"""

from __future__ import annotations

import keyword
import re
from dataclasses import dataclass

from kiln.ir.span import Span

_NOT_IDENT = re.compile(r"[^0-9A-Za-z_]+")


@dataclass(frozen=True, slots=True)
class NodeSpan(Span):
    """The span of what one node of an imported model became: the model and the node's name."""

    node: str = ""
    op_type: str = ""

    def __str__(self) -> str:
        return f"{self.source_name}: node {self.node!r} ({self.op_type})"


def node_span(model: str, node: str, op_type: str) -> NodeSpan:
    return NodeSpan(model, 0, 0, node=node, op_type=op_type)


def ident(name: str, fallback: str = "v") -> str:
    """``name`` as a Python identifier (``/fc1/Gemm_output_0`` -> ``fc1_Gemm_output_0``)."""
    out = _NOT_IDENT.sub("_", name).strip("_")
    if not out:
        return fallback
    if out[0].isdigit():
        out = f"{fallback}_{out}"
    return f"{out}_" if keyword.iskeyword(out) else out
