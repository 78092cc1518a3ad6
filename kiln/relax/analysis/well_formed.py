"""The well-formedness verifier of graph-level functions (and, dispatching per function, of mixed
modules).

Checks, each problem naming the function and the offending variable or call:
- every variable is defined once (a parameter or a binding) and used only where it is in scope
  (after its binding, in the same or an enclosed block; a branch's bindings end with it);
- a `DataflowVar` is bound only in a dataflow block and used only inside that block;
- every symbolic variable is defined before it is used (by a parameter's struct info, a
  `MatchCast`, or an enclosing function) and every expression has struct info;
- call arguments and a `SeqExpr`'s body are leaves (A-normal form), bindings in a dataflow block
  are pure, and a call of a module function names a function of the module;
- ``call_tir``: the callee is a PrimFunc taking inputs + outputs + ``tir_vars`` parameters, and
  its output buffers agree with the output struct info in rank and dtype (and constant dims).
`verify_module` runs the TIR verifier on the PrimFuncs and this one on relax functions.
"""

from __future__ import annotations

from typing import Any

from kiln.errors import VerifyError
from kiln.ir.function import BaseFunc, GlobalVar
from kiln.ir.module import IRModule
from kiln.relax.analysis.struct_info import tir_vars
from kiln.relax.binding import Binding, DataflowBlock, MatchCast
from kiln.relax.expr import (
    Call,
    DataflowVar,
    Expr,
    ExternFunc,
    Function,
    If,
    SeqExpr,
    ShapeExpr,
    Tuple,
    Var,
    is_leaf,
)
from kiln.relax.op.registry import find_op_def
from kiln.relax.struct_info import TensorStructInfo, TupleStructInfo
from kiln.relax.visitor import ExprVisitor
from kiln.tir.analysis import verify_well_formed
from kiln.tir.expr import IntImm
from kiln.tir.function import PrimFunc


class _Checker(ExprVisitor):
    def __init__(self, name: str, mod: IRModule | None) -> None:
        super().__init__()
        self.name, self.mod = name, mod
        self.errors: list[str] = []
        self.scopes: list[set[int]] = [set()]
        self.sym: list[set[int]] = [set()]
        self.ever: set[int] = set()
        self.block: DataflowBlock | None = None
        self.block_vars: set[int] = set()

    def err(self, msg: str) -> None:
        self.errors.append(f"{self.name}: {msg}")

    # -- scopes ----------------------------------------------------------------------------------
    def define(self, var: Var) -> None:
        key = id(var)
        if key in self.ever:
            self.err(f"variable {var.name_hint!r} is defined more than once")
        self.ever.add(key)
        self.scopes[-1].add(key)
        if isinstance(var, DataflowVar):
            if self.block is None:
                self.err(f"dataflow variable {var.name_hint!r} is bound outside a dataflow block")
            self.block_vars.add(key)
        if var.struct_info_ is None:
            self.err(f"variable {var.name_hint!r} has no struct info")
        else:
            self.use_sym(var.struct_info_, f"the struct info of {var.name_hint!r}")

    def use_sym(self, node: Any, where: str) -> None:
        for v in tir_vars(node):
            if not any(id(v) in s for s in self.sym):
                self.err(f"symbolic variable {v.name!r} is used in {where} before it is defined")

    def define_sym(self, node: Any) -> None:
        self.sym[-1].update(id(v) for v in tir_vars(node))

    # -- visits ----------------------------------------------------------------------------------
    def visit_Var(self, v: Var) -> None:
        if not any(id(v) in s for s in self.scopes):
            where = "outside its dataflow block" if isinstance(v, DataflowVar) else "out of scope"
            self.err(f"variable {v.name_hint!r} is used {where} (or before it is defined)")
        elif isinstance(v, DataflowVar) and id(v) not in self.block_vars:
            self.err(f"dataflow variable {v.name_hint!r} is used outside its dataflow block")

    def visit_GlobalVar(self, gv: GlobalVar) -> None:
        if self.mod is not None and gv.name_hint not in self.mod:
            self.err(f"call of {gv.name_hint!r}, which is not a function of the module")

    def visit_Function(self, f: Function) -> None:
        self.scopes.append(set())
        self.sym.append(set())
        saved = (self.block, self.block_vars)
        self.block, self.block_vars = None, set()
        for p in f.params:
            self.define_sym(p.struct_info_)
        for p in f.params:
            self.define(p)
        if f.ret_struct_info is not None:
            self.use_sym(f.ret_struct_info, "the return struct info")
        self.visit(f.body)
        self.block, self.block_vars = saved
        self.scopes.pop()
        self.sym.pop()

    def visit_SeqExpr(self, s: SeqExpr) -> None:
        self.scopes.append(set())
        self.sym.append(set())
        for block in s.blocks:
            self.visit_binding_block(block)
        if not is_leaf(s.body):
            self.err(f"the body of a sequence is not a leaf: {type(s.body).__name__}")
        self.visit(s.body)
        self.scopes.pop()
        self.sym.pop()

    def visit_binding_block(self, block: Any) -> None:
        if isinstance(block, DataflowBlock):
            self.block, self.block_vars = block, set()
        for b in block.bindings:
            self.visit_binding(b)
        self.block, self.block_vars = None, set()

    def visit_binding(self, b: Binding) -> None:
        value = b.value
        if self.block is not None and isinstance(value, (If, Function)):
            self.err(f"{type(value).__name__} bound to {b.var.name_hint!r} in a dataflow block")
        if self.block is not None and _impure(value):
            self.err(f"impure call bound to {b.var.name_hint!r} inside a dataflow block")
        self.visit(value)
        if isinstance(value, Expr) and value.struct_info_ is None:
            self.err(f"the value bound to {b.var.name_hint!r} has no struct info")
        if isinstance(b, MatchCast):
            self.define_sym(b.struct_info)
        self.define(b.var)

    def visit_Call(self, c: Call) -> None:
        super().visit_Call(c)
        for a in c.args:
            if not is_leaf(a):
                self.err(
                    f"an argument of a call of {_callee(c)} is not a leaf ({type(a).__name__})"
                )
        for s in c.sinfo_args:
            self.use_sym(s, f"the struct info arguments of a call of {_callee(c)}")
        for a in c.args:
            if isinstance(a, ShapeExpr):
                self.use_sym(a.values, f"a shape argument of {_callee(c)}")
        if getattr(c.op, "name", None) == "relax.call_tir":
            self.check_call_tir(c)

    def visit_PrimValue(self, p: Any) -> None:
        self.use_sym(p.value, "a prim value")

    def visit_ShapeExpr(self, s: ShapeExpr) -> None:
        self.use_sym(s.values, "a shape")

    # -- call_tir --------------------------------------------------------------------------------
    def check_call_tir(self, c: Call) -> None:
        gv = c.args[0] if c.args else None
        if not isinstance(gv, GlobalVar) or self.mod is None or gv.name_hint not in self.mod:
            return
        func = self.mod[gv.name_hint]
        if not isinstance(func, PrimFunc):
            self.err(f"call_tir of {gv.name_hint!r}, which is not a PrimFunc")
            return
        ins = c.args[1].fields if isinstance(c.args[1], Tuple) else ()
        outs = _outputs(c.sinfo_args[0]) if c.sinfo_args else []
        extra = len(c.args[2].values) if len(c.args) > 2 and isinstance(c.args[2], ShapeExpr) else 0
        want = len(ins) + len(outs) + extra
        if len(func.params) != want:
            self.err(
                f"call_tir of {gv.name_hint!r} passes {len(ins)} input(s), {len(outs)} "
                f"output(s) and {extra} tir var(s), but the PrimFunc takes {len(func.params)}"
            )
            return
        start = len(ins)
        for k, sinfo in enumerate(outs):
            buf = func.buffer_map.get(func.params[start + k])
            if buf is not None:
                self.check_buffer(gv.name_hint, k, buf, sinfo)

    def check_buffer(self, name: str, k: int, buf: Any, sinfo: TensorStructInfo) -> None:
        dims = sinfo.dims
        what = f"call_tir of {name!r}: output {k}"
        if not sinfo.dtype.is_void and buf.dtype != sinfo.dtype:
            self.err(f"{what} has dtype {sinfo.dtype} but the PrimFunc writes {buf.dtype}")
        if dims is None:
            return
        if len(dims) != len(buf.shape):
            self.err(f"{what} has rank {len(dims)} but the PrimFunc's buffer has {len(buf.shape)}")
            return
        for d, (a, b) in enumerate(zip(dims, buf.shape)):
            if isinstance(a, IntImm) and isinstance(b, IntImm) and a.value != b.value:
                self.err(
                    f"{what} has extent {a.value} on axis {d}, the PrimFunc's buffer {b.value}"
                )


