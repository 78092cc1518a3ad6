"""The ``I`` namespace of TVMScript: ``from kiln.script import ir as I``."""

from __future__ import annotations

from typing import Any

from kiln.ir.function import GlobalVar
from kiln.script.parser.dialect import ModuleAttrs
from kiln.script.parser.entry import ir_module


def module_attrs(attrs: Any) -> ModuleAttrs:
    """``I.module_attrs({...})`` in an ``I.ir_module`` class: attributes of the module."""
    return ModuleAttrs(attrs)


__all__ = ["GlobalVar", "ir_module", "module_attrs"]
