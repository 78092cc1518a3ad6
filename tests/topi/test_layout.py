"""Layout strings and `layout_transform`: the TE compute and the numpy `transform_array` give the
same array (blocked, re-blocked, unblocked, filter and matrix-panel layouts, zero padding to
whole blocks, a symbolic batch); bad layouts are named."""

from __future__ import annotations

import numpy as np
import pytest

from kiln import te
from kiln.errors import IRValueError
from kiln.topi.layout import Layout, layout_transform, transform_array
from tests.topi.conftest import build, shape_of

CASES = [
    ((2, 32, 5, 6), "NCHW", "NCHW16c"),
    ((2, 2, 5, 6, 16), "NCHW16c", "NCHW"),
    ((2, 2, 5, 6, 16), "NCHW16c", "NCHW8c"),
    ((2, 4, 5, 6, 8), "NCHW8c", "NCHW32c"),
    ((64, 32, 3, 3), "OIHW", "OIHW16i32o"),
    ((20, 30), "KN", "NK16n"),
    ((3, 24, 2, 2), "NCHW", "NCHW16c"),
    ((5, 7), "KN", "NK"),
    ((1, 3, 4, 19, 16), "NCHW16c", "NCHW"),  # unblocking: rows not whole vectors
    ((2, 2, 3, 16, 8), "NCHW8c", "NCHW"),
]


def test_te_and_numpy_transforms_agree(rng: np.random.Generator) -> None:
    inputs, outs, arrays = [], [], []
    for k, (shape, src, dst) in enumerate(CASES):
        x = te.placeholder(shape, name=f"x{k}")
        inputs.append(x)
        outs.append(layout_transform(x, src, dst, name=f"y{k}"))
        arrays.append(rng.standard_normal(shape).astype("float32"))
    results = [np.zeros(shape_of(t), "float32") for t in outs]
    build(outs, inputs)(*arrays, *results)
    for (_, src, dst), a, got in zip(CASES, arrays, results):
        np.testing.assert_array_equal(got, transform_array(a, src, dst), err_msg=f"{src}->{dst}")


def test_numpy_transform_moves_the_right_elements(rng: np.random.Generator) -> None:
    a = rng.standard_normal((2, 32, 5, 6)).astype("float32")
    b = transform_array(a, "NCHW", "NCHW16c")
    assert b.shape == (2, 2, 5, 6, 16) and b[1, 1, 2, 3, 5] == a[1, 21, 2, 3]
    assert np.array_equal(transform_array(b, "NCHW16c", "NCHW"), a)
    w = rng.standard_normal((64, 32, 3, 3)).astype("float32")
    assert transform_array(w, "OIHW", "OIHW16i32o")[1, 1, 2, 0, 3, 7] == w[39, 19, 2, 0]
    m = rng.standard_normal((20, 30)).astype("float32")
    p = transform_array(m, "KN", "NK16n")
    assert p.shape == (2, 20, 16) and p[1, 4, 3] == m[4, 19] and not p[1, :, 14:].any()
    c = transform_array(rng.standard_normal((1, 24, 2, 2)).astype("float32"), "NCHW", "NCHW16c")
    assert c.shape == (1, 2, 2, 2, 16) and not c[:, 1, :, :, 8:].any()  # padded channels


def test_symbolic_batch(rng: np.random.Generator) -> None:
    n = te.size_var("n")
    x = te.placeholder((n, 16, 3, 3), name="x")
    y = layout_transform(x, "NCHW", "NCHW8c")
    a = rng.standard_normal((3, 16, 3, 3)).astype("float32")
    out = np.zeros((3, 2, 3, 3, 8), "float32")
    build(y, [x])(a, out)
    np.testing.assert_array_equal(out, transform_array(a, "NCHW", "NCHW8c"))


def test_symbolic_batch_unblocked(rng: np.random.Generator) -> None:
    n = te.size_var("n")
    x = te.placeholder((n, 2, 3, 11, 8), name="x")
    y = layout_transform(x, "NCHW8c", "NCHW")
    a = rng.standard_normal((3, 2, 3, 11, 8)).astype("float32")
    out = np.zeros((3, 16, 3, 11), "float32")
    build(y, [x])(a, out)
    np.testing.assert_array_equal(out, transform_array(a, "NCHW8c", "NCHW"))


def test_unblocking_reads_each_row_of_a_block_while_it_is_in_cache() -> None:
    """``NCHW16c -> NCHW`` loops over (n, c // 16, h) outside, then c % 16, then w (as vectors):
    a row of the block is read for all its 16 output rows (`kiln.topi.generic.unblock`)."""
    from kiln.topi import schedule_for

    x = te.placeholder((1, 6, 112, 112, 16), name="x")
    y = layout_transform(x, "NCHW16c", "NCHW")
    stage = schedule_for(y)[y]
    names = [a.var.name for a in stage.leaf_iter_vars]
    assert len(names) == 4 and names[1] == "i1_inner" and names[2].startswith("i3"), names


@pytest.mark.parametrize(
    ("name", "fragment"),
    [
        ("NCHW16", "position 4"),
        ("NCHWC", "appears twice"),
        ("16cNCHW", "before"),
        ("NCHW16c8c", "second block"),
        ("nchw", "position 0"),
    ],
)
def test_bad_layouts_are_named(name: str, fragment: str) -> None:
    with pytest.raises(IRValueError, match=fragment):
        Layout.parse(name)


def test_bad_transforms_are_named() -> None:
    x = te.placeholder((2, 32, 5, 6), name="img")
    with pytest.raises(IRValueError, match="different axes"):
        layout_transform(x, "NCHW", "NHWK")
    with pytest.raises(IRValueError, match="rank 4"):
        layout_transform(x, "NCHW16c", "NCHW")
    with pytest.raises(IRValueError, match="must have extent 16"):
        layout_transform(te.placeholder((2, 2, 5, 6, 8), name="b"), "NCHW16c", "NCHW")
    n = te.size_var("n")
    with pytest.raises(IRValueError, match="constant"):
        layout_transform(te.placeholder((n, 4), name="s"), "NC", "NC4n")
