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
  row-major strides where the buffer declares none; the element count of a tensor whose declared
  shape does not keep it within the type its flat indices are computed in
  (`kiln.tir.analysis.buffer_index`: a 1-D ``(n * m,)`` buffer indexed in int32); then every
  shape dimension (constant: equal; first sight of a variable: bind it; later sights and
  expressions: equal to the bound value). The plan also lists the arguments the function may
  write (`kiln.tir.analysis.writes`: stores, escapes, and writes of module functions it passes
  them to), which the runtime refuses to bind to read-only arrays; and, for a ``tir.noalias``
  function (C ``restrict`` pointers), every pair of tensor arguments of which at least one is
  written, whose byte ranges the entry checks do not overlap (two inputs may share memory:
  reading through two restrict pointers to the same bytes is well defined).
- a private function whose buffers have symbolic shapes no parameter provides is an error (its
  callers could not pass the dimensions).

The code generator (`kiln.codegen.c_host`) turns a `PackedAPI` into C; this pass decides
what is checked, and in which order.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import ClassVar

from kiln.errors import PassError
from kiln.ir.function import GlobalVar
from kiln.ir.module import IRModule
from kiln.ir.transform import PassContext
from kiln.tir.analysis.buffer_index import flat_index_dtype, needs_count_check
from kiln.tir.analysis.vars import used_vars
from kiln.tir.analysis.writes import written_params
from kiln.tir.attrs import CALLING_CONV, KERNEL_LAUNCH, NOALIAS, PACKED_API
from kiln.tir.buffer import Buffer
from kiln.tir.expr import IntImm, PrimExpr, Var, is_const_int
from kiln.tir.function import EMPTY_MAP, PrimFunc, PrimFuncPass
from kiln.tir.packed_api import CountCheck, DimCheck, PackedAPI, PackedArg

PASS = "make-packed-api"


@dataclass(frozen=True)
class MakePackedAPI(PrimFuncPass):
    """Typed signatures for all functions and a checked entry plan for exposed ones."""

    name: ClassVar[str] = PASS

    def transform(self, gv: GlobalVar, func: PrimFunc, mod: IRModule, ctx: PassContext) -> PrimFunc:
        if func.get_attr(PACKED_API) is not None:
            return func
        if func.get_attr(CALLING_CONV) == KERNEL_LAUNCH:  # device kernels have no entry
            return func
        label = func.global_symbol or gv.name_hint
        args = _packed_args(func)
        if func.global_symbol is None:
            return _private(func, args, label)
        api = _plan(func.global_symbol, args, label)
        api = _with_writes(api, written_params(func, mod), bool(func.get_attr(NOALIAS)))
        new = replace(func, params=api.typed_params, buffer_map=EMPTY_MAP)
        return new.with_attr(PACKED_API, api)


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
            raise PassError(
                PASS,
                f"{label}: buffer {a.buffer.name!r} has symbolic dimension(s) "
                f"{', '.join(sorted(v.name for v in missing))} that no parameter provides; "
                "a private function's callers pass only data pointers, so add them as "
                "scalar parameters",
            )
    return replace(func, params=params, buffer_map=EMPTY_MAP)


def _free_vars(buf: Buffer, bound: set[Var]) -> list[Var]:
    return [v for v in used_vars(tuple(_fields(buf))) if v not in bound]


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
        if buf.elem_offset is not None and not is_const_int(buf.elem_offset, 0):
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
        missing = [v for v in used_vars(check.value) if v not in bound]
        if missing:
            raise PassError(
                PASS,
                f"{label}: cannot determine {', '.join(v.name for v in missing)} from the "
                f"arguments: {args[check.arg].name}.{check.field}[{check.axis}] is an "
                "expression; declare the variable as a plain dimension or a scalar parameter",
            )
    counts = tuple(
        CountCheck(i, flat_index_dtype(a.buffer))
        for i, a in enumerate(args)
        if a.buffer is not None and needs_count_check(a.buffer)
    )
    return PackedAPI(symbol, args, tuple(compact), tuple(checks + deferred), tuple(dims), counts)


def _with_writes(api: PackedAPI, written: tuple[bool, ...], noalias: bool) -> PackedAPI:
    """``api`` with its written arguments and, for a noalias function, the pairs to check."""
    writes = tuple(i for i, w in enumerate(written) if w)
    tensors = [i for i, a in enumerate(api.args) if a.buffer is not None]
    pairs: list[tuple[int, int]] = []
    if noalias:
        for k, i in enumerate(tensors):
            pairs += [(i, j) for j in tensors[k + 1 :] if i in writes or j in writes]
    return replace(api, writes=writes, overlaps=tuple(pairs))
