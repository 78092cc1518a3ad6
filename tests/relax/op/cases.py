"""The numpy check of every graph-level operator: a `Case` per operator (at least one), run
with fixed and with symbolic shapes by tests/relax/op/test_op_numpy.py. A new operator record
needs an entry here (tests/relax/op/test_registry.py says so)."""

from __future__ import annotations

import math

import numpy as np

from kiln import relax
from kiln.relax import op as R
from kiln.topi.layout import transform_array
from tests.relax.op.cases_activation import ACTIVATION
from tests.relax.op.cases_arith import ARITH
from tests.relax.op.cases_index import INDEX
from tests.relax.op.cases_random import RANDOM
from tests.relax.op.harness import Case

RNG = np.random.default_rng(7)
_erf = np.vectorize(math.erf, otypes=[np.float32])


def f32(*shape: int, lo: float = -2.0, hi: float = 2.0) -> np.ndarray:
    return RNG.uniform(lo, hi, shape).astype("float32")


def i32(*shape: int, lo: int = -5, hi: int = 6) -> np.ndarray:
    return RNG.integers(lo, hi, shape).astype("int32")


def bools(*shape: int) -> np.ndarray:
    return RNG.integers(0, 2, shape).astype(bool)


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1 / (1 + np.exp(-x))


def _gelu(x: np.ndarray) -> np.ndarray:
    return 0.5 * x * (1 + _erf(x / np.float32(math.sqrt(2))))


def _gelu_tanh(x: np.ndarray) -> np.ndarray:
    return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))


X = f32(3, 4)
POS = f32(3, 4, lo=0.1, hi=3.0)
NAN = X.copy()
NAN[1, 2] = np.nan

UNARY = [
    Case("relax.exp", R.exp, [X], np.exp),
    Case("relax.log", R.log, [POS], np.log),
    Case("relax.sqrt", R.sqrt, [POS], np.sqrt),
    Case("relax.rsqrt", R.rsqrt, [POS], lambda a: 1 / np.sqrt(a)),
    Case("relax.tanh", R.tanh, [X], np.tanh),
    Case("relax.sigmoid", R.sigmoid, [X], _sigmoid),
    Case("relax.erf", R.erf, [X], _erf),
    Case("relax.sin", R.sin, [X], np.sin),
    Case("relax.cos", R.cos, [X], np.cos),
    Case("relax.floor", R.floor, [X], np.floor),
    Case("relax.ceil", R.ceil, [X], np.ceil),
    Case("relax.round", R.round, [X * 3], np.round),
    Case("relax.abs", R.abs, [X], np.abs),
    Case("relax.abs", R.abs, [i32(3, 4)], np.abs, name="int"),
    Case("relax.negative", R.negative, [X], np.negative),
    Case("relax.bitwise_not", R.bitwise_not, [i32(3, 4)], np.invert),
    Case("relax.tan", R.tan, [X * 0.5], np.tan),
    Case("relax.asin", R.asin, [X * 0.4], np.arcsin),
    Case("relax.acos", R.acos, [X * 0.4], np.arccos),
    Case("relax.atan", R.atan, [X], np.arctan),
    Case("relax.sinh", R.sinh, [X], np.sinh),
    Case("relax.cosh", R.cosh, [X], np.cosh),
    Case("relax.asinh", R.asinh, [X], np.arcsinh),
    Case("relax.acosh", R.acosh, [POS + 1], np.arccosh),
    Case("relax.atanh", R.atanh, [X * 0.4], np.arctanh),
    Case("relax.logical_not", R.logical_not, [bools(3, 4)], np.logical_not),
    Case("relax.isnan", R.isnan, [NAN], np.isnan),
    Case("relax.clip", lambda x: R.clip(x, -0.5, 0.75), [X], lambda a: np.clip(a, -0.5, 0.75)),
    Case("relax.astype", lambda x: R.astype(x, "int32"), [X * 3], lambda a: a.astype("int32")),
    Case("relax.nn.relu", R.nn.relu, [X], lambda a: np.maximum(a, 0)),
    Case("relax.nn.gelu", R.nn.gelu, [X], _gelu),
    Case("relax.nn.gelu_tanh", R.nn.gelu_tanh, [X], _gelu_tanh),
    Case("relax.nn.silu", R.nn.silu, [X], lambda a: a * _sigmoid(a)),
]

