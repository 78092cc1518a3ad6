"""Core ATen operators as relax calls: `ATEN` maps ``str(op_overload)`` (``"aten.add.Tensor"``)
to a converter ``conv(ctx, *args, **kwargs)`` whose arguments are the FX node's, with nodes
replaced by their values (relax expressions for tensors, ints or `tir` expressions for sizes,
tuples for multi-output ops).

Arithmetic follows the node's result dtype (torch's type promotion, read from the node's
``meta["val"]``): operands are cast to it, Python scalars become constants of it.

The rest of the Core ATen opset converts in the sibling families (``aten_math``, ``aten_index``,
``aten_nn``, ``aten_attention``, ``aten_random``, ``activations``), which add to `ATEN` when
imported; `kiln.relax.frontend.torch.coverage` says which op converts where and which test
checks it. A symbolic size used as an operand (``x * x.shape[1]``) is a 0-d tensor
(`TorchCtx.size_tensor`).
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np

from kiln.errors import FrontendError
from kiln.relax import op as R
from kiln.relax.expr import Call, Expr, PrimValue, ShapeExpr, TupleGetItem, const
from kiln.relax.frontend.common import NodeSpan, ident
from kiln.relax.op.builtin import call_tir
from kiln.relax.struct_info import TensorStructInfo
from kiln.tir.expr import IntImm, PrimExpr
from kiln.topi.sort import topk_kernel

ATEN: dict[str, Callable[..., Any]] = {}


def aten(*names: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    def deco(fn: Callable[..., Any]) -> Callable[..., Any]:
        for n in names:
            ATEN[n if n.startswith(("aten.", "_operator.")) else f"aten.{n}"] = fn
        return fn

    return deco


def dtype_name(dt: Any) -> str:
    text = str(dt).removeprefix("torch.")
    if text not in (
        "float16",
        "float32",
        "float64",
        "bfloat16",
        "bool",
        "int8",
        "int16",
        "int32",
        "int64",
        "uint8",
    ):
        raise FrontendError(f"dtype {text} is not supported")
    return text


class TorchCtx:
    """The builder, the node (with its span) and the values of its arguments; ``seed``: the
    node's random seed, for the converters that draw random numbers
    (`kiln.relax.frontend.torch.aten_random`)."""

    def __init__(
        self, bb: Any, span: NodeSpan, node: Any, env: dict[Any, Any], seed: Any = None
    ) -> None:
        self.bb, self.span, self.node, self.env, self.seed = bb, span, node, env, seed

    def value(self, a: Any) -> Any:
        import torch.fx

        if isinstance(a, torch.fx.Node):
            return self.env[a]
        if isinstance(a, (list, tuple)):
            return type(a)(self.value(x) for x in a)
        return a

    def args(self) -> list[Any]:
        return [self.value(a) for a in self.node.args]

    def kwargs(self) -> dict[str, Any]:
        return {k: self.value(v) for k, v in self.node.kwargs.items()}

    @property
    def out_dtype(self) -> str:
        val = self.node.meta.get("val")
        if isinstance(val, (list, tuple)):
            val = val[0]
        return dtype_name(val.dtype)

    def emit(self, e: Expr, k: int = 0) -> Expr:

        if isinstance(e, Call) and e.span is None:
            e = replace(e, span=self.span)
        return self.bb.emit(e, ident(self.node.name if not k else f"{self.node.name}_{k}", "lv"))

    def tensor(self, v: Any, dtype: str | None = None) -> Expr:
        """``v`` as a tensor of ``dtype`` (default: the node's result dtype)."""
        dt = dtype or self.out_dtype
        if isinstance(v, Expr):
            if str(v.struct_info.dtype) != dt:
                return self.emit(R.astype(v, dt))
            return v
        if isinstance(v, PrimExpr):
            return self.size_tensor(v, dt)
        return const(np.array(v, dtype=np.dtype(dt)))

    def size_tensor(self, v: PrimExpr, dtype: str) -> Expr:
        """A symbolic size (``x * x.shape[1]``) as a 0-d tensor of ``dtype``: the one element
        of ``arange(v, v + 1)``."""
        if not v.dtype.is_integer:
            raise FrontendError(f"a symbolic {v.dtype} value used as a tensor is not supported")
        v = v.astype("int64")
        one = self.emit(R.arange(PrimValue(v), PrimValue(v + 1), 1, "int64"))
        scalar = self.emit(R.reshape(one, ShapeExpr([])))
        return scalar if dtype == "int64" else self.emit(R.astype(scalar, dtype))


def dims_of(e: Expr) -> list[Any]:
    s = e.struct_info
    if not isinstance(s, TensorStructInfo) or s.dims is None:
        raise FrontendError("a tensor of unknown shape")
    return [d.value if isinstance(d, IntImm) else d for d in s.dims]


def shape_arg(shape: Any) -> ShapeExpr:
    return ShapeExpr([d if isinstance(d, PrimExpr) else IntImm("int64", int(d)) for d in shape])


# -- element-wise ------------------------------------------------------------------------------
UNARY = {
    "abs": R.abs, "neg": R.negative, "relu": R.nn.relu, "isnan": R.isnan,
    "isinf": R.isinf, "isfinite": R.isfinite,
    "sign": lambda x: R.sign(x, nan_to_zero=True),  # NOTE: torch's sign of NaN is 0
    "isposinf": lambda x: R.isinf(x, detect_negative=False),
    "isneginf": lambda x: R.isinf(x, detect_positive=False),
}  # fmt: skip
FLOAT_UNARY = {
    "exp": R.exp, "log": R.log, "sqrt": R.sqrt, "rsqrt": R.rsqrt, "tanh": R.tanh,
    "sigmoid": R.sigmoid, "erf": R.erf, "sin": R.sin, "cos": R.cos, "tan": R.tan,
    "silu": R.nn.silu, "asin": R.asin, "acos": R.acos, "atan": R.atan, "sinh": R.sinh,
    "cosh": R.cosh, "asinh": R.asinh, "acosh": R.acosh, "atanh": R.atanh, "expm1": R.expm1,
    "log1p": R.log1p, "log2": R.log2, "log10": R.log10,
}  # fmt: skip
"""Float math: an integer operand is cast to the result's float dtype first, as torch does."""
ROUNDING = {"floor": R.floor, "ceil": R.ceil, "round": R.round, "trunc": R.trunc}
"""Rounding: integers are whole already and pass through."""
for _name, _fn in UNARY.items():
    ATEN[f"aten.{_name}.default"] = (lambda fn: lambda ctx, x: ctx.emit(fn(x)))(_fn)
for _name, _fn in FLOAT_UNARY.items():
    ATEN[f"aten.{_name}.default"] = (lambda fn: lambda ctx, x: ctx.emit(fn(ctx.tensor(x))))(_fn)
for _name, _fn in ROUNDING.items():
    ATEN[f"aten.{_name}.default"] = (
        lambda fn: lambda ctx, x: ctx.emit(fn(x)) if ctx.out_dtype.startswith("float") else x
    )(_fn)


@aten("clamp.default")
def _clamp(ctx: TorchCtx, x: Expr, lo: Any = None, hi: Any = None) -> Expr:
    if isinstance(lo, (int, float)) and isinstance(hi, (int, float)) and lo <= hi:
        return ctx.emit(R.clip(ctx.tensor(x), lo, hi))
    out = x
    if lo is not None:
        out = ctx.emit(R.maximum(out, ctx.tensor(lo)))
    if hi is not None:
        out = ctx.emit(R.minimum(out, ctx.tensor(hi)))
    return out


ARITH = {"add": R.add, "sub": R.subtract, "mul": R.multiply, "div": R.divide,
         "maximum": R.maximum, "minimum": R.minimum, "pow": R.power,
         "remainder": R.floor_mod, "fmod": R.trunc_mod}  # fmt: skip
COMPARE = {"eq": R.equal, "ne": R.not_equal, "lt": R.less, "le": R.less_equal,
           "gt": R.greater, "ge": R.greater_equal}  # fmt: skip
ROUNDED = {None: R.divide, "floor": R.floor_divide, "trunc": R.trunc_divide}
"""``aten.div``'s ``rounding_mode`` -> the division record."""


def _arith(fn: Any) -> Callable[..., Expr]:
    def conv(ctx: TorchCtx, a: Any, b: Any, alpha: Any = 1, rounding_mode: Any = None) -> Expr:
        dt = ctx.out_dtype
        if fn is R.divide and rounding_mode is None and not dt.startswith("float"):
            dt = "float32"
        x, y = ctx.tensor(a, dt), ctx.tensor(b, dt)
        if alpha != 1:
            y = ctx.emit(R.multiply(y, ctx.tensor(alpha, dt)))
        return ctx.emit((ROUNDED[rounding_mode] if fn is R.divide else fn)(x, y))

    return conv


def _compare(fn: Any) -> Callable[..., Expr]:
    def conv(ctx: TorchCtx, a: Any, b: Any) -> Expr:
        like = a if isinstance(a, Expr) else b
        dt = str(like.struct_info.dtype)
        if isinstance(a, Expr) and isinstance(b, Expr):
            import torch

            da, db = (n.meta["val"].dtype for n in ctx.node.args[:2])
            dt = dtype_name(torch.promote_types(da, db))
        return ctx.emit(fn(ctx.tensor(a, dt), ctx.tensor(b, dt)))

    return conv


for _name, _fn in ARITH.items():
    for _ov in ("Tensor", "Scalar", "default", "Tensor_Scalar", "Tensor_Tensor", "Tensor_mode",
                "Scalar_mode"):  # fmt: skip
        ATEN[f"aten.{_name}.{_ov}"] = _arith(_fn)
ATEN["aten.remainder.Scalar_Tensor"] = _arith(R.floor_mod)
for _name, _fn in COMPARE.items():
    for _ov in ("Tensor", "Scalar", "default"):
        ATEN[f"aten.{_name}.{_ov}"] = _compare(_fn)


@aten("rsub.Scalar", "rsub.Tensor")
def _rsub(ctx: TorchCtx, a: Any, b: Any, alpha: Any = 1) -> Expr:
    """``b - alpha * a``: one ``subtract`` (reversed) when ``alpha`` is 1."""
    return _arith(R.subtract)(ctx, b, a, alpha)


@aten("where.self")
def _where(ctx: TorchCtx, cond: Expr, a: Any, b: Any) -> Expr:
    return ctx.emit(R.where(ctx.tensor(cond, "bool"), ctx.tensor(a), ctx.tensor(b)))


@aten("masked_fill.Scalar", "masked_fill.Tensor")
def _masked_fill(ctx: TorchCtx, x: Expr, mask: Expr, value: Any) -> Expr:
    return ctx.emit(R.where(ctx.tensor(mask, "bool"), ctx.tensor(value), x))


@aten("reciprocal.default")
def _reciprocal(ctx: TorchCtx, x: Expr) -> Expr:
    return ctx.emit(R.divide(ctx.tensor(1), ctx.tensor(x)))


@aten("_to_copy.default", "clone.default", "alias.default", "detach.default",
      "lift_fresh_copy.default", "contiguous.default")  # fmt: skip
def _copy(ctx: TorchCtx, x: Any, *args: Any, dtype: Any = None, **kwargs: Any) -> Any:
    if dtype is not None and isinstance(x, Expr):
        return ctx.tensor(x, dtype_name(dtype))
    return x


@aten("_assert_tensor_metadata.default", "_assert_scalar.default",
      "sym_constrain_range_for_size.default")  # fmt: skip
def _ignore(ctx: TorchCtx, *args: Any, **kwargs: Any) -> None:
    return None


# -- sizes ---------------------------------------------------------------------------------------
@aten("sym_size.int")
def _sym_size(ctx: TorchCtx, x: Expr, dim: int) -> Any:
    return dims_of(x)[dim]


for _name, _op in (("mul", operator.mul), ("add", operator.add), ("sub", operator.sub),
                   ("floordiv", operator.floordiv)):  # fmt: skip
    ATEN[f"_operator.{_name}"] = (lambda f: lambda ctx, a, b: f(a, b))(_op)


@aten("_operator.getitem")
def _getitem(ctx: TorchCtx, value: Any, index: int) -> Any:
    if isinstance(value, (list, tuple)):
        return value[index]
    return ctx.emit(TupleGetItem(value, index), index)


# -- shapes --------------------------------------------------------------------------------------
@aten("view.default", "_unsafe_view.default", "reshape.default")
def _view(ctx: TorchCtx, x: Expr, shape: Any) -> Expr:
    return ctx.emit(R.reshape(x, shape_arg(shape)))


@aten("permute.default")
def _permute(ctx: TorchCtx, x: Expr, dims: Any) -> Expr:
    return ctx.emit(R.permute_dims(x, [int(d) for d in dims]))


@aten("transpose.int")
def _transpose(ctx: TorchCtx, x: Expr, a: int, b: int) -> Expr:
    n = len(dims_of(x))
    perm = list(range(n))
    perm[a % n], perm[b % n] = perm[b % n], perm[a % n]
    return ctx.emit(R.permute_dims(x, perm))


@aten("t.default")
def _t(ctx: TorchCtx, x: Expr) -> Expr:
    return ctx.emit(R.permute_dims(x)) if len(dims_of(x)) == 2 else x


@aten("expand.default")
def _expand(ctx: TorchCtx, x: Expr, shape: Any, implicit: bool = False) -> Expr:
    src = dims_of(x)
    full = [src[k - len(shape) + len(src)] if (not isinstance(d, PrimExpr) and d == -1) else d
            for k, d in enumerate(shape)]  # fmt: skip
    if full == src:
        return x
    return ctx.emit(R.broadcast_to(x, shape_arg(full)))


@aten("unsqueeze.default")
def _unsqueeze(ctx: TorchCtx, x: Expr, dim: int) -> Expr:
    return ctx.emit(R.expand_dims(x, [dim % (len(dims_of(x)) + 1)]))


@aten("squeeze.dim", "squeeze.dims", "squeeze.default")
def _squeeze(ctx: TorchCtx, x: Expr, dims: Any = None) -> Expr:
    shape = dims_of(x)
    items = list(range(len(shape))) if dims is None else (
        [dims] if isinstance(dims, int) else list(dims))  # fmt: skip
    keep = [d % len(shape) for d in items if not isinstance(shape[d], PrimExpr)
            and shape[d] == 1]  # fmt: skip
    return ctx.emit(R.squeeze(x, keep)) if keep else x


@aten("cat.default")
def _cat(ctx: TorchCtx, tensors: Any, dim: int = 0) -> Expr:
    parts = [ctx.tensor(t) for t in tensors]
    return ctx.emit(R.concat(parts, dim))


@aten("split_with_sizes.default", "split.Tensor")
def _split(ctx: TorchCtx, x: Expr, sizes: Any, dim: int = 0) -> tuple[Expr, ...]:
    n = dims_of(x)[dim]
    if isinstance(sizes, int):
        sizes = [sizes] * (-(-n // sizes))
        sizes[-1] = n - sizes[0] * (len(sizes) - 1)
    cuts = list(np.cumsum(sizes[:-1]).tolist())
    out = ctx.emit(R.split(x, cuts if cuts else 1, dim))
    return tuple(ctx.emit(TupleGetItem(out, k), k + 1) for k in range(len(sizes)))


@aten("topk.default")
def _topk(
    ctx: TorchCtx, x: Expr, k: int, dim: int = -1, largest: bool = True, sorted: bool = True
) -> tuple[Expr, Expr]:
    """``torch.topk``: values and int64 indices in order (`kiln.topi.sort.topk_kernel`; NaN
    counts as the largest value, as in torch)."""

    x_dims = dims_of(x)
    if any(isinstance(d, PrimExpr) for d in x_dims) or not isinstance(k, int):
        raise FrontendError("topk needs a constant k and constant dims")
    axis = dim % len(x_dims)
    if not 0 <= k <= x_dims[axis]:
        raise FrontendError(f"topk's k is {k}; it must lie in 0..{x_dims[axis]}")
    dt = str(x.struct_info.dtype)
    gv = ctx.bb.add_func(topk_kernel(x_dims, axis, k, bool(largest), dt), "topk")
    out = [IntImm("int64", d) for d in x_dims]
    out[axis] = IntImm("int64", k)
    sinfo = [TensorStructInfo(out, dt), TensorStructInfo(out, "int64")]
    pair = ctx.emit(call_tir(gv, [x], sinfo))
    return ctx.emit(TupleGetItem(pair, 0), 1), ctx.emit(TupleGetItem(pair, 1), 2)


@aten("slice.Tensor")
def _slice(ctx: TorchCtx, x: Expr, dim: int = 0, start: Any = None, end: Any = None,
           step: int = 1) -> Expr:  # fmt: skip
    n = dims_of(x)[dim % len(dims_of(x))]
    start = 0 if start is None else start
    end = n if end is None else end
    if isinstance(start, PrimExpr) or isinstance(end, PrimExpr):
        if step != 1:
            raise FrontendError("slicing with symbolic bounds needs step 1")
        idx = ctx.emit(R.arange(PrimValue(_i64(start)), PrimValue(_i64(end)), 1, "int64"))
        return ctx.emit(R.take(x, idx, dim))
    big = 2**62
    start, end = max(min(int(start), big), -big), max(min(int(end), big), -big)
    return ctx.emit(R.strided_slice(x, [dim], [start], [end], [step]))


def _i64(v: Any) -> PrimExpr:
    return v if isinstance(v, PrimExpr) else IntImm("int64", int(v))


@aten("select.int")
def _select(ctx: TorchCtx, x: Expr, dim: int, index: Any) -> Expr:
    n = dims_of(x)[dim]
    if isinstance(index, int) and index < 0:
        index = n + index
    idx = const(np.array(index, "int64")) if isinstance(index, int) else None
    if idx is None:
        raise FrontendError("select with a symbolic index is not supported")
    return ctx.emit(R.take(x, idx, dim))


@aten("embedding.default", "index_select.default")
def _embedding(ctx: TorchCtx, weight: Expr, indices: Any, *rest: Any) -> Expr:
    if "index_select" in str(ctx.node.target):
        weight, dim, indices = weight, indices, rest[0]
        return ctx.emit(R.take(weight, indices, dim))
    return ctx.emit(R.take(weight, indices, 0))


@aten("constant_pad_nd.default")
def _pad(ctx: TorchCtx, x: Expr, pad: Any, value: float = 0.0) -> Expr:
    n = len(dims_of(x))
    width = [0] * (2 * n)
    for k in range(len(pad) // 2):
        axis = n - 1 - k
        width[2 * axis], width[2 * axis + 1] = pad[2 * k], pad[2 * k + 1]
    return ctx.emit(R.nn.pad(x, width, value))


# -- creation ------------------------------------------------------------------------------------
@aten("full.default")
def _full(ctx: TorchCtx, shape: Any, value: Any, **kwargs: Any) -> Expr:
    dt = ctx.out_dtype
    return ctx.emit(R.full(shape_arg(shape), ctx.tensor(value, dt), dt))


@aten("full_like.default")
def _full_like(ctx: TorchCtx, x: Expr, value: Any, **kwargs: Any) -> Expr:
    dt = ctx.out_dtype
    return ctx.emit(R.full(shape_arg(dims_of(x)), ctx.tensor(value, dt), dt))


@aten("scalar_tensor.default")
def _scalar_tensor(ctx: TorchCtx, value: Any, **kwargs: Any) -> Expr:
    return ctx.tensor(value)


@aten("arange.default", "arange.start", "arange.start_step")
def _arange(ctx: TorchCtx, *bounds: Any, **kwargs: Any) -> Expr:
    items = list(bounds) + [1] * (3 - len(bounds)) if len(bounds) > 1 else [0, bounds[0], 1]
    dt = ctx.out_dtype
    if any(isinstance(b, PrimExpr) for b in items):
        return ctx.emit(R.arange(*(PrimValue(_i64(b)) for b in items), dtype=dt))
    return const(np.arange(*items, dtype=np.dtype(dt)))


# -- reductions and normalizations ---------------------------------------------------------------
def _reduce(fn: Any) -> Callable[..., Expr]:
    def conv(ctx: TorchCtx, x: Expr, dims: Any = None, keepdim: bool = False, **kw: Any) -> Expr:
        axes = None if dims is None else ([dims] if isinstance(dims, int) else list(dims))
        # NOTE: torch reduces every axis for an empty list; a sum of bools is int64
        return ctx.emit(fn(ctx.tensor(x), axes or None, keepdim))

    return conv


for _name, _fn in (("sum.dim_IntList", R.sum), ("mean.dim", R.mean), ("amax.default", R.max),
                   ("amin.default", R.min), ("prod.dim_int", R.prod)):  # fmt: skip
    ATEN[f"aten.{_name}"] = _reduce(_fn)


@aten("var.correction")
def _var(ctx: TorchCtx, x: Expr, dims: Any = None, correction: Any = None,
         keepdim: bool = False) -> Expr:  # fmt: skip
    v = ctx.emit(R.variance(x, dims, keepdim))
    corr = 1 if correction is None else correction
    if corr:
        shape = dims_of(x)
        n = 1
        for d in dims if dims is not None else range(len(shape)):
            n = n * shape[d]
        v = ctx.emit(R.multiply(v, ctx.tensor(float(n) / float(n - corr))))
    return v


@aten("argmax.default", "argmin.default")
def _argmax(ctx: TorchCtx, x: Expr, dim: Any = None, keepdim: bool = False) -> Expr:
    fn = R.argmax if "argmax" in str(ctx.node.target) else R.argmin
    return ctx.emit(fn(x, dim, keepdim))


@aten("_softmax.default", "_log_softmax.default")
def _softmax(ctx: TorchCtx, x: Expr, dim: int, half_to_float: bool = False) -> Expr:
    fn = R.nn.softmax if "_softmax" in str(ctx.node.target) and "log" not in str(
        ctx.node.target) else R.nn.log_softmax  # fmt: skip
    return ctx.emit(fn(x, dim))


@aten("native_layer_norm.default")
def _layer_norm(ctx: TorchCtx, x: Expr, shape: Any, w: Any, b: Any, eps: float) -> tuple:
    n = len(dims_of(x))
    axes = list(range(n - len(shape), n))
    if w is None:
        w = const(np.ones([int(s) for s in shape], ctx.out_dtype))
    if b is None:
        b = const(np.zeros([int(s) for s in shape], ctx.out_dtype))
    return (ctx.emit(R.nn.layer_norm(x, w, b, axes, eps)), None, None)


@aten("_native_batch_norm_legit_no_training.default")
def _batch_norm(ctx: TorchCtx, x: Expr, w: Any, b: Any, mean: Expr, var: Expr,
                momentum: float, eps: float) -> tuple:  # fmt: skip
    c = dims_of(x)[1]
    w = w if w is not None else const(np.ones([c], ctx.out_dtype))
    b = b if b is not None else const(np.zeros([c], ctx.out_dtype))
    out = ctx.emit(R.nn.batch_norm(x, w, b, mean, var, 1, eps))
    return (ctx.emit(TupleGetItem(out, 0), 1), None, None)


# -- linear algebra and windows ------------------------------------------------------------------
@aten("mm.default", "bmm.default", "matmul.default")
def _mm(ctx: TorchCtx, a: Expr, b: Expr) -> Expr:
    return ctx.emit(R.matmul(a, b))


@aten("addmm.default")
def _addmm(ctx: TorchCtx, bias: Expr, a: Expr, b: Expr, beta: Any = 1, alpha: Any = 1) -> Expr:
    out = ctx.emit(R.matmul(a, b))
    if alpha != 1:
        out = ctx.emit(R.multiply(out, ctx.tensor(alpha)))
    if beta != 1:
        bias = ctx.emit(R.multiply(bias, ctx.tensor(beta)))
    return ctx.emit(R.add(out, bias))


@aten("max_pool2d_with_indices.default", "max_pool2d.default")
def _max_pool(ctx: TorchCtx, x: Expr, kernel: Any, stride: Any = None, padding: Any = 0,
              dilation: Any = 1, ceil_mode: bool = False) -> Any:  # fmt: skip
    stride = stride or kernel
    p = [padding] * 2 if isinstance(padding, int) else list(padding)
    out = ctx.emit(R.nn.max_pool2d(x, kernel, stride, [p[0], p[1], p[0], p[1]], dilation,
                                   ceil_mode))  # fmt: skip
    return (out, None) if "indices" in str(ctx.node.target) else out


@aten("avg_pool2d.default")
def _avg_pool(ctx: TorchCtx, x: Expr, kernel: Any, stride: Any = None, padding: Any = 0,
              ceil_mode: bool = False, count_include_pad: bool = True,
              divisor_override: Any = None) -> Expr:  # fmt: skip
    if divisor_override is not None:
        raise FrontendError("avg_pool2d with divisor_override is not supported")
    stride = stride or kernel
    p = [padding] * 2 if isinstance(padding, int) else list(padding)
    return ctx.emit(R.nn.avg_pool2d(x, kernel, stride, [p[0], p[1], p[0], p[1]], 1, ceil_mode,
                                    count_include_pad))  # fmt: skip


@aten("_adaptive_avg_pool2d.default", "adaptive_avg_pool2d.default")
def _adaptive(ctx: TorchCtx, x: Expr, size: Any) -> Expr:
    return ctx.emit(R.nn.adaptive_avg_pool2d(x, list(size)))
