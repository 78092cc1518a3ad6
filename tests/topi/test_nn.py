"""softmax, log_softmax, layer_norm, batch_norm and pooling against numpy (and PyTorch for
pooling, when installed), including the non-last-axis fallbacks and bad input."""

from __future__ import annotations

import numpy as np
import pytest

from kiln import te, topi
from kiln.errors import IRError, IRValueError
from tests.topi.conftest import run


def _softmax(a: np.ndarray, axis: int) -> np.ndarray:
    e = np.exp(a - a.max(axis, keepdims=True))
    return e / e.sum(axis, keepdims=True)


def _log_softmax(a: np.ndarray, axis: int) -> np.ndarray:
    m = a.max(axis, keepdims=True)
    return a - m - np.log(np.exp(a - m).sum(axis, keepdims=True))


@pytest.mark.parametrize(
    "shape, axis, dtype",
    [
        ((5, 100), -1, "float32"),
        ((3, 4, 37), 2, "float32"),
        ((9, 8), 1, "float32"),
        ((6, 33, 5), 1, "float32"),
        ((300,), 0, "float32"),
        ((4, 70), -1, "float64"),
    ],
)
def test_softmax_and_log_softmax(shape, axis, dtype, rng) -> None:
    x = te.placeholder(shape, dtype, name="x")
    outs = [topi.nn.softmax(x, axis), topi.nn.log_softmax(x, axis)]
    a = (rng.standard_normal(shape) * 4).astype(dtype)
    got = run(outs, [x], a)
    ref = a.astype("float64")
    rtol = 1e-12 if dtype == "float64" else 2e-6
    np.testing.assert_allclose(got[0], _softmax(ref, axis), rtol=rtol, atol=1e-7)
    np.testing.assert_allclose(got[1], _log_softmax(ref, axis), rtol=rtol, atol=2e-6)


def test_softmax_extreme_values(rng) -> None:
    """Huge logits, ties, -inf entries (masking) and rows far below 0."""
    x = te.placeholder((4, 40), name="x")
    a = rng.standard_normal((4, 40)).astype("float32")
    a[0] *= 1e4
    a[1] = 3.0
    a[2, ::3] = -np.inf
    a[3] -= 1e3
    (got,) = run(topi.nn.softmax(x), [x], a)
    want = _softmax(a.astype("float64"), -1)
    np.testing.assert_allclose(got, want, rtol=2e-6, atol=1e-30)
    np.testing.assert_allclose(got.sum(-1), 1, rtol=1e-5)