A, B = f32(3, 4), f32(4)
IA, IB = i32(3, 4), i32(4, lo=1, hi=5)
BA, BB = bools(3, 4), bools(4)
BINARY = [
    Case("relax.add", R.add, [A, B], np.add),
    Case("relax.subtract", R.subtract, [A, B], np.subtract),
    Case("relax.multiply", R.multiply, [A, B], np.multiply),
    Case("relax.divide", R.divide, [A, POS[0]], np.divide),
    Case("relax.floor_divide", R.floor_divide, [IA, IB], np.floor_divide),
    Case("relax.floor_divide", R.floor_divide, [A, POS[0]], np.floor_divide, name="float"),
    Case("relax.power", R.power, [POS, B], np.power, rtol=1e-4),
    Case("relax.maximum", R.maximum, [A, B], np.maximum),
    Case("relax.bitwise_and", R.bitwise_and, [IA, IB], np.bitwise_and),
    Case("relax.bitwise_or", R.bitwise_or, [IA, IB], np.bitwise_or),
    Case("relax.bitwise_xor", R.bitwise_xor, [IA, IB], np.bitwise_xor),
    Case("relax.left_shift", R.left_shift, [IA, IB], np.left_shift),
    Case("relax.right_shift", R.right_shift, [IA, IB], np.right_shift),
    Case("relax.minimum", R.minimum, [IA, IB], np.minimum),
    Case("relax.equal", R.equal, [IA, IB], np.equal),
    Case("relax.not_equal", R.not_equal, [IA, IB], np.not_equal),
    Case("relax.less", R.less, [A, B], np.less),
    Case("relax.less_equal", R.less_equal, [IA, IB], np.less_equal),
    Case("relax.greater", R.greater, [A, B], np.greater),
    Case("relax.greater_equal", R.greater_equal, [IA, IB], np.greater_equal),
    Case("relax.logical_and", R.logical_and, [BA, BB], np.logical_and),
    Case("relax.logical_or", R.logical_or, [BA, BB], np.logical_or),
    Case("relax.where", R.where, [BA, A, B], np.where),
]

R3 = f32(3, 4, 5)
REDUCE = [
    Case("relax.sum", lambda x: R.sum(x, axis=1), [R3], lambda a: a.sum(axis=1), rtol=1e-5),
    Case(
        "relax.mean",
        lambda x: R.mean(x, axis=[0, 2], keepdims=True),
        [R3],
        lambda a: a.mean(axis=(0, 2), keepdims=True),
    ),
    Case("relax.max", lambda x: R.max(x), [R3], lambda a: a.max()),
    Case("relax.min", lambda x: R.min(x, axis=-1), [R3], lambda a: a.min(axis=-1)),
    Case(
        "relax.prod",
        lambda x: R.prod(x, axis=1),
        [f32(3, 4, lo=0.5, hi=1.5)],
        lambda a: a.prod(axis=1),
    ),
    Case(
        "relax.variance",
        lambda x: R.variance(x, axis=[1, 2]),
        [R3],
        lambda a: a.var(axis=(1, 2)),
        rtol=1e-4,
    ),
    Case("relax.argmax", lambda x: R.argmax(x, axis=1), [R3], lambda a: a.argmax(axis=1)),
    Case("relax.argmin", lambda x: R.argmin(x), [R3], lambda a: np.asarray(a.argmin())),
    Case(
        "relax.argmax",
        lambda x: R.argmax(x, axis=-1, keepdims=True),
        [i32(3, 4)],
        lambda a: a.argmax(axis=-1)[:, None],
        name="keepdims",
    ),
]


