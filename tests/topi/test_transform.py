"""Data-movement operators against numpy (several outputs per build), index modes of take and
gather, and the errors for bad shapes, axes and indices."""

from __future__ import annotations

import numpy as np
import pytest

from kiln import te, tir, topi
from kiln.driver import build as kbuild
from kiln.driver import lower
from kiln.errors import IRError, IRValueError, KernelIndexError
from kiln.tir.expr import convert
from kiln.topi import Pattern, pattern_of
from tests.topi.conftest import build, run


def test_transpose_reshape_pad_slice(rng) -> None:
    x = te.placeholder((4, 6, 10), name="x")
    outs = [
        topi.transpose(x),
        topi.transpose(x, (1, -1, 0)),
        topi.reshape(x, (-1, 8)),
        topi.reshape(x, (240,)),
        topi.reshape(x, (2, 2, 3, 2, 10)),
        topi.pad(x, ((1, 0), (0, 2), (3, 1)), pad_value=-1.5),
        topi.pad(x, 1),
        topi.strided_slice(x, [1, -1, 2], [3, -7, 9], [1, -2, 3]),
        topi.strided_slice(x, [-100, 0], [100, 6], [2, 5]),
        topi.strided_slice(x, [5], [9], axes=[2]),
    ]
    a = rng.standard_normal((4, 6, 10)).astype("float32")
    got = run(outs, [x], a)
    want = [
        a.T,
        a.transpose(1, 2, 0),
        a.reshape(-1, 8),
        a.reshape(240),
        a.reshape(2, 2, 3, 2, 10),
        np.pad(a, ((1, 0), (0, 2), (3, 1)), constant_values=-1.5),
        np.pad(a, 1),
        a[1:3, -1:-7:-2, 2:9:3],
        a[-100:100:2, 0:6:5],
        a[:, :, 5:9],
    ]
    for k, (g, w) in enumerate(zip(got, want)):
        np.testing.assert_array_equal(g, w, err_msg=f"output {k}")


def test_concatenate_and_split(rng) -> None:
    a_t = te.placeholder((3, 5), name="a")
    b_t = te.placeholder((2, 5), name="b")
    c_t = te.placeholder((3, 4), name="c")
    parts = topi.split(a_t, 5, axis=1) + topi.split(a_t, [1, 2], axis=0)
    outs = [
        topi.concatenate([a_t, b_t, a_t], axis=0),
        topi.concatenate([a_t, c_t], axis=-1),
        *parts,
    ]
    a = rng.standard_normal((3, 5)).astype("float32")
    b = rng.standard_normal((2, 5)).astype("float32")
    c = rng.standard_normal((3, 4)).astype("float32")
    got = run(outs, [a_t, b_t, c_t], a, b, c)
    want = [
        np.concatenate([a, b, a], 0),
        np.concatenate([a, c], -1),
        *np.split(a, 5, axis=1),
        *np.split(a, [1, 2], axis=0),
    ]
    for k, (g, w) in enumerate(zip(got, want)):
        np.testing.assert_array_equal(g, w, err_msg=f"output {k}")


def test_a_channel_concat_copies_each_operand_without_conditions(rng) -> None:
    """A concat over the channel blocks of ``NCHW8c`` operands, with an inlined scaling (the
    batch norm DenseNet applies to it): the channel loop is split per operand, so no element
    evaluates a chain of conditions (DenseNet's concat of 24 operands: 250 -> 12 us)."""
    xs = [te.placeholder((1, 2, 3, 5, 8), name=f"x{i}") for i in range(5)]
    c = topi.concatenate(xs, axis=1)
    sc = te.placeholder((1, 10, 1, 1, 8), name="s")
    y = te.compute(c.shape, lambda n, o, h, w, b: c[n, o, h, w, b] * sc[n, o, 0, 0, b], name="y")
    lowered = lower(te.lower(topi.schedule_for(y), [*xs, sc, y]))
    assert not [
        n for f in lowered.functions.values() for n in tir.pre_order_nodes(f.body)
        if isinstance(n, tir.Call) and n.op.name == "tir.if_then_else"
    ]  # fmt: skip
    arrays = [rng.standard_normal((1, 2, 3, 5, 8)).astype("float32") for _ in xs]
    scale = rng.standard_normal((1, 10, 1, 1, 8)).astype("float32")
    (got,) = run([y], [*xs, sc], *arrays, scale)
    np.testing.assert_array_equal(got, np.concatenate(arrays, 1) * scale)


