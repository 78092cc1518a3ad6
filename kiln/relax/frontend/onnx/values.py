"""What an ONNX tensor name stands for while importing, and import-time evaluation.

A value is one of:

- a numeric ``np.ndarray``: known at import time (initializers, constants, folded subgraphs);
- an ``np.ndarray`` of ``dtype=object`` holding Python ints and int64 `tir` expressions: a shape
  value that depends on symbolic dims (``Shape`` of a tensor of shape ``(n, 4)`` is
  ``[n, 4]``); the shape-subgraph operators (`SYM_FOLDERS`) compute on these at import time;
- a relax expression (a bound `Var`): computed at run time.

`fold` evaluates a node whose inputs are all numeric arrays with ONNX's reference evaluator
(``onnx.reference``), so constant subgraphs never reach the compiled model.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from kiln.errors import FrontendError
from kiln.relax.analysis.struct_info import simplify_dim
from kiln.tir.expr import IntImm, PrimExpr

MISSING = object()  # a name no node produced
POISON = object()  # an output of a node that could not be imported (reported at the end)

_RANDOM = {
    "RandomNormal",
    "RandomUniform",
    "RandomNormalLike",
    "RandomUniformLike",
    "Bernoulli",
    "Multinomial",
}
_CONTROL = {"If", "Loop", "Scan", "SequenceMap"}
_KIND_DTYPES = {"f": "float", "i": "int", "u": "uint"}


def onnx_dtype(elem_type: int, what: str) -> str:
    """The kiln dtype name of an ONNX element type (a `FrontendError` for ones kiln lacks)."""
    import onnx

    try:
        np_dtype = np.dtype(onnx.helper.tensor_dtype_to_np_dtype(elem_type))
    except (KeyError, TypeError, ValueError):
        np_dtype = None
    if np_dtype is None or np_dtype.kind not in "biuf":
        name = onnx.TensorProto.DataType.Name(elem_type) if elem_type else "UNDEFINED"
        raise FrontendError(f"{what}: element type {name} is not supported")
    return "bool" if np_dtype.kind == "b" else str(np_dtype)


def tensor_to_numpy(t: Any) -> np.ndarray:
    from onnx import numpy_helper

    try:
        arr = numpy_helper.to_array(t)
    except Exception as e:  # external data missing, unknown types
        raise FrontendError(f"initializer {t.name!r} cannot be read: {e}") from None
    return np.asarray(arr)


def is_known(v: Any) -> bool:
    """A numeric or symbolic array (known at import time)."""
    return isinstance(v, np.ndarray)


def is_const(v: Any) -> bool:
    return isinstance(v, np.ndarray) and v.dtype != object


def fold(node: Any, ins: list[Any], opset: int) -> list[np.ndarray] | None:
    """The outputs of ``node`` if every input is a numeric array (else None)."""
    if node.op_type in _RANDOM or node.op_type in _CONTROL or node.domain not in ("", "ai.onnx"):
        return None
    present = [v for v in ins if v is not None]
    if not all(is_const(v) for v in present):
        sym = SYM_FOLDERS.get(node.op_type)
        if sym is not None and all(is_known(v) for v in present) and present:
            try:
                return sym(node, ins)
            except (_CannotFold, TypeError, ValueError, IndexError, AttributeError):
                return None  # NOTE: the converter computes it at run time instead
        return None
    if any(np.asarray(v).dtype.kind not in "biuf" for v in present):
        return None
    return _reference(node, ins, opset)


def _reference(node: Any, ins: list[Any], opset: int) -> list[np.ndarray] | None:
    from onnx.reference import ReferenceEvaluator

    feeds = {name: v for name, v in zip(node.inputs, ins) if name and v is not None}
    try:
        outs = ReferenceEvaluator(node.proto, opsets={"": opset}).run(None, feeds)
    except Exception:  # let the converter report what is wrong (or compute it at run time)
        return None
    result = [np.asarray(o) for o in outs]
    if any(o.dtype.kind not in "biuf" for o in result):
        return None
    return result


# -- symbolic shape values ---------------------------------------------------------------------
class _CannotFold(Exception):
    """The symbolic arrays do not allow import-time evaluation; compute at run time."""


def sym_array(dims: Any) -> np.ndarray:
    """An int64 shape value from dims (numeric if every dim is a constant)."""
    items = [d.value if isinstance(d, IntImm) else d for d in dims]
    return tidy(np.array(items + [None], dtype=object)[:-1])


def tidy(arr: Any) -> np.ndarray:
    """Simplify each element; a numeric int64 array when every element is a constant."""
    if not isinstance(arr, np.ndarray):
        one = np.empty((), dtype=object)
        one[()] = arr
        arr = one
    flat = []
    for e in arr.reshape(-1):
        if isinstance(e, PrimExpr):
            e = simplify_dim(e)
            e = e.value if isinstance(e, IntImm) else e
        elif isinstance(e, (bool, np.bool_)):
            raise _CannotFold()
        elif isinstance(e, (int, np.integer)):
            e = int(e)
        else:
            raise _CannotFold()
        flat.append(e)
    if all(isinstance(e, int) for e in flat):
        return np.array(flat, dtype=np.int64).reshape(arr.shape)
    out = np.empty(len(flat), dtype=object)
    out[:] = flat
    return out.reshape(arr.shape)


def _attr_or_input(node: Any, ins: list[Any], name: str, index: int) -> Any:
    if name in node.attrs:
        return node.attrs[name]
    if len(ins) > index and ins[index] is not None:
        v = ins[index]
        if not is_const(v):
            raise _CannotFold()
        return [int(a) for a in np.asarray(v).reshape(-1)]
    return None


def _gather(node: Any, ins: list[Any]) -> list[np.ndarray]:
    data, idx = ins
    if not is_const(idx):
        raise _CannotFold()
    return [tidy(np.take(data, idx.astype(np.int64), axis=node.attrs.get("axis", 0)))]


def _concat(node: Any, ins: list[Any]) -> list[np.ndarray]:
    parts = [np.asarray(v, dtype=object) for v in ins]
    return [tidy(np.concatenate(parts, axis=node.attrs["axis"]))]


def _unsqueeze(node: Any, ins: list[Any]) -> list[np.ndarray]:
    axes = _attr_or_input(node, ins, "axes", 1)
    data = ins[0]
    rank = data.ndim + len(axes)
    for a in sorted(int(a) % rank for a in axes):
        data = np.expand_dims(data, a)
    return [tidy(data)]


def _squeeze(node: Any, ins: list[Any]) -> list[np.ndarray]:
    axes = _attr_or_input(node, ins, "axes", 1)
    data = ins[0]
    return [tidy(np.squeeze(data, axis=None if axes is None else tuple(axes)))]


def _slice(node: Any, ins: list[Any]) -> list[np.ndarray]:
    data = ins[0]
    starts = _attr_or_input(node, ins, "starts", 1)
    ends = _attr_or_input(node, ins, "ends", 2)
    axes = _attr_or_input(node, ins, "axes", 3) or list(range(len(starts)))
    steps = _attr_or_input(node, ins, "steps", 4) or [1] * len(starts)
    index = [slice(None)] * data.ndim
    for a, b, e, s in zip(axes, starts, ends, steps):
        index[int(a) % data.ndim] = slice(int(b), int(e), int(s))
    return [tidy(data[tuple(index)])]


def _cast(node: Any, ins: list[Any]) -> list[np.ndarray]:
    import onnx

    to = node.attrs["to"]
    if to not in (onnx.TensorProto.INT64, onnx.TensorProto.INT32):
        raise _CannotFold()
    return [tidy(ins[0])]


def _reshape(node: Any, ins: list[Any]) -> list[np.ndarray]:
    data, shape = ins
    if not is_const(shape):
        raise _CannotFold()
    dims = [
        data.shape[k] if d == 0 and not node.attrs.get("allowzero") else int(d)
        for k, d in enumerate(shape.tolist())
    ]
    return [tidy(data.reshape(dims))]


def _binary(fn: Callable[[Any, Any], Any]) -> Callable[[Any, list[Any]], list[np.ndarray]]:
    def run(node: Any, ins: list[Any]) -> list[np.ndarray]:
        a, b = (np.asarray(v, dtype=object) for v in ins)
        try:
            return [tidy(np.frompyfunc(fn, 2, 1)(a, b))]
        except (TypeError, ValueError, ZeroDivisionError):
            raise _CannotFold() from None

    return run


def _int_div(a: Any, b: Any) -> Any:
    if isinstance(a, int) and isinstance(b, int):
        return int(a / b)
    return a // b  # NOTE: dims are non-negative, where truncation and floor agree


def _equal(node: Any, ins: list[Any]) -> list[np.ndarray]:
    def eq(a: Any, b: Any) -> bool:
        if isinstance(a, int) and isinstance(b, int):
            return a == b
        if a is b:
            return True
        other = b if isinstance(a, PrimExpr) else a
        if isinstance(other, int) and other < 0:
            return False  # a dim is never negative
        raise _CannotFold()

    a, b = (np.asarray(v, dtype=object) for v in ins)
    out = np.frompyfunc(eq, 2, 1)(a, b)
    return [np.asarray(out, dtype=bool)]


def _where(node: Any, ins: list[Any]) -> list[np.ndarray]:
    cond, a, b = ins
    if not is_const(cond):
        raise _CannotFold()
    return [tidy(np.where(cond, np.asarray(a, dtype=object), np.asarray(b, dtype=object)))]


def _identity(node: Any, ins: list[Any]) -> list[np.ndarray]:
    return [ins[0]]


def _prod(node: Any, ins: list[Any]) -> list[np.ndarray]:
    data = ins[0]
    if data.ndim != 1 or node.attrs.get("keepdims", 1) not in (0, 1):
        raise _CannotFold()
    out: Any = 1
    for e in data:
        out = out * e
    arr = tidy(np.array([out, None], dtype=object)[:1])
    return [arr if node.attrs.get("keepdims", 1) else arr.reshape(())]


SYM_FOLDERS: dict[str, Callable[[Any, list[Any]], list[np.ndarray]]] = {
    "Gather": _gather,
    "Concat": _concat,
    "Unsqueeze": _unsqueeze,
    "Squeeze": _squeeze,
    "Slice": _slice,
    "Cast": _cast,
    "Reshape": _reshape,
    "Identity": _identity,
    "Add": _binary(lambda a, b: a + b),
    "Sub": _binary(lambda a, b: a - b),
    "Mul": _binary(lambda a, b: a * b),
    "Div": _binary(_int_div),
    "Equal": _equal,
    "Where": _where,
    "ReduceProd": _prod,
}
