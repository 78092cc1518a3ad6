"""The IR core shared by both levels: types, spans, nodes, modules, ops, structure, passes."""

from kiln.ir.dtype import DataType, dtype
from kiln.ir.function import BaseFunc, GlobalVar
from kiln.ir.module import IRModule
from kiln.ir.node import EMPTY_ATTRS, Attrs, FrozenMap, Node, as_attrs, register_printer
from kiln.ir.op import CallEffect, Op
from kiln.ir.span import Span
from kiln.ir.structural import (
    assert_structural_equal,
    first_mismatch,
    structural_equal,
    structural_hash,
)
from kiln.ir.target import TARGET_KINDS, Target, TargetKind
from kiln.ir.transform import (
    Pass,
    PassContext,
    PassInstrument,
    PrintAfterPass,
    Sequential,
    TimePasses,
    VerifyAfterPass,
)

__all__ = [
    "Attrs",
    "BaseFunc",
    "CallEffect",
    "DataType",
    "EMPTY_ATTRS",
    "FrozenMap",
    "GlobalVar",
    "IRModule",
    "Node",
    "Op",
    "Pass",
    "PassContext",
    "PassInstrument",
    "PrintAfterPass",
    "Sequential",
    "Span",
    "TARGET_KINDS",
    "Target",
    "TargetKind",
    "TimePasses",
    "VerifyAfterPass",
    "as_attrs",
    "assert_structural_equal",
    "dtype",
    "first_mismatch",
    "register_printer",
    "structural_equal",
    "structural_hash",
]