def np_conv2d(x, w, stride=(1, 1), pad=(0, 0, 0, 0), dil=(1, 1), groups=1):
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad[0], pad[2]), (pad[1], pad[3])))
    oh = (h + pad[0] + pad[2] - dil[0] * (kh - 1) - 1) // stride[0] + 1
    ow = (wd + pad[1] + pad[3] - dil[1] * (kw - 1) - 1) // stride[1] + 1
    out = np.zeros((n, o, oh, ow), dtype=x.dtype)
    og = o // groups
    for oc in range(o):
        g = oc // og
        for r in range(kh):
            for s in range(kw):
                hs, ws = r * dil[0], s * dil[1]
                patch = xp[:, g * cg : (g + 1) * cg, hs : hs + stride[0] * oh : stride[0],
                           ws : ws + stride[1] * ow : stride[1]]  # fmt: skip
                out[:, oc] += np.einsum("nchw,c->nhw", patch, w[oc, :, r, s])
    return out


def np_pool(x, k, s, pad, kind, count_include_pad=False):
    n, c, h, w = x.shape
    fill = -np.inf if kind == "max" else 0.0
    xp = np.pad(x, ((0, 0), (0, 0), (pad[0], pad[2]), (pad[1], pad[3])), constant_values=fill)
    ones = np.pad(np.ones((h, w)), ((pad[0], pad[2]), (pad[1], pad[3])))
    oh = (h + pad[0] + pad[2] - k[0]) // s[0] + 1
    ow = (w + pad[1] + pad[3] - k[1]) // s[1] + 1
    out = np.zeros((n, c, oh, ow), dtype=x.dtype)
    for i in range(oh):
        for j in range(ow):
            win = xp[:, :, i * s[0] : i * s[0] + k[0], j * s[1] : j * s[1] + k[1]]
            if kind == "max":
                out[:, :, i, j] = win.max(axis=(2, 3))
            else:
                cnt = k[0] * k[1] if count_include_pad else ones[
                    i * s[0] : i * s[0] + k[0], j * s[1] : j * s[1] + k[1]
                ].sum()  # fmt: skip
                out[:, :, i, j] = win.sum(axis=(2, 3)) / cnt
    return out


def np_adaptive(x, oh, ow):
    n, c, h, w = x.shape
    out = np.zeros((n, c, oh, ow), dtype=x.dtype)
    for i in range(oh):
        for j in range(ow):
            hs, he = i * h // oh, -(-(i + 1) * h // oh)
            ws, we = j * w // ow, -(-(j + 1) * w // ow)
            out[:, :, i, j] = x[:, :, hs:he, ws:we].mean(axis=(2, 3))
    return out


def np_softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def np_layer_norm(x, g, b, eps=1e-5):
    m = x.mean(axis=-1, keepdims=True)
    v = x.var(axis=-1, keepdims=True)
    return (x - m) / np.sqrt(v + eps) * g + b