def test_fused_prologue_and_epilogue_around_row_operators(rng) -> None:
    x = te.placeholder((6, 50), name="x")
    outs = [
        topi.multiply(topi.nn.softmax(topi.multiply(x, 0.5)), 2.0),
        topi.relu(topi.nn.layer_norm(topi.add(x, 1.0))),
        topi.nn.log_softmax(topi.abs(x)),
    ]
    a = rng.standard_normal((6, 50)).astype("float32")
    got = run(outs, [x], a)
    ln = (a - a.mean(1, keepdims=True)) / np.sqrt(a.var(1, keepdims=True) + 1e-5)
    np.testing.assert_allclose(got[0], 2 * _softmax(0.5 * a, 1), rtol=2e-6, atol=1e-7)
    np.testing.assert_allclose(got[1], np.maximum(ln, 0), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(got[2], _log_softmax(np.abs(a), 1), rtol=2e-6, atol=2e-6)


@pytest.mark.parametrize(
    "shape, axis, affine, dtype",
    [
        ((6, 77), -1, True, "float32"),
        ((3, 128), -1, False, "float32"),
        ((3, 4, 20), [-2, -1], True, "float32"),
        ((5, 48), 1, True, "float64"),
    ],
)
def test_layer_norm(shape, axis, affine, dtype, rng) -> None:
    x = te.placeholder(shape, dtype, name="x")
    nd = 2 if isinstance(axis, list) else 1
    pshape = shape[-nd:]
    g = te.placeholder(pshape, dtype, name="g")
    b = te.placeholder(pshape, dtype, name="b")
    y = topi.nn.layer_norm(x, g if affine else None, b if affine else None, axis, 1e-5)
    a = (rng.standard_normal(shape) * 3 + 100).astype(dtype)  # a large mean tests two-pass var
    gv, bv = rng.standard_normal(pshape).astype(dtype), rng.standard_normal(pshape).astype(dtype)
    inputs = [x, g, b] if affine else [x]
    (got,) = run(y, inputs, *([a, gv, bv] if affine else [a]))
    axes = tuple(range(len(shape) - nd, len(shape)))
    ref = a.astype("float64")
    mean, var = ref.mean(axes, keepdims=True), ref.var(axes, keepdims=True)
    want = (ref - mean) / np.sqrt(var + 1e-5)
    if affine:
        want = want * gv + bv
    np.testing.assert_allclose(got, want, rtol=1e-4 if dtype == "float32" else 1e-10, atol=1e-4)


def test_batch_norm_inference(rng) -> None:
    x = te.placeholder((2, 3, 5, 7), name="x")
    params = [te.placeholder((3,), name=n) for n in ("g", "b", "m", "v")]
    y = topi.nn.batch_norm(x, *params, axis=1, epsilon=1e-3)
    a = rng.standard_normal((2, 3, 5, 7)).astype("float32")
    g, b, m = (rng.standard_normal(3).astype("float32") for _ in range(3))
    v = rng.uniform(0.5, 2, 3).astype("float32")
    (got,) = run(y, [x, *params], a, g, b, m, v)
    c = (slice(None), None, None)
    want = (a - m[c]) / np.sqrt(v[c] + 1e-3) * g[c] + b[c]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


POOLS = [
    dict(pool_size=3, strides=2, padding=1),
    dict(pool_size=2, strides=2, padding=0),
    dict(pool_size=(3, 2), strides=(1, 2), padding=(1, 0), ceil_mode=True),
    dict(pool_size=3, strides=2, padding=1, ceil_mode=True),
]


@pytest.mark.parametrize("kw", POOLS)
def test_max_and_avg_pool2d_match_torch(kw, rng) -> None:
    torch = pytest.importorskip("torch")
    F = torch.nn.functional
    x = te.placeholder((2, 3, 11, 10), name="x")
    outs = [
        topi.nn.max_pool2d(x, **kw),
        topi.nn.avg_pool2d(x, **kw, count_include_pad=True),
        topi.nn.avg_pool2d(x, **kw, count_include_pad=False),
    ]
    a = rng.standard_normal((2, 3, 11, 10)).astype("float32")
    got = run(outs, [x], a)
    t = torch.from_numpy(a)
    args = (kw["pool_size"], kw["strides"], kw["padding"], kw.get("ceil_mode", False))
    want = [
        F.max_pool2d(t, *args[:3], ceil_mode=args[3]),
        F.avg_pool2d(t, *args, count_include_pad=True),
        F.avg_pool2d(t, *args, count_include_pad=False),
    ]
    for k, (g, w) in enumerate(zip(got, want)):
        np.testing.assert_allclose(g, w.numpy(), rtol=1e-5, atol=1e-6, err_msg=f"output {k}")


def test_dilated_asymmetric_max_pool_and_global_avg(rng) -> None:
    x = te.placeholder((1, 2, 9, 30), name="x")
    outs = [
        topi.nn.max_pool2d(x, 3, strides=1, padding=(2, 1, 0, 3), dilation=2),
        topi.nn.global_avg_pool2d(x),
    ]
    a = rng.standard_normal((1, 2, 9, 30)).astype("float32")
    got = run(outs, [x], a)
    p = np.pad(a, ((0, 0), (0, 0), (2, 0), (1, 3)), constant_values=-np.inf)
    oh, ow = p.shape[2] - 4, p.shape[3] - 4
    want = np.full((1, 2, oh, ow), -np.inf, "float32")
    for i in range(3):
        for j in range(3):
            want = np.maximum(want, p[:, :, 2 * i : 2 * i + oh, 2 * j : 2 * j + ow])
    np.testing.assert_array_equal(got[0], want)
    np.testing.assert_allclose(got[1], a.mean((2, 3), keepdims=True), rtol=1e-5)


def test_integer_max_pool(rng) -> None:
    x = te.placeholder((1, 1, 6, 6), "int32", name="x")
    a = rng.integers(-50, 50, (1, 1, 6, 6)).astype("int32")
    (got,) = run(topi.nn.max_pool2d(x, 2), [x], a)
    np.testing.assert_array_equal(got, a.reshape(1, 1, 3, 2, 3, 2).max((3, 5)))


# -- bad input ----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "call, pattern",
    [
        (lambda x: topi.nn.softmax(x, 2), r"softmax: axis 2 is out of range for tensor 'x'"),
        (lambda x: topi.nn.log_softmax(topi.cast(x, "int32")), r"log_softmax: tensor 'T_cast'"),
        (lambda x: topi.nn.layer_norm(x, axis=0), r"layer_norm: axes 0 of tensor 'x' must be"),
        (
            lambda x: topi.nn.layer_norm(x, te.placeholder((5,), name="g")),
            r"layer_norm: gamma tensor 'g' has shape \(5,\), expected \(6,\)",
        ),
        (
            lambda x: topi.nn.batch_norm(x, *[te.placeholder((4,), name="p")] * 4),
            r"batch_norm: gamma tensor 'p' has shape \(4,\), expected \(6,\)",
        ),
        (lambda x: topi.nn.max_pool2d(x, 2), r"max_pool2d: tensor 'x' must be NCHW \(rank 4\)"),
        (lambda x: topi.nn.global_avg_pool2d(x), r"global_avg_pool2d: tensor 'x' must be NCHW"),
    ],
)
def test_bad_nn_input(call, pattern: str) -> None:
    x = te.placeholder((4, 6), name="x")
    with pytest.raises((IRError, IRValueError), match=pattern):
        call(x)


