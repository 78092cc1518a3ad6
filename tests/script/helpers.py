"""Shared checks for the script tests: round trip, spans, well-formedness."""

from __future__ import annotations

from typing import Any

import kiln.script
from kiln.ir import IRModule, Node, assert_structural_equal
from kiln.tir import verify_well_formed


def roundtrip(ir: Any, map_free_vars: bool = False, verify: bool = True) -> Any:
    """Print ``ir``, parse it back, check structural equality and stable printing."""
    if verify:
        verify_well_formed(ir)
    text = ir.script()
    again = kiln.script.from_source(text, "<printed>", check_well_formed=verify)
    assert type(again) is type(ir)
    assert_structural_equal(ir, again, map_free_vars=map_free_vars)
    assert again.script() == text, "printing a reparsed module must give the same text"
    return again


def nodes_without_span(ir: Any) -> list[Any]:
    """Every node reachable from ``ir`` whose ``span`` field is None."""
    missing, seen = [], set()
    stack = list(ir.functions.values()) if isinstance(ir, IRModule) else [ir]
    while stack:
        n = stack.pop()
        if isinstance(n, (tuple, list)):
            stack.extend(n)
            continue
        if hasattr(n, "items") and not isinstance(n, Node):
            stack.extend(x for kv in n.items() for x in kv)
            continue
        if not isinstance(n, Node) or id(n) in seen:
            continue
        seen.add(id(n))
        if "span" in n.field_names() and n.span is None:
            missing.append(n)
        stack.extend(getattr(n, f) for f in n.field_names() if f != "span")
    return missing
