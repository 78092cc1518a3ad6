"""Expression builders of the T namespace: builtin calls, casts, vectors, min/max, division.

`INTRIN_RULES` says, for each builtin `Op` reachable as ``T.<name>``, how its result dtype is
written in script. The parser's builders and the printer both read it, so whatever one writes
the other reads back:

- a dtype name (``"int32"``, ``"handle"``, ``"bool"``): the result type is fixed;
- ``"argN"``: the result has the dtype of argument N (Python numbers among the arguments take
  the dtype of the first expression argument, as in ``T.pow(x, 2.0)``);
- ``"dtype_first"`` / ``"dtype_last"``: the first / last script argument is the dtype
  (``T.call_extern("int32", "f", x)``, ``T.tvm_struct_get(a, 0, 1, "handle")``).

A call whose dtype breaks its rule prints as ``T.call_intrin(dtype, "tir.name", *args)``.
"""

from __future__ import annotations

from typing import Any, Callable

from kiln.errors import IRError
from kiln.ir.dtype import DataType
from kiln.ir.op import Op
from kiln.script.tir_ns.frames import extent_between
from kiln.script.tir_ns.types import as_dtype
from kiln.tir import op as tir_op
from kiln.tir.builtin import MATH_OPS
from kiln.tir.expr import Broadcast as BroadcastNode
from kiln.tir.expr import Call, Max, Min, PrimExpr, Var, convert
from kiln.tir.expr import Cast as CastNode
from kiln.tir.expr import Let as LetNode
from kiln.tir.expr import Ramp as RampNode
from kiln.tir.expr import Select as SelectNode
from kiln.tir.op import floordiv, floormod, truncdiv, truncmod  # noqa: F401 (T.floordiv...)
from kiln.tir.stmt import IterKind, IterVar
from kiln.tir.stmt import Range as RangeNode

_FIXED_INT32 = (
    "call_packed call_cpacked call_packed_lowered call_cpacked_lowered tvm_call_packed "
    "tvm_storage_sync tvm_struct_set tvm_throw_last_error anylist_resetitem "
    "anylist_setitem_call_packed anylist_setitem_call_cpacked vm_call_packed launch_kernel"
).split()
_FIXED_HANDLE = (
    "tvm_access_ptr address_of handle_add_byte_offset tvm_stack_alloca tvm_stack_make_shape "
    "lookup_param anylist_getitem tvm_thread_allreduce"
).split()
_ARG0 = "likely ret bitwise_and bitwise_or bitwise_xor bitwise_not shift_left shift_right popcount"

INTRIN_RULES: dict[str, str] = {
    **{name: "int32" for name in _FIXED_INT32},
    **{name: "handle" for name in _FIXED_HANDLE},
    **{name: "arg0" for name in _ARG0.split()},
    **{name: "arg0" for name in MATH_OPS},
    "isnan": "bool",
    "isinf": "bool",
    "isfinite": "bool",
    "isnullptr": "bool",
    "if_then_else": "arg1",
    "call_extern": "dtype_first",
    "call_pure_extern": "dtype_first",
    "reinterpret": "dtype_first",
    "type_annotation": "dtype_first",
    "tvm_struct_get": "dtype_last",
}


def rule_dtype(rule: str, args: tuple[PrimExpr, ...]) -> DataType | None:
    """The result dtype ``rule`` implies for ``args`` (None for the explicit-dtype rules)."""
    if rule.startswith("arg"):
        i = int(rule[3:])
        return args[i].dtype if i < len(args) else None
    if rule.startswith("dtype_"):
        return None
    return DataType.parse(rule)


def _convert_args(args: tuple, rule: str) -> tuple[PrimExpr, ...]:
    if rule.startswith("arg"):
        first = next((a for a in args if isinstance(a, PrimExpr)), None)
        dt = first.dtype if first is not None else None
        return tuple(convert(a, dt) if not isinstance(a, str) else convert(a) for a in args)
    return tuple(convert(a) for a in args)


def make_intrin(name: str, rule: str) -> Callable[..., Call]:
    """The ``T.<name>`` builder of builtin ``tir.<name>`` following ``rule``."""
    op = Op.get(f"tir.{name}")

    def build(*args: Any) -> Call:
        dtype: DataType | None = None
        if rule in ("dtype_first", "dtype_last"):
            if not args:
                raise IRError(f"T.{name} needs a dtype argument")
            dtype = as_dtype(args[0] if rule == "dtype_first" else args[-1])
            args = args[1:] if rule == "dtype_first" else args[:-1]
        nargs = op.get_attr("num_args", -1)
        if nargs >= 0 and len(args) != nargs:
            raise IRError(f"T.{name} takes {nargs} argument(s), got {len(args)}")
        if name == "if_then_else":  # Python numbers take the dtype of the other branch
            return tir_op.if_then_else(*args)
        conv = _convert_args(args, rule)
        dtype = dtype or rule_dtype(rule, conv)
        if dtype is None:
            raise IRError(f"T.{name}: cannot infer the result dtype from {args!r}")
        return Call(dtype, op, conv)

    build.__name__ = build.__qualname__ = name
    build.__doc__ = f"Call the builtin ``tir.{name}`` (result dtype: {rule})."
    return build


