"""Element-wise computes over tensors of broadcast-compatible shapes (numpy rules).

Shapes are aligned at their last dimension; a dimension of 1 stretches. A symbolic dimension
matches itself (or an expression of the same structure) or 1; a symbolic dimension against a
different symbolic or constant one (other than 1) cannot be checked statically and is rejected,
as are two different constants.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kiln.errors import IRValueError
from kiln.ir.structural import structural_equal
from kiln.te.operation import compute
from kiln.te.tensor import Tensor
from kiln.tir.expr import IntImm, PrimExpr, as_const_int, convert, is_const_int


def _merge(a: PrimExpr, b: PrimExpr) -> PrimExpr | None:
    """The broadcast of two dimensions, or None if they cannot broadcast."""
    if is_const_int(a, 1):
        return b
    if is_const_int(b, 1):
        return a
    if is_const_int(a) and is_const_int(b):
        return a if as_const_int(a) == as_const_int(b) else None
    # NOTE: dims are compared by structure: a graph's ``batch * 4`` reaches TE as different
    # objects from different operands.
    return a if a is b or structural_equal(a, b) else None


def broadcast_shape(*shapes: Any, op: str = "broadcast", names: Any = None) -> tuple[PrimExpr, ...]:
    """The numpy broadcast of ``shapes`` (tuples of ints / expressions)."""
    dims = [tuple(convert(d) for d in s) for s in shapes]
    labels = list(names) if names else [f"operand {k}" for k in range(len(dims))]
    ndim = max((len(s) for s in dims), default=0)
    out: list[PrimExpr] = []
    for pos in range(ndim, 0, -1):
        cur: PrimExpr | None = None
        who = ""
        for label, s in zip(labels, dims):
            if len(s) < pos:
                continue
            d = s[len(s) - pos]
            merged = d if cur is None else _merge(cur, d)
            if merged is None:
                raise IRValueError(
                    f"{op}: cannot broadcast dimension {_show(cur)} of {who} with "
                    f"{_show(d)} of {label!r} (shapes {[tuple(map(_show, x)) for x in dims]})"
                )
            if merged is not cur:
                who = repr(label)
            cur = merged
        assert cur is not None
        out.append(cur)
    return tuple(out)


def _show(d: Any) -> str:
    return str(d.value) if isinstance(d, IntImm) else getattr(d, "name", repr(d))


def _read(operand: Any, idx: tuple[PrimExpr, ...]) -> Any:
    if not isinstance(operand, Tensor):
        return operand
    own = idx[len(idx) - operand.ndim :] if operand.ndim else ()
    picks = tuple(
        convert(0, i.dtype) if is_const_int(d, 1) else i for d, i in zip(operand.shape, own)
    )
    return operand[picks]


def elementwise(
    fcompute: Callable[..., Any], *operands: Any, name: str = "T_elemwise", tag: str = "elemwise"
) -> Tensor:
    """``fcompute`` applied point-wise to the broadcast of ``operands`` (tensors or scalars)."""
    tensors = [t for t in operands if isinstance(t, Tensor)]
    if not tensors:
        raise IRValueError(f"{name}: needs at least one tensor operand")
    shape = broadcast_shape(*(t.shape for t in tensors), op=name, names=[t.name for t in tensors])
    return compute(
        shape,
        lambda *idx: fcompute(*(_read(o, tuple(idx)) for o in operands)),
        name=name,
        tag=tag,
    )
