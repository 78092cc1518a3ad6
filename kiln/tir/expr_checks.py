"""The checks of TIR's expression builders: integer division by the constant zero, bitwise
operations on non-integers, shifts by out-of-range constants. The builders (Python operators,
`kiln.tir.op`, the script) raise the message; the verifier reports nodes built directly.

Import them from `kiln.tir.expr`, which loads this module after the classes it needs (importing
this module first would be a circular import).
"""

from __future__ import annotations

from kiln.tir.expr import (
    INT_DIVISIONS,
    BinaryOp,
    Broadcast,
    Div,
    FloorDiv,
    FloorMod,
    IntImm,
    Mod,
    PrimExpr,
    Select,
)


def division_problem(cls: type, a: PrimExpr, b: PrimExpr) -> str | None:
    """The message for ``cls(a, b)`` when it is an integer division by the constant zero.

    The expression builders (Python operators, `kiln.tir.op`, the script) raise it; the node
    constructors store what they are given and the verifier reports such nodes."""
    zero = b.value if isinstance(b, Broadcast) else b
    if cls not in INT_DIVISIONS or not b.dtype.element_of().is_integer:
        return None
    if not (isinstance(zero, IntImm) and zero.value == 0):
        return None
    sym = {Div: "/", Mod: "%", FloorDiv: "//", FloorMod: "%"}[cls]
    text = str(a)
    text = text if len(text) <= 60 else text[:57] + "..."
    text = f"({text})" if isinstance(a, (BinaryOp, Select)) else text
    return f"division by zero: {text} {sym} 0 (the divisor is the constant 0)"


def bitwise_problem(name: str, a: PrimExpr, b: PrimExpr | None) -> str | None:
    """The message for ``tir.<name>(a, b)`` on non-integers, or shifting by an out-of-range
    constant (the builders raise it, the verifier reports it)."""
    for x in (a, b):
        if x is not None and not (x.dtype.is_integer or x.dtype.is_bool):
            return f"{name} needs integer operands, got a {x.dtype} value"
    amount = b.value if isinstance(b, Broadcast) else b
    if not name.startswith("shift_") or not isinstance(amount, IntImm):
        return None
    bits = a.dtype.bits
    if 0 <= amount.value < bits:
        return None
    kind = name[len("shift_") :]
    return f"shift {kind} of a {a.dtype} value by {amount.value}: the amount must be in " + (
        f"[0, {bits - 1}]"
    )