IMG, KER = f32(2, 3, 6, 6), f32(4, 3, 3, 3)
DW = f32(3, 1, 3, 3)
CH = [f32(3), f32(3), f32(3), f32(3, lo=0.5, hi=2.0)]
S = [[0, 2, 3], []]  # symbolic batch and spatial extents of the data; constant weights
NN = [
    Case(
        "relax.nn.conv2d",
        lambda x, w: R.nn.conv2d(x, w, padding=1),
        [IMG, KER],
        lambda x, w: np_conv2d(x, w, pad=(1, 1, 1, 1)),
        sym=S,
        rtol=1e-4,
        atol=1e-5,
    ),  # fmt: skip
    Case(
        "relax.nn.conv2d",
        lambda x, w: R.nn.conv2d(x, w, strides=2, dilation=(1, 1), groups=3),
        [IMG, DW],
        lambda x, w: np_conv2d(x, w, stride=(2, 2), groups=3),
        sym=S,
        rtol=1e-4,
        atol=1e-5,
        name="depthwise",
    ),  # fmt: skip
    Case(
        "relax.nn.max_pool2d",
        lambda x: R.nn.max_pool2d(x, (2, 2), (2, 2), padding=(1, 1)),
        [IMG],
        lambda x: np_pool(x, (2, 2), (2, 2), (1, 1, 1, 1), "max"),
        sym=[[0, 2, 3]],
    ),
    Case(
        "relax.nn.avg_pool2d",
        lambda x: R.nn.avg_pool2d(x, (3, 3), (1, 1), padding=1),
        [IMG],
        lambda x: np_pool(x, (3, 3), (1, 1), (1, 1, 1, 1), "avg"),
        sym=[[0, 2, 3]],
        rtol=1e-5,
    ),  # fmt: skip
    Case(
        "relax.nn.adaptive_avg_pool2d",
        lambda x: R.nn.adaptive_avg_pool2d(x, (4, 4)),
        [IMG],
        lambda x: np_adaptive(x, 4, 4),
        sym=[[0, 2, 3]],
        rtol=1e-5,
    ),  # fmt: skip
    Case(
        "relax.nn.adaptive_avg_pool2d",
        lambda x: R.nn.adaptive_avg_pool2d(x, 1),
        [IMG],
        lambda x: x.mean(axis=(2, 3), keepdims=True),
        name="global",
    ),
    Case(
        "relax.nn.batch_norm",
        lambda x, g, b, m, v: R.nn.batch_norm(x, g, b, m, v, axis=1),
        [IMG, *CH],
        lambda x, g, b, m, v: (
            (x - m[:, None, None]) / np.sqrt(v[:, None, None] + 1e-5) * g[:, None, None]
            + b[:, None, None],
            m,
            v,
        ),
        sym=[[0, 2, 3], [], [], [], []],
        rtol=1e-4,
        atol=1e-5,
    ),  # fmt: skip
    Case(
        "relax.nn.layer_norm",
        lambda x, g, b: R.nn.layer_norm(x, g, b, axes=-1),
        [f32(3, 5), f32(5), f32(5)],
        np_layer_norm,
        sym=[[0], [], []],
        rtol=1e-4,
        atol=1e-5,
    ),  # fmt: skip
    Case("relax.nn.softmax", R.nn.softmax, [f32(3, 5)], np_softmax, rtol=1e-5),
    Case(
        "relax.nn.attention",
        lambda q, k, v, b: R.nn.attention(q, k, v, b),
        [f32(2, 5, 4), f32(2, 7, 4), f32(2, 7, 3), f32(1, 5, 7)],
        lambda q, k, v, b: np_softmax(q @ k.transpose(0, 2, 1) / 2.0 + b) @ v,
        sym=[[1], [], [], []],
        rtol=1e-5,
        atol=1e-6,
    ),  # fmt: skip
    Case(
        "relax.nn.attention",
        lambda q, k, v: R.nn.attention(q, k, v, scale=0.3),
        [f32(3, 4), f32(6, 4), f32(6, 2)],
        lambda q, k, v: np_softmax(q @ k.T * 0.3) @ v,
        rtol=1e-5,
        atol=1e-6,
    ),  # fmt: skip
    Case(
        "relax.nn.log_softmax",
        lambda x: R.nn.log_softmax(x, axis=0),
        [f32(3, 5)],
        lambda x: np.log(np_softmax(x, axis=0)),
        rtol=1e-5,
        atol=1e-5,
    ),  # fmt: skip
    Case(
        "relax.nn.dropout",
        lambda x: R.nn.dropout(x, 0.3),
        [X],
        lambda x: (x, np.ones_like(x)),
    ),
    Case(
        "relax.nn.pad",
        lambda x: R.nn.pad(x, [1, 0, 2, 1], 1.5),
        [X],
        lambda x: np.pad(x, ((1, 0), (2, 1)), constant_values=1.5),
    ),
    Case(
        "relax.matmul",
        R.matmul,
        [f32(3, 4), f32(4, 5)],
        np.matmul,
        rtol=1e-5,
        atol=1e-5,
    ),  # fmt: skip
    Case(
        "relax.matmul",
        R.matmul,
        [f32(2, 3, 4), f32(4, 5)],
        np.matmul,
        rtol=1e-5,
        atol=1e-5,
        name="batched",
    ),  # fmt: skip
    Case(
        "relax.matmul",
        R.matmul,
        [f32(4), f32(2, 4, 3)],
        np.matmul,
        sym=[[], [0]],
        rtol=1e-5,
        atol=1e-5,
        name="vector",
    ),  # fmt: skip
]

