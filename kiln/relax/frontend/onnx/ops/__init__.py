"""ONNX operator converters: one function per ONNX op type, registered in `CONVERTERS`.

A converter ``conv(ctx, node, ins) -> value | list[value]`` gets the node and its input values
(see `values`: numpy arrays, symbolic shape arrays, relax expressions; None for an omitted
optional input) and returns its outputs' values, built from the relax operator builders
(`kiln.relax.op`) through ``ctx.emit``. The families live in the sibling files; importing this
package registers them all.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from kiln.errors import FrontendError, InputNeededAtCompileTimeError
from kiln.relax import op as R
from kiln.relax.expr import Call, Expr, PrimValue, Tuple, TupleGetItem, Var, const
from kiln.relax.frontend.common import NodeSpan, agreed_dims, ident
from kiln.relax.frontend.onnx import values as V
from kiln.relax.op.builtin import call_pure_packed
from kiln.relax.struct_info import ShapeStructInfo, TensorStructInfo
from kiln.runtime.vm_builtins import builtin
from kiln.tir.expr import IntImm, PrimExpr
from kiln.tir.expr import Var as TirVar

TENSOR_TO_SHAPE = builtin("tensor_to_shape").name

Converter = Callable[["Ctx", "Node", list[Any]], Any]
CONVERTERS: dict[str, Converter] = {}


def converter(*op_types: str) -> Callable[[Converter], Converter]:
    """Register the decorated function as the converter of ``op_types``."""

    def deco(fn: Converter) -> Converter:
        for t in op_types:
            CONVERTERS[t] = fn
        return fn

    return deco


@dataclass(frozen=True)
class Node:
    """An ONNX node with its attributes as Python values."""

    op_type: str
    name: str
    domain: str
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    attrs: dict[str, Any]
    index: int
    proto: Any

    @staticmethod
    def of(proto: Any, index: int) -> Node:
        return Node(
            proto.op_type,
            proto.name,
            proto.domain,
            tuple(proto.input),
            tuple(proto.output),
            {a.name: _attr(a) for a in proto.attribute},
            index,
            proto,
        )


def _attr(a: Any) -> Any:
    import onnx
    from onnx import helper

    value = helper.get_attribute_value(a)
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, list) and value and isinstance(value[0], bytes):
        return [v.decode("utf-8", "replace") for v in value]
    if isinstance(value, onnx.TensorProto):
        return V.tensor_to_numpy(value)
    return value


class Ctx:
    """What a converter uses: the builder, value conversion and emission with the node's span."""

    def __init__(self, imp: Any, span: NodeSpan | None, node: Node | None = None) -> None:
        self.imp = imp
        self.span = span
        self.node = node

    @property
    def opset(self) -> int:
        return self.imp.opset

    def emit(self, e: Expr, name: str = "") -> Expr:
        """Bind ``e`` (its calls spanned with the node) to a variable named after the node."""
        if isinstance(e, Var):
            return e
        outs = self.node.outputs if self.node else ()
        hint = name or (ident(outs[0], "lv") if outs else "")
        return self.imp.bb.emit(self._spanned(e), hint or "lv")

    def _spanned(self, e: Any) -> Any:
        if isinstance(e, Call) and e.struct_info_ is None:
            args = tuple(self._spanned(a) for a in e.args)
            return replace(e, args=args, span=e.span or self.span)
        if isinstance(e, Tuple) and e.struct_info_ is None:
            return replace(e, fields=tuple(self._spanned(f) for f in e.fields))
        if isinstance(e, TupleGetItem) and e.struct_info_ is None:
            return replace(e, tuple_value=self._spanned(e.tuple_value))
        return e

    def expr(self, v: Any, dtype: str | None = None) -> Expr:
        """``v`` as a relax expression (a constant, or a run-time tensor of a shape value)."""
        if isinstance(v, Expr):
            return v
        if v is None or v is V.MISSING or v is V.POISON:
            raise FrontendError("a required input is missing")
        if V.is_const(v):
            return const(v if dtype is None else v.astype(dtype))
        return self._shape_tensor(v)

    def _shape_tensor(self, arr: np.ndarray) -> Expr:
        parts = []
        for e in arr.reshape(-1):
            lo = e if isinstance(e, PrimExpr) else IntImm("int64", int(e))
            parts.append(R.arange(PrimValue(lo), PrimValue(lo + 1), 1, "int64"))
        flat = self.emit(R.concat(parts, 0) if len(parts) > 1 else parts[0])
        if arr.ndim == 1:
            return flat
        return self.emit(R.reshape(flat, list(arr.shape)))

    def tensor(self, ins: list[Any], i: int) -> Expr:
        if i >= len(ins) or ins[i] is None:
            raise FrontendError(f"input {i} is required")
        return self.expr(ins[i])

    def const(self, v: Any, what: str) -> np.ndarray:
        """``v`` as a numpy array known at import time (a `FrontendError` otherwise)."""
        if V.is_const(v):
            return v
        self.needs_constant(v, what)
        raise FrontendError(
            f"{what} must be known when the model is compiled (a constant or "
            "computed from constants), not a run-time value"
        )

    def needs_constant(self, v: Any, what: str) -> None:
        """Raise `InputNeededAtCompileTimeError` when ``v`` is a graph input (binding it makes
        the model compile)."""
        name = self.imp.input_names.get(id(v))
        if name is not None:
            raise InputNeededAtCompileTimeError(
                f"{what} comes from model input {name!r}: kiln compiles shapes ahead of time; "
                f"give its value with from_onnx(..., bind_inputs={{{name!r}: array}})",
                (name,),
            )

    def ints(self, v: Any, what: str) -> list[int]:
        return [int(x) for x in self.const(v, what).reshape(-1)]

    def broadcastable(self, *xs: Expr) -> list[Expr]:
        """The operands of a broadcasting op, each whose dims `agreed_dims` replaces cast to
        them (a ``match_cast``, checked when the model runs), so the result keeps a shape."""
        shapes = [sinfo(x).dims for x in xs]
        agreed = agreed_dims([None if d is None else list(d) for d in shapes])
        return [x if new is None else self.cast_dims(x, new) for x, new in zip(xs, agreed)]

    def out_name(self) -> str:
        """The node's first output and its op type as an identifier (``y_Reshape``; ``v`` for
        no node): the names of the values behind a run-time check, which its error names."""
        outs = self.node.outputs if self.node else ()
        name = ident(outs[0] if outs else "", "v")
        return f"{name}_{self.node.op_type}" if self.node else name

    def run_time_ints(
        self, v: Expr, what: str, expect: list[PrimExpr | None] | None = None
    ) -> list[PrimExpr]:
        """The values of ``v``, a 1-D integer tensor of known length or an integer scalar,
        known only when the model runs: fresh symbolic ints (``<output>_<op>_<what>_<i>``) bound
        to them then (``vm.builtin.tensor_to_shape`` matched to new dims), so what they size
        keeps a known rank and symbolic dims. Where ``expect`` gives a value, the run-time
        value is checked against it instead (a ``ValueError`` naming the node's output)."""
        s = sinfo(v)
        length = None
        if s.dims is not None and len(s.dims) <= 1:
            length = 1 if not s.dims else getattr(s.dims[0], "value", None)
        if length is None or not str(s.dtype).startswith(("int", "uint")):
            self.needs_constant(v, what)
            raise FrontendError(
                f"{what} comes from a run-time value of type {s}; kiln needs a 1-D integer "
                "tensor of known length (or an integer scalar) to read a shape from"
            )
        if str(s.dtype) != "int64":
            v = self.emit(R.astype(v, "int64"))
        if len(s.dims) == 0:
            v = self.emit(R.reshape(v, [1]))
        base = f"{self.out_name()}_{ident(what.split()[-1], 'v')}"
        value = call_pure_packed(TENSOR_TO_SHAPE, v, sinfo_args=ShapeStructInfo(None, length))
        shape = self.emit(value, f"{base}_shape")
        want = expect or [None] * length
        ints: list[PrimExpr] = [
            TirVar(f"{base}_{i}", "int64") if e is None else e for i, e in enumerate(want)
        ]
        self.imp.bb.match_cast(shape, ShapeStructInfo(ints), f"{base}_dims")
        return ints

    def cast_dims(self, x: Expr, new: list[PrimExpr]) -> Expr:
        """``x`` seen with dims ``new`` (a checked ``match_cast``), or ``x`` itself when they are
        its dims already."""
        old = sinfo(x).dims
        if old is not None and all(a is b for a, b in zip(old, new)):
            return x
        target = TensorStructInfo(new, sinfo(x).dtype)
        return self.imp.bb.match_cast(x, target, ident(getattr(x, "name_hint", ""), "lv"))


