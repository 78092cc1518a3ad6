"""`PrimFunc`: a TIR function (parameters, buffer map, body, return type, attributes).

A PrimFunc with a ``global_symbol`` attribute is *exposed* (callable from outside the built
library under that name); without one it is private to its module.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, ClassVar

from kiln.errors import IRError
from kiln.ir.function import BaseFunc
from kiln.ir.node import EMPTY_ATTRS, Attrs, FrozenMap, as_attrs
from kiln.ir.span import Span
from kiln.ir.transform import FunctionPass
from kiln.tir.buffer import Buffer
from kiln.tir.expr import Var
from kiln.tir.functor import substitute_func
from kiln.tir.stmt import Stmt, _stmt
from kiln.tir.type import VOID, PointerType, PrimType, TupleType

EMPTY_MAP = FrozenMap()


@dataclass(frozen=True, slots=True, eq=False)
class PrimFunc(BaseFunc):
    """A tensor-level function; ``buffer_map`` maps handle parameters to the buffers they carry."""

    params: tuple[Var, ...]
    body: Stmt
    ret_type: PrimType | PointerType | TupleType = VOID
    buffer_map: FrozenMap = EMPTY_MAP
    attrs: Attrs = EMPTY_ATTRS
    span: Span | None = None
    _def_fields: ClassVar[tuple[str, ...]] = ("params", "buffer_map")

    def __post_init__(self) -> None:
        params = tuple(self.params)
        for p in params:
            if not isinstance(p, Var):
                raise IRError(f"PrimFunc parameters must be Vars, got {p!r}")
        object.__setattr__(self, "params", params)
        object.__setattr__(self, "body", _stmt(self.body, "PrimFunc body"))
        bmap = (
            self.buffer_map
            if isinstance(self.buffer_map, FrozenMap)
            else FrozenMap(self.buffer_map or {})
        )
        for k, v in bmap.items():
            if not isinstance(k, Var) or not isinstance(v, Buffer):
                raise IRError(f"PrimFunc buffer_map must map Var to Buffer, got {k!r}: {v!r}")
        object.__setattr__(self, "buffer_map", bmap)
        object.__setattr__(self, "attrs", as_attrs(self.attrs))
        if self.ret_type is None:
            object.__setattr__(self, "ret_type", VOID)

    def with_body(self, body: Stmt) -> PrimFunc:
        return self if body is self.body else replace(self, body=body)

    def specialize(self, values: dict[Var, Any]) -> PrimFunc:
        """A copy with some parameters (or symbolic dims) replaced by values."""
        return substitute_func(self, values)


class PrimFuncPass(FunctionPass):
    """Base of TIR passes that rewrite each PrimFunc on its own (see `FunctionPass`)."""

    function_type: ClassVar[type] = PrimFunc
