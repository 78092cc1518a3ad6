"""`ExprMutator` (and `ExprVisitor`, from `kiln.relax.visitor`): traversals of graph-level
expressions that know about bindings and scopes.

Both dispatch on the class name along the MRO (``visit_Call``, ``visit_Var``...) through the
bases of `kiln.ir.visitor`, and never walk into struct info or `tir` expressions (a shape's dims
are data here). `ExprVisitor` reports variable definitions through `visit_var_def` and uses
through ``visit_Var``. `ExprMutator` rebuilds through a `BlockBuilder` (``self.builder``), so
what it returns is normalized; it preserves identity (a binding whose value comes back unchanged
is re-emitted as is) and re-binds a variable only when its value's struct info changes. Uses of
a variable are replaced through ``var_remap``.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from kiln.ir.function import GlobalVar
from kiln.ir.module import IRModule
from kiln.ir.structural import structural_equal
from kiln.ir.visitor import Mutator
from kiln.relax.binding import Binding, BindingBlock, DataflowBlock, MatchCast, VarBinding
from kiln.relax.block_builder import BlockBuilder
from kiln.relax.expr import (
    Call,
    Expr,
    Function,
    If,
    SeqExpr,
    Tuple,
    TupleGetItem,
    Var,
)
from kiln.relax.visitor import LEAVES, ExprVisitor


class ExprMutator(Mutator):
    """Rewriting traversal of relax functions through a `BlockBuilder` (module docstring)."""

    def __init__(self, mod: IRModule | None = None) -> None:
        super().__init__()
        self.builder = BlockBuilder(mod)
        self.var_remap: dict[int, Expr] = {}

    # -- leaves ----------------------------------------------------------------------------------
    def visit_Var(self, v: Var) -> Expr:
        return self.var_remap.get(id(v), v)

    def visit_leaf(self, e: Any) -> Any:
        return e

    def visit_GlobalVar(self, gv: GlobalVar) -> Any:
        return gv

    def visit_Op(self, op: Any) -> Any:
        return op

    # -- compound --------------------------------------------------------------------------------
    def visit_Tuple(self, t: Tuple) -> Expr:
        fields = tuple(self.visit(f) for f in t.fields)
        if all(a is b for a, b in zip(fields, t.fields)):
            return t
        return Tuple(fields, None, t.span)

    def visit_TupleGetItem(self, t: TupleGetItem) -> Expr:
        tup = self.visit(t.tuple_value)
        return t if tup is t.tuple_value else TupleGetItem(tup, t.index, None, t.span)

    def visit_Call(self, c: Call) -> Expr:
        op = self.visit(c.op) if isinstance(c.op, Expr) else c.op
        args = tuple(self.visit(a) for a in c.args)
        if op is c.op and all(a is b for a, b in zip(args, c.args)):
            return c
        return replace(c, op=op, args=args, struct_info_=None)

    def visit_If(self, e: If) -> Expr:
        cond = self.visit(e.cond)
        then = self.visit_with_new_scope(e.true_branch)
        other = self.visit_with_new_scope(e.false_branch)
        if cond is e.cond and then is e.true_branch and other is e.false_branch:
            return e
        return If(cond, then, other, None, e.span)

    def visit_with_new_scope(self, body: Expr, params: Any = ()) -> Expr:
        """Visit ``body`` in a scope of its own (a branch or a function body)."""
        seq = body if isinstance(body, SeqExpr) else SeqExpr((), body, None, body.span)
        self.builder.begin_scope(params)
        try:
            out = self._seq(seq)
        finally:
            self.builder.end_scope()
        return body if out is seq else out

    def visit_SeqExpr(self, s: SeqExpr) -> Expr:
        return self.visit_with_new_scope(s)

    def _seq(self, s: SeqExpr) -> SeqExpr:
        changed = False
        blocks: list[BindingBlock] = []
        for block in s.blocks:
            new = self.visit_binding_block(block)
            changed |= new is not block
            if new is not None:
                blocks.append(new)
        body = self.builder.normalize_arg(self.visit(s.body))
        tail = self.builder.end_block()
        if tail is not None:
            blocks.append(tail)
            changed = True
        if not changed and body is s.body:
            return s
        return self.builder.normalize(SeqExpr(tuple(blocks), body, None, s.span))

    def visit_binding_block(self, block: BindingBlock) -> BindingBlock | None:
        """The rewritten block (the same object when nothing changed; None when emptied)."""
        if isinstance(block, DataflowBlock):
            self.builder.begin_dataflow_block()
        else:
            self.builder.begin_binding_block()
        for b in block.bindings:
            self.visit_binding(b)
        new = self.builder.end_block()
        if new is not None and len(new.bindings) == len(block.bindings):
            if all(x is y for x, y in zip(new.bindings, block.bindings)):
                return block
        return new

    def visit_binding(self, b: Binding) -> None:
        if isinstance(b, MatchCast):
            self.visit_match_cast(b)
        else:
            self.visit_var_binding(b)  # type: ignore[arg-type]

    def visit_var_binding(self, b: VarBinding) -> None:
        self.reemit(b, self.visit(b.value))

    def visit_match_cast(self, b: MatchCast) -> None:
        value = self.visit(b.value)
        if value is b.value:
            self.builder.emit_normalized(b)
            return
        value = self.builder.normalize(value)
        self.builder.emit_normalized(MatchCast(b.var, value, b.struct_info, b.span))

    def reemit(self, b: VarBinding, value: Any) -> None:
        """Emit ``var = value``, keeping the old variable unless its struct info changes."""
        if value is b.value:
            self.builder.emit_normalized(b)
            return
        value = self.builder.normalize(value)
        var = b.var
        if not structural_equal(var.struct_info_, value.struct_info_, map_free_vars=True):
            var = replace(var, struct_info_=value.struct_info_)
            self.var_remap[id(b.var)] = var
        self.builder.emit_normalized(VarBinding(var, value, b.span))

    def visit_Function(self, f: Function) -> Expr:
        body = self.visit_with_new_scope(f.body, f.params)
        if body is f.body:
            return f
        func = Function(f.params, body, f.ret_struct_info, f.is_pure, f.attrs, None, f.span)
        return self.builder.normalize(func)


for _name in LEAVES:
    setattr(ExprMutator, f"visit_{_name}", lambda self, e: self.visit_leaf(e))


__all__ = ["ExprMutator", "ExprVisitor"]