INTRINSICS: dict[str, Callable[..., Call]] = {
    name: make_intrin(name, rule) for name, rule in INTRIN_RULES.items()
}


def call_intrin(dtype: Any, name: str, *args: Any) -> Call:
    """``T.call_intrin(dtype, "tir.name", *args)``: any registered op with an explicit dtype."""
    if not isinstance(name, str):
        raise IRError(f"T.call_intrin: the op name must be a string, got {name!r}")
    op = Op.get(name if "." in name else f"tir.{name}")
    return Call(as_dtype(dtype), op, tuple(convert(a) for a in args))


def Cast(dtype: Any, value: Any) -> PrimExpr:  # noqa: N802 - TVMScript name
    """``T.Cast(dtype, value)``: a Cast node (even to the same dtype)."""
    return CastNode(as_dtype(dtype), convert(value))


def cast(value: Any, dtype: Any) -> PrimExpr:
    """``T.cast(value, dtype)``: ``value`` as ``dtype`` (unchanged when it already is)."""
    dt = as_dtype(dtype)
    if isinstance(value, PrimExpr):
        return value.astype(dt)
    return convert(value, dt)


def Select(condition: Any, true_value: Any, false_value: Any) -> PrimExpr:  # noqa: N802
    """``T.Select(c, t, f)``: both sides evaluated."""
    return SelectNode(convert(condition), true_value, false_value)


def Ramp(base: Any, stride: Any, lanes: int) -> PrimExpr:  # noqa: N802
    """``T.Ramp(base, stride, lanes)``: the vector base, base + stride, ..."""
    if not isinstance(lanes, int) or lanes < 1:
        raise IRError(f"T.Ramp: lanes must be a positive integer, got {lanes!r}")
    return RampNode(convert(base), stride, lanes)


def Broadcast(value: Any, lanes: int) -> PrimExpr:  # noqa: N802
    """``T.Broadcast(value, lanes)``: ``value`` in every lane."""
    if not isinstance(lanes, int) or lanes < 1:
        raise IRError(f"T.Broadcast: lanes must be a positive integer, got {lanes!r}")
    return BroadcastNode(convert(value), lanes)


def Let(body: Any, where: dict) -> PrimExpr:  # noqa: N802
    """``T.Let(body, where={x: value})``: bind ``x`` inside an expression."""
    if not isinstance(where, dict) or not where:
        raise IRError("T.Let: where= must be a dict {var: value}")
    out = convert(body)
    for var, value in reversed(list(where.items())):
        if not isinstance(var, Var):
            raise IRError(f"T.Let: keys of where= must be variables, got {var!r}")
        out = LetNode(var, convert(value, var.dtype), out)
    return out


def max(a: Any, b: Any) -> PrimExpr:  # noqa: A001 - TVMScript name
    """``T.max(a, b)``."""
    return Max(a, b)


def min(a: Any, b: Any) -> PrimExpr:  # noqa: A001
    """``T.min(a, b)``."""
    return Min(a, b)


def max_value(dtype: Any) -> PrimExpr:
    """``T.max_value(dtype)``."""
    return tir_op.max_value(as_dtype(dtype))


def min_value(dtype: Any) -> PrimExpr:
    """``T.min_value(dtype)``."""
    return tir_op.min_value(as_dtype(dtype))


_ITER_KINDS = {
    "DataPar": IterKind.DATA_PAR,
    "ThreadIndex": IterKind.THREAD_INDEX,
    "CommReduce": IterKind.COMM_REDUCE,
    "Ordered": IterKind.ORDERED,
    "Opaque": IterKind.OPAQUE,
    "Unrolled": IterKind.UNROLLED,
    "Vectorized": IterKind.VECTORIZED,
    "Parallelized": IterKind.PARALLELIZED,
}
ITER_KIND_NAMES = {v: k for k, v in _ITER_KINDS.items()}


def Range(begin: Any, end: Any) -> Any:  # noqa: N802
    """``T.Range(begin, end)``: the half-open interval (``begin + e`` reads back extent ``e``)."""
    lo = convert(begin)
    return RangeNode(lo, extent_between(lo, convert(end, lo.dtype)))


def iter_var(var: Any, dom: Any, iter_type: str, thread_tag: str = "") -> IterVar:
    """``T.iter_var(v, T.Range(0, n) or None, "ThreadIndex", "threadIdx.x")``."""
    if not isinstance(var, Var):
        raise IRError(f"T.iter_var: expected a variable, got {var!r}")
    if iter_type not in _ITER_KINDS:
        raise IRError(f"T.iter_var: unknown iter_type {iter_type!r}; one of {list(_ITER_KINDS)}")
    return IterVar(dom, var, _ITER_KINDS[iter_type], thread_tag)
