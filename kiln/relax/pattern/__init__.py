"""Rewrite rules over relax calls: a small pattern language (`language`) and a driver that
applies rules (`rewrite`).

A rule is a pattern and a function of what the pattern bound that returns the replacement, or
None to decline. `rewrite` applies a list of rules to every binding of a function, in order,
each binding until no rule applies, so chains collapse in one walk:

    @rule(is_op("relax.reshape")(is_op("relax.reshape")(P.x, P._), P.shape))
    def reshape_of_reshape(m: Match) -> Expr | None:
        return R.reshape(m.x, m.shape)

    func = rewrite(func, [reshape_of_reshape])   # the same object when no rule applied

Patterns: `P.name` (anything, bound to ``name``; ``P._`` binds nothing), `is_op(name, **attrs)`
and ``is_op(name, **attrs)(*args)`` (a call of an operator; attributes and operands are patterns
or plain values), `is_const(value, pred)` (a `Constant`), `is_tuple_get(tuple, index)`; any
pattern combines with ``|`` (alternatives, tried in order), ``.named(name)``, ``.where(pred)`` and
the struct info checks ``.has_dtype``, ``.has_ndim``, ``.has_shape``. A name bound twice must be
bound to the same expression.

Looking through variables: every pattern but ``P.name`` matches a variable by the value bound to
it earlier in the same binding block (TVM's dataflow patterns do the same), so
``is_op("relax.reshape")(is_op("relax.reshape")(...))`` matches ``b = reshape(a)`` after
``a = reshape(x)``. A name binds the expression as written where it matched (a variable stays a
variable, so a replacement never copies a call); ``m.value(name)`` looks through it.

The driver (`rewrite`) keeps the `ExprMutator` contract: a function in which no rule applied is
returned as the same object; a replacement is normalized (struct info inferred), its nested
calls simplified and bound first (bottom-up); a replacement that is a variable replaces the uses
of the binding's variable; bindings left unused are removed (`remove_unused_bindings`). A rule
must not change what a value is: a replacement whose struct info provably does not fit the
value's is an error naming the rule.
"""

from kiln.relax.pattern.language import (
    Match,
    P,
    Pattern,
    Rule,
    all_elements_are,
    is_const,
    is_op,
    is_tuple_get,
    rule,
    same_tensor,
)
from kiln.relax.pattern.rewrite import rewrite, rewrite_function

__all__ = [
    "Match",
    "P",
    "Pattern",
    "Rule",
    "all_elements_are",
    "is_const",
    "is_op",
    "is_tuple_get",
    "rewrite",
    "rewrite_function",
    "rule",
    "same_tensor",
]
