"""Which buffer parameters a function may write: the *outputs* of its tvm-ffi entry.

A parameter is written when the function, or a function of its module that it passes the
pointer to, may store through the parameter's data pointer:

- a `BufferStore` into any buffer whose ``data`` is that pointer (views declared over it
  included);
- ``tvm_access_ptr`` of it with the write bit of ``rw_mask`` set (or a mask that is not a
  constant);
- the pointer passed to a function of the module (a direct call, a kernel launch, or a
  ``call_extern`` of an in-module symbol) whose matching parameter is written, followed
  recursively;
- the pointer *escaping* where the analysis cannot follow it: any other call argument, an
  ``address_of`` of an element, a let binding, pointer arithmetic. Escaped pointers count as
  written.

The answer over-approximates: a parameter reported unwritten is never written. A `BufferLoad`,
a buffer declaration and an attribute naming the pointer are not writes.
"""

from __future__ import annotations

from typing import Any

from kiln.ir.function import GlobalVar
from kiln.ir.module import IRModule
from kiln.ir.op import Op
from kiln.ir.visitor import Visitor
from kiln.tir.buffer import Buffer
from kiln.tir.expr import BufferLoad, Call, PrimExpr, StringImm, Var, as_const_int
from kiln.tir.function import PrimFunc
from kiln.tir.stmt import AttrStmt, BufferStore

WRITE_BIT = 2
"""The write bit of ``tvm_access_ptr``'s ``rw_mask``."""
_BY_NAME = ("tir.launch_kernel", "tir.call_extern")
"""Builtins whose first argument names a function that may be in the module."""


def written_params(func: PrimFunc, mod: IRModule | None = None) -> tuple[bool, ...]:
    """For each parameter of ``func``: whether the function may write through it (see module
    docstring). Scalar parameters are never written; ``mod`` resolves calls of its functions
    (without it, every pointer passed to a call counts as written)."""
    return _Analysis(mod).params(func)


def _param_pointer(func: PrimFunc, p: Var) -> Var:
    buf = func.buffer_map.get(p)
    return buf.data if buf is not None else p


class _Analysis:
    """Per-function results, memoized; a function met again while analysed writes everything."""

    def __init__(self, mod: IRModule | None) -> None:
        self.mod = mod
        self.memo: dict[int, tuple[bool, ...]] = {}
        self.active: set[int] = set()

    def params(self, func: PrimFunc) -> tuple[bool, ...]:
        key = id(func)
        if key in self.memo:
            return self.memo[key]
        if key in self.active:  # recursion: assume the worst
            return tuple(p.dtype.is_handle for p in func.params)
        self.active.add(key)
        try:
            finder = _Writes(self)
            finder.visit(func.body)
        finally:
            self.active.discard(key)
        result = tuple(_param_pointer(func, p) in finder.written for p in func.params)
        self.memo[key] = result
        return result

    def callee(self, call: Call) -> tuple[PrimFunc, tuple[PrimExpr, ...]] | None:
        """The module function ``call`` runs and the arguments it receives, if known."""
        if self.mod is None:
            return None
        op = call.op
        if isinstance(op, GlobalVar):
            func = self.mod[op] if op in self.mod else None
            return (func, call.args) if isinstance(func, PrimFunc) else None
        if isinstance(op, Op) and op.name in _BY_NAME and call.args:
            name = call.args[0]
            if not isinstance(name, StringImm):
                return None
            for _, func in self.mod.items():
                if isinstance(func, PrimFunc) and func.global_symbol == name.value:
                    return func, call.args[1:]
        return None


class _Writes(Visitor):
    """Collects the pointers a body may write through (stores and escapes)."""

    def __init__(self, analysis: _Analysis) -> None:
        super().__init__()
        self.analysis = analysis
        self.written: set[Var] = set()

    def visit_Buffer(self, b: Buffer) -> None:
        """A buffer declaration is no access (its accesses are loads and stores)."""

    def visit_BufferStore(self, s: BufferStore) -> None:
        self.written.add(s.buffer.data)
        self.generic_visit(s)

    def visit_AttrStmt(self, s: AttrStmt) -> None:
        self.visit(s.value)
        self.visit(s.body)

    def visit_Var(self, v: Var) -> None:
        if v.dtype.is_handle:  # a pointer used as a value: it escapes
            self.written.add(v)

    def visit_Call(self, e: Call) -> None:
        name = e.op.name if isinstance(e.op, Op) else ""
        if name == "tir.address_of" and e.args and isinstance(e.args[0], BufferLoad):
            self.written.add(e.args[0].buffer.data)
            self.generic_visit(e.args[0])
            return
        if name == "tir.tvm_access_ptr" and len(e.args) == 5:
            self._access_ptr(e)
            return
        found = self.analysis.callee(e)
        if found is None:
            self.generic_visit(e)
            return
        func, args = found
        writes = self.analysis.params(func)
        for k, arg in enumerate(args):
            if k < len(writes) and _pointer(arg) is not None:
                if writes[k]:
                    self.written.add(_pointer(arg))  # type: ignore[arg-type]
                if isinstance(arg, Call):  # address_of(load): its indices are read
                    self.generic_visit(arg.args[0])
            else:
                self.visit(arg)

    def _access_ptr(self, e: Call) -> None:
        _, data, offset, extent, mask = e.args
        bits = as_const_int(mask)
        if isinstance(data, Var) and (bits is None or bits & WRITE_BIT):
            self.written.add(data)
        elif not isinstance(data, Var):
            self.visit(data)
        for part in (offset, extent, mask):
            self.visit(part)


def _pointer(arg: Any) -> Var | None:
    """The buffer pointer ``arg`` passes: a handle var or ``address_of(buf[...])``."""
    if isinstance(arg, Var) and arg.dtype.is_handle:
        return arg
    if (
        isinstance(arg, Call)
        and isinstance(arg.op, Op)
        and arg.op.name == "tir.address_of"
        and arg.args
        and isinstance(arg.args[0], BufferLoad)
    ):
        return arg.args[0].buffer.data
    return None
