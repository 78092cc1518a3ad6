"""MakePackedAPI: give every exposed PrimFunc a typed signature and a checked tvm-ffi entry plan.

Precondition: a well-formed module.
Postcondition, for every PrimFunc:
- its parameters are *typed*: a buffer parameter becomes the buffer's data pointer variable, a
  scalar parameter stays; the buffer map is empty (the body reaches buffers through their data
  variables). Calls between functions pass data pointers, so they are unchanged.
- an exposed function (one with ``global_symbol``) also takes, after those, every symbolic
  variable its argument buffers define (``n`` in ``T.Buffer((n, 4))``), and carries the attribute
  ``kiln.packed_api``: a `PackedAPI` that lists, in order, what the tvm-ffi entry
  ``__tvm_ffi_<global_symbol>`` must check before it calls the typed function: argument count;
  per argument its kind (tensor or scalar), dtype, ndim, device and non-null data; compact
  row-major strides where the buffer declares none; then every shape dimension (constant: equal;
  first sight of a variable: bind it; later sights and expressions: equal to the bound value).
- a private function whose buffers have symbolic shapes no parameter provides is an error (its
  callers could not pass the dimensions).

The code generator (`kiln.target.codegen.c_host`) turns a `PackedAPI` into C; this pass decides
what is checked, and in which order.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import ClassVar

from kiln.errors import KilnError
from kiln.ir.module import IRModule
from kiln.ir.transform import Pass, PassContext
from kiln.tir.buffer import Buffer
from kiln.tir.expr import IntImm, PrimExpr, Var
from kiln.tir.function import EMPTY_MAP, PrimFunc
from kiln.tir.functor import post_order_visit

ATTR = "kiln.packed_api"
"""The function attribute holding a `PackedAPI`."""


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
class PackedAPI:
    """The entry plan of one exposed function (see module docstring)."""

    symbol: str
    args: tuple[PackedArg, ...]
    compact: tuple[int, ...]
    checks: tuple[DimCheck, ...]
    dims: tuple[Var, ...]

    @property
    def typed_params(self) -> tuple[Var, ...]:
        """The typed function's parameters: one per argument, then the symbolic dims."""
        return tuple(a.param for a in self.args) + self.dims

    def __repr__(self) -> str:
        def arg(a: PackedArg) -> str:
            if a.buffer is None:
                return f"{a.name}: {a.param.dtype}"
            dims = ", ".join(d.name if isinstance(d, Var) else str(d) for d in a.buffer.shape)
            return f"{a.name}: {a.buffer.dtype}[{dims}]"

        binds = "".join(f", binds {c.value.name}" for c in self.checks if c.binds)  # type: ignore
        return f"PackedAPI({self.symbol}({', '.join(arg(a) for a in self.args)}){binds})"


KERNEL_LAUNCH = 2
"""``calling_conv`` of a device kernel: launched by its host, never called through tvm-ffi."""


class MakePackedAPI(Pass):
    """Typed signatures for all functions and a checked entry plan for exposed ones."""

    name: ClassVar[str] = "make-packed-api"

    def run(self, mod: IRModule, ctx: PassContext) -> IRModule:
        out = mod
        for gv, func in mod.items():
            if not isinstance(func, PrimFunc) or func.get_attr(ATTR) is not None:
                continue
            if func.get_attr("calling_conv") == KERNEL_LAUNCH:  # device kernels have no entry
                continue
            label = func.global_symbol or gv.name_hint
            args = _packed_args(func)
            if func.global_symbol is None:
                new = _private(func, args, label)
            else:
                api = _plan(func.global_symbol, args, label)
                new = replace(func, params=api.typed_params, buffer_map=EMPTY_MAP)
                new = new.with_attr(ATTR, api)
            out = out.update(gv, new)
        return out


def _packed_args(func: PrimFunc) -> tuple[PackedArg, ...]:
    args = []
    for p in func.params:
        buf = func.buffer_map.get(p)
        args.append(PackedArg(p.name, buf.data if buf is not None else p, buf))
    return tuple(args)


def _private(func: PrimFunc, args: tuple[PackedArg, ...], label: str) -> PrimFunc:
    if not func.buffer_map:
        return func
    params = tuple(a.param for a in args)
    for a in args:
        if a.buffer is None:
            continue
        missing = _free_vars(a.buffer, set(params))
        if missing:
            raise KilnError(
                f"{label}: buffer {a.buffer.name!r} has symbolic dimension(s) "
                f"{', '.join(sorted(v.name for v in missing))} that no parameter provides; "
                "a private function's callers pass only data pointers, so add them as "
                "scalar parameters"
            )
    return replace(func, params=params, buffer_map=EMPTY_MAP)


def _free_vars(buf: Buffer, bound: set[Var]) -> list[Var]:
    found: list[Var] = []

    def visit(n: object) -> None:
        if isinstance(n, Var) and n not in bound and n not in found:
            found.append(n)

    for e in _fields(buf):
        post_order_visit(e, visit)
    return found


def _fields(buf: Buffer) -> list[PrimExpr]:
    return [*buf.shape, *buf.strides, *([buf.elem_offset] if buf.elem_offset is not None else [])]


def _plan(symbol: str, args: tuple[PackedArg, ...], label: str) -> PackedAPI:
    bound: set[Var] = {a.param for a in args if a.buffer is None}
    dims: list[Var] = []
    checks: list[DimCheck] = []
    deferred: list[DimCheck] = []
    compact: list[int] = []
    for i, a in enumerate(args):
        buf = a.buffer
        if buf is None:
            continue
        if not buf.strides:
            compact.append(i)
        entries = [("shape", k, d) for k, d in enumerate(buf.shape)]
        entries += [("strides", k, s) for k, s in enumerate(buf.strides)]
        if buf.elem_offset is not None and not _is_zero(buf.elem_offset):
            entries.append(("elem_offset", 0, buf.elem_offset))
        for field, axis, value in entries:
            if isinstance(value, Var) and value not in bound:
                bound.add(value)
                dims.append(value)
                checks.append(DimCheck(i, field, axis, value, binds=True))
            elif isinstance(value, (Var, IntImm)):
                checks.append(DimCheck(i, field, axis, value))
            else:
                deferred.append(DimCheck(i, field, axis, value))
    for check in deferred:
        missing = [v for v in _vars_of(check.value) if v not in bound]
        if missing:
            raise KilnError(
                f"{label}: cannot determine {', '.join(v.name for v in missing)} from the "
                f"arguments: {args[check.arg].name}.{check.field}[{check.axis}] is an "
                "expression; declare the variable as a plain dimension or a scalar parameter"
            )
    return PackedAPI(symbol, args, tuple(compact), tuple(checks + deferred), tuple(dims))


def _vars_of(e: PrimExpr) -> list[Var]:
    found: list[Var] = []
    post_order_visit(e, lambda n: found.append(n) if isinstance(n, Var) else None)
    return found


def _is_zero(e: PrimExpr) -> bool:
    return isinstance(e, IntImm) and e.value == 0