M = f32(2, 3, 4)
MANIPULATE = [
    Case(
        "relax.permute_dims",
        lambda x: R.permute_dims(x, [2, 0, 1]),
        [M],
        lambda a: a.transpose(2, 0, 1),
    ),
    Case(
        "relax.reshape",
        lambda x: R.reshape(x, (-1, 4)),
        [M],
        lambda a: a.reshape(-1, 4),
    ),
    Case("relax.flatten", R.flatten, [M], lambda a: a.reshape(-1)),
    Case(
        "relax.expand_dims",
        lambda x: R.expand_dims(x, [0, -1]),
        [M],
        lambda a: a[None, ..., None],
    ),
    Case(
        "relax.squeeze",
        lambda x: R.squeeze(x, [1]),
        [f32(3, 1, 4)],
        lambda a: a.squeeze(1),
    ),
    Case(
        "relax.concat",
        lambda x, y: R.concat([x, y], axis=0),
        [f32(2, 4), f32(3, 4)],
        lambda a, b: np.concatenate([a, b], 0),
    ),
    Case(
        "relax.split",
        lambda x: R.split(x, [1, 3], axis=1),
        [f32(3, 5)],
        lambda a: tuple(np.split(a, [1, 3], axis=1)),
        sym=[[0, 1]],
    ),
    Case(
        "relax.split",
        lambda x: R.split(x, 2, axis=0),
        [f32(4, 3)],
        lambda a: tuple(np.split(a, 2, axis=0)),
        name="sections",
    ),
    Case(
        "relax.strided_slice",
        lambda x: R.strided_slice(x, axes=[0, 2], begin=[1, 0], end=[3, 4], strides=[1, 2]),
        [f32(4, 3, 5)],
        lambda a: a[1:3, :, 0:4:2],
        sym=[[0, 2]],
    ),
    Case(
        "relax.gather_elements",
        lambda x, i: R.gather_elements(x, i, 1),
        [f32(3, 4), RNG.integers(-4, 4, (3, 5)).astype("int64")],
        lambda x, i: np.take_along_axis(x, np.where(i < 0, i + 4, i), 1),
        sym=[[0], [0]],
    ),
    Case(
        "relax.gather_nd",
        lambda x, i: R.gather_nd(x, i),
        [f32(3, 4, 5), np.array([[2, -1], [0, 3], [-3, 0]], dtype="int64")],
        lambda x, i: x[tuple(i.T)],
    ),
    Case(
        "relax.gather_nd",
        lambda x, i: R.gather_nd(x, i, 1),
        [f32(2, 4, 5), np.array([[[3], [0], [1]], [[2], [-4], [0]]], dtype="int32")],
        lambda x, i: np.stack([x[b][i[b, :, 0]] for b in range(2)]),
        name="batch",
    ),
    Case(
        "relax.image.resize",
        lambda x: R.image.resize(x, [2, 8, 6], [1.0, 2.0, 1.5], "nearest", "asymmetric", "floor"),
        [f32(2, 4, 4)],
        lambda a: a[:, (np.arange(8) / 2.0).astype(int)][:, :, (np.arange(6) / 1.5).astype(int)],
        sym=[[]],
    ),
    Case(
        "relax.image.resize",
        lambda x: R.image.resize(x, [1, 7], [1.0, 7 / 4], "linear", "align_corners"),
        [f32(1, 4)],
        lambda a: np.interp(np.arange(7) * 3 / 6, np.arange(4), a[0])[None].astype("float32"),
        sym=[[]],
        name="linear",
    ),
    Case("relax.cumsum", lambda x: R.cumsum(x, 1), [f32(3, 5)], lambda a: np.cumsum(a, 1)),
    Case(
        "relax.cumsum",
        lambda x: R.cumsum(x, 0, exclusive=True, reverse=True),
        [i32(4, 3)],
        lambda a: np.flip(np.cumsum(np.flip(a, 0), 0), 0) - a,
        name="exclusive_reverse",
    ),
    Case("relax.cumprod", lambda x: R.cumprod(x, -1), [POS], lambda a: np.cumprod(a, -1)),
    Case(
        "relax.take",
        lambda x, i: R.take(x, i, axis=1),
        [f32(3, 5), np.array([4, 0, 2, 2], dtype="int64")],
        lambda a, i: np.take(a, i, axis=1),
    ),
    Case(
        "relax.take",
        lambda x, i: R.take(x, i),
        [f32(3, 5), np.array([[4, 14], [0, 7]], dtype="int32")],
        lambda a, i: np.take(a, i),
        sym=[[0], []],
        name="flat",
    ),
    Case(
        "relax.broadcast_to",
        lambda x: R.broadcast_to(x, relax.ShapeExpr([2, *x.struct_info.dims])),
        [f32(3, 1)],
        lambda a: np.broadcast_to(a, (2, 3, 1)),
    ),
]