def _outputs(sinfo: Any) -> list[Any]:
    if isinstance(sinfo, TupleStructInfo):
        return [f for f in sinfo.fields if isinstance(f, TensorStructInfo)]
    return [sinfo] if isinstance(sinfo, TensorStructInfo) else []


def _callee(c: Call) -> str:
    op = c.op
    return getattr(op, "name", None) or getattr(op, "name_hint", None) or type(op).__name__


def _impure(value: Any) -> bool:
    if not isinstance(value, Call):
        return False
    if isinstance(value.op, ExternFunc):
        return True
    rec = find_op_def(value.op)
    return rec is not None and not rec.pure


def function_errors(func: Function, name: str, mod: IRModule | None = None) -> list[str]:
    """The problems of one relax function (empty when it is well formed)."""
    checker = _Checker(name, mod)
    checker.visit(func)
    return checker.errors


def well_formed_errors(obj: BaseFunc | IRModule) -> list[str]:
    """The problems of a relax function, or of the relax functions of a module."""
    if isinstance(obj, IRModule):
        out: list[str] = []
        for gv, f in obj.items():
            if isinstance(f, Function):
                out.extend(function_errors(f, gv.name_hint, obj))
        return out
    if isinstance(obj, Function):
        return function_errors(obj, obj.global_symbol or "<function>")
    return []


def well_formed(obj: BaseFunc | IRModule) -> bool:
    """TVM's ``relax.analysis.well_formed``: True when ``obj`` has no problem."""
    return not well_formed_errors(obj)


def verify_module(mod: IRModule) -> None:
    """Verify every function of a (mixed) module; raise `VerifyError` listing the problems. The
    verifier to give ``PassContext.for_debug_level`` for graph-level pipelines."""

    errors = verify_well_formed(mod, raise_error=False) + well_formed_errors(mod)
    if errors:
        raise VerifyError("IR is not well formed:\n  " + "\n  ".join(errors))
