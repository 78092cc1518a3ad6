"""`ExprVisitor`: the read-only traversal of graph-level expressions that knows about bindings
and scopes (`ExprMutator`, which rebuilds through a `BlockBuilder`, is in `kiln.relax.expr_functor`,
a row above: the analyses use this one).

It dispatches on the class name along the MRO (``visit_Call``, ``visit_Var``...) through the
bases of `kiln.ir.visitor`, never walks into struct info or `tir` expressions (a shape's dims are
data here), and reports variable definitions through `visit_var_def` and uses through
``visit_Var``.
"""

from __future__ import annotations

from typing import Any

from kiln.ir.function import GlobalVar
from kiln.ir.visitor import Visitor
from kiln.relax.binding import Binding, BindingBlock
from kiln.relax.expr import Call, Function, If, SeqExpr, Tuple, TupleGetItem, Var

LEAVES = ("Constant", "ShapeExpr", "PrimValue", "StringImm", "DataTypeImm", "ExternFunc")


class ExprVisitor(Visitor):
    """Read-only traversal of relax expressions (see the module docstring)."""

    def visit_var_def(self, var: Var) -> None:
        """Called where ``var`` is defined (a parameter or a binding)."""

    def visit_Var(self, v: Var) -> None:
        """Called where a variable is used."""

    def visit_leaf(self, e: Any) -> None:
        """Constants, shapes, prim values, strings, dtypes, extern functions, globals, ops."""

    def visit_GlobalVar(self, gv: GlobalVar) -> None:
        self.visit_leaf(gv)

    def visit_Op(self, op: Any) -> None:
        self.visit_leaf(op)

    def visit_Tuple(self, t: Tuple) -> None:
        for f in t.fields:
            self.visit(f)

    def visit_TupleGetItem(self, t: TupleGetItem) -> None:
        self.visit(t.tuple_value)

    def visit_Call(self, c: Call) -> None:
        self.visit(c.op)
        for a in c.args:
            self.visit(a)

    def visit_If(self, e: If) -> None:
        self.visit(e.cond)
        self.visit(e.true_branch)
        self.visit(e.false_branch)

    def visit_SeqExpr(self, s: SeqExpr) -> None:
        for block in s.blocks:
            self.visit_binding_block(block)
        self.visit(s.body)

    def visit_binding_block(self, block: BindingBlock) -> None:
        for b in block.bindings:
            self.visit_binding(b)

    def visit_binding(self, b: Binding) -> None:
        self.visit(b.value)
        self.visit_var_def(b.var)

    def visit_Function(self, f: Function) -> None:
        for p in f.params:
            self.visit_var_def(p)
        self.visit(f.body)


for _name in LEAVES:
    setattr(ExprVisitor, f"visit_{_name}", lambda self, e: self.visit_leaf(e))


__all__ = ["LEAVES", "ExprVisitor"]
