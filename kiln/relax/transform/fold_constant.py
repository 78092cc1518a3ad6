"""FoldConstant: operator calls that read only constants become constants, at compile time.

In every graph function that is not primitive, external or a ``Compiler`` function, a binding
``v = op(args)`` is folded when ``op`` is a pure operator with a legalization, every tensor
argument is a `Constant` (directly, or a variable folded before: chains fold in one pass),
every other argument is a constant (shapes, prim values, strings) and the result is one tensor
of known shape and a numpy dtype. Its value is computed

- in numpy where that is exact (`EXACT`): the operators that only move elements
  (``layout_transform``, ``permute_dims``, ``reshape``, ``expand_dims``, ``squeeze``,
  ``flatten``, ``broadcast_to``, ``concat``, ``full``; ``take`` and ``gather_elements`` with
  indices in range), ``add``, ``subtract``, ``multiply`` and ``divide`` of float32/float64
  tensors (one correctly rounded IEEE operation per element, in C as in numpy) and ``astype``
  between those, integer and bool dtypes except float to integer (C leaves out-of-range values
  undefined): the values a kernel gives, without compiling one (a weight's ``Transpose`` or
  ``DequantizeLinear`` from ONNX, an embedding row picked by constant ids);
- otherwise through the kernel kiln would run for it (the CPU compute `LowerTE` picks and its
  default schedule, compiled for the host by the pass's ``build``), so a folded value is the
  value the model would have computed at run time. Without ``build`` only the numpy operators
  fold.

The binding goes and every use of ``v`` reads the `Constant`. Creation operators without a
tensor argument (``zeros``, ``arange``) and results of more than `MAX_GROWTH` times the elements
of their constant inputs (above `SMALL_BYTES`; a bias broadcast to a feature map) are left to
run time: folding them would only make the executable bigger. Growth counts elements, not
bytes: a widening cast of a weight (int8 to float32) is the weight the kernels read, folded
once. Weight layouts chosen by `AlterOpLayout` (``layout_transform`` of a constant weight) are
the main client: packed once, here, never per call.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from kiln import topi
from kiln.ir.function import BaseFunc, GlobalVar
from kiln.ir.module import IRModule
from kiln.ir.target import Target
from kiln.ir.transform import PassContext
from kiln.relax.analysis.primitive import is_lowerable
from kiln.relax.analysis.struct_info import tir_vars
from kiln.relax.backend.strategy import compute_for
from kiln.relax.binding import VarBinding
from kiln.relax.expr import (
    Call,
    Constant,
    DataTypeImm,
    Function,
    PrimValue,
    ShapeExpr,
    StringImm,
    Tuple,
)
from kiln.relax.expr_functor import ExprMutator
from kiln.relax.function_pass import FunctionPass
from kiln.relax.op.registry import OpDef, find_op_def
from kiln.relax.struct_info import TensorStructInfo
from kiln.relax.te_bridge import TEArgs, prim_func_of
from kiln.tir.function import PrimFunc
from kiln.topi.layout import transform_array

MAX_GROWTH = 2
"""A folded result may have at most this many times the elements of its constant inputs..."""

SMALL_BYTES = 1 << 16
"""...unless it is at most this big."""

KernelBuilder = Callable[[PrimFunc], Callable[..., Any]]
"""Compiles one PrimFunc for the host; the result is called with input and output arrays."""


def _shape(call: Call) -> tuple[int, ...]:
    sinfo = call.struct_info_
    assert isinstance(sinfo, TensorStructInfo) and sinfo.dims is not None
    return tuple(int(d.value) for d in sinfo.dims)  # type: ignore[attr-defined]


_IEEE = ("float32", "float64")
_CASTS = (*_IEEE, "bool", *(f"{s}int{b}" for s in ("", "u") for b in (8, 16, 32, 64)))


def _arith(fn: Callable[[Any, Any], Any]) -> Callable[[Call, list[np.ndarray]], Any]:
    def run(call: Call, a: list[np.ndarray]) -> np.ndarray | None:
        if any(str(x.dtype) not in _IEEE or x.dtype != a[0].dtype for x in a):
            return None  # NOTE: integer wrap-around and storage floats: the kernel decides
        return fn(a[0], a[1])

    return run


def _astype(call: Call, a: list[np.ndarray]) -> np.ndarray | None:
    src, dst = a[0].dtype, np.dtype(call.attrs["dtype"])
    if str(src) not in _CASTS or str(dst) not in _CASTS or src.kind == "f" and dst.kind in "iu":
        return None
    return a[0].astype(dst)


def _take(call: Call, a: list[np.ndarray]) -> np.ndarray | None:
    x, idx = a
    axis = call.attrs.get("axis")
    n = x.size if axis is None else x.shape[axis]
    lo = -n if call.attrs.get("mode") == "raise" else 0  # NOTE: other modes: in-range only
    if idx.size and (idx.min() < lo or idx.max() >= n):
        return None  # the kernel's out-of-range behaviour (an error when the model runs)
    return np.take(x, idx, axis=axis)


def _gather_elements(call: Call, a: list[np.ndarray]) -> np.ndarray | None:
    x, idx = a
    n = x.shape[call.attrs["axis"]]
    if idx.size and (idx.min() < -n or idx.max() >= n):
        return None
    return np.take_along_axis(x, idx.astype(np.int64), call.attrs["axis"])


def _full(call: Call, a: list[np.ndarray]) -> np.ndarray | None:
    value, dst = a[0], np.dtype(str(call.struct_info_.dtype))  # type: ignore[attr-defined]
    if value.dtype.kind == "f" and dst.kind in "iub":
        return None
    return np.full(_shape(call), value, dtype=dst)


EXACT: dict[str, Callable[[Call, list[np.ndarray]], np.ndarray | None]] = {
    "relax.layout_transform": lambda c, a: transform_array(
        a[0], c.attrs["src_layout"], c.attrs["dst_layout"]
    ),
    "relax.permute_dims": lambda c, a: np.transpose(a[0], c.attrs.get("axes")),
    "relax.reshape": lambda c, a: a[0].reshape(_shape(c)),
    "relax.expand_dims": lambda c, a: a[0].reshape(_shape(c)),
    "relax.squeeze": lambda c, a: a[0].reshape(_shape(c)),
    "relax.flatten": lambda c, a: a[0].reshape(_shape(c)),
    "relax.broadcast_to": lambda c, a: np.broadcast_to(a[0], _shape(c)),
    "relax.concat": lambda c, a: np.concatenate(a, axis=c.attrs["axis"]),
    "relax.take": _take,
    "relax.gather_elements": _gather_elements,
    "relax.full": _full,
    "relax.astype": _astype,
    "relax.add": _arith(np.add),
    "relax.subtract": _arith(np.subtract),
    "relax.multiply": _arith(np.multiply),
    "relax.divide": _arith(np.divide),
}
"""Operators folded in numpy where that is exact (None: not for these dtypes, run the kernel)."""


def _numpy_dtype(sinfo: Any) -> np.dtype | None:
    if not isinstance(sinfo, TensorStructInfo) or sinfo.dims is None or sinfo.dtype.is_void:
        return None
    if any(tir_vars(d) for d in sinfo.dims):
        return None
    try:
        dt = np.dtype("bool" if sinfo.dtype.is_bool else str(sinfo.dtype))
    except TypeError:
        return None
    return dt if dt.kind in "biuf" else None


def _constants(arg: Any) -> list[Constant] | None:
    """The constants among an argument's leaves; None when a leaf is not a constant (a
    variable, a symbolic shape)."""
    if isinstance(arg, Tuple):
        out: list[Constant] = []
        for f in arg.fields:
            sub = _constants(f)
            if sub is None:
                return None
            out += sub
        return out
    if isinstance(arg, Constant):
        return [arg]
    if isinstance(arg, ShapeExpr):
        return None if tir_vars(arg.values) else []
    if isinstance(arg, PrimValue):
        return None if tir_vars(arg.value) else []
    return [] if isinstance(arg, (StringImm, DataTypeImm)) else None


class _Folder(ExprMutator):
    def __init__(self, mod: IRModule, build: KernelBuilder | None) -> None:
        super().__init__(mod)
        self.build = build
        self.host = Target("c")

    def visit_var_binding(self, b: VarBinding) -> None:
        value = self.visit(b.value)
        if value is not b.value:
            # NOTE: a call whose arguments were just folded is rebuilt without struct info
            value = self.builder.normalize(value)
        folded = self.fold(value) if isinstance(value, Call) else None
        if folded is None:
            self.reemit(b, value)
            return
        self.var_remap[id(b.var)] = folded

    def fold(self, call: Call) -> Constant | None:
        """``call``'s value as a constant, or None when it is not folded (module docstring)."""
        rec = find_op_def(call.op)
        dtype = _numpy_dtype(call.struct_info_)
        if rec is None or not rec.pure or rec.legalize is None or dtype is None:
            return None
        leaves = [_constants(a) for a in call.args]
        if any(x is None for x in leaves):
            return None
        consts = [c for x in leaves for c in x or ()]
        if not consts:
            return None
        out_size = int(np.prod(_shape(call)))
        in_size = sum(c.data.size for c in consts)
        if out_size > MAX_GROWTH * in_size and out_size * dtype.itemsize > SMALL_BYTES:
            return None
        exact = EXACT.get(rec.name)
        value = exact(call, [c.data for c in consts]) if exact is not None else None
        if value is None:
            if self.build is None or any(c.data.dtype.kind == "b" for c in consts):
                return None
            value = self.run_kernel(rec, call, dtype)
        # NOTE: asarray keeps a 0-d result 0-d (ascontiguousarray makes it 1-d)
        return Constant(np.asarray(value, dtype=dtype, order="C"))

    def run_kernel(self, rec: OpDef, call: Call, dtype: np.dtype) -> np.ndarray:
        """``call`` computed by the host kernel of its CPU compute."""
        assert self.build is not None
        conv = TEArgs(False)
        args = [conv.convert(a) for a in call.args]
        out = compute_for(rec, call, args, self.host)
        outs = out if isinstance(out, (list, tuple)) else [out]
        sched = topi.schedule_for(list(outs), self.host)
        name = f"fold_{rec.name.rsplit('.', 1)[-1]}"
        prim, _ = prim_func_of([ph for _, ph in conv.inputs], list(outs), name, schedule=sched)
        result = np.empty(_shape(call), dtype)
        arrays = [e.data for e, _ in conv.inputs if isinstance(e, Constant)]
        self.build(prim)(*arrays, result)
        return result


@dataclass(frozen=True)
class FoldConstant(FunctionPass):
    """Evaluate operator calls on constants at compile time (see the module docstring);
    ``build`` compiles the kernels of operators numpy does not fold exactly (None: numpy
    folds only)."""

    name: ClassVar[str] = "fold-constant"
    build: KernelBuilder | None = None

    def transform(self, gv: GlobalVar, func: Function, mod: IRModule, ctx: PassContext) -> BaseFunc:
        if not is_lowerable(func):
            return func
        return _Folder(mod, self.build).visit(func)


__all__ = ["EXACT", "FoldConstant"]
