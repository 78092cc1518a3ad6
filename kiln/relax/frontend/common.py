"""Pieces shared by the frontends: spans that name a model's node, identifier-safe names, and
the dims that broadcasting operands must agree on.

A frontend keeps each source node's name as the `NodeSpan` of the calls it becomes, so a
`PassError` reads ``(at model.onnx: node '/fc1/Gemm' (Gemm))``, and names the variables it binds
after the node's outputs, so ``KILN_DEBUG=2`` dumps show the model's names.
"""

from __future__ import annotations

import keyword
import re
from dataclasses import dataclass

from kiln.ir.span import Span
from kiln.relax.analysis.struct_info import Fit, dims_fit
from kiln.relax.op.common import is_one
from kiln.tir.expr import IntImm, PrimExpr
from kiln.tir.expr import Var as TirVar

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


def _simplicity(d: PrimExpr) -> tuple[int, int]:
    """Order dims by how simple they are: constants, then variables, then shorter expressions."""
    if isinstance(d, IntImm):
        return (0, 0)
    if isinstance(d, TirVar):
        return (1, 0)
    return (2, len(str(d)))


def agreed_dims(shapes: list[list[PrimExpr] | None]) -> list[list[PrimExpr] | None]:
    """The shapes with every axis's dims that must agree under numpy broadcasting made one.

    Two dims of an axis, neither the constant 1, must be equal for the operands to broadcast;
    where that is not provable (``min(seq, 64)`` against ``seq``), each is replaced by the
    simplest of them (a constant, else a variable, else the shortest expression). A shape that
    changed must be checked at run time (a ``match_cast``); an unknown shape (None) stays so.
    Dims provably different are left for the operator's own error."""
    known = [s for s in shapes if s is not None]
    if not known:
        return shapes
    rank = max(len(s) for s in known)
    out = [None if s is None else list(s) for s in shapes]
    for k in range(1, rank + 1):
        dims = [s[-k] for s in known if len(s) >= k and not is_one(s[-k])]
        if len(dims) < 2:
            continue
        best = min(dims, key=_simplicity)
        if any(dims_fit(best, d) is Fit.FAIL for d in dims):
            continue
        for s in out:
            if s is not None and len(s) >= k and not is_one(s[-k]):
                if dims_fit(best, s[-k]) is not Fit.PASS:
                    s[-k] = best
    return out
