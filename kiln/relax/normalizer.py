"""Normalization: struct info for every expression and A-normal form (the base of
`BlockBuilder`).

`Normalizer.normalize(expr)` returns an equal expression in which every node has struct info (a
call's comes from its operator record, a call of a function from its signature with symbolic
parameters bound to the arguments) and every call argument is a leaf (a variable, constant,
shape, prim value, string, global, or a tuple of leaves): nested calls are emitted as bindings
of the current block. `SeqExpr` bodies become leaves the same way; `If` branches and function
bodies are normalized in scopes of their own. Expressions that are already normal come back as
the same object. Errors (a shape mismatch, a wrong argument count) are raised here, naming the
operator and operands: this is what "raised at emit" means.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from kiln.errors import IRError, IRValueError
from kiln.ir.deep import DeepWalker, stack_safe
from kiln.ir.function import BaseFunc, GlobalVar
from kiln.ir.op import Op
from kiln.relax.analysis.struct_info import (
    Fit,
    check_fits,
    erase_to_well_defined,
    struct_info_lca,
    substitute_sinfo,
    tir_vars,
)
from kiln.relax.binding import Binding, BindingBlock, DataflowBlock, MatchCast, VarBinding
from kiln.relax.expr import (
    Call,
    DataflowVar,
    Expr,
    ExternFunc,
    Function,
    If,
    SeqExpr,
    Tuple,
    TupleGetItem,
    Var,
    is_leaf,
    op_name,
)
from kiln.relax.op.common import describe
from kiln.relax.op.registry import find_op_def
from kiln.relax.struct_info import (
    UNIT,
    FuncStructInfo,
    ObjectStructInfo,
    PrimStructInfo,
    StructInfo,
    TensorStructInfo,
    TupleStructInfo,
)
from kiln.tir.function import PrimFunc
from kiln.tir.type import PrimType


def _set_sinfo(e: Expr, sinfo: StructInfo) -> None:
    # NOTE: see kiln.relax.expr: a derived struct info is filled in place once.
    object.__setattr__(e, "struct_info_", sinfo)


@dataclass
class _Block:
    dataflow: bool
    bindings: list[Binding] = field(default_factory=list)


@dataclass
class _Scope:
    """Blocks being built at one nesting level, and the symbolic variables defined there."""

    blocks: list[BindingBlock] = field(default_factory=list)
    current: _Block | None = None
    sym: set[int] = field(default_factory=set)


def func_struct_info(func: BaseFunc) -> FuncStructInfo:
    """The struct info of a module function (a PrimFunc called directly is opaque)."""
    if isinstance(func, Function):
        if isinstance(func.struct_info_, FuncStructInfo):
            return func.struct_info_
        params = tuple(p.struct_info for p in func.params)
        ret = func.ret_struct_info or ObjectStructInfo()
        return FuncStructInfo(params, ret, func.is_pure)
    if isinstance(func, PrimFunc):
        rt = func.ret_type
        ret = (
            PrimStructInfo(rt.dtype) if isinstance(rt, PrimType) and not rt.dtype.is_void else UNIT
        )
        return FuncStructInfo.opaque_func(ret, purity=True)
    return FuncStructInfo.opaque_func()


class Normalizer(DeepWalker):
    """Scopes, blocks and the normalization of expressions (see the module docstring)."""

    def __init__(self) -> None:
        self._scopes: list[_Scope] = [_Scope()]
        self._globals: dict[str, StructInfo] = {}
        self._bindings: dict[int, Expr] = {}

    # -- hooks the BlockBuilder provides ---------------------------------------------------------
    def lookup_function(self, gv: GlobalVar) -> BaseFunc | None:
        return None

    # -- scopes and blocks -----------------------------------------------------------------------
    def begin_scope(self, params: Any = ()) -> None:
        """Start a nested scope; the symbolic variables of ``params`` are defined in it."""
        scope = _Scope()
        for p in params or ():
            scope.sym.update(id(v) for v in tir_vars(p.struct_info_))
        self._scopes.append(scope)

    def end_scope(self) -> list[BindingBlock]:
        """End the innermost scope and return its (non-empty) blocks."""
        self._close_block()
        return self._scopes.pop().blocks

    def begin_dataflow_block(self) -> None:
        self._close_block()
        self._scopes[-1].current = _Block(True)

    def begin_binding_block(self) -> None:
        self._close_block()
        self._scopes[-1].current = _Block(False)

    def end_block(self) -> BindingBlock | None:
        """Close the current block; returns it (None when it was empty or absent)."""
        scope = self._scopes[-1]
        block = scope.current
        scope.current = None
        if block is None or not block.bindings:
            return None
        cls = DataflowBlock if block.dataflow else BindingBlock
        return cls(tuple(block.bindings))

    def _close_block(self) -> None:
        block = self.end_block()
        if block is not None:
            self._scopes[-1].blocks.append(block)

    def current_block_is_dataflow(self) -> bool:
        cur = self._scopes[-1].current
        return cur is not None and cur.dataflow

    def _block(self) -> _Block:
        scope = self._scopes[-1]
        if scope.current is None:
            scope.current = _Block(False)
        return scope.current

    def define_symbolic(self, sinfo: StructInfo) -> None:
        """Mark the symbolic variables of ``sinfo`` as defined in the current scope."""
        self._scopes[-1].sym.update(id(v) for v in tir_vars(sinfo))

    def is_defined_symbolic(self, v: Any) -> bool:
        return any(id(v) in s.sym for s in self._scopes)

    def emit_normalized(self, binding: Binding) -> None:
        """Append an already normalized binding to the current block."""
        self._block().bindings.append(binding)
        if isinstance(binding, MatchCast):
            self.define_symbolic(binding.struct_info)
        self._bindings[id(binding.var)] = binding.value

    def lookup_binding(self, var: Var) -> Expr | None:
        """The value bound to ``var`` in this builder, if any."""
        return self._bindings.get(id(var))

    def _emit_value(self, value: Expr, hint: str) -> Var:
        dataflow = self.current_block_is_dataflow()
        var = (DataflowVar if dataflow else Var)(hint, value.struct_info_, value.span)
        self.emit_normalized(VarBinding(var, value, value.span))
        return var

    # -- normalization ---------------------------------------------------------------------------
    @stack_safe
    def normalize(self, expr: Any) -> Any:
        """``expr`` with struct info everywhere and leaf arguments (see the module docstring);
        nested thousands of calls deep too (`kiln.ir.deep`)."""
        if isinstance(expr, (GlobalVar, Op)):
            return expr
        method = getattr(self, f"_n_{type(expr).__name__}", None)
        if method is None:
            if isinstance(expr, Var):
                return self._n_Var(expr)
            if isinstance(expr, Expr):
                if expr.struct_info_ is None:
                    raise IRError(f"cannot normalize {type(expr).__name__}: no struct info")
                return expr
            raise IRError(f"expected a relax expression, got {expr!r}")
        return method(expr)

    def normalize_arg(self, expr: Any) -> Any:
        """``expr`` normalized and, unless it is a leaf, bound to a new variable."""
        e = self.normalize(expr)
        if is_leaf(e) or self._scopes[-1].current is None and len(self._scopes) == 1:
            return e
        return self._emit_value(e, "lv" if self.current_block_is_dataflow() else "gv")

    def _n_Var(self, v: Var) -> Var:
        if v.struct_info_ is None:
            raise IRError(f"variable {v.name_hint!r} has no struct info (is it defined?)")
        return v

    _n_DataflowVar = _n_Var

    def _n_Tuple(self, t: Tuple) -> Tuple:
        fields = tuple(self.normalize_arg(f) for f in t.fields)
        if all(a is b for a, b in zip(fields, t.fields)) and t.struct_info_ is not None:
            return t
        return Tuple(fields, None, t.span)

    def _n_TupleGetItem(self, t: TupleGetItem) -> TupleGetItem:
        tup = self.normalize_arg(t.tuple_value)
        out = t if tup is t.tuple_value else TupleGetItem(tup, t.index, None, t.span)
        if out.struct_info_ is None:
            sinfo = tup.struct_info_
            if isinstance(sinfo, TupleStructInfo):
                if not 0 <= t.index < len(sinfo.fields):
                    raise IRValueError(
                        f"index {t.index} is out of range for {describe(tup)} "
                        f"with {len(sinfo.fields)} fields"
                    )
                _set_sinfo(out, sinfo.fields[t.index])
            elif isinstance(sinfo, ObjectStructInfo):
                _set_sinfo(out, ObjectStructInfo())
            else:
                raise IRError(f"cannot index {describe(tup)}: it is not a tuple")
        return out

    def _n_Call(self, call: Call) -> Call:
        op = call.op
        if isinstance(op, Function):
            op = self.normalize_arg(op)
        args = tuple(self.normalize_arg(a) for a in call.args)
        same = op is call.op and all(a is b for a, b in zip(args, call.args))
        if same and call.struct_info_ is not None:
            return call
        out = call if same else replace(call, op=op, args=args, struct_info_=None)
        _set_sinfo(out, self.infer_call(out))
        return out

    def _n_If(self, e: If) -> If:
        cond = self.normalize_arg(e.cond)
        csinfo = cond.struct_info_
        ok_tensor = isinstance(csinfo, TensorStructInfo) and csinfo.ndim in (0, -1)
        ok_tensor = ok_tensor and (csinfo.dtype.is_void or csinfo.dtype.is_bool)
        if not (ok_tensor or isinstance(csinfo, (PrimStructInfo, ObjectStructInfo))):
            raise IRError(f"an if condition must be a bool scalar tensor, got {describe(cond)}")
        then, other = self._branch(e.true_branch), self._branch(e.false_branch)
        same = cond is e.cond and then is e.true_branch and other is e.false_branch
        out = e if same else If(cond, then, other, None, e.span)
        if out.struct_info_ is None:
            defined = self.is_defined_symbolic
            a = erase_to_well_defined(then.struct_info, defined)
            b = erase_to_well_defined(other.struct_info, defined)
            _set_sinfo(out, struct_info_lca(a, b))
        return out

    def _branch(self, body: Expr) -> SeqExpr:
        seq = body if isinstance(body, SeqExpr) else SeqExpr((), body, None, body.span)
        self.begin_scope()
        try:
            return self._n_SeqExpr(seq, new_scope=False)
        finally:
            self._scopes.pop()

    def _n_SeqExpr(self, seq: SeqExpr, new_scope: bool = True) -> SeqExpr:
        if new_scope:
            self.begin_scope()
        changed = False
        try:
            for block in seq.blocks:
                if isinstance(block, DataflowBlock):
                    self.begin_dataflow_block()
                else:
                    self.begin_binding_block()
                for b in block.bindings:
                    changed |= self._renormalize(b)
                self._close_block()
            body = self.normalize_arg(seq.body)
            self._close_block()
            blocks = list(self._scopes[-1].blocks)
        finally:
            if new_scope:
                self._scopes.pop()
        same = not changed and body is seq.body and len(blocks) == len(seq.blocks)
        out = seq if same else SeqExpr(tuple(blocks), body, None, seq.span)
        if out.struct_info_ is None:
            inner = {
                id(v)
                for blk in out.blocks
                for x in blk.bindings
                if isinstance(x, MatchCast)
                for v in tir_vars(x.struct_info)
            }
            _set_sinfo(out, erase_to_well_defined(body.struct_info, lambda v: id(v) not in inner))
        return out

    def _renormalize(self, b: Binding) -> bool:
        """Normalize one binding into the current block; True when it changed."""
        if isinstance(b.value, Function):
            value = self._n_Function(b.value)
        else:
            value = self.normalize(b.value)
        var = b.var
        if var.struct_info_ is None:
            sinfo = value.struct_info_ if not isinstance(b, MatchCast) else b.struct_info
            var = replace(var, struct_info_=sinfo)
        if value is b.value and var is b.var:
            self.emit_normalized(b)
            return False
        if isinstance(b, MatchCast):
            self.emit_normalized(MatchCast(var, value, b.struct_info, b.span))
        else:
            self.emit_normalized(VarBinding(var, value, b.span))
        return True

    def _n_Function(self, f: Function) -> Function:
        self.begin_scope(f.params)
        try:
            seq = f.body if isinstance(f.body, SeqExpr) else SeqExpr((), f.body, None, f.body.span)
            body = self._n_SeqExpr(seq, new_scope=False)
        finally:
            self._scopes.pop()
        ret = f.ret_struct_info
        if ret is not None:
            if check_fits(ret, body.struct_info) is Fit.FAIL:
                raise IRValueError(
                    f"function returns {body.struct_info}, which does not fit its return "
                    f"annotation {ret}"
                )
        else:
            own = {id(v) for p in f.params for v in tir_vars(p.struct_info_)}
            ret = erase_to_well_defined(
                body.struct_info, lambda v: id(v) in own or self.is_defined_symbolic(v)
            )
        if body is f.body and ret is f.ret_struct_info and f.struct_info_ is not None:
            return f
        return Function(f.params, body, ret, f.is_pure, f.attrs, None, f.span)

    # -- calls -----------------------------------------------------------------------------------
    def infer_call(self, call: Call) -> StructInfo:
        """The struct info of a call whose arguments are normalized."""
        op = call.op
        if isinstance(op, Op):
            rec = find_op_def(op)
            if rec is None or rec.infer is None:
                raise IRError(f"{op.name} is not a graph-level operator")
            return rec.infer(call, self)
        if isinstance(op, ExternFunc):
            return call.sinfo_args[0] if call.sinfo_args else ObjectStructInfo()
        if isinstance(op, GlobalVar):
            fsinfo = self.global_struct_info(op)
        else:
            fsinfo = op.struct_info_
        if not isinstance(fsinfo, FuncStructInfo):
            raise IRError(f"{op_name(op)} is not a function (struct info {fsinfo})")
        return self.derive_call(call, fsinfo)

    def global_struct_info(self, gv: GlobalVar) -> StructInfo:
        """The struct info of a module function by name."""
        func = self.lookup_function(gv)
        if func is not None:
            return func_struct_info(func)
        sinfo = self._globals.get(gv.name_hint)
        if sinfo is None:
            raise IRError(f"unknown function {gv.name_hint!r} (not in the module)")
        return sinfo

    def declare_global(self, gv: GlobalVar | str, sinfo: StructInfo) -> None:
        """Make calls of ``gv`` inferable before its function is added (script forward refs)."""
        self._globals[gv if isinstance(gv, str) else gv.name_hint] = sinfo

    def derive_call(self, call: Call, fsinfo: FuncStructInfo) -> StructInfo:
        """The result of calling a function of struct info ``fsinfo`` with ``call.args``."""
        name = op_name(call.op)
        if fsinfo.params is None:
            return call.sinfo_args[0] if call.sinfo_args else fsinfo.ret
        if len(fsinfo.params) != len(call.args):
            raise IRError(f"{name} takes {len(fsinfo.params)} argument(s), got {len(call.args)}")
        binds: dict[Any, Any] = {v: None for v in tir_vars(fsinfo.params)}
        for i, (p, a) in enumerate(zip(fsinfo.params, call.args)):
            if check_fits(p, a.struct_info_, binds) is Fit.FAIL:
                raise IRValueError(
                    f"{name}: argument {i} {describe(a)} does not fit the parameter type {p}"
                )
        known = {v: e for v, e in binds.items() if e is not None}
        ret = substitute_sinfo(fsinfo.ret, known)
        gone = {id(v) for v, e in binds.items() if e is None}
        return erase_to_well_defined(ret, lambda v: id(v) not in gone)