def test_bad_pool_geometry() -> None:
    x = te.placeholder((1, 1, 4, 4), name="x")
    with pytest.raises(
        IRValueError, match=r"max_pool2d: the window \(5x5\) does not fit tensor 'x'"
    ):
        topi.nn.max_pool2d(x, 5)
    with pytest.raises((IRError, IRValueError), match=r"avg_pool2d: strides must be positive"):
        topi.nn.avg_pool2d(x, 2, strides=0)
    with pytest.raises((IRError, IRValueError), match=r"max_pool2d: padding must be"):
        topi.nn.max_pool2d(x, 2, padding=(1, 2, 3))
    with pytest.raises((IRError, IRValueError), match=r"avg_pool2d: tensor 'i' has dtype int32"):
        topi.nn.avg_pool2d(te.placeholder((1, 1, 4, 4), "int32", name="i"), 2)


def test_blocked_pools_with_a_symbolic_batch() -> None:
    """NCHWc max / average pools over an int64 batch variable, run at batch 3 (numpy windows)."""
    from kiln.driver import build

    n = te.var("n", "int64")
    x = te.placeholder((n, 2, 9, 9, 16), name="x")
    avg = topi.nn.avg_pool2d(x, 3, 2, 1, count_include_pad=False)
    top = topi.nn.max_pool2d(x, 3, 2, 1)
    f = build(te.lower(topi.schedule_for([avg, top], "c"), [x, avg, top]), target="c")["main"]
    xa = np.random.default_rng(3).standard_normal((3, 2, 9, 9, 16)).astype("float32")
    got_avg, got_max = np.zeros((3, 2, 5, 5, 16), "float32"), np.zeros((3, 2, 5, 5, 16), "float32")
    f(xa, got_avg, got_max)
    padded = np.pad(xa, ((0, 0), (0, 0), (1, 1), (1, 1), (0, 0)), constant_values=np.nan)
    taps = [(i, j) for i in range(3) for j in range(3)]
    wins = np.stack([padded[:, :, i : i + 9 : 2, j : j + 9 : 2] for i, j in taps])
    np.testing.assert_allclose(got_max, np.nanmax(wins, axis=0), rtol=1e-6)
    np.testing.assert_allclose(got_avg, np.nanmean(wins, axis=0), rtol=1e-5, atol=1e-6)
