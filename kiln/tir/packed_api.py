"""The entry plan of an exposed function: what its tvm-ffi entry checks before the typed call.

`MakePackedAPI` decides the plan and stores it under `kiln.tir.attrs.PACKED_API`; the host code
generators turn it into C. Keeping the plan types here lets both sides share them without the
code generator importing a pass.
"""

from __future__ import annotations

from dataclasses import dataclass

from kiln.ir.dtype import DataType
from kiln.tir.buffer import Buffer
from kiln.tir.expr import PrimExpr, Var


@dataclass(frozen=True)
class PackedArg:
    """One argument of the entry: a tensor (``buffer`` set) or a scalar of ``param.dtype``."""

    name: str
    param: Var
    buffer: Buffer | None = None


@dataclass(frozen=True)
class DimCheck:
    """``args[arg].<field>[axis]`` must equal ``value``; when ``binds``, it defines ``value``."""

    arg: int
    field: str  # "shape" | "strides" | "elem_offset"
    axis: int
    value: PrimExpr
    binds: bool = False


@dataclass(frozen=True)
class CountCheck:
    """``args[arg]`` may hold at most ``max(index_dtype)`` elements: the kernel computes its flat
    indices in ``index_dtype`` and its declared shape does not bound the count below that."""

    arg: int
    index_dtype: DataType

    @property
    def limit(self) -> int:
        """The largest element count the kernel can index."""
        return (1 << (self.index_dtype.bits - 1)) - 1


@dataclass(frozen=True)
class PackedAPI:
    """The entry plan of one exposed function (see `MakePackedAPI`).

    ``writes`` lists the arguments the function may write (its outputs, from
    `kiln.tir.analysis.writes`); ``overlaps`` the pairs of tensor arguments whose memory must
    not overlap (a ``tir.noalias`` function: every pair with at least one written side)."""

    symbol: str
    args: tuple[PackedArg, ...]
    compact: tuple[int, ...]
    checks: tuple[DimCheck, ...]
    dims: tuple[Var, ...]
    counts: tuple[CountCheck, ...] = ()
    writes: tuple[int, ...] = ()
    overlaps: tuple[tuple[int, int], ...] = ()

    @property
    def typed_params(self) -> tuple[Var, ...]:
        """The typed function's parameters: one per argument, then the symbolic dims."""
        return tuple(a.param for a in self.args) + self.dims

    @property
    def dim_bounds(self) -> dict[Var, tuple[int, int]]:
        """Inclusive ranges of the symbolic dims the entry binds from tensor shapes: a dim is
        never negative (the analyses of the body may rely on it: a ``//`` of dims is C's ``/``,
        and a loop over ``b * s`` runs only when ``s >= 1``)."""
        out: dict[Var, tuple[int, int]] = {}
        for c in self.checks:
            if c.binds and c.field == "shape" and isinstance(c.value, Var):
                out[c.value] = (0, (1 << (c.value.dtype.bits - 1)) - 1)
        return out

    def __repr__(self) -> str:
        def arg(a: PackedArg) -> str:
            if a.buffer is None:
                return f"{a.name}: {a.param.dtype}"
            dims = ", ".join(d.name if isinstance(d, Var) else str(d) for d in a.buffer.shape)
            return f"{a.name}: {a.buffer.dtype}[{dims}]"

        binds = "".join(f", binds {c.value.name}" for c in self.checks if c.binds)  # type: ignore
        return f"PackedAPI({self.symbol}({', '.join(arg(a) for a in self.args)}){binds})"
