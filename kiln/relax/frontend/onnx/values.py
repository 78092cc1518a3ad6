"""What an ONNX tensor name stands for while importing, and import-time evaluation.

A value is one of:

- a numeric ``np.ndarray``: known at import time (initializers, constants, folded shape values);
- an ``np.ndarray`` of ``dtype=object`` holding Python ints and int64 `tir` expressions: a shape
  value that depends on symbolic dims (``Shape`` of a tensor of shape ``(n, 4)`` is
  ``[n, 4]``); the shape-subgraph operators (`SYM_FOLDERS`) compute on these at import time;
- a relax expression (a bound `Var`): computed at run time.

The importer evaluates a node at import time (`fold`) only where a converter needs to know a
value to build shapes; the graph pass `FoldConstant` folds everything else, so an ONNX model and
a torch model get the same folding, with the values of kiln's own kernels. A node whose inputs
are all numeric arrays is evaluated when

1. its output is *read as a value*: an input a converter reads at import time (`VALUE_INPUTS`:
   Reshape's shape, Slice's bounds, Resize's scales, ...) or one such a value is computed from
   (`read_as_values`; ``Shape`` and ``Size`` read only their input's shape, so the chain stops
   there) -- float scale arithmetic for a Resize included;
2. or it is integer arithmetic on small tensors: no float input, one of the shape operators
   (`SYM_FOLDERS`), and integer or bool results of at most `SMALL_INTS` elements (index and
   shape bookkeeping a graph op would only carry to `FoldConstant`);
3. or kiln has no converter for it (the graph could not hold it; ONNX's evaluation is the only
   way to import it);

and ``Constant`` nodes are their value. Float computations on constants (a weight's
``Transpose``, ``DequantizeLinear``, a product of initializers) become graph ops. The shape
operators evaluate in numpy (`SYM_FOLDERS`, the same code as for symbolic shape values); other
operators of cases 1 and 3 use ONNX's reference evaluator (``onnx.reference``).
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


SMALL_INTS = 1024
"""Integer and bool results up to this many elements are evaluated at import time (case 2)."""

_REDUCTIONS = ("Sum", "Mean", "Max", "Min", "Prod", "L1", "L2", "SumSquare", "LogSum", "LogSumExp")
VALUE_INPUTS: dict[str, tuple[int, ...]] = {
    "Reshape": (1,),
    "Expand": (1,),
    "ConstantOfShape": (0,),
    "Range": (0, 1, 2),
    "Slice": (1, 2, 3, 4),
    "Squeeze": (1,),
    "Unsqueeze": (1,),
    "Split": (1,),
    "Tile": (1,),
    "Trilu": (1,),
    "Pad": (1, 2, 3),
    "OneHot": (1, 2),
    "Dropout": (1, 2),
    "Resize": (1, 2, 3),
    "Upsample": (1,),
    "TopK": (1,),
    "CumSum": (1,),
    "CumProd": (1,),
    **{f"Reduce{r}": (1,) for r in _REDUCTIONS},
}
"""The inputs each converter reads as values at import time (`Ctx.const`, `Ctx.ints`,
``shape_input``, ``axes_of``), by ONNX op type and input index.

NOTE: a converter that starts reading an input at import time is listed here, or a value
computed from float constants reaches it as a graph op and it refuses the model."""

SHAPE_ONLY: dict[str, tuple[int, ...]] = {"Shape": (0,), "Size": (0,), "CastLike": (1,)}
"""Inputs whose shape or dtype, not values, a converter reads: what they are computed from is
not read as a value."""


def read_as_values(nodes: Any) -> set[str]:
    """The tensor names whose values are read at import time (`VALUE_INPUTS`) and every name
    they are computed from, up to ``Shape``-like reads (`SHAPE_ONLY`). ``nodes`` are ONNX
    nodes in graph order (topological, so one backward sweep sees every reader first)."""
    wanted: set[str] = set()
    for node in reversed(list(nodes)):
        if node.domain not in ("", "ai.onnx"):
            continue
        names = list(node.input)
        reads = [names[i] for i in VALUE_INPUTS.get(node.op_type, ()) if i < len(names)]
        if any(o in wanted for o in node.output):
            skip = SHAPE_ONLY.get(node.op_type, ())
            reads += [n for i, n in enumerate(names) if i not in skip]
        wanted.update(n for n in reads if n)
    return wanted


def fold(node: Any, ins: list[Any], opset: int, wanted: bool) -> list[np.ndarray] | None:
    """The outputs of ``node`` evaluated at import time, or None where its converter builds
    graph ops (the rule is in the module docstring; ``wanted``: its outputs are read as values,
    or it has no converter)."""
    if node.op_type in _RANDOM or node.op_type in _CONTROL or node.domain not in ("", "ai.onnx"):
        return None
    if node.op_type == "Constant":
        return _constant(node, opset)
    present = [v for v in ins if v is not None]
    if not all(is_const(v) for v in present):
        sym = SYM_FOLDERS.get(node.op_type)
        if sym is not None and all(is_known(v) for v in present) and present:
            try:
                return sym(node, ins)
            except _SYM_ERRORS:
                return None  # NOTE: the converter computes it at run time instead
        return None
    kinds = {np.asarray(v).dtype.kind for v in present}
    if not kinds <= set("biuf"):
        return None
    if wanted:
        return _numeric(node, ins) or _reference(node, ins, opset)
    if "f" in kinds or any(v.size > SMALL_INTS for v in present):
        return None
    outs = _numeric(node, ins)
    if outs is None or any(o.dtype.kind not in "biu" or o.size > SMALL_INTS for o in outs):
        return None
    return outs


def _constant(node: Any, opset: int) -> list[np.ndarray] | None:
    """A ``Constant`` node's value (from whichever attribute holds it)."""
    a = node.attrs
    for name, dt in (("value_float", "float32"), ("value_floats", "float32")):
        if name in a:
            return [np.array(a[name], dt)]
    for name in ("value_int", "value_ints"):
        if name in a:
            return [np.array(a[name], "int64")]
    if isinstance(a.get("value"), np.ndarray):
        return [a["value"]]
    return _reference(node, [], opset)  # a sparse value (or a string: refused there)


def _numeric(node: Any, ins: list[Any]) -> list[np.ndarray] | None:
    """A shape operator (`SYM_FOLDERS`) on numeric integer arrays, in the inputs' dtype; None
    for other operators and for inputs it does not compute on (floats, bool data)."""
    sym = SYM_FOLDERS.get(node.op_type)
    present = [v for v in ins if v is not None]
    if sym is None or any(v.dtype.kind == "f" for v in present):
        return None
    try:
        outs = sym(node, ins)
    except _SYM_ERRORS:
        return None
    if node.op_type == "Cast":
        import onnx

        dt = np.dtype(onnx.helper.tensor_dtype_to_np_dtype(node.attrs["to"]))
    else:
        dt = np.result_type(*present[1:]) if node.op_type == "Where" else present[0].dtype
    return [o if o.dtype == np.bool_ else o.astype(dt) for o in outs]


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


_SYM_ERRORS = (_CannotFold, TypeError, ValueError, IndexError, AttributeError, OverflowError)


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
