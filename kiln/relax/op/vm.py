"""Operators of VM-form functions (what the VM lowering passes leave for the VM code generators).

- ``call_builtin_with_ctx(func, args, sinfo_args)``: call VM builtin ``func`` (an `ExternFunc`
  named ``vm.builtin.*``) with the VM context first, then the fields of tuple ``args``; the
  result has struct info ``sinfo_args`` (default: any object). Not pure: builtins allocate,
  check input and may raise.
- ``null_value()``: None (a register that holds nothing; a heap argument when a function has
  no symbolic dims).

Calls of builtins that take no context are ordinary calls of an `ExternFunc`.
"""

from __future__ import annotations

from typing import Any

from kiln.ir.op import Op
from kiln.relax.expr import Call, ExternFunc, Tuple
from kiln.relax.op.common import as_expr, check_arity, describe, fail
from kiln.relax.op.registry import register_op
from kiln.relax.struct_info import ObjectStructInfo, StructInfo, TupleStructInfo
from kiln.topi.tag import Pattern

_BY_CODEGEN = "the VM code generators (kiln/vm) emit it as a builtin call"


def _infer_with_ctx(call: Call, ctx: Any) -> StructInfo:
    check_arity(call, 2)
    if not isinstance(call.args[0], ExternFunc):
        raise fail(call, f"the callee must be a builtin (ExternFunc), got {describe(call.args[0])}")
    if not isinstance(call.args[1].struct_info_, TupleStructInfo):
        raise fail(call, f"the arguments must be a tuple, got {describe(call.args[1])}")
    return call.sinfo_args[0] if call.sinfo_args else ObjectStructInfo()


@register_op(
    "relax.call_builtin_with_ctx",
    infer=_infer_with_ctx,
    legalize=None,
    pattern=Pattern.OPAQUE,
    pure=False,
    lowered_by=_BY_CODEGEN,
)
def call_builtin_with_ctx(func: Any, args: Any, sinfo_args: Any = None) -> Call:
    """Call builtin ``func`` (a name or `ExternFunc`) with the VM context, then ``args``."""
    callee = ExternFunc(func) if isinstance(func, str) else func
    items = args if isinstance(args, Tuple) else Tuple(tuple(as_expr(a) for a in args))
    sinfo = () if sinfo_args is None else sinfo_args
    sinfo = (sinfo,) if isinstance(sinfo, StructInfo) else tuple(sinfo)
    return Call(Op.get("relax.call_builtin_with_ctx"), (callee, items), sinfo_args=sinfo)


def _infer_null(call: Call, ctx: Any) -> StructInfo:
    check_arity(call, 0)
    return ObjectStructInfo()


@register_op(
    "relax.null_value",
    infer=_infer_null,
    legalize=None,
    pattern=Pattern.OPAQUE,
    lowered_by=_BY_CODEGEN,
)
def null_value() -> Call:
    """None, as a graph-level value."""
    return Call(Op.get("relax.null_value"), ())


__all__ = ["call_builtin_with_ctx", "null_value"]
