"""Randomized ONNX pooling against onnxruntime: ``MaxPool``, ``AveragePool`` and ``LpPool`` over
1-D and 2-D data with random kernels, strides, dilations, asymmetric pads or ``auto_pad``,
``ceil_mode`` and ``count_include_pad`` (seeded; `CASES` single-node cases in total).

Every case is one node with its own input; `BATCH` of them form one model, so a few builds
cover every case. Some cases put a 1x1 identity convolution of 16 channels in front of the pool,
so the pool runs channel-blocked (``NCHW16c``, the x86 tiled schedule); some leave the spatial
extents symbolic (the pool over symbolic shapes, `kiln.topi.nn.window_any`). Geometries that
onnxruntime or kiln refuse (a window holding no input element, a pad not below the kernel) are
not drawn. The models run in bytecode mode: the kernels are the same, the VM's own C is not
built. NOTE: measured here (2 shared cores, load 3-4), the file takes 53-76 s, about 65 s of
CPU (compiling the kernels: about 0.15 s a max pool, 0.5 s a blocked or symbolic case).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest

pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from kiln.relax.frontend.onnx import backend  # noqa: E402

SEED = 20240622
CASES = 300
BATCH = 100
OPSET = 19
BLOCK = 16  # the channels of a blocked case: whole vectors on AVX2 and AVX-512


@dataclass
class Case:
    """One pooling node and its input."""

    op: str
    shape: tuple[int, ...]
    attrs: dict[str, Any]
    blocked: bool = False
    symbolic: bool = False
    data: np.ndarray = field(default_factory=lambda: np.zeros(0, "float32"))


def _out_size(n: int, k: int, s: int, d: int, lo: int, hi: int, ceil: bool) -> int:
    span = n + lo + hi - d * (k - 1) - 1
    out = (-(-span // s) if ceil else span // s) + 1
    if ceil and (out - 1) * s >= n + lo:
        out -= 1
    return out


def _same_pads(n: int, k: int, s: int, d: int, upper: bool) -> tuple[int, int]:
    total = (-(-n // s) - 1) * s + (k - 1) * d + 1 - n  # onnxruntime refuses one below 0
    lo = total // 2 if upper else total - total // 2
    return lo, total - lo


def _every_window_reads_input(n: int, k: int, s: int, d: int, lo: int, hi: int, ceil: bool) -> bool:
    out = _out_size(n, k, s, d, lo, hi, ceil)
    if out < 1:
        return False
    for o in range(out):
        if not any(0 <= o * s - lo + t * d < n for t in range(k)):
            return False
    return True


def _draw(rng: np.random.Generator) -> Case | None:
    """A random case, or None when its geometry is one the runtimes refuse."""
    op = str(rng.choice(["MaxPool", "AveragePool", "LpPool"], p=[0.4, 0.35, 0.25]))
    rank = int(rng.choice([1, 2], p=[0.25, 0.75]))
    k = [int(rng.integers(1, 5)) for _ in range(rank)]
    s = [int(rng.integers(1, 4)) for _ in range(rank)]
    d = [int(rng.choice([1, 1, 2, 3])) for _ in range(rank)]
    n = [int(rng.integers(1, 11)) for _ in range(rank)]
    ceil = bool(rng.integers(0, 2))
    auto = str(rng.choice(["NOTSET"] * 5 + ["SAME_UPPER", "SAME_LOWER", "VALID"]))
    if auto == "NOTSET":
        pads = [int(rng.integers(0, kk)) for kk in k + k]
        lo_hi = [(pads[i], pads[i + rank]) for i in range(rank)]
    elif auto == "VALID":
        lo_hi = [(0, 0)] * rank
    else:
        # NOTE: onnxruntime 1.32 sizes SAME padding with the undilated kernel (the ONNX spec and
        # kiln use the dilated one), and an auto_pad SAME output is ceil(n / s) in either mode
        d, ceil = [1] * rank, False
        lo_hi = [_same_pads(*a, auto == "SAME_UPPER") for a in zip(n, k, s, d)]
    if any(not 0 <= lo < kk or not 0 <= hi < kk for (lo, hi), kk in zip(lo_hi, k)):
        return None
    if not all(_every_window_reads_input(*a, *p, ceil) for a, p in zip(zip(n, k, s, d), lo_hi)):
        return None
    attrs: dict[str, Any] = dict(kernel_shape=k, strides=s, dilations=d, ceil_mode=int(ceil))
    if auto == "NOTSET":
        attrs["pads"] = pads
    else:
        attrs["auto_pad"] = auto
    if op == "AveragePool":
        attrs["count_include_pad"] = int(rng.integers(0, 2))
    if op == "LpPool":
        attrs["p"] = int(rng.choice([1, 2, 3]))
    blocked = rank == 2 and rng.random() < 0.12
    symbolic = not blocked and not ceil and auto in ("NOTSET", "VALID") and rng.random() < 0.2
    shape = (1, BLOCK if blocked else int(rng.integers(1, 4)), *n)
    data = rng.standard_normal(shape).astype("float32")
    if op == "LpPool":
        data = (data * 0.5).astype("float32")
    return Case(op, shape, attrs, blocked, symbolic, data)


def cases() -> list[Case]:
    """`CASES` random valid cases, the same ones on every run."""
    rng = np.random.default_rng(SEED)
    out: list[Case] = []
    while len(out) < CASES:
        case = _draw(rng)
        if case is not None:
            out.append(case)
    return out


def _model(batch: list[Case]) -> bytes:
    """One graph holding each case of ``batch`` as its own input -> node -> output."""
    nodes, inputs, outputs, inits = [], [], [], []
    for i, c in enumerate(batch):
        x, y = f"x{i}", f"y{i}"
        dims: list[Any] = list(c.shape)
        if c.symbolic:
            dims[2:] = [f"h{i}_{j}" for j in range(len(dims) - 2)]
        inputs.append(helper.make_tensor_value_info(x, TensorProto.FLOAT, dims))
        outputs.append(helper.make_tensor_value_info(y, TensorProto.FLOAT, None))
        src = x
        if c.blocked:
            eye = np.eye(BLOCK, dtype="float32").reshape(BLOCK, BLOCK, 1, 1)
            inits.append(numpy_helper.from_array(eye, f"w{i}"))
            nodes.append(helper.make_node("Conv", [x, f"w{i}"], [f"c{i}"]))
            src = f"c{i}"
        nodes.append(helper.make_node(c.op, [src], [y], name=f"pool{i}", **c.attrs))
    graph = helper.make_graph(nodes, "pools", inputs, outputs, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    return model.SerializeToString()


def _describe(c: Case) -> str:
    how = " blocked" if c.blocked else " symbolic" if c.symbolic else ""
    return f"{c.op}{how} on {c.shape} {c.attrs}"


def _check(batch: list[Case]) -> list[str]:
    """The cases of ``batch`` whose kiln result differs from onnxruntime's."""
    model = _model(batch)
    feeds = {f"x{i}": c.data for i, c in enumerate(batch)}
    want = ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, feeds)
    got = backend.prepare(model, exec_mode="bytecode").run(feeds)
    bad = []
    for c, g, w in zip(batch, got, want):
        tol = 1e-4 if c.op == "LpPool" else 1e-5
        if g.shape != w.shape or not np.allclose(g, w, rtol=tol, atol=tol):
            bad.append(f"{_describe(c)}:\n  kiln {g.ravel()[:8]}\n  ort  {w.ravel()[:8]}")
    return bad


def test_the_cases_cover_every_attribute() -> None:
    all_cases = cases()
    assert len(all_cases) >= 300
    seen = {(c.op, c.attrs["ceil_mode"], c.blocked, c.symbolic) for c in all_cases}
    for op in ("MaxPool", "AveragePool", "LpPool"):
        assert {(op, 1, False, False), (op, 0, True, False), (op, 0, False, True)} <= seen
    assert {c.attrs.get("auto_pad", "NOTSET") for c in all_cases} == {
        "NOTSET",
        "SAME_UPPER",
        "SAME_LOWER",
        "VALID",
    }
    assert any(max(c.attrs["dilations"]) > 1 and c.attrs["ceil_mode"] for c in all_cases)


@pytest.mark.parametrize("part", range(CASES // BATCH))
def test_pools_match_onnxruntime(part: int) -> None:
    batch = cases()[part * BATCH : (part + 1) * BATCH]
    bad = _check(batch)
    assert not bad, f"{len(bad)} of {len(batch)} cases differ:\n" + "\n".join(bad[:10])