def sinfo(e: Expr) -> TensorStructInfo:
    s = e.struct_info
    if not isinstance(s, TensorStructInfo):
        raise FrontendError(f"expected a tensor, got {s}")
    return s


def ndim(e: Expr) -> int:
    n = sinfo(e).ndim
    if n < 0:
        raise FrontendError("the rank of an input is unknown")
    return n


def dtype(e: Any) -> str:
    if isinstance(e, np.ndarray):
        return "bool" if e.dtype == np.bool_ else str(e.dtype)
    return str(sinfo(e).dtype)


def dims(e: Expr) -> list[PrimExpr]:
    d = sinfo(e).dims
    if d is None:
        raise FrontendError("the shape of an input is unknown")
    return list(d)


def static_dims(e: Expr) -> list[int] | None:
    """The dims as ints, or None when one is symbolic."""
    d = dims(e)
    if all(isinstance(x, IntImm) for x in d):
        return [x.value for x in d]
    return None


def dim_values(e: Any) -> list[Any]:
    """Dims as ints where constant, `tir` expressions otherwise."""
    if isinstance(e, np.ndarray):
        return list(e.shape)
    return [x.value if isinstance(x, IntImm) else x for x in dims(e)]


def shape_of_value(v: Any) -> np.ndarray:
    """The shape of a value as an import-time shape array."""
    return V.sym_array(dim_values(v))


# the families register themselves
from kiln.relax.frontend.onnx.ops import (  # noqa: E402
    attention,
    data_dependent,
    elementwise,
    loss,
    nn,
    quantize,
    reduce,
    shape,
    tensor,
)

__all__ = [
    "CONVERTERS",
    "Ctx",
    "Node",
    "converter",
    "data_dependent",
    "elementwise",
    "loss",
    "nn",
    "quantize",
    "reduce",
    "shape",
    "tensor",
]