def _dims(x):
    return relax.ShapeExpr(list(x.struct_info.dims))


CREATE = [
    Case(
        "relax.full",
        lambda x: R.full(_dims(x), relax.const(2.5, "float32")),
        [X],
        lambda a: np.full(a.shape, 2.5, "float32"),
    ),
    Case("relax.zeros", lambda x: R.zeros(_dims(x), "int32"), [X], lambda a: np.zeros(a.shape)),
    Case("relax.ones", lambda x: R.ones(_dims(x), "float32"), [X], lambda a: np.ones(a.shape)),
    Case(
        "relax.full_like",
        lambda x: R.full_like(x, relax.const(3, "int32")),
        [X],
        lambda a: np.full_like(a, 3),
    ),
    Case("relax.zeros_like", R.zeros_like, [i32(3, 4)], np.zeros_like),
    Case("relax.ones_like", lambda x: R.ones_like(x, "int64"), [X], lambda a: np.ones(a.shape)),
    Case(
        "relax.arange",
        lambda x: R.arange(2, relax.PrimValue(x.struct_info.dims[0] * 3), 2),
        [f32(5)],
        lambda a: np.arange(2, 15, 2),
    ),
    Case(
        "relax.arange",
        lambda x: R.arange(relax.PrimValue(x.struct_info.dims[0] * 3), 1, -2, "int64"),
        [f32(5)],
        lambda a: np.arange(15, 1, -2),
        name="step back",
    ),
    Case(
        "relax.arange",
        lambda x: R.arange(0.5, 3.0, 0.25),
        [X],
        lambda a: np.arange(0.5, 3.0, 0.25, dtype="float32"),
        name="float",
    ),
]


def _blocked(x, layout):
    return transform_array(x, "NCHW", layout)


