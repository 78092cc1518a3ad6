"""Operator patterns and tags: how the scheduler (and later graph-level fusion) sees an operator.

Every compute a topi function creates carries a *tag* (its ``op.tag`` string) and a *pattern*
(``op.attrs["pattern"]``, a `Pattern`). The pattern orders operators by how freely they fuse, in
the order graph-level fusion compares them (a larger value is a stronger anchor):

- ``ELEMWISE``: output element ``i`` reads input element ``i`` of every input (same shape);
- ``BROADCAST``: as elementwise, but some inputs are broadcast along axes;
- ``INJECTIVE``: each output element reads one input element through an index map
  (transpose, reshape, slicing, padding, concatenate, take);
- ``COMM_REDUCE``: a commutative reduction over some axes (sum, max, pooling windows...);
- ``OUT_ELEMWISE_FUSABLE``: a complex anchor whose output may take an elementwise epilogue
  (dense, conv2d);
- ``OPAQUE``: anything else; never fused.

The tag names the operator family; `kiln.topi.schedule` dispatches on it (``"softmax"``,
``"layer_norm"``, ``"pool"``...), falling back to the pattern for plain element-wise and
reduction operators.
"""

from __future__ import annotations

from enum import IntEnum
from typing import Any


class Pattern(IntEnum):
    """Fusion pattern of an operator (see module docstring); larger values anchor fusion."""

    ELEMWISE = 0
    BROADCAST = 1
    INJECTIVE = 2
    COMM_REDUCE = 3
    OUT_ELEMWISE_FUSABLE = 4
    OPAQUE = 8


ELEMWISE = "elemwise"
BROADCAST = "broadcast"
INJECTIVE = "injective"
COMM_REDUCE = "comm_reduce"
SOFTMAX = "softmax"
LOG_SOFTMAX = "log_softmax"
LAYER_NORM = "layer_norm"
POOL = "pool"

PATTERN_OF_TAG: dict[str, Pattern] = {
    ELEMWISE: Pattern.ELEMWISE,
    BROADCAST: Pattern.BROADCAST,
    INJECTIVE: Pattern.INJECTIVE,
    COMM_REDUCE: Pattern.COMM_REDUCE,
    SOFTMAX: Pattern.OPAQUE,
    LOG_SOFTMAX: Pattern.OPAQUE,
    LAYER_NORM: Pattern.OPAQUE,
    POOL: Pattern.COMM_REDUCE,
}
"""The default pattern of each tag this package uses."""


def attrs_for(tag: str, pattern: Pattern | None = None, **extra: Any) -> dict[str, Any]:
    """The ``attrs`` dict of a compute with ``tag``: its pattern plus ``extra`` entries."""
    pat = pattern if pattern is not None else PATTERN_OF_TAG.get(tag, Pattern.OPAQUE)
    return {"pattern": pat, **extra}


def pattern_of(op: Any) -> Pattern:
    """The pattern recorded on ``op`` (an operation or tensor); untagged computes are opaque,
    except that a compute without a reduction and without a pattern counts as injective."""
    op = getattr(op, "op", op)
    attrs = getattr(op, "attrs", None) or {}
    pat = attrs.get("pattern")
    if isinstance(pat, Pattern):
        return pat
    tag = getattr(op, "tag", "")
    if tag in PATTERN_OF_TAG:
        return PATTERN_OF_TAG[tag]
    if getattr(op, "reduce_axis", ()):
        return Pattern.COMM_REDUCE
    return Pattern.INJECTIVE if hasattr(op, "body") else Pattern.OPAQUE


def is_injective(op: Any) -> bool:
    """True for element-wise, broadcast and injective computes."""
    return pattern_of(op) <= Pattern.INJECTIVE