def test_take_and_gather_modes(rng) -> None:
    x = te.placeholder((5, 7), name="x")
    idx = te.placeholder((2, 3), "int32", name="idx")
    gidx = te.placeholder((5, 4), "int64", name="gidx")
    outs = [
        topi.take(x, idx),
        topi.take(x, idx, axis=1),
        topi.take(x, idx, axis=-2, mode="wrap"),
        topi.take(x, idx, axis=0, mode="clip"),
        topi.gather(x, 1, gidx),
        topi.gather(x, 1, gidx, mode="wrap"),
    ]
    a = rng.standard_normal((5, 7)).astype("float32")
    i = np.array([[0, 4, 6], [-1, 9, 2]], "int32")
    g = np.array([[0, 1, 6, 3]] * 5, "int64")
    g[1, 0], g[2, 3] = -2, 11
    got = run(outs, [x, idx, gidx], a, i, g)
    want = [
        np.take(a, np.clip(i, 0, a.size - 1)),
        np.take(a, i, axis=1, mode="clip"),
        np.take(a, i, axis=0, mode="wrap"),
        np.take(a, i, axis=0, mode="clip"),
        np.take_along_axis(a, np.clip(g, 0, 6), axis=1),
        np.take_along_axis(a, g % 7, axis=1),
    ]
    for k, (gt, w) in enumerate(zip(got, want)):
        np.testing.assert_array_equal(gt, w, err_msg=f"output {k}")


def test_integer_transform_and_fused_injective_chain(rng) -> None:
    x = te.placeholder((6, 8), "int32", name="x")
    y = topi.add(topi.transpose(topi.pad(x, ((0, 2), (1, 1)), 9)), 1)
    a = rng.integers(-5, 5, (6, 8)).astype("int32")
    (got,) = run(y, [x], a)
    np.testing.assert_array_equal(got, np.pad(a, ((0, 2), (1, 1)), constant_values=9).T + 1)


def test_reshape_reads_an_int64_producer_with_int64_indices() -> None:
    # a (1,) arange over int64 axes (relax shapes), reshaped to a scalar and inlined into its
    # reader: the reshape's index into the arange must be int64 like the arange's axis
    n = convert(1, "int64")
    r = topi.arange(convert(7, "int64"), n, 1, "int64")
    s = topi.reshape(r, ())
    v = topi.reshape(r, (1, 1))
    assert all(str(d.dtype) == "int64" for d in v.shape)
    x = te.placeholder((n, convert(3, "int64")), name="x")
    y = te.compute(x.shape, lambda i, j: x[i, j] / topi.cast(s, "float32")[()], name="y")
    got = run([y, v], [x], np.full((1, 3), 14.0, "float32"))
    np.testing.assert_allclose(got[0], np.full((1, 3), 2.0, "float32"))
    np.testing.assert_array_equal(got[1], [[7]])


def test_reshape_of_an_empty_tensor() -> None:
    x = te.placeholder((0, 3, 4), name="x")
    got = run(
        [topi.reshape(x, (3, 4, 0)), topi.reshape(x, (0, 12))], [x], np.zeros((0, 3, 4), "float32")
    )
    assert [g.shape for g in got] == [(3, 4, 0), (0, 12)]


def test_patterns_are_injective() -> None:
    x = te.placeholder((4, 6), name="x")
    for t in (topi.transpose(x), topi.reshape(x, (24,)), topi.pad(x, 1)):
        assert pattern_of(t) == Pattern.INJECTIVE


# -- bad input ----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "call, pattern",
    [
        (
            lambda x: topi.reshape(x, (5, 5)),
            r"reshape: cannot reshape tensor 'x' of shape \(4, 6\)",
        ),
        (lambda x: topi.reshape(x, (-1, -1)), r"reshape: bad new shape"),
        (lambda x: topi.reshape(x, (-1, 5)), r"reshape: cannot reshape tensor 'x'"),
        (lambda x: topi.transpose(x, (0, 0)), r"transpose: axes \[0, 0\] are not a permutation"),
        (lambda x: topi.transpose(x, (0, 2)), r"transpose: axis 2 is out of range"),
        (lambda x: topi.split(x, 4, axis=1), r"split: axis 1 of tensor 'x' has extent 6"),
        (lambda x: topi.pad(x, ((1, -1), (0, 0))), r"pad: pad widths must be non-negative"),
        (lambda x: topi.pad(x, ((1, 1),) * 3), r"pad: pad_width .* 2 axes of tensor 'x'"),
        (lambda x: topi.strided_slice(x, [0], [2], [0]), r"strided_slice: stride 0 on axis 0"),
        (lambda x: topi.strided_slice(x, [0, 1], [2]), r"strided_slice: begin, end, strides"),
        (lambda x: topi.take(x, x), r"take: indices tensor 'x' has dtype float32"),
        (lambda x: topi.concatenate([]), r"concatenate: needs at least one tensor"),
    ],
)
def test_bad_shapes_and_axes(call, pattern: str) -> None:
    x = te.placeholder((4, 6), name="x")
    with pytest.raises((IRError, IRValueError), match=pattern):
        call(x)


