"""The numpy checks of the records the torch frontend's Core ATen coverage added: the scatters
(``scatter_elements``, ``scatter_nd``: duplicates, negative indices, the reductions; torch's
tests check the rest against eager), ``grid_sample`` (both methods, the three paddings, both
corner conventions), mirrored and edge
``pad``, ``atan2`` (all four quadrants and the signed zeros) and ``expm1`` / ``log1p`` /
``log2`` / ``log10`` / ``trunc``. The references are plain loops over the definitions."""

from __future__ import annotations

import itertools

import numpy as np

from kiln.relax import op as R
from tests.relax.op.harness import Case

RNG = np.random.default_rng(29)
X = RNG.uniform(-3, 3, (3, 5)).astype("float32")
TINY = np.array([[1e-9, -1e-7, 0.3, -0.45, 2.5], [-2.5, 7.5, -7.5, 0.0, 1e-30]], "float32")


def _scatter_elements(x, idx, upd, axis, reduction="update", include_self=True):
    out = x.copy()
    hits = np.zeros(x.shape, "int64")
    for j in itertools.product(*(range(n) for n in idx.shape)):
        p = list(j)
        p[axis] = idx[j] % x.shape[axis]
        p = tuple(p)
        v = upd[j]
        if reduction == "update":
            out[p] = v
        elif not hits[p] and not include_self:
            out[p] = v
        else:
            out[p] = {"add": out[p] + v, "mul": out[p] * v, "max": max(out[p], v),
                      "min": min(out[p], v), "mean": out[p] + v}[reduction]  # fmt: skip
        hits[p] += 1
    if reduction == "mean":
        n = hits + (1 if include_self else 0)
        out = np.where(hits > 0, out / np.maximum(n, 1), x).astype(x.dtype)
    return out


def _scatter_nd(x, idx, upd, reduction="update"):
    out = x.copy()
    k = idx.shape[-1]
    for b in itertools.product(*(range(n) for n in idx.shape[:-1])):
        p = tuple(int(v) % x.shape[t] for t, v in enumerate(idx[b]))
        out[p] = upd[b] if reduction == "update" else out[p] + upd[b]
    assert k <= x.ndim
    return out


IDX = np.array([[0, 4, -1], [2, 2, 1]], "int64")  # duplicates and a negative index
UPD = RNG.uniform(-2, 2, (2, 4)).astype("float32")  # larger than IDX: its corner is used
ND_IDX = np.array([[1, 0], [-1, 2], [1, 0]], "int64")  # a duplicate and a negative index
ND_UPD = RNG.uniform(-2, 2, (3, 5)).astype("float32")
DATA3 = RNG.uniform(-2, 2, (3, 4, 5)).astype("float32")


def _elements_case(reduction: str, include_self: bool = True) -> Case:
    return Case(
        "relax.scatter_elements",
        lambda x, i, u: R.scatter_elements(x, i, u, 1, reduction, include_self),
        [X, IDX, UPD],
        lambda x, i, u: _scatter_elements(x, i, u[:, :3], 1, reduction, include_self),
        sym=[[], [], []],
        name=f"{reduction}{'' if include_self else '_without_self'}",
    )


SCATTER = [
    _elements_case("update"),
    _elements_case("add"),
    _elements_case("max", include_self=False),
    _elements_case("mean", include_self=False),
    Case(
        "relax.scatter_elements",
        lambda x, i, u: R.scatter_elements(x, i, u, 0),
        [X, np.array([[2, 0, 1, 1, -3]], "int32"), X[:1] * 10],
        lambda x, i, u: _scatter_elements(x, i, u, 0),
        sym=[[1], [1], [1]],
        name="axis0",
    ),
    Case(
        "relax.scatter_nd",
        lambda x, i, u: R.scatter_nd(x, i, u),
        [DATA3, ND_IDX, ND_UPD],
        lambda x, i, u: _scatter_nd(x, i, u),
        sym=[[2], [], [1]],
    ),
    Case(
        "relax.scatter_nd",
        lambda x, i, u: R.scatter_nd(x, i, u, "add"),
        [DATA3, ND_IDX, ND_UPD],
        lambda x, i, u: _scatter_nd(x, i, u, "add"),
        sym=[[], [], []],
        name="add",
    ),
    Case(
        "relax.scatter_nd",
        lambda x, i, u: R.scatter_nd(x, i, u),
        [DATA3, np.array([2], "int64"), DATA3[0] * 3],
        lambda x, i, u: _scatter_nd(x, i[None], u[None]),
        sym=[[], [], []],
        name="one_index",
    ),
]


