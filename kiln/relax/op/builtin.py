"""Builtin graph-level operators: calls into PrimFuncs and packed functions, and ``shape_of``.

- ``call_tir(gv, args, out_sinfo, tir_vars)``: call PrimFunc ``gv`` in destination-passing
  style: it receives the arguments, then freshly allocated outputs (``out_sinfo``, a tensor or
  a list of them), then the values of ``tir_vars`` (a shape), and the call's value is the
  output(s). Pure.
- ``call_dps_packed(func, args, out_sinfo)``: the same for a packed function found by name.
- ``call_packed(func, *args, sinfo_args)``: a call of a packed function that returns its result
  (possibly with side effects); not an operator: a `Call` whose callee is an `ExternFunc`.
- ``call_pure_packed(func, *args, sinfo_args)``: the same, declared pure.
- ``shape_of(x)``: the shape of a tensor as a shape value.
- ``call_lowered(gv, args, out_sinfo, ...)``: a call of a lowered primitive (`LowerTE`): ``gv``
  names a PrimFunc, or an external (``Extern=1``) function whose C comes from a codegen; it runs
  in destination-passing style like ``call_tir`` (inputs, then freshly allocated outputs) and the
  call's value is the output(s). ``out_sinfo`` may have unknown dims: then the attributes name a
  host shape function that computes them first (see `call_lowered`).
- ``builtin.alloc_tensor(shape, dtype, runtime_device_index)``: a fresh tensor (the outputs
  `CallTIRRewrite` allocates for destination-passing calls).

None of them has a TE legalization: the VM lowers them (their records say so).
"""

from __future__ import annotations

from typing import Any

from kiln.errors import IRError
from kiln.ir.function import GlobalVar
from kiln.ir.node import Attrs, as_attrs
from kiln.ir.op import Op
from kiln.relax.expr import Call, Expr, ExternFunc, ShapeExpr, Tuple, op_name
from kiln.relax.op.common import as_expr, check_arity, describe, fail, shape_values
from kiln.relax.op.memory import check_prim, dtype_arg, dtype_of, int_arg, shape_arg
from kiln.relax.op.registry import register_op
from kiln.relax.struct_info import (
    ObjectStructInfo,
    ShapeStructInfo,
    StructInfo,
    TensorStructInfo,
    TupleStructInfo,
)
from kiln.topi.tag import Pattern

_BY_VM = "the VM (kiln.vm) lowers it"


def _out_sinfo(out_sinfo: Any) -> StructInfo:
    if isinstance(out_sinfo, (list, tuple)):
        items = list(out_sinfo)
        if len(items) == 1:
            return items[0]
        return TupleStructInfo(tuple(items))
    if not isinstance(out_sinfo, StructInfo):
        raise IRError(f"out_sinfo must be tensor struct info (or a list), got {out_sinfo!r}")
    return out_sinfo


def _check_outputs(call: Call, sinfo: StructInfo) -> None:
    fields = sinfo.fields if isinstance(sinfo, TupleStructInfo) else (sinfo,)
    for f in fields:
        if not isinstance(f, TensorStructInfo) or f.dims is None or f.dtype.is_void:
            raise fail(call, f"every output needs a known shape and dtype, got {f}")


def _args_tuple(args: Any) -> Expr:
    if isinstance(args, Expr):
        return args if isinstance(args, Tuple) or args.struct_info_ is not None else Tuple((args,))
    items = list(args) if isinstance(args, (list, tuple)) else [args]
    return Tuple(tuple(as_expr(a) for a in items))


def _infer_call_tir(call: Call, ctx: Any) -> StructInfo:
    if len(call.args) not in (2, 3):
        raise IRError(f"relax.call_tir takes 2 or 3 arguments, got {len(call.args)}")
    if not isinstance(call.args[0], GlobalVar):
        raise fail(call, f"the callee must be a PrimFunc's GlobalVar, got {call.args[0]!r}")
    packed = call.args[1].struct_info_
    if not isinstance(packed, TupleStructInfo):
        raise fail(call, f"the arguments must be a tuple, got {describe(call.args[1])}")
    if len(call.args) == 3 and not isinstance(call.args[2].struct_info_, ShapeStructInfo):
        raise fail(call, f"tir_vars must be a shape, got {describe(call.args[2])}")
    if len(call.sinfo_args) != 1:
        raise fail(call, "needs exactly one output struct info (out_sinfo)")
    _check_outputs(call, call.sinfo_args[0])
    return call.sinfo_args[0]