def test_concatenate_mismatch_names_tensors() -> None:
    a = te.placeholder((4, 6), name="a")
    with pytest.raises(
        IRValueError, match=r"concatenate: tensor 'b' of shape \(5, 5\) does not match"
    ):
        topi.concatenate([a, te.placeholder((5, 5), name="b")], axis=0)
    with pytest.raises((IRError, IRValueError), match=r"concatenate: tensor 'c' has dtype int32"):
        topi.concatenate([a, te.placeholder((4, 6), "int32", name="c")])
    with pytest.raises((IRError, IRValueError), match=r"concatenate: tensor 'd' has rank 1"):
        topi.concatenate([a, te.placeholder((6,), name="d")])


@pytest.mark.parametrize("dtype", ["int32", "int64", "uint32", "int8", "uint64"])
def test_raise_mode_accepts_minus_n_to_n_and_names_any_other_index(dtype: str) -> None:
    x = te.placeholder((5, 64), name="x")
    idx = te.placeholder((3,), dtype, name="idx")
    gidx = te.placeholder((5, 2), dtype, name="gidx")
    f = build(
        [topi.take(x, idx, axis=0, mode="raise"), topi.gather(x, 1, gidx, mode="raise")],
        [x, idx, gidx],
    )
    a = np.arange(5 * 64, dtype="float32").reshape(5, 64)
    signed = not dtype.startswith("u")
    i = np.array([-5, 4, -1] if signed else [0, 4, 2], dtype)
    g = np.array([[-64, 63]] * 5 if signed else [[0, 63]] * 5, dtype)
    outs = [np.zeros((3, 64), "float32"), np.zeros((5, 2), "float32")]
    f(a, i, g, *outs)
    np.testing.assert_array_equal(outs[0], np.take(a, i.astype(np.int64), axis=0))
    np.testing.assert_array_equal(outs[1], np.take_along_axis(a, g.astype(np.int64), axis=1))
    top = np.iinfo(dtype).max
    bads = [5, top] + ([-6, np.iinfo(dtype).min] if signed else [])
    if dtype in ("int64", "uint64"):
        bads.append(2**40)  # never narrowed to 0 before the check
    for bad in bads:
        j = i.copy()
        j[1] = bad
        lo = -5 if signed else 0
        want = rf"take on axis 0 of tensor 'x': index {bad} is out of range \[{lo}, 5\)"
        with pytest.raises(KernelIndexError, match=want):
            f(a, j, g, *outs)
    h = g.copy()
    h[3, 1] = 64
    with pytest.raises(KernelIndexError, match=r"gather on axis 1 .* index 64 is out of range"):
        f(a, i, h, *outs)


def test_take_checks_each_index_once_outside_the_copy_loop() -> None:
    x = te.placeholder((100, 256), name="x")
    idx = te.placeholder((16,), "int64", name="idx")
    out = topi.take(x, idx, axis=0, mode="raise")
    func = te.lower(topi.schedule_for(out), [x, idx, out])
    src = kbuild(func, target="c").inspect_source()
    body = src[src.index("static int32_t main") :]
    assert body.count("kiln_raise_fmt(") == 1  # the index stage, not the row copy
    copy = body[body.index("kiln_raise_fmt(") :]
    assert "#pragma omp simd" in copy and "kiln_raise" not in copy.split("#pragma omp simd")[1]


def test_take_and_gather_bad_input() -> None:
    x = te.placeholder((4, 6), name="x")
    i = te.placeholder((3,), "int32", name="i")
    with pytest.raises(
        (IRError, IRValueError), match=r"take: mode must be 'clip', 'wrap', 'raise' or 'fast'"
    ):
        topi.take(x, i, axis=0, mode="bogus")
    with pytest.raises(
        (IRError, IRValueError), match=r"gather: indices tensor 'i' has rank 1 but data tensor"
    ):
        topi.gather(x, 0, i)
    with pytest.raises(
        (IRError, IRValueError), match=r"gather: indices tensor 'j' has extent 9 on axis 1"
    ):
        topi.gather(x, 0, te.placeholder((2, 9), "int32", name="j"))
