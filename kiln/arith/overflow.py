"""The overflow guard: may a rewrite introduce a signed overflow its input did not have?

A rule returns an expression equal to the node ``e`` it rewrites wherever ``e`` evaluates without
overflow. The value of the new root is ``e``'s, so the root itself cannot overflow; every other
node the rule built (an intermediate sum, a scaled term) must be shown to stay in its dtype's
range. A new node passes when, given the bounds of its operands, its operation cannot leave the
range (`BoundAnalyzer.may_overflow`), or when it is tied linearly to a *trusted* node ``t`` (one
that does not overflow wherever the input does not: ``e`` and the nodes of its top linear
layers) by ``s * new == t - d`` for an integer ``s`` and a linear form ``d`` (quotient /
remainder pairs of ``t`` merged: ``(f // 4)*64 + (f % 4)*16`` is ``f*16``): then
``new`` lies in ``(bound(t) - bound(d)) / s``, and ``bound(t)`` is clamped to the dtype.

Example: ``(x + 5) // 4`` -> ``(x + 1) // 4 + 1``; ``x + 1`` may overflow for an arbitrary ``x``,
but ``x + 1 == (x + 5) - 4`` and ``x + 5`` does not overflow, so neither does ``x + 1``. The
rewrite of ``(x + 3) + (y + 4) - 2`` to ``x + y + 5`` is refused: ``x + y`` overflows at
``x = -2**31, y = -1`` where the input is ``-2**31 + 4``.
"""

from __future__ import annotations

from collections.abc import Callable, Container

from kiln.arith.bound import BoundAnalyzer, ConstIntBound, dtype_bound
from kiln.arith.linear import Linear, linear_bound, merge_div_mod, to_linear
from kiln.tir.expr import Add, IntImm, Mul, PrimExpr, Sub, Var

_MAX_ANCHORS = 8
_LINEAR = (Add, Sub, Mul)


def introduces_overflow(
    new: PrimExpr,
    replaced: PrimExpr,
    trusted: Container[PrimExpr],
    bounds: BoundAnalyzer,
    linear: Callable[[PrimExpr], Linear] = to_linear,
) -> bool:
    """Whether a node of ``new`` (a rule's result for ``replaced``) that is neither the root nor
    ``trusted`` may overflow (see the module docstring); ``linear`` computes linear forms (the
    simplifier passes its memoized `to_linear`)."""
    anchors: list[tuple[PrimExpr, Linear]] | None = None
    pending: list[tuple[PrimExpr, bool]] = [(new, True)]
    order: list[PrimExpr] = []
    while pending:
        node, root = pending.pop()
        if not root and node in trusted:
            continue
        if not root:
            order.append(node)
        for name in type(node).field_names():
            child = getattr(node, name)
            for c in child if isinstance(child, tuple) else (child,):
                if isinstance(c, PrimExpr):
                    pending.append((c, False))
    for node in reversed(order):  # operands before the nodes using them
        if not bounds.may_overflow(node):
            continue
        if anchors is None:
            anchors = _anchors(replaced, linear)
        if not any(_fits_through(node, t, lin, bounds, linear) for t, lin in anchors):
            return True
    return False


def _anchors(e: PrimExpr, linear: Callable[[PrimExpr], Linear]) -> list[tuple[PrimExpr, Linear]]:
    """``e`` and the non-leaf nodes of its top linear layers (and of its operands'), with
    their linear forms."""
    out: list[tuple[PrimExpr, Linear]] = []
    pending = [e]
    while pending and len(out) < _MAX_ANCHORS:
        node = pending.pop(0)
        if isinstance(node, (Var, IntImm)):
            continue
        if node.dtype.is_int and node.dtype.lanes == 1:
            out.append((node, merge_div_mod(linear(node))))
        if node is e or isinstance(node, _LINEAR):
            for name in ("a", "b"):
                child = getattr(node, name, None)
                if isinstance(child, PrimExpr):
                    pending.append(child)
    return out


def _fits_through(
    node: PrimExpr,
    anchor: PrimExpr,
    t: Linear,
    bounds: BoundAnalyzer,
    linear: Callable[[PrimExpr], Linear],
) -> bool:
    """Whether ``s * node == anchor - d`` (see the module docstring) keeps ``node`` in range."""
    if anchor.dtype != node.dtype:
        return False
    p = linear(node)
    scale = _scale(p, t)
    if scale is None:
        return False
    d = t.plus(p.scaled(scale), -1)
    whole = bounds.bound(anchor)
    rest = linear_bound(d, bounds.bound)
    lo, hi = whole.min_value - rest.max_value, whole.max_value - rest.min_value
    if scale < 0:
        lo, hi, scale = -hi, -lo, -scale
    lo, hi = -(-lo // scale), hi // scale  # the node is an integer: round inwards
    return lo > hi or ConstIntBound(lo, hi).is_subset_of(dtype_bound(node.dtype))


def _scale(p: Linear, t: Linear) -> int | None:
    """An integer ``s`` with ``s * p`` matching ``t`` on a shared term, if one exists."""
    for atom, coef in p.terms.items():
        other = t.terms.get(atom)
        if other is not None and other % coef == 0:
            return other // coef
    return None