@register_op(
    "relax.call_tir",
    infer=_infer_call_tir,
    legalize=None,
    pattern=Pattern.OPAQUE,
    lowered_by=_BY_VM,
)
def call_tir(gvar: GlobalVar, args: Any, out_sinfo: Any, tir_vars: Any = None) -> Call:
    """A destination-passing call of PrimFunc ``gvar`` (see the module docstring)."""
    items: list[Any] = [gvar, _args_tuple(args)]
    if tir_vars is not None:
        items.append(tir_vars if isinstance(tir_vars, Expr) else ShapeExpr(list(tir_vars)))
    return Call(Op.get("relax.call_tir"), tuple(items), sinfo_args=(_out_sinfo(out_sinfo),))


def _infer_call_lowered(call: Call, ctx: Any) -> StructInfo:
    if len(call.args) not in (2, 3):
        raise IRError(f"relax.call_lowered takes 2 or 3 arguments, got {len(call.args)}")
    if len(call.args) == 3 and not isinstance(call.args[2].struct_info_, ShapeStructInfo):
        raise fail(call, f"tir_vars must be a shape, got {describe(call.args[2])}")
    if not isinstance(call.args[0], GlobalVar):
        raise fail(call, f"the callee must be a module function's GlobalVar, got {call.args[0]!r}")
    if not isinstance(call.args[1].struct_info_, TupleStructInfo):
        raise fail(call, f"the arguments must be a tuple, got {describe(call.args[1])}")
    if len(call.sinfo_args) != 1:
        raise fail(call, "needs exactly one output struct info (out_sinfo)")
    fields = call.sinfo_args[0]
    for f in fields.fields if isinstance(fields, TupleStructInfo) else (fields,):
        if not isinstance(f, TensorStructInfo) or f.dtype.is_void:
            raise fail(call, f"every output must be a tensor of known dtype, got {f}")
    states = call.attrs.get("prim_shape_fn_states")
    if states is not None and len(states) != len(call.args[1].struct_info_.fields):
        raise fail(call, f"prim_shape_fn_states has {len(states)} entries, one per argument needed")
    return call.sinfo_args[0]


SHAPE_FN_DATA = 1
"""``prim_shape_fn_states`` entry: the shape function needs the argument's value (data)."""
SHAPE_FN_SHAPE = 2
"""``prim_shape_fn_states`` entry: the shape function needs only the argument's shape."""


@register_op(
    "relax.call_lowered",
    infer=_infer_call_lowered,
    legalize=None,
    pattern=Pattern.OPAQUE,
    lowered_by=_BY_VM,
)
def call_lowered(
    gvar: GlobalVar,
    args: Any,
    out_sinfo: Any,
    func_attrs: Any = None,
    all_prim_fn_vars: Any = (),
    prim_shape_fn_var: GlobalVar | None = None,
    prim_shape_fn_states: Any = None,
    prim_shape_fn_num_inputs: int | None = None,
    prim_shape_fn_num_outputs: int | None = None,
    all_prim_shape_fn_vars: Any = None,
    tir_vars: Any = None,
) -> Call:
    """A call of lowered function ``gvar`` in destination-passing style (`LowerTE` makes them).

    Attributes: ``func_attrs`` (the attributes of the function the call was lowered from),
    ``all_prim_fn_vars`` (the PrimFuncs implementing it; empty for external functions) and,
    when ``out_sinfo`` has unknown dims, the host shape function that computes them:
    ``prim_shape_fn_var``, ``prim_shape_fn_states`` (per argument: `SHAPE_FN_DATA` or
    `SHAPE_FN_SHAPE`), ``prim_shape_fn_num_inputs``, ``prim_shape_fn_num_outputs`` and
    ``all_prim_shape_fn_vars``. The shape function takes, per argument, its shape (state 2) or
    its value (state 1) as a 1-D int64 tensor, then one 1-D int64 tensor per output to fill.
    ``tir_vars`` (a shape) are symbolic values the callee takes after its outputs, as for
    ``call_tir``.
    """
    items: dict[str, Any] = {
        "func_attrs": as_attrs(dict(func_attrs or {})),
        "all_prim_fn_vars": tuple(all_prim_fn_vars or ()),
    }
    if prim_shape_fn_var is not None:
        items["prim_shape_fn_var"] = prim_shape_fn_var
        items["prim_shape_fn_states"] = tuple(int(s) for s in prim_shape_fn_states or ())
        items["prim_shape_fn_num_inputs"] = int(prim_shape_fn_num_inputs or 0)
        items["prim_shape_fn_num_outputs"] = int(prim_shape_fn_num_outputs or 0)
        items["all_prim_shape_fn_vars"] = tuple(all_prim_shape_fn_vars or (prim_shape_fn_var,))
    operands: list[Any] = [gvar, _args_tuple(args)]
    if tir_vars is not None:
        operands.append(tir_vars if isinstance(tir_vars, Expr) else ShapeExpr(list(tir_vars)))
    return Call(
        Op.get("relax.call_lowered"),
        tuple(operands),
        Attrs(items),
        sinfo_args=(_out_sinfo(out_sinfo),),
    )


