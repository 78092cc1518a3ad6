"""Operator edge cases that used to compute garbage: pooling windows over padding alone,
extremes of empty axes, non-int slice bounds, out-of-range gather indices."""

from __future__ import annotations

import numpy as np
import pytest

from kiln import te, tir, topi
from kiln.errors import IRError, IRValueError
from kiln.ir import structural_equal
from kiln.topi.nn.window_any import pool2d_any
from tests.topi.conftest import run


# -- pooling ------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("call", "pattern"),
    [
        (
            lambda x: topi.nn.max_pool2d(x, 2, padding=2),
            r"max_pool2d: top padding 2 of tensor 'x' is not smaller than the window \(2\)",
        ),
        (
            lambda x: topi.nn.avg_pool2d(x, 3, strides=1, padding=(0, 0, 0, 4)),
            r"avg_pool2d: right padding 4 of tensor 'x' is not smaller than the window \(3\)",
        ),
        (
            lambda x: topi.nn.avg_pool2d(x, 2, strides=1, padding=2, count_include_pad=False),
            r"avg_pool2d: top padding 2 .* windows would lie entirely in the padding",
        ),
        (  # a dilated window straddling a one-row input: taps at -2 and +1, both padding
            lambda x: topi.nn.max_pool2d(
                te.placeholder((1, 1, 1, 4), name="x"), 2, strides=1, padding=2, dilation=3
            ),
            r"max_pool2d: window 0 along the height of tensor 'x' reads only padding",
        ),
        (
            lambda x: pool2d_any(x, "avg", (1, 1, 7, 7), (2, 2), (1, 1), (2, 2, 2, 2)),
            r"avg_pool2d: top padding 2 of tensor 'x' is not smaller than the window",
        ),
    ],
)
def test_windows_over_padding_alone_are_rejected(call, pattern: str) -> None:
    x = te.placeholder((1, 1, 4, 4), name="x")
    with pytest.raises(IRValueError, match=pattern):
        call(x)


def test_largest_padding_allowed_gives_finite_results(rng) -> None:
    """Padding one below the window: corner windows hold one input element each."""
    x = te.placeholder((1, 2, 4, 5), name="x")
    outs = [
        topi.nn.max_pool2d(x, 3, strides=1, padding=2),
        topi.nn.avg_pool2d(x, 3, strides=1, padding=2, count_include_pad=False),
    ]
    a = rng.standard_normal((1, 2, 4, 5)).astype("float32")
    got_max, got_avg = run(outs, [x], a)
    padded = np.pad(a, ((0, 0), (0, 0), (2, 2), (2, 2)), constant_values=np.nan)
    windows = np.lib.stride_tricks.sliding_window_view(padded, (3, 3), axis=(2, 3))
    np.testing.assert_array_equal(got_max, np.nanmax(windows, axis=(-2, -1)))
    np.testing.assert_allclose(got_avg, np.nanmean(windows, axis=(-2, -1)), rtol=1e-5)
    assert np.isfinite(got_max).all() and np.isfinite(got_avg).all()


# -- reductions ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("call", "pattern"),
    [
        (lambda x: topi.max(x, axis=1), r"max: axis 1 of tensor 'x' has extent 0"),
        (lambda x: topi.min(x), r"min: axis 1 of tensor 'x' has extent 0"),
        (lambda x: topi.argmax(x, axis=-1), r"argmax: axis 1 of tensor 'x' has extent 0"),
        (lambda x: topi.argmin(x, axis=1), r"argmin: axis 1 of tensor 'x' has extent 0"),
    ],
)
def test_extremes_of_empty_axes_raise_like_numpy(call, pattern: str) -> None:
    x = te.placeholder((3, 0), name="x")
    with pytest.raises(ValueError):  # numpy's own answer
        np.max(np.zeros((3, 0)), axis=1)
    with pytest.raises(IRValueError, match=pattern):
        call(x)


def test_empty_sums_and_extremes_of_other_axes_still_work() -> None:
    x = te.placeholder((3, 0), name="x")
    got_sum, got_max = run([topi.sum(x, axis=1), topi.max(x, axis=0)], [x], np.zeros((3, 0), "f"))
    np.testing.assert_array_equal(got_sum, np.zeros(3))
    assert got_max.shape == (0,)


