"""The rewrite driver: rules applied to every binding of a function, to a fixpoint.

Each binding block is walked in order with the values of its bindings at hand (``defs``: what
patterns look through). At a binding, the first rule whose pattern matches and whose function
returns an expression replaces the value; the replacement is normalized, its nested calls
simplified and bound first (bottom-up), and the rules run again on it, until none applies
(`MAX_STEPS` at most). Later bindings see the replaced values, so a chain collapses in one walk
and the walk ends at a fixpoint of rules that look backwards, as all patterns do.

After a walk that changed something: bindings left unused go (`remove_unused_bindings`), and a
block output that a rule replaced by a dataflow variable read nowhere else takes over that
variable's binding (``gv = lv`` would otherwise stay).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from kiln.errors import IRError, IRValueError
from kiln.ir.module import IRModule
from kiln.ir.op import Op
from kiln.ir.structural import structural_equal
from kiln.relax.analysis.free_vars import use_counts
from kiln.relax.analysis.struct_info import Fit, check_fits
from kiln.relax.binding import Binding, BindingBlock, DataflowBlock, VarBinding
from kiln.relax.expr import (
    Call,
    DataflowVar,
    Expr,
    Function,
    SeqExpr,
    Tuple,
    TupleGetItem,
    Var,
    is_leaf,
)
from kiln.relax.expr_functor import ExprMutator
from kiln.relax.op.common import describe
from kiln.relax.pattern.language import Rule
from kiln.relax.transform.dead_code_elimination import remove_unused_bindings

MAX_STEPS = 64
"""Replacements at one binding before the rules are judged to loop (a rule undoing another)."""


class _Rewriter(ExprMutator):
    """Applies rules binding by binding; ``defs`` holds the current block's values."""

    def __init__(self, mod: IRModule | None, rules: Sequence[Rule]) -> None:
        super().__init__(mod)
        self.rules = list(rules)
        self.defs: dict[int, Expr] = {}
        self.by_op: dict[str, list[Rule]] = {}

    def candidates(self, value: Expr) -> list[Rule]:
        """The rules whose pattern may match ``value`` (by the operator it calls)."""
        name = value.op.name if isinstance(value, Call) and isinstance(value.op, Op) else ""
        hit = self.by_op.get(name)
        if hit is None:
            hit = [r for r in self.rules if (ops := r.pattern.root_ops()) is None or name in ops]
            self.by_op[name] = hit
        return hit

    def visit_binding_block(self, block: BindingBlock) -> BindingBlock | None:
        outer, self.defs = self.defs, {}
        try:
            return super().visit_binding_block(block)
        finally:
            self.defs = outer

    def visit_binding(self, b: Binding) -> None:
        if not isinstance(b, VarBinding):
            return super().visit_binding(b)
        value = self.visit(b.value)
        value = self.simplify(value if value is b.value else self.builder.normalize(value))
        if isinstance(value, Var) and value is not b.value and _can_alias(b.var, value):
            self.var_remap[id(b.var)] = value
            return None
        self.reemit(b, value)
        self.defs[id(self.var_remap.get(id(b.var), b.var))] = value
        return None

    def simplify(self, value: Expr) -> Expr:
        """``value`` after the rules, applied until none does."""
        for _ in range(MAX_STEPS):
            found = self.first_rewrite(value)
            if found is None:
                return value
            rule_, new = found
            new = self.emit_parts(new)
            if check_fits(value.struct_info, new.struct_info) is Fit.FAIL:
                raise IRValueError(
                    f"rewrite rule {rule_.name!r} replaced {describe(value)} by {describe(new)}, "
                    "of another struct info; a rule must keep the value's dtype and shape"
                )
            value = new
        names = [r.name for r in self.candidates(value)]
        raise IRValueError(f"rewrite rules {names} replaced {describe(value)} {MAX_STEPS} times")

    def first_rewrite(self, value: Expr) -> tuple[Rule, Expr] | None:
        if isinstance(value, Var):
            return None  # an alias: the rules saw its value at its own binding
        for r in self.candidates(value):
            m = r.pattern.match(value, self.defs)
            new = r.fn(m) if m is not None else None
            if new is not None and new is not value:
                return r, _with_span(new, self.span_of(value))
        return None

    def span_of(self, value: Expr) -> Any:
        """Where ``value`` came from: its span, or for a field of a tuple-valued call (a
        ``batch_norm(...)[0]``) the call's."""
        if value.span is None and isinstance(value, TupleGetItem):
            inner = value.tuple_value
            return self.defs.get(id(inner), inner).span
        return value.span

    def emit_parts(self, e: Expr) -> Expr:
        """``e`` normalized, its nested operands simplified and bound first."""
        if isinstance(e, Call):
            args = tuple(self.operand(a) for a in e.args)
            if any(a is not b for a, b in zip(args, e.args)):
                e = replace(e, args=args, struct_info_=None)
        elif isinstance(e, Tuple):
            fields = tuple(self.operand(f) for f in e.fields)
            if any(a is not b for a, b in zip(fields, e.fields)):
                e = Tuple(fields, None, e.span)
        elif isinstance(e, TupleGetItem):
            tup = self.operand(e.tuple_value)
            if tup is not e.tuple_value:
                e = TupleGetItem(tup, e.index, None, e.span)
        return self.builder.normalize(e)

    def operand(self, a: Any) -> Any:
        if is_leaf(a):
            return a
        value = self.simplify(self.emit_parts(a))
        if is_leaf(value):
            return value
        var = self.builder.emit(value)
        self.defs[id(var)] = value
        return var