def _infer_dps_packed(call: Call, ctx: Any) -> StructInfo:
    check_arity(call, 2)
    if not isinstance(call.args[0], ExternFunc):
        raise fail(call, f"the callee must be a packed function, got {call.args[0]!r}")
    if len(call.sinfo_args) != 1:
        raise fail(call, "needs exactly one output struct info (out_sinfo)")
    _check_outputs(call, call.sinfo_args[0])
    return call.sinfo_args[0]


@register_op(
    "relax.call_dps_packed",
    infer=_infer_dps_packed,
    legalize=None,
    pattern=Pattern.OPAQUE,
    lowered_by=_BY_VM,
)
def call_dps_packed(func: Any, args: Any, out_sinfo: Any) -> Call:
    """A destination-passing call of packed function ``func`` (a name or `ExternFunc`)."""
    callee = ExternFunc(func) if isinstance(func, str) else func
    return Call(
        Op.get("relax.call_dps_packed"),
        (callee, _args_tuple(args)),
        sinfo_args=(_out_sinfo(out_sinfo),),
    )


def _infer_alloc_tensor(call: Call, ctx: Any) -> StructInfo:
    check_arity(call, 3)
    dims = shape_values(call, 0)
    dtype = dtype_of(call, 1)
    check_prim(call, 2, "the device index")
    if dims is None:
        raise fail(call, f"the shape must be known, got {describe(call.args[0])}")
    return TensorStructInfo(list(dims), dtype)


@register_op(
    "relax.builtin.alloc_tensor",
    infer=_infer_alloc_tensor,
    legalize=None,
    pattern=Pattern.OPAQUE,
    lowered_by="StaticPlanBlockMemory (intermediates) or VMBuiltinLower (the rest)",
)
def alloc_tensor(shape: Any, dtype: Any, runtime_device_index: Any = 0) -> Call:
    """A fresh tensor of ``shape`` and ``dtype`` (what `CallTIRRewrite` allocates for outputs)."""
    args = (shape_arg(shape), dtype_arg(dtype), int_arg(runtime_device_index))
    return Call(Op.get("relax.builtin.alloc_tensor"), args)


def _sinfo_args(sinfo_args: Any) -> tuple[StructInfo, ...]:
    if sinfo_args is None:
        return (ObjectStructInfo(),)
    if isinstance(sinfo_args, StructInfo):
        return (sinfo_args,)
    return tuple(sinfo_args)


def call_packed(func: Any, *args: Any, sinfo_args: Any = None) -> Call:
    """A call of the packed function ``func`` (by name) returning ``sinfo_args``."""
    callee = ExternFunc(func) if isinstance(func, str) else func
    return Call(callee, tuple(as_expr(a) for a in args), sinfo_args=_sinfo_args(sinfo_args))


def _infer_pure_packed(call: Call, ctx: Any) -> StructInfo:
    if not call.args or not isinstance(call.args[0], ExternFunc):
        raise IRError("relax.call_pure_packed: the first argument must be a packed function")
    return call.sinfo_args[0] if call.sinfo_args else ObjectStructInfo()


@register_op(
    "relax.call_pure_packed",
    infer=_infer_pure_packed,
    legalize=None,
    pattern=Pattern.OPAQUE,
    lowered_by=_BY_VM,
)
def call_pure_packed(func: Any, *args: Any, sinfo_args: Any = None) -> Call:
    """A call of the packed function ``func``, declared free of side effects."""
    callee = ExternFunc(func) if isinstance(func, str) else func
    items = (callee, *(as_expr(a) for a in args))
    return Call(Op.get("relax.call_pure_packed"), items, sinfo_args=_sinfo_args(sinfo_args))


def _infer_shape_of(call: Call, ctx: Any) -> StructInfo:
    check_arity(call, 1)
    x = call.args[0].struct_info_
    if not isinstance(x, TensorStructInfo):
        raise fail(call, f"needs a tensor, got {describe(call.args[0])}")
    if x.dims is not None:
        return ShapeStructInfo(x.dims)
    if x.shape is not None and isinstance(x.shape.struct_info_, ShapeStructInfo):
        return x.shape.struct_info_
    return ShapeStructInfo(None, x.ndim)


@register_op(
    "relax.shape_of",
    infer=_infer_shape_of,
    legalize=None,
    pattern=Pattern.OPAQUE,
    lowered_by=_BY_VM,
)
def shape_of(expr: Expr) -> Call:
    """The shape of tensor ``expr`` as a shape value."""
    return Call(Op.get("relax.shape_of"), (as_expr(expr),))


__all__ = [
    "alloc_tensor",
    "call_dps_packed",
    "call_lowered",
    "call_packed",
    "call_pure_packed",
    "call_tir",
    "op_name",
    "shape_of",
]