IMG8, KER8, DW8 = f32(2, 8, 6, 7), f32(8, 8, 3, 3), f32(8, 1, 3, 3)
W_KN = f32(6, 10)
LAYOUT = [
    Case(
        "relax.layout_transform",
        lambda x: R.layout_transform(x, "NCHW", "NCHW4c"),
        [IMG8],
        lambda a: a.reshape(2, 2, 4, 6, 7).transpose(0, 1, 3, 4, 2),
        sym=[[0, 2, 3]],
    ),
    Case(
        "relax.layout_transform",
        lambda x: R.layout_transform(x, "KN", "NK4n"),
        [W_KN],
        lambda a: np.pad(a, ((0, 0), (0, 2))).reshape(6, 3, 4).transpose(1, 0, 2),
        sym=[[0]],
        name="padded panels",
    ),
    Case(
        "relax.matmul_packed",
        lambda x, p: R.matmul_packed(x, p, 10),
        [f32(5, 6), transform_array(W_KN, "KN", "NK8n")],
        lambda x, p: x @ W_KN,
        sym=[[0], []],
        rtol=1e-5,
        atol=1e-5,
    ),
    Case(
        "relax.matmul_packed",
        lambda x, p: R.matmul_packed(x, p, 10),
        [f32(2, 3, 6), transform_array(W_KN, "KN", "NK4n")],
        lambda x, p: x @ W_KN,
        sym=[[0, 1], []],
        rtol=1e-5,
        atol=1e-5,
        name="batched",
    ),
    Case(
        "relax.matmul_packed",
        lambda x, p: R.matmul_packed(x, p, 10),
        [f32(2, 3, 5, 6), transform_array(W_KN, "KN", "NK8n")],
        lambda x, p: x @ W_KN,
        sym=[[0, 2], []],
        rtol=1e-5,
        atol=1e-5,
        name="images",
    ),
    Case(
        "relax.nn.conv2d",
        lambda x, w: R.nn.conv2d(
            x,
            w,
            strides=(2, 1),
            padding=1,
            data_layout="NCHW4c",
            kernel_layout="OIHW4i8o",
            out_layout="NCHW8c",
        ),
        [_blocked(IMG8, "NCHW4c"), transform_array(KER8, "OIHW", "OIHW4i8o")],
        lambda x, w: _blocked(np_conv2d(IMG8, KER8, (2, 1), (1, 1, 1, 1)), "NCHW8c"),
        sym=[[0], []],
        rtol=1e-4,
        atol=1e-5,
        name="nchwc",
    ),  # fmt: skip
    Case(
        "relax.nn.conv2d",
        lambda x, w: R.nn.conv2d(
            x,
            w,
            padding=1,
            groups=8,
            data_layout="NCHW4c",
            kernel_layout="OIHW1i4o",
            out_layout="NCHW4c",
        ),
        [_blocked(IMG8, "NCHW4c"), transform_array(DW8, "OIHW", "OIHW1i4o")],
        lambda x, w: _blocked(np_conv2d(IMG8, DW8, pad=(1, 1, 1, 1), groups=8), "NCHW4c"),
        sym=[[0], []],
        rtol=1e-4,
        atol=1e-5,
        name="nchwc depthwise",
    ),  # fmt: skip
    Case(
        "relax.nn.max_pool2d",
        lambda x: R.nn.max_pool2d(x, (3, 3), (2, 2), padding=1, layout="NCHW4c"),
        [_blocked(IMG8, "NCHW4c")],
        lambda x: _blocked(np_pool(IMG8, (3, 3), (2, 2), (1, 1, 1, 1), "max"), "NCHW4c"),
        sym=[[]],
        name="nchwc",
    ),
    Case(
        "relax.nn.avg_pool2d",
        lambda x: R.nn.avg_pool2d(x, (2, 2), (2, 2), layout="NCHW4c"),
        [_blocked(IMG8, "NCHW4c")],
        lambda x: _blocked(np_pool(IMG8, (2, 2), (2, 2), (0, 0, 0, 0), "avg"), "NCHW4c"),
        sym=[[]],
        rtol=1e-5,
        name="nchwc",
    ),
]

FAMILIES = {
    "layout": LAYOUT,
    "unary": UNARY,
    "activation": ACTIVATION,
    "binary": BINARY,
    "arith": ARITH,
    "reduce": REDUCE,
    "nn": NN,
    "manipulate": MANIPULATE,
    "create": CREATE,
    "index": INDEX + RANDOM,  # NOTE: one library with the other Core ATen records (suite time)
}
ALL = [c for cases in FAMILIES.values() for c in cases]
