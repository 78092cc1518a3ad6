"""Which relax variables and module functions an expression defines, uses or leaves free."""

from __future__ import annotations

from typing import Any

from kiln.ir.function import GlobalVar
from kiln.relax.expr import Call, ExternFunc, Function, Var
from kiln.relax.op.registry import find_op_def
from kiln.relax.visitor import ExprVisitor


class _Uses(ExprVisitor):
    def __init__(self) -> None:
        super().__init__()
        self.uses: dict[int, int] = {}
        self.used: dict[int, Var] = {}
        self.bound: dict[int, Var] = {}
        self.globals: dict[str, GlobalVar] = {}

    def visit_Var(self, v: Var) -> None:
        self.uses[id(v)] = self.uses.get(id(v), 0) + 1
        self.used.setdefault(id(v), v)

    def visit_var_def(self, var: Var) -> None:
        self.bound.setdefault(id(var), var)

    def visit_GlobalVar(self, gv: GlobalVar) -> None:
        self.globals.setdefault(gv.name_hint, gv)

    def visit_Call(self, c: Call) -> None:
        super().visit_Call(c)
        # NOTE: `call_lowered` names the PrimFuncs and shape function it needs in its attributes.
        stack = list(c.attrs.values())
        while stack:
            v = stack.pop()
            if isinstance(v, GlobalVar):
                self.visit_GlobalVar(v)
            elif isinstance(v, (tuple, list)):
                stack.extend(v)


def _uses(expr: Any) -> _Uses:
    u = _Uses()
    u.visit(expr)
    return u


def use_counts(expr: Any) -> dict[int, int]:
    """How many times each variable (by ``id``) is used in ``expr``."""
    return _uses(expr).uses


def free_vars(expr: Any) -> list[Var]:
    """Variables ``expr`` uses but does not define, by first use."""
    u = _uses(expr)
    return [v for k, v in u.used.items() if k not in u.bound]


def bound_vars(expr: Any) -> list[Var]:
    """Variables ``expr`` defines (parameters and bindings), in order."""
    return list(_uses(expr).bound.values())


def all_vars(expr: Any) -> list[Var]:
    """Every variable ``expr`` defines or uses."""
    u = _uses(expr)
    return list({**u.bound, **u.used}.values())


def all_global_vars(expr: Any) -> list[GlobalVar]:
    """The module functions ``expr`` refers to (calls, ``call_tir`` callees, GlobalVars in call
    attributes), by name."""
    return list(_uses(expr).globals.values())


class _Effects(ExprVisitor):
    def __init__(self, mod: Any) -> None:
        super().__init__()
        self.mod = mod
        self.impure = False

    def visit_Call(self, c: Call) -> None:
        if not self.impure and not call_is_pure(c, self.mod):
            self.impure = True
        super().visit_Call(c)

    def visit_Function(self, f: Function) -> None:
        return None  # defining a function has no effect; calling it is judged at the call


def call_is_pure(c: Call, mod: Any = None) -> bool:
    """Whether a call has no side effects: pure operators and pure functions; packed functions
    and PrimFuncs called directly (they write their arguments) are not."""
    op = c.op
    if isinstance(op, ExternFunc):
        return False
    rec = find_op_def(op)
    if rec is not None:
        return rec.pure
    if isinstance(op, GlobalVar):
        func = mod[op.name_hint] if mod is not None and op.name_hint in mod else None
        return isinstance(func, Function) and func.is_pure
    sinfo = getattr(op, "struct_info_", None)
    return bool(getattr(sinfo, "purity", False))


def has_side_effects(expr: Any, mod: Any = None) -> bool:
    """Whether evaluating ``expr`` may have side effects (an impure call in it, branches
    included)."""
    if isinstance(expr, (Var, Function)):
        return False
    e = _Effects(mod)
    e.visit(expr)
    return e.impure


__all__ = [
    "all_global_vars",
    "all_vars",
    "bound_vars",
    "call_is_pure",
    "free_vars",
    "has_side_effects",
    "use_counts",
]
