"""Shared pieces of the operator records: argument checks, dtype rules and broadcasting.

dtype rules (stated once, used by every family):

- arithmetic (``add`` ... ``power``, ``maximum``, ``minimum``, ``where``'s branches, ``matmul``,
  ``concat``): operands must have the same dtype; there is no implicit promotion (cast with
  ``astype``). An unknown dtype (``R.Tensor`` without one) makes the result's dtype unknown.
- comparisons, ``isnan``, ``isinf`` and ``isfinite`` produce ``bool``; ``logical_*`` take and
  produce ``bool``; the other arithmetic (``sign``, ``trunc_divide``, ``floor_mod``...) takes
  integer or float operands, not ``bool``.
- float math (``exp`` ... ``gelu``, ``mean``, ``variance``, ``softmax``, norms, pools' averages):
  float operands only.
- ``argmax`` / ``argmin`` produce ``int64``; ``astype`` and creation ops take the dtype given.

Errors name the operator, the operands (with their struct info) and what was expected, and are
raised when the call is normalized (emitted), never later.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kiln.errors import IRError, IRValueError
from kiln.ir.dtype import DataType
from kiln.ir.function import GlobalVar
from kiln.ir.node import Attrs
from kiln.relax.analysis.struct_info import Fit, dims_fit, simplify_dim
from kiln.relax.expr import Call, Expr, PrimValue, ShapeExpr, Tuple, Var, const
from kiln.relax.struct_info import (
    INT64,
    ObjectStructInfo,
    PrimStructInfo,
    ShapeStructInfo,
    StructInfo,
    TensorStructInfo,
    TupleStructInfo,
)
from kiln.relax.te_bridge import has_symbolic_dims, te_dims
from kiln.tir.expr import FloatImm, IntImm, PrimExpr

BOOL = DataType("bool", 1)
VOID = DataType("handle", 0)


def describe(e: Any) -> str:
    """``name (struct info)`` of an operand, for error messages."""
    if isinstance(e, Var):
        name = e.name_hint
    elif isinstance(e, Call):
        name = f"{getattr(e.op, 'name', None) or getattr(e.op, 'name_hint', 'call')}(...)"
    else:
        name = type(e).__name__.lower()
    sinfo = getattr(e, "struct_info_", None)
    return f"{name} ({sinfo})" if sinfo is not None else name


def shape_text(dims: Any) -> str:
    """Dims as a Python tuple: ``(n, 4)``, ``(3,)``."""
    items = [show(d) for d in dims]
    return f"({items[0]},)" if len(items) == 1 else f"({', '.join(items)})"


def show(d: Any) -> str:
    """A dimension as it reads in script (``4``, ``n * 2``)."""
    if isinstance(d, IntImm):
        return str(d.value)

    text = str(PrimValue(d)) if isinstance(d, PrimExpr) else str(d)
    return text.removeprefix("R.prim_value(").removesuffix(")")


def fail(call: Call, message: str) -> IRValueError:
    """An error about ``call`` (to be raised): ``"<op>: <message>"``."""
    return IRValueError(f"{call.op.name}: {message}")


def check_arity(call: Call, n: int) -> None:
    if len(call.args) != n:
        raise IRError(f"{call.op.name} takes {n} argument(s), got {len(call.args)}")


def tensor_sinfo(call: Call, i: int, what: str = "") -> TensorStructInfo:
    """The tensor struct info of argument ``i`` (an error naming the operand otherwise)."""
    arg = call.args[i]
    sinfo = arg.struct_info_
    if not isinstance(sinfo, TensorStructInfo):
        label = what or f"argument {i}"
        raise IRError(f"{call.op.name}: {label} must be a tensor, got {describe(arg)}")
    return sinfo


def tuple_of_tensors(call: Call, i: int) -> list[TensorStructInfo]:
    """The field struct infos of a tuple-of-tensors argument."""
    arg = call.args[i]
    sinfo = arg.struct_info_
    if not isinstance(sinfo, TupleStructInfo) or not all(
        isinstance(f, TensorStructInfo) for f in sinfo.fields
    ):
        raise IRError(
            f"{call.op.name}: argument {i} must be a tuple of tensors, got {describe(arg)}"
        )
    return list(sinfo.fields)  # type: ignore[arg-type]


def shape_values(call: Call, i: int) -> tuple[PrimExpr, ...] | None:
    """The dims of a shape argument (None when only its rank is known)."""
    arg = call.args[i]
    if isinstance(arg, ShapeExpr):
        return arg.values
    sinfo = arg.struct_info_
    if isinstance(sinfo, ShapeStructInfo):
        return sinfo.values
    raise IRError(f"{call.op.name}: argument {i} must be a shape, got {describe(arg)}")


def shape_rank(call: Call, i: int) -> int:
    sinfo = call.args[i].struct_info_
    return sinfo.ndim if isinstance(sinfo, ShapeStructInfo) else -1


def prim_value(call: Call, i: int) -> PrimExpr | None:
    sinfo = call.args[i].struct_info_
    if not isinstance(sinfo, PrimStructInfo):
        raise IRError(
            f"{call.op.name}: argument {i} must be a prim value, got {describe(call.args[i])}"
        )
    return sinfo.value


def out_tensor(dims: Sequence[PrimExpr] | None, dtype: Any, ndim: int = -1) -> TensorStructInfo:
    """The result struct info from dims (None: unknown shape of rank ``ndim``)."""
    if dims is None:
        return TensorStructInfo(None, dtype, ndim)
    return TensorStructInfo([simplify_dim(d) for d in dims], dtype)


def same_dtype(call: Call, infos: Sequence[TensorStructInfo], start: int = 0) -> DataType:
    """The common dtype of operands that must agree (unknown if any is unknown)."""
    known = [(i, s) for i, s in enumerate(infos) if not s.dtype.is_void]
    if len(known) < len(infos):
        return VOID
    first_i, first = known[0]
    for i, s in known[1:]:
        if s.dtype != first.dtype:
            a, b = call.args[start + first_i], call.args[start + i]
            raise fail(
                call,
                f"operands {describe(a)} and {describe(b)} have different dtypes "
                f"({first.dtype} vs {s.dtype}); cast one with astype",
            )
    return first.dtype


def require_float(call: Call, sinfo: TensorStructInfo, i: int = 0) -> None:
    if not sinfo.dtype.is_void and not sinfo.dtype.is_float:
        raise fail(call, f"needs a float tensor, got {describe(call.args[i])}")


def require_numeric(call: Call, sinfo: TensorStructInfo, i: int = 0) -> None:
    if sinfo.dtype.is_bool:
        raise fail(call, f"needs a numeric (integer or float) tensor, got {describe(call.args[i])}")


def require_bool(call: Call, sinfo: TensorStructInfo, i: int) -> None:
    if not sinfo.dtype.is_void and not sinfo.dtype.is_bool:
        raise fail(call, f"needs a bool tensor, got {describe(call.args[i])}")


def is_one(d: PrimExpr) -> bool:
    return isinstance(d, IntImm) and d.value == 1


def broadcast_dims(call: Call, infos: Sequence[TensorStructInfo]) -> tuple[PrimExpr, ...] | None:
    """numpy broadcasting of the operands' shapes; None when a shape is unknown or two symbolic
    dims cannot be proven equal (the result then has a known rank only)."""
    shapes = [s.dims for s in infos]
    if any(s is None for s in shapes):
        return None
    rank = max(len(s) for s in shapes)  # type: ignore[arg-type]
    out: list[PrimExpr] = []
    unknown = False
    for k in range(rank):
        picked: PrimExpr | None = None
        for s in shapes:
            assert s is not None
            off = k - (rank - len(s))
            if off >= 0:
                merged = _merge_dim(call, infos, picked, s[off])
                unknown = unknown or merged is None
                picked = merged if merged is not None else picked
        out.append(picked if picked is not None else IntImm(INT64, 1))
    return None if unknown else tuple(out)


def _merge_dim(
    call: Call, infos: Sequence[TensorStructInfo], cur: PrimExpr | None, d: PrimExpr
) -> PrimExpr | None:
    if cur is None or is_one(cur):
        return d
    if is_one(d):
        return cur
    fit = dims_fit(cur, d)
    if fit is Fit.PASS:
        return cur
    if fit is Fit.FAIL:
        shown = ", ".join(describe(a) for a in call.args[: len(infos)])
        raise fail(call, f"operands do not broadcast: dim {show(cur)} vs {show(d)} ({shown})")
    return None


def out_dims(call: Call, field: int | None = None) -> tuple[Any, ...]:
    """The result dims of a normalized call, for a TE computation (constants as ints)."""

    wide = has_symbolic_dims(*call.args, call.struct_info)
    sinfo = call.struct_info
    if field is not None:
        sinfo = sinfo.fields[field]  # type: ignore[attr-defined]
    if not isinstance(sinfo, TensorStructInfo) or sinfo.dims is None:
        raise IRError(f"{call.op.name}: the result shape is unknown; cannot compute it in TE")
    return te_dims(sinfo.dims, wide)


def normalize_axis(call: Call, axis: Any, ndim: int) -> int:
    """``axis`` as a non-negative int below ``ndim`` (an error naming the operand)."""
    if isinstance(axis, bool) or not isinstance(axis, int):
        raise IRError(f"{call.op.name}: axis must be an int, got {axis!r}")
    if ndim >= 0 and not -ndim <= axis < ndim:
        raise fail(call, f"axis {axis} is out of range for {describe(call.args[0])} of rank {ndim}")
    return axis % ndim if ndim > 0 else axis


def normalize_axes(call: Call, axes: Any, ndim: int) -> list[int] | None:
    """``axes`` (None: all) as sorted non-negative ints; None when the rank is unknown."""
    if ndim < 0:
        return None
    if axes is None:
        return list(range(ndim))
    items = list(axes) if isinstance(axes, (list, tuple)) else [axes]
    out = sorted(normalize_axis(call, a, ndim) for a in items)
    if len(set(out)) != len(out):
        raise fail(call, f"axes {list(items)} repeat an axis")
    return out


def attrs(**kwargs: Any) -> Attrs:
    """The attributes of a call (tuples for sequences, plain values otherwise)."""
    return Attrs({k: (tuple(v) if isinstance(v, list) else v) for k, v in kwargs.items()})


def plain(value: Any) -> Any:
    """A builder argument as a Python value: a constant prim value (``R.prim_value(3)``, as TVM
    prints some attributes) becomes its number, a sequence a tuple of such values."""

    if isinstance(value, PrimValue) and isinstance(value.value, (IntImm, FloatImm)):
        return value.value.value
    if isinstance(value, (list, tuple)) or isinstance(value, Expr) and hasattr(value, "fields"):
        items = value.fields if isinstance(value, Expr) else value
        return tuple(plain(v) for v in items)
    return value


def out_dtype_attr(value: Any) -> str | None:
    """An ``out_dtype`` attribute: None (or TVM's ``"void"``) means the operands' dtype."""
    if value is None or str(value) in ("void", ""):
        return None
    return str(DataType.parse(value))


def int_list(value: Any, what: str, n: int | None = None) -> tuple[int, ...]:
    """An int or a sequence of ints as a tuple (repeated to ``n`` for a single int)."""
    items = [value] * (n or 1) if isinstance(value, int) else list(value)
    if any(isinstance(v, bool) or not isinstance(v, int) for v in items):
        raise IRError(f"{what} must be ints, got {value!r}")
    return tuple(items)


def as_expr(value: Any) -> Expr:
    """A relax expression from a relax expression or a Python/numpy value (a constant)."""

    if isinstance(value, (Expr, GlobalVar)):
        return value  # type: ignore[return-value]
    if isinstance(value, (list, tuple)) and any(isinstance(v, Expr) for v in value):
        return Tuple(tuple(as_expr(v) for v in value))
    if isinstance(value, (int, float, bool, list, tuple)) or hasattr(value, "__array__"):
        return const(value)
    raise IRError(f"expected a relax expression, got {value!r}")


def object_sinfo() -> StructInfo:
    return ObjectStructInfo()