# -- slicing ------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("call", "kind", "pattern"),
    [
        (
            lambda x: topi.strided_slice(x, [1.5], [4]),
            IRError,
            r"strided_slice: begin\[0\] must be an int, got float 1.5 \(tensor 'x'\)",
        ),
        (
            lambda x: topi.strided_slice(x, [0, 1], [4, "5"]),
            IRError,
            r"strided_slice: end\[1\] must be an int, got str '5'",
        ),
        (
            lambda x: topi.strided_slice(x, [0], [4], [True]),
            IRError,
            r"strided_slice: strides\[0\] must be an int, got bool True",
        ),
        (
            lambda x: topi.strided_slice(x, 1, 4),
            IRError,
            r"strided_slice: begin must be a list of ints, got int 1",
        ),
        (
            lambda x: topi.slice_axes(x, [0], [0.5], [3]),
            IRError,
            r"strided_slice: begin\[0\] must be an int, got float 0.5",
        ),
        (
            lambda x: topi.slice_axes(x, [0], [0], [3], [0]),
            IRValueError,
            r"strided_slice: axis 0 of tensor 'x' needs an int begin and end and a non-zero stride",
        ),
    ],
)
def test_slice_bounds_must_be_ints(call, kind: type, pattern: str) -> None:
    x = te.placeholder((6, 8), name="x")
    with pytest.raises(kind, match=pattern):
        call(x)


def test_slice_bounds_accept_numpy_ints(rng) -> None:
    x = te.placeholder((6, 8), name="x")
    out = topi.strided_slice(x, [np.int64(1), None], [np.int32(5), 7], [2, np.int8(3)])
    a = rng.standard_normal((6, 8)).astype("float32")
    (got,) = run(out, [x], a)
    np.testing.assert_array_equal(got, a[1:5:2, :7:3])


# -- indices read at run time --------------------------------------------------------------------
def test_default_take_and_gather_stay_inside_the_tensor(rng) -> None:
    """The default mode is checked (clip): extreme indices read the first or last element."""
    x = te.placeholder((5, 7), name="x")
    idx = te.placeholder((4,), "int64", name="idx")
    gidx = te.placeholder((5, 2), "int32", name="gidx")
    outs = [topi.take(x, idx), topi.take(x, idx, axis=1), topi.gather(x, 1, gidx)]
    a = rng.standard_normal((5, 7)).astype("float32")
    i = np.array([-(2**62), 2**62, 2**31, -1], "int64")
    g = np.array([[2**31 - 1, -(2**31)]] * 5, "int32")
    got = run(outs, [x, idx, gidx], a, i, g)
    np.testing.assert_array_equal(got[0], np.take(a, i, mode="clip"))
    np.testing.assert_array_equal(got[1], np.take(a, i, axis=1, mode="clip"))
    np.testing.assert_array_equal(got[2], np.take_along_axis(a, np.clip(g, 0, 6), axis=1))
    assert "unchecked" in topi.transform.__doc__  # mode="fast" is documented as such


def test_indices_into_an_empty_axis_are_rejected() -> None:
    x = te.placeholder((0, 3), name="x")
    idx = te.placeholder((2,), "int32", name="idx")
    with pytest.raises(IRValueError, match=r"take: axis 0 of tensor 'x' has extent 0"):
        topi.take(x, idx, axis=0)
    with pytest.raises(IRValueError, match=r"gather: axis 0 of tensor 'x' has extent 0"):
        topi.gather(x, 0, te.placeholder((1, 3), "int32", name="g"))


def test_slice_to_a_sentinel_over_a_symbolic_dim_keeps_the_dim(rng) -> None:
    """``x[0:2**62]`` over a dim ``n`` (torch's slice to the end) has extent ``n``, as the graph
    level simplifies it, so it broadcasts with ``x`` (issue 23: a clamp no broadcast matched);
    ``x[1:2**62]`` keeps no sentinel either."""
    from kiln.driver import build as kbuild

    n = tir.Var("n", "int64")
    x = te.placeholder((n, 8), name="x")
    whole = topi.slice_axes(x, [0], [0], [2**62])
    tail = topi.slice_axes(x, [0], [1], [2**62])
    assert structural_equal(whole.shape[0], n)
    assert "4611686018427387904" not in str(tail.shape[0])
    out = topi.add(whole, x)
    mod = kbuild(te.lower(topi.schedule_for([out, tail]), [x, out, tail]), target="c")
    a = rng.standard_normal((5, 8)).astype("float32")
    got, got_tail = np.zeros((5, 8), "float32"), np.zeros((4, 8), "float32")
    mod["main"](a, got, got_tail)
    np.testing.assert_allclose(got, a[0 : 2**62] + a, rtol=1e-6, atol=0)
    np.testing.assert_array_equal(got_tail, a[1 : 2**62])