def _unnormalize(g: float, n: int, align: bool) -> float:
    return (g + 1) / 2 * (n - 1) if align else ((g + 1) * n - 1) / 2


def _reflect(c: float, lo2: int, hi2: int) -> float:
    if lo2 == hi2:
        return 0.0
    lo, span = lo2 / 2, (hi2 - lo2) / 2
    d = abs(c - lo)
    extra, flips = d % span, int(d // span)
    return extra + lo if flips % 2 == 0 else span - extra + lo


def _source(g: float, n: int, padding: str, align: bool) -> float:
    c = _unnormalize(float(g), n, align)
    if padding == "reflection":
        c = _reflect(c, 0, 2 * (n - 1)) if align else _reflect(c, -1, 2 * n - 1)
    if padding != "zeros":
        c = min(max(c, 0.0), n - 1.0)
    return c


def _grid_sample(x, grid, method, padding, align):
    n, c, h, w = x.shape
    out = np.zeros((n, c, *grid.shape[1:3]), "float32")
    for b, i, j in itertools.product(range(n), range(grid.shape[1]), range(grid.shape[2])):
        cx = _source(grid[b, i, j, 0], w, padding, align)
        cy = _source(grid[b, i, j, 1], h, padding, align)

        def tap(yy: float, xx: float, b: int = b) -> np.ndarray:
            inside = 0 <= yy < h and 0 <= xx < w
            return x[b, :, int(yy), int(xx)] if inside else np.zeros(c, "float32")

        if method == "nearest":
            out[b, :, i, j] = tap(np.round(cy), np.round(cx))
            continue
        x0, y0 = np.floor(cx), np.floor(cy)
        fx, fy = cx - x0, cy - y0
        top = (1 - fx) * tap(y0, x0) + fx * tap(y0, x0 + 1)
        bottom = (1 - fx) * tap(y0 + 1, x0) + fx * tap(y0 + 1, x0 + 1)
        out[b, :, i, j] = (1 - fy) * top + fy * bottom
    return out


IMG = RNG.uniform(-2, 2, (2, 3, 4, 5)).astype("float32")
GRID = RNG.uniform(-1.6, 1.6, (2, 3, 6, 2)).astype("float32")  # points outside the image too


def _grid_case(method: str, padding: str, align: bool) -> Case:
    return Case(
        "relax.image.grid_sample",
        lambda x, g: R.image.grid_sample(x, g, method, padding, align),
        [IMG, GRID],
        lambda x, g: _grid_sample(x, g, method, padding, align),
        sym=[[], []],
        rtol=1e-4,
        atol=1e-5,
        name=f"{method}_{padding}_{'aligned' if align else 'edges'}",
    )


IMAGE = [
    _grid_case("bilinear", "zeros", False),
    _grid_case("bilinear", "reflection", False),
    _grid_case("nearest", "border", True),
]

PAD = [
    Case(
        "relax.nn.pad",
        lambda x: R.nn.pad(x, [2, 1, 0, 4], pad_mode="reflect"),
        [X],
        lambda x: np.pad(x, ((2, 1), (0, 4)), mode="reflect"),
        sym=[[]],
        name="reflect",
    ),
    Case(
        "relax.nn.pad",
        lambda x: R.nn.pad(x, [1, 3, 2, 0], pad_mode="edge"),
        [X],
        lambda x: np.pad(x, ((1, 3), (2, 0)), mode="edge"),
        name="edge",
    ),
]

QUADRANTS = np.array([[1, -1, 1, -1, 0.0, -0.0, 0.0, -0.0, 3, np.inf]], "float32")
RIGHT = np.array([[1, 1, -1, -1, 1, 1, -1.0, -1.0, 0, -np.inf]], "float32")

MATH = [
    Case("relax.atan2", R.atan2, [QUADRANTS, RIGHT], np.arctan2, sym=[[], []]),
    Case("relax.atan2", R.atan2, [X, X[::-1].copy()], np.arctan2, name="random"),
    Case("relax.expm1", R.expm1, [TINY], np.expm1, sym=[[]]),
    Case("relax.log1p", R.log1p, [np.abs(TINY)], np.log1p, sym=[[]]),
    Case("relax.log2", R.log2, [np.abs(X) + 0.5], np.log2),
    Case("relax.log10", R.log10, [np.abs(X) + 0.5], np.log10),
    Case("relax.trunc", R.trunc, [X * 2], np.trunc),
]

INDEX = SCATTER + IMAGE + PAD + MATH
