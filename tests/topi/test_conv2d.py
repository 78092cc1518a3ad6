"""2-D convolution (NCHW): `topi.nn` / `topi.x86` conv2d_nchw against a numpy reference (and
PyTorch when installed) for stride, padding, dilation, groups and depthwise; the x86 schedule
with an epilogue and through `schedule_for`; errors.

Each test builds all of its convolutions into one function: compiling dominates the run time.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
import pytest

from kiln import te, tir, topi
from kiln.errors import IRError, IRValueError
from kiln.ir import Target
from kiln.topi import x86
from kiln.topi.x86.conv2d import ACC_TAG
from kiln.topi.x86.cpu import tile_vectors
from tests.topi.conftest import (
    fma_accumulators,
    hot_loop,
    machine_code,
    shape_of,
    vector_spills,
)

# (n, c, h, w, o, kh, kw, stride, padding, dilation, groups)
CASES = [
    (1, 3, 7, 9, 5, 3, 3, 1, 0, 1, 1),
    (2, 4, 10, 11, 6, 3, 3, 2, 1, 1, 1),
    (1, 8, 12, 13, 8, 3, 3, 1, 2, 2, 1),
    (1, 8, 9, 9, 8, 3, 3, 1, 1, 1, 8),  # depthwise
    (1, 8, 9, 9, 16, 3, 3, 1, 1, 1, 4),  # grouped, 4 outputs per group
    (1, 6, 5, 17, 4, 3, 2, (2, 1), (1, 0, 2, 1), (1, 2), 2),
    (1, 1, 1, 1, 1, 1, 1, 1, 0, 1, 1),
    (1, 5, 6, 7, 7, 1, 1, 1, 0, 1, 1),
]


def _pair(v: Any) -> tuple[int, int]:
    return (v, v) if isinstance(v, int) else tuple(v)  # type: ignore[return-value]


def conv_ref(x: np.ndarray, w: np.ndarray, stride: Any, pad: Any, dil: Any, groups: int) -> Any:
    """NCHW convolution in numpy, one einsum per group and kernel tap."""
    (sh, sw), (dh, dw) = _pair(stride), _pair(dil)
    t, left, b, r = pad if isinstance(pad, tuple) and len(pad) == 4 else (*_pair(pad),) * 2
    xp = np.pad(x, ((0, 0), (0, 0), (t, b), (left, r)))
    o, cg, kh, kw = w.shape
    oh = (xp.shape[2] - dh * (kh - 1) - 1) // sh + 1
    ow = (xp.shape[3] - dw * (kw - 1) - 1) // sw + 1
    out = np.zeros((x.shape[0], o, oh, ow), x.dtype)
    og = o // groups
    for g in range(groups):
        xs, ws = xp[:, g * cg : (g + 1) * cg], w[g * og : (g + 1) * og]
        for i in range(kh):
            for j in range(kw):
                patch = xs[:, :, i * dh :: sh, j * dw :: sw][:, :, :oh, :ow]
                out[:, g * og : (g + 1) * og] += np.einsum("ncyx,oc->noyx", patch, ws[:, :, i, j])
    return out


def _build_cases(make: Any, rng: np.random.Generator) -> tuple[list[Any], list[Any], list[Any]]:
    inputs, outs, arrays = [], [], []
    for k, (n, c, h, w, o, kh, kw, s, p, d, g) in enumerate(CASES):
        x = te.placeholder((n, c, h, w), name=f"x{k}")
        f = te.placeholder((o, c // g, kh, kw), name=f"f{k}")
        inputs += [x, f]
        outs.append(make(x, f, s, p, d, g, name=f"y{k}"))
        arrays += [rng.standard_normal(shape_of(t)).astype("float32") for t in (x, f)]
    return inputs, outs, arrays


def _build(sch: te.Schedule, args: list[Any], target: str = "c") -> Any:
    from kiln.driver import build

    func = te.lower(sch, args)
    assert tir.verify_well_formed(func) == []
    return build(func, target=target)


def _run(
    sch: te.Schedule, inputs: list[Any], outs: list[Any], arrays: list[Any], target: str = "c"
) -> list[Any]:
    results = [np.zeros(shape_of(t), "float32") for t in outs]
    _build(sch, [*inputs, *outs], target)["main"](*arrays, *results)
    return results


AVX2 = "c -mcpu=haswell"
"""An AVX2 + FMA target: its code runs on AVX-512 machines too."""

needs_avx2 = pytest.mark.skipif(
    Target("c").cpu.isa not in ("avx2", "avx512"), reason="the host cannot run AVX2 code"
)


@pytest.mark.parametrize(
    ("make", "target"),
    [
        (x86.conv2d_nchw, "c"),
        pytest.param(x86.conv2d_nchw, AVX2, marks=needs_avx2),
        (topi.nn.conv2d_nchw, "c"),
    ],
    ids=["x86", "x86-avx2", "plain"],
)
def test_conv2d_against_numpy(make: Any, target: str, rng: np.random.Generator) -> None:
    extra = {"target": target} if make is x86.conv2d_nchw else {}
    inputs, outs, arrays = _build_cases(functools.partial(make, **extra), rng)
    if extra:  # the register tile is the target's: 6 channels x as many registers as fit
        lanes = Target(target).vector_bytes // 4
        for out in outs:
            tile = out.op.input_tensors[0].op.attrs["tile"]
            assert tile.tw % (lanes // 2) == 0 and tile.tw > 0
            assert tile.th * -(-tile.tw // lanes) == tile_vectors(Target(target))
        assert outs[1].op.input_tensors[0].op.attrs["tile"].rows == 6
    got = _run(x86.schedule_conv2d_nchw(outs, target), inputs, outs, arrays, target)
    for k, case in enumerate(CASES):
        s, p, d, g = case[7:]
        want = conv_ref(arrays[2 * k], arrays[2 * k + 1], s, p, d, g)
        np.testing.assert_allclose(got[k], want, rtol=1e-4, atol=1e-4, err_msg=str(case))


def test_conv2d_against_torch_with_relu_epilogue(rng: np.random.Generator) -> None:
    torch = pytest.importorskip("torch")
    x, f = te.placeholder((2, 16, 15, 20), name="x"), te.placeholder((10, 16, 3, 3), name="f")
    y = topi.relu(x86.conv2d_nchw(x, f, 1, 1))
    xv, fv = (rng.standard_normal(shape_of(t)).astype("float32") for t in (x, f))
    sch = topi.schedule_for(y)
    assert next(s for s in sch.stages if s.op.tag == ACC_TAG).attach_type == "scope"
    (got,) = _run(sch, [x, f], [y], [xv, fv])
    want = torch.relu(
        torch.nn.functional.conv2d(torch.from_numpy(xv), torch.from_numpy(fv), padding=1)
    )
    np.testing.assert_allclose(got, want.numpy(), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize(
    ("target", "reg"),
    [
        pytest.param(AVX2, "ymm", id="avx2", marks=needs_avx2),
        pytest.param(
            "c",
            "zmm",
            id="avx512-host",
            marks=pytest.mark.skipif(
                Target("c").cpu.isa != "avx512",
                reason=f"the host has no AVX-512 (Target('c').cpu.isa is "
                f"{Target('c').cpu.isa!r}); the avx2 case covers this machine's kernels",
            ),
        ),
    ],
)
def test_kernel_keeps_accumulators_in_registers(
    target: str, reg: str, rng: np.random.Generator
) -> None:
    """A 56-pixel-wide convolution built for AVX2 and for the AVX-512 host: right against
    numpy, the target's tile (AVX-512: 3 registers and a half-width one per row, no padded
    column), every accumulator in a register of its own and no vector spill in the inner loop."""
    tgt = Target(target)
    x, f = te.placeholder((1, 16, 8, 56), name="x"), te.placeholder((12, 16, 3, 3), name="f")
    y = x86.conv2d_nchw(x, f, 1, 1, target=tgt)
    tile = y.op.input_tensors[0].op.attrs["tile"]
    lanes = tgt.vector_bytes // 4
    chunks = -(-tile.tw // lanes)
    assert tile.rows == 6 and tile.th * chunks == tile_vectors(tgt)
    assert 56 % tile.tw == 0 and 8 % tile.th == 0  # nothing padded for this shape
    xv, fv = (rng.standard_normal(shape_of(t)).astype("float32") for t in (x, f))
    mod = _build(x86.schedule_conv2d_nchw(y, tgt), [x, f, y], target)
    got = np.zeros(shape_of(y), "float32")
    mod["main"](xv, fv, got)
    np.testing.assert_allclose(got, conv_ref(xv, fv, 1, 1, 1, 1), rtol=1e-4, atol=1e-4)
    asm = machine_code(mod)
    if reg == "ymm":
        assert "%zmm" not in asm, "AVX2 code uses AVX-512 registers"
    hot = hot_loop(asm)
    accumulators = tile.rows * tile.th * chunks
    assert sum("vfmadd" in x for x in hot) >= accumulators
    assert len(fma_accumulators(hot)) >= accumulators, "\n".join(hot)
    assert not vector_spills(hot), "vector registers spilled:\n" + "\n".join(hot)


def _err(fn: Any, *parts: str) -> None:
    with pytest.raises((IRError, IRValueError)) as info:
        fn()
    for p in parts:
        assert p in str(info.value), str(info.value)


def test_bad_input_names_operator_and_tensor() -> None:
    x, f = te.placeholder((1, 6, 8, 8), name="img"), te.placeholder((4, 3, 3, 3), name="filt")
    conv = topi.nn.conv2d_nchw
    _err(lambda: conv(x, f, groups=4), "conv2d_nchw", "'img'", "6 channels", "groups=4")
    _err(lambda: x86.conv2d_nchw(x, f, groups=1), "conv2d_nchw", "'filt'", "'img'", "per group")
    big = te.placeholder((4, 6, 9, 9), name="big")
    _err(lambda: conv(x, big), "conv2d_nchw", "'big'", "does not fit")
    flat = te.placeholder((6, 8, 8), name="flat")
    _err(lambda: conv(flat, f), "conv2d_nchw", "'flat'", "4-D")
    _err(lambda: conv(x, f, stride=0, groups=2), "conv2d_nchw", "stride")
    _err(lambda: conv(x, f, padding=(1, 2, 3), groups=2), "conv2d_nchw", "padding")
    ints = te.placeholder((4, 3, 3, 3), "int32", name="ints")
    _err(lambda: conv(x, ints, groups=2), "conv2d_nchw", "'ints'", "dtypes")
    five = te.placeholder((5, 3, 3, 3), name="five")
    _err(lambda: conv(x, five, groups=2), "conv2d_nchw", "'five'", "output channels")
