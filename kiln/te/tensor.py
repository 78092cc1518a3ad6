"""Tensors and operations of the tensor-expression (TE) layer.

A `Tensor` is the output of an `Operation`: a `PlaceholderOp` (an input, given by shape and dtype)
or a `ComputeOp` (an expression over iteration axes). Indexing a tensor, ``A[i, j]``, builds a
`ProducerLoad` expression; lowering turns it into a `BufferLoad` of the tensor's buffer.

Iteration axes are `AxisVar`s: TIR variables that also carry a domain and a kind (data-parallel
or reduction), so the same object is both the expression used inside a compute lambda and the
handle a schedule primitive takes. Tensors and operations are plain Python objects compared by
identity; they never appear in lowered TIR.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kiln.errors import IRError, IRValueError
from kiln.ir.dtype import DataType
from kiln.ir.span import Span
from kiln.ir.visitor import distinct_nodes
from kiln.tir.expr import PrimExpr, Var, convert
from kiln.tir.stmt import IterKind, Range


@dataclass(frozen=True, slots=True, eq=False)
class AxisVar(Var):
    """An iteration axis: a variable with a domain (``None`` for axes a schedule derived).

    ``iter_kind`` is ``DATA_PAR`` for the axes of a compute and ``COMM_REDUCE`` for axes made by
    `reduce_axis`. ``axis.var`` is the axis itself (TVM code writes ``k.var``).
    """

    dom: Range | None = None
    iter_kind: IterKind = IterKind.DATA_PAR

    @property
    def var(self) -> AxisVar:
        return self

    @property
    def is_reduce(self) -> bool:
        return self.iter_kind is IterKind.COMM_REDUCE

    def __repr__(self) -> str:
        kind = "reduce " if self.is_reduce else ""
        return f"AxisVar({kind}{self.name!r})"


@dataclass(frozen=True, slots=True, eq=False)
class ProducerLoad(PrimExpr):
    """``producer[indices]``: a read of a TE tensor inside a compute body."""

    producer: Tensor
    indices: tuple[PrimExpr, ...]
    dtype: DataType = None  # type: ignore[assignment]
    span: Span | None = None

    def __post_init__(self) -> None:
        if self.dtype is None:
            object.__setattr__(self, "dtype", self.producer.dtype)


class Operation:
    """Base of TE operations; each has one output tensor (``op.output(0)``)."""

    __slots__ = ("name", "tag", "attrs", "_output")
    name: str
    tag: str
    attrs: dict[str, Any]
    _output: Tensor

    def output(self, index: int = 0) -> Tensor:
        """The output tensor (only ``index`` 0 exists)."""
        if index != 0:
            raise IRValueError(f"operation {self.name!r} has one output, asked for output {index}")
        return self._output

    @property
    def num_outputs(self) -> int:
        return 1

    @property
    def input_tensors(self) -> list[Tensor]:
        """Tensors this operation reads, in order of first use."""
        return []

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"


class PlaceholderOp(Operation):
    """An input tensor of the program: only a shape and a dtype."""

    __slots__ = ("shape", "dtype")

    def __init__(self, name: str, shape: tuple[PrimExpr, ...], dtype: DataType) -> None:
        self.name, self.tag, self.attrs = name, "", {}
        self.shape, self.dtype = shape, dtype
        self._output = Tensor(self, shape, dtype)


class ComputeOp(Operation):
    """``out[axis...] = body``: one value per point of ``axis``; ``body`` may be a `Reduce`."""

    __slots__ = ("axis", "reduce_axis", "body", "shape", "_inputs")

    def __init__(
        self,
        name: str,
        tag: str,
        attrs: dict[str, Any] | None,
        axis: tuple[AxisVar, ...],
        reduce_axis: tuple[AxisVar, ...],
        body: PrimExpr,
    ) -> None:
        self.name, self.tag, self.attrs = name, tag, dict(attrs or {})
        self.axis, self.reduce_axis, self.body = axis, reduce_axis, body
        self.shape = tuple(a.dom.extent for a in axis if a.dom is not None)
        self._output = Tensor(self, self.shape, body.dtype)
        self._inputs: list[Tensor] | None = None

    @property
    def input_tensors(self) -> list[Tensor]:
        if self._inputs is None:  # NOTE: the body never changes: walked once
            self._inputs = producers_of(self.body)
        return list(self._inputs)


def producers_of(expr: Any) -> list[Tensor]:
    """Tensors read by ``expr`` (through `ProducerLoad`), in order of first appearance."""
    seen: dict[int, Tensor] = {}
    for n in distinct_nodes(expr):
        if isinstance(n, ProducerLoad):
            seen.setdefault(id(n.producer), n.producer)
    return list(seen.values())


class Tensor:
    """The output of an operation; ``T[i, j]`` reads it inside a compute lambda."""

    __slots__ = ("op", "value_index", "shape", "dtype")

    def __init__(
        self, op: Operation, shape: tuple[PrimExpr, ...], dtype: DataType, value_index: int = 0
    ) -> None:
        self.op, self.shape, self.dtype, self.value_index = op, shape, dtype, value_index

    @property
    def name(self) -> str:
        return self.op.name

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def __getitem__(self, indices: Any) -> ProducerLoad:
        if not isinstance(indices, tuple):
            indices = (indices,)
        if len(indices) != len(self.shape):
            raise IRValueError(
                f"tensor {self.name!r} has {len(self.shape)} dimension(s) but is indexed with "
                f"{len(indices)} index(es)"
            )
        return ProducerLoad(self, tuple(_index(self.name, i) for i in indices))

    def __call__(self, *indices: Any) -> ProducerLoad:
        return self[indices]

    def __repr__(self) -> str:
        dims = ", ".join(str(s.value) if hasattr(s, "value") else repr(s) for s in self.shape)
        return f"Tensor({self.name!r}, shape=({dims}), {self.dtype})"


def _index(name: str, value: Any) -> PrimExpr:
    if isinstance(value, (float, str)) or value is None:
        raise IRError(f"tensor {name!r}: index {value!r} must be an integer expression")
    try:
        e = convert(value)
    except IRError:
        raise IRError(f"tensor {name!r}: index {value!r} must be an integer expression") from None
    if not e.dtype.is_integer or e.dtype.lanes != 1:
        raise IRError(f"tensor {name!r}: index {value!r} has dtype {e.dtype}, expected an integer")
    return e
