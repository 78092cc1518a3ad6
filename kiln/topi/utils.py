"""Shared checks and small helpers of the operator library.

Every check raises `IRError` with a message that starts with the operator's name and names the
tensor at fault, so a bad call reads like ``"softmax: axis 2 is out of range for tensor 'x' of
rank 2"``.
"""

from __future__ import annotations

import operator
from collections.abc import Iterable, Sequence
from typing import Any

from kiln.arith import simplify
from kiln.errors import IRError, IRValueError
from kiln.ir.dtype import DataType
from kiln.te import Tensor
from kiln.tir.expr import IntImm, PrimExpr, as_const_int, const

FLOAT_DTYPES = ("float16", "float32", "float64")
"""Float dtypes the float-only operators accept (math that C computes in float / double)."""

NUMERIC_KINDS = ("int", "uint", "float")


def const_int(e: Any) -> int | None:
    """The value of an integer constant expression (or Python int), else None: `as_const_int`
    of the expression `kiln.arith` folds it to (``4 * 8`` is 32)."""
    if isinstance(e, PrimExpr) and not isinstance(e, IntImm) and e.dtype.is_integer:
        e = simplify(e)
    return as_const_int(e)


def same_dim(a: Any, b: Any) -> bool:
    """Whether two dimensions are known equal (both constant and equal, or the same expression)."""
    ca, cb = const_int(a), const_int(b)
    return ca == cb if ca is not None and cb is not None else a is b


def same_shape(t: Tensor, shape: Sequence[Any]) -> bool:
    """Whether ``t``'s shape is ``shape``, dim by dim (`same_dim`)."""
    return t.ndim == len(shape) and all(same_dim(a, b) for a, b in zip(t.shape, shape))


def const_shape(op: str, t: Tensor) -> tuple[int, ...]:
    """The shape of ``t`` as ints; raises when a dimension is symbolic."""
    dims = [const_int(d) for d in t.shape]
    if any(d is None for d in dims):
        raise IRValueError(f"{op}: tensor {t.name!r} needs a constant shape, got {show_shape(t)}")
    return tuple(d for d in dims if d is not None)


def show_shape(t: Tensor) -> str:
    """``t``'s shape written like a Python tuple (symbolic dims by name)."""
    parts = [str(d.value) if isinstance(d, IntImm) else str(getattr(d, "name", d)) for d in t.shape]
    return "(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")"


def check_tensor(op: str, t: Any, what: str = "input") -> Tensor:
    """``t`` itself when it is a TE tensor; an error naming the operator otherwise."""
    if not isinstance(t, Tensor):
        raise IRError(f"{op}: {what} must be a te.Tensor, got {type(t).__name__} {t!r}")
    return t


def check_dtype(op: str, t: Tensor, allowed: Sequence[str]) -> DataType:
    """``t``'s dtype, when its string form or kind is in ``allowed`` (e.g. ``"float32"``,
    ``"float"``, ``"int"``)."""
    dt = t.dtype
    if str(dt) in allowed or dt.kind in allowed:
        return dt
    raise IRError(
        f"{op}: tensor {t.name!r} has dtype {dt}, which is not supported; expected one of "
        f"{', '.join(allowed)}"
    )


def check_float(op: str, t: Tensor) -> DataType:
    """``t``'s dtype, which must be float16, float32 or float64."""
    return check_dtype(op, t, FLOAT_DTYPES)


def check_numeric(op: str, t: Tensor) -> DataType:
    """``t``'s dtype, which must be an integer or float type (not bool, not a storage float)."""
    dt = t.dtype
    if dt.is_bool or dt.is_bfloat16 or dt.is_float8:
        raise IRError(
            f"{op}: tensor {t.name!r} has dtype {dt}, which is not supported; expected an "
            "integer or float16/float32/float64 tensor"
        )
    return dt


def normalize_axis(op: str, t: Tensor, axis: Any, ndim: int | None = None) -> int:
    """``axis`` as a non-negative int below ``ndim`` (default: ``t``'s rank)."""
    n = t.ndim if ndim is None else ndim
    if isinstance(axis, bool) or not isinstance(axis, int):
        raise IRError(f"{op}: axis must be an int, got {axis!r} (tensor {t.name!r})")
    if not -n <= axis < n:
        raise IRValueError(
            f"{op}: axis {axis} is out of range for tensor {t.name!r} of rank {n} "
            f"(valid: {-n} to {n - 1})"
        )
    return axis % n


def normalize_axes(op: str, t: Tensor, axis: Any) -> tuple[int, ...]:
    """``axis`` (None for all, an int, or a list of ints) as sorted non-negative axes."""
    if axis is None:
        return tuple(range(t.ndim))
    items: Iterable[Any] = axis if isinstance(axis, (list, tuple)) else [axis]
    out = [normalize_axis(op, t, a) for a in items]
    if len(set(out)) != len(out):
        raise IRValueError(f"{op}: axis {axis!r} lists an axis twice (tensor {t.name!r})")
    return tuple(sorted(out))


def index_list(op: str, t: Tensor, what: str, values: Any) -> list[int | None]:
    """``values`` (a list or tuple of ints, constant `IntImm`s, or None for a slice's default)
    as Python ints; an `IRError` naming ``what`` and the position of the first other item."""
    if not isinstance(values, (list, tuple)):
        raise IRError(
            f"{op}: {what} must be a list of ints, got {type(values).__name__} {values!r} "
            f"(tensor {t.name!r})"
        )
    out: list[int | None] = []
    for k, v in enumerate(values):
        if v is None or isinstance(v, IntImm):
            out.append(None if v is None else v.value)
            continue
        try:
            if isinstance(v, bool):
                raise TypeError
            out.append(operator.index(v))
        except TypeError:
            raise IRError(
                f"{op}: {what}[{k}] must be an int, got {type(v).__name__} {v!r} "
                f"(tensor {t.name!r})"
            ) from None
    return out


def fconst(value: float, dtype: DataType | str) -> PrimExpr:
    """The constant ``value`` of (float) ``dtype``."""
    return const(float(value), dtype)


def as_operand(op: str, value: Any, dtype: DataType) -> Any:
    """A tensor passes through; a Python number becomes a constant of ``dtype``."""
    if isinstance(value, Tensor) or isinstance(value, PrimExpr):
        return value
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise IRError(f"{op}: operands must be tensors or numbers, got {value!r}")
    if dtype.is_integer and isinstance(value, float) and not value.is_integer():
        raise IRError(f"{op}: the float {value!r} cannot be combined with a {dtype} tensor")
    return const(int(value) if dtype.is_integer else float(value), dtype)


def prod(values: Iterable[int]) -> int:
    """The product of ``values`` (1 when empty)."""
    out = 1
    for v in values:
        out *= v
    return out
