"""The operator registry: one `OpDef` record per graph-level operator.

A record holds everything kiln knows about an operator: its ``name`` (``"relax.add"``), the
Python ``builder`` (``relax.op.add``), ``infer`` (its struct info from the call's normalized
arguments), ``legalize`` (its computation as TE tensors, through `kiln.topi`), its fusion
``pattern`` and whether it is ``pure``. Records are made by `register_op` in the family file
(`relax/op/unary.py`, ...), which ``family`` names so that a missing piece points at the file to
edit. `BlockBuilder.normalize`, the passes and the frontends only look records up.

Signatures: ``infer(call, ctx) -> StructInfo`` (``ctx`` is the `BlockBuilder`);
``legalize(call, args) -> te.Tensor | list[te.Tensor]`` where ``args`` are the call's arguments
as TE values (a tensor argument is a ``te.placeholder``, a tuple of tensors a list of them, a
shape a tuple of `tir` expressions, a prim value its expression, a string or dtype itself).
Operators the VM implements (``call_tir``, ``call_packed``...) have no ``legalize``; their record
says what lowers them instead (``lowered_by``).
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kiln.errors import IRError
from kiln.ir.op import CallEffect, Op
from kiln.topi.tag import Pattern

Infer = Callable[[Any, Any], Any]
Legalize = Callable[[Any, list[Any]], Any]


@dataclass(frozen=True)
class OpDef:
    """Everything about one graph-level operator (see the module docstring)."""

    name: str
    builder: Callable[..., Any]
    infer: Infer | None
    legalize: Legalize | None
    pattern: Pattern
    pure: bool
    family: str
    lowered_by: str = ""

    @property
    def op(self) -> Op:
        return Op.get(self.name)


_REGISTRY: dict[str, OpDef] = {}


def register_op(
    name: str,
    *,
    infer: Infer | None,
    legalize: Legalize | None,
    pattern: Pattern,
    pure: bool = True,
    lowered_by: str = "",
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorator: the decorated function is the builder of operator ``name``."""

    def deco(builder: Callable[..., Any]) -> Callable[..., Any]:
        if name in _REGISTRY:
            raise IRError(f"operator {name!r} is registered twice")
        family = _family_file(builder)
        effect = CallEffect.PURE if pure else CallEffect.UPDATE_STATE
        Op.register(name, effect=effect, num_args=-1, dialect="relax")
        _REGISTRY[name] = OpDef(name, builder, infer, legalize, pattern, pure, family, lowered_by)
        return builder

    return deco


def _family_file(fn: Callable[..., Any]) -> str:
    path = inspect.getsourcefile(fn) or "?"
    parts = os.path.normpath(path).split(os.sep)
    return "/".join(parts[parts.index("kiln") :]) if "kiln" in parts else path


def get_op_def(op: Op | str) -> OpDef:
    """The record of ``op`` (an `Op` or its name)."""
    name = op if isinstance(op, str) else op.name
    rec = _REGISTRY.get(name)
    if rec is None:
        raise IRError(f"{name!r} is not a graph-level operator (no record in kiln/relax/op/)")
    return rec


def find_op_def(op: Any) -> OpDef | None:
    """The record of ``op`` if it is a registered graph-level operator, else None."""
    name = getattr(op, "name", None)
    return _REGISTRY.get(name) if isinstance(op, Op) and isinstance(name, str) else None


def list_op_defs() -> list[OpDef]:
    """Every registered record, by name."""
    return [_REGISTRY[k] for k in sorted(_REGISTRY)]