def _with_span(e: Any, span: Any) -> Any:
    """``e`` with the calls a rule made (those without a span) given the replaced value's span:
    profiles and errors keep naming the model node the value came from."""
    if span is None or not isinstance(e, Call) or e.span is not None:
        return e
    return replace(e, args=tuple(_with_span(a, span) for a in e.args), span=span)


def _outputs_bound_directly(func: Function) -> Function:
    """``func`` with `_bind_outputs_directly` applied to the dataflow blocks of its body."""
    body = func.body
    if not isinstance(body, SeqExpr):
        return func
    blocks = tuple(
        _bind_outputs_directly(b) if isinstance(b, DataflowBlock) else b for b in body.blocks
    )
    if all(a is b for a, b in zip(blocks, body.blocks)):
        return func
    return replace(func, body=replace(body, blocks=blocks))


def _bind_outputs_directly(block: DataflowBlock) -> DataflowBlock:
    """``block`` where an output ``gv = lv``, ``lv`` a dataflow variable of the same struct
    info read nowhere else (a rule replaced the output's value by it), has ``lv``'s binding
    define ``gv`` instead."""
    aliases = {
        id(b.value): b
        for b in block.bindings
        if isinstance(b, VarBinding) and type(b.var) is Var and isinstance(b.value, DataflowVar)
    }
    if not aliases:
        return block
    uses: Counter[int] = Counter()
    for b in block.bindings:
        uses.update(use_counts(b.value))
    plain = {id(b.var): b.var for b in block.bindings if isinstance(b, VarBinding)}
    moved = {
        k: b
        for k, b in aliases.items()
        if uses[k] == 1
        and k in plain
        and structural_equal(b.var.struct_info_, plain[k].struct_info_, map_free_vars=True)
    }
    if not moved:
        return block
    dropped = {id(b) for b in moved.values()}
    out: list[Binding] = []
    for b in block.bindings:
        if isinstance(b, VarBinding) and id(b.var) in moved:
            out.append(VarBinding(moved[id(b.var)].var, b.value, b.span))
        elif id(b) not in dropped:
            out.append(b)
    return DataflowBlock(tuple(out), block.span)


def _can_alias(var: Var, value: Var) -> bool:
    """Whether uses of ``var`` may read ``value`` instead (a block output cannot become a
    dataflow variable, which is invisible after the block)."""
    return not (type(var) is Var and isinstance(value, DataflowVar))


def rewrite_function(
    func: Function, rules: Sequence[Rule], mod: IRModule | None = None
) -> Function:
    """``func`` with ``rules`` applied (the same object when none applied)."""
    # NOTE: imported on use: `kiln.relax.transform` imports the passes built on this package,
    # so a module-level import of one of its modules would be circular.

    new = _Rewriter(mod, rules).visit(func)
    if new is func:
        return func
    new = remove_unused_bindings(new, mod if mod is not None else IRModule({}))
    return _outputs_bound_directly(new)


def rewrite(target: Any, rules: Sequence[Rule], mod: IRModule | None = None) -> Any:
    """``rules`` applied to a relax `Function` (``mod``: the module it belongs to, for calls of
    its functions) or to every relax function of an `IRModule`; the same object when no rule
    applied."""
    if isinstance(target, Function):
        return rewrite_function(target, rules, mod)
    if not isinstance(target, IRModule):
        raise IRError(f"rewrite applies rules to a relax Function or an IRModule, got {target!r}")
    changed = {}
    for gv, func in target.items():
        if isinstance(func, Function):
            new = rewrite_function(func, rules, target)
            if new is not func:
                changed[gv] = new
    return target.update_all(changed) if changed else target


__all__ = ["MAX_STEPS", "rewrite", "rewrite_function"]
