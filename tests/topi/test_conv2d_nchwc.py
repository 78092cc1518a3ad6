"""Channel-blocked 2-D convolution: `topi.nn` / `topi.x86` conv2d_nchwc against a numpy
reference (and PyTorch when installed) for 3x3, 1x1, strided, dilated, depthwise and grouped
convolutions and a 3-channel first layer, on the host and on AVX2; the register tile per ISA;
the micro-kernel's accumulators in registers; the generic fallback; errors.

Each test builds all of its convolutions into one function: compiling dominates the run time.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import kiln
from kiln import te, tir, topi
from kiln.errors import IRError, IRValueError
from kiln.ir import Target
from kiln.ir.dtype import DataType
from kiln.tir.functor import substitute
from kiln.topi import x86
from kiln.topi.layout import transform_array
from kiln.topi.x86.conv2d_nchwc import (
    ACC_TAG,
    IN_PLACE_REGISTERS,
    NchwcTile,
    max_pixels,
    nchwc_tile,
)
from kiln.topi.x86.cpu import cpu_target
from tests.topi.conftest import (
    fma_accumulators,
    hot_loop,
    loops_of,
    machine_code,
    shape_of,
    vector_spills,
)
from tests.topi.test_conv2d import AVX2, conv_ref, needs_avx2

# (n, c, h, w, o, k, stride, padding, dilation, groups, cb, ob)
CASES = [
    (1, 32, 9, 11, 32, 3, 1, 1, 1, 1, 16, 16),  # 3x3
    (2, 16, 10, 13, 32, 3, 2, 1, 1, 1, 16, 32),  # strided, two vectors per pixel
    (1, 16, 9, 9, 16, 1, 1, 0, 1, 1, 8, 16),  # 1x1, input block != output block
    (1, 16, 12, 12, 16, 3, 1, 2, 2, 1, 16, 16),  # dilated
    (1, 16, 9, 9, 16, 3, 1, 1, 1, 16, 16, 16),  # depthwise
    (1, 32, 9, 9, 32, 3, 2, 1, 1, 32, 16, 16),  # depthwise, strided
    (1, 32, 8, 8, 64, 3, 1, 1, 1, 2, 16, 16),  # grouped
    (1, 3, 15, 15, 16, 7, 2, 3, 1, 1, 3, 16),  # a first layer: 3 channels, 7x7 / 2
    (1, 8, 7, 7, 24, 3, 1, 1, 1, 1, 8, 8),  # half-vector blocks (AVX-512)
    (1, 16, 6, 5, 16, 3, 1, (1, 0, 2, 1), 1, 1, 16, 16),  # asymmetric padding
]


def registers_of(tile: NchwcTile, depthwise: bool = False) -> int:
    """The vector registers ``tile``'s reduction step needs at least: its accumulators, the
    broadcast inputs, and its filter vectors (one, the others read from memory by their FMAs,
    for a dense convolution with one tap), and with the input block's loop unrolled every filter
    vector and three spare registers."""
    if tile.unrolled_block:
        return tile.pixels * tile.vectors + tile.vectors + 3
    if tile.taps == 1 and not depthwise:
        return tile.pixels * tile.vectors + 2
    return tile.pixels * tile.vectors + tile.taps * tile.vectors + 2


def _operands(
    case: tuple[Any, ...], k: int, rng: np.random.Generator
) -> tuple[list[Any], list[np.ndarray], np.ndarray, tuple[Any, ...]]:
    n, c, h, w, o, kk, s, p, d, g, cb, ob = case
    ki = 1 if g == c == o else cb
    x = rng.standard_normal((n, c, h, w)).astype("float32")
    f = rng.standard_normal((o, c // g, kk, kk)).astype("float32")
    xb, fb = transform_array(x, "NCHW", f"NCHW{cb}c"), transform_array(f, "OIHW", f"OIHW{ki}i{ob}o")
    xt, ft = te.placeholder(xb.shape, name=f"x{k}"), te.placeholder(fb.shape, name=f"f{k}")
    want = transform_array(np.maximum(conv_ref(x, f, s, p, d, g), 0), "NCHW", f"NCHW{ob}c")
    return [xt, ft], [xb, fb], want, (s, p, d, g)


def _build(outs: list[Any], inputs: list[Any], target: str) -> Any:
    from kiln.driver import build

    func = te.lower(topi.schedule_for(outs, target), [*inputs, *outs])
    assert tir.verify_well_formed(func) == []
    return build(func, target=target)


@pytest.mark.parametrize(
    ("make", "target"),
    [
        (x86.conv2d_nchwc, "c"),
        pytest.param(x86.conv2d_nchwc, AVX2, marks=needs_avx2),
        (topi.nn.conv2d_nchwc, "c"),
    ],
    ids=["x86", "x86-avx2", "plain"],
)
def test_conv2d_nchwc_against_numpy(make: Any, target: str, rng: np.random.Generator) -> None:
    """Every kind of convolution with a relu epilogue; the x86 computes are the tiled kernel
    (never the generic fallback) and their tile fits the target's registers."""
    inputs, outs, arrays, wants = [], [], [], []
    for k, case in enumerate(CASES):
        ts, arrs, want, (s, p, d, g) = _operands(case, k, rng)
        extra = {"target": target} if make is x86.conv2d_nchwc else {}
        outs.append(topi.relu(make(*ts, s, p, d, g, name=f"y{k}", **extra)))
        inputs += ts
        arrays += arrs
        wants.append(want)
    if make is x86.conv2d_nchwc:
        regs = Target(target).cpu.vector_registers
        for y in outs:
            acc = y.op.input_tensors[0].op.input_tensors[0]
            assert acc.op.tag == ACC_TAG
            tile = acc.op.attrs["tile"]
            assert registers_of(tile, len(acc.op.reduce_axis) == 2) <= regs
    results = [np.zeros(shape_of(t), "float32") for t in outs]
    _build(outs, inputs, target)["main"](*arrays, *results)
    for case, got, want in zip(CASES, results, wants):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4, err_msg=str(case))


def test_against_torch_and_symbolic_batch(rng: np.random.Generator) -> None:
    """A strided 3x3 convolution against PyTorch; a symbolic batch gets the same register-tiled
    kernel (run at two batch sizes)."""
    torch = pytest.importorskip("torch")
    x = rng.standard_normal((2, 32, 14, 14)).astype("float32")
    f = rng.standard_normal((64, 32, 3, 3)).astype("float32")
    n = te.size_var("n")
    xt = te.placeholder((n, 2, 14, 14, 16), name="x")
    st = te.placeholder((2, 2, 14, 14, 16), name="xs")
    ft = te.placeholder((2, 2, 3, 3, 16, 32), name="f")
    sym = x86.conv2d_nchwc(xt, ft, 2, 1)
    fixed = x86.conv2d_nchwc(st, ft, 2, 1, name="fixed")
    assert sym.op.input_tensors[0].op.tag == fixed.op.input_tensors[0].op.tag == ACC_TAG
    mod = _build([sym, fixed], [xt, st, ft], "c")
    xb, fb = transform_array(x, "NCHW", "NCHW16c"), transform_array(f, "OIHW", "OIHW16i32o")
    want = torch.nn.functional.conv2d(torch.from_numpy(x), torch.from_numpy(f), stride=2, padding=1)
    want_b = transform_array(want.numpy(), "NCHW", "NCHW32c")
    got_sym, got = np.zeros((2, 2, 7, 7, 32), "float32"), np.zeros((2, 2, 7, 7, 32), "float32")
    mod["main"](xb, xb, fb, got_sym, got)
    np.testing.assert_allclose(got, want_b, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(got_sym, want_b, rtol=1e-4, atol=1e-4)
    one = np.zeros((1, 2, 7, 7, 32), "float32")
    mod["main"](xb[:1], xb, fb, one, got)
    np.testing.assert_allclose(one, want_b[:1], rtol=1e-4, atol=1e-4)


def _guards(outs: list[Any], inputs: list[Any]) -> int:
    from kiln.ir.visitor import pre_order_nodes
    from kiln.tir.stmt import IfThenElse

    func = te.lower(topi.schedule_for(outs, "c"), [*inputs, *outs])
    return sum(isinstance(s, IfThenElse) for s in pre_order_nodes(func.body))


def test_symbolic_batch_shares_the_threads_without_guards() -> None:
    """A convolution big enough for threads on one image fuses the symbolic batch with the
    tile loop it runs in parallel (grain set at run time); the tiles then need no more guards
    than with a constant batch (bound inference divides ``n * tiles`` exactly)."""
    n = te.var("n", "int64")
    xt = te.placeholder((n, 4, 56, 56, 16), name="x")
    st = te.placeholder((1, 4, 56, 56, 16), name="xs")
    ft = te.placeholder((2, 4, 3, 3, 16, 32), name="f")
    sym, fixed = x86.conv2d_nchwc(xt, ft, 1, 1), x86.conv2d_nchwc(st, ft, 1, 1)
    assert _guards([sym], [xt, ft]) == _guards([fixed], [st, ft])
    func = te.lower(topi.schedule_for([sym], "c"), [xt, ft, sym])
    text = str(func)
    assert "T.parallel(n * " in text and "pragma_parallel_grain" in text


@pytest.mark.parametrize("size", [8, 16])
@pytest.mark.parametrize(
    "cin, groups, stride", [(3, 1, 2), (16, 16, 1)], ids=["three-channels", "depthwise"]
)
def test_symbolic_batch_grain_agrees_with_the_fixed_batch_decision(
    size: int, cin: int, groups: int, stride: int
) -> None:
    """The run-time grain of a symbolic batch's parallel convolution loop is what the
    fixed-size schedule implies: at a batch whose fixed-size twin runs the convolution in
    parallel, the symbolic loop's trip count reaches its grain, and not below (the demo CNN's
    depthwise convolution ran on one thread at batch 8, its static twin on two)."""
    from kiln.tir.attrs import PARALLEL_GRAIN

    n = te.var("n", "int64")
    ft = te.placeholder((1, 1, 3, 3, cin // groups, 16), name="f")
    xt = te.placeholder((n, 1, size, size, cin), name="x")
    sym = x86.conv2d_nchwc(xt, ft, stride, 1, 1, groups)
    *_, par = _conv_parallel_loops(te.lower(topi.schedule_for([sym], "c"), [xt, ft, sym]))
    grain = par.annotations[PARALLEL_GRAIN]
    one = substitute(par.extent, {n: tir.IntImm("int64", 1)})
    per_image = kiln.arith.Analyzer().simplify(one).value
    for batch in (1, 2, 4, 8, 16, 32):
        xs = te.placeholder((batch, 1, size, size, cin), name="xs")
        fixed = x86.conv2d_nchwc(xs, ft, stride, 1, 1, groups)
        loops = _conv_parallel_loops(te.lower(topi.schedule_for([fixed], "c"), [xs, ft, fixed]))
        assert bool(loops) == (batch * per_image >= grain), (batch, per_image, grain)


def _conv_parallel_loops(func: Any) -> list[Any]:
    """The parallel loops of the last top-level statement (the convolution, after its pad)."""
    body = func.body
    while isinstance(body, (tir.Allocate, tir.DeclBuffer)):
        body = body.body
    last = body.seq[-1] if isinstance(body, tir.SeqStmt) else body
    loops = [last, *loops_of(last)] if isinstance(last, tir.For) else loops_of(last)
    return [lp for lp in loops if lp.kind == tir.ForKind.PARALLEL]


def test_tiles_per_shape_and_isa() -> None:
    """Tiles keep every accumulator, a broadcast and at least one filter vector in registers
    (all of them with taps unrolled), use the target's vector width, and cover the output rows
    without padding where a full tile can; a 7x7 output on AVX2 takes whole rows (1x7, one
    filter vector read from memory) rather than 1x4 tiles with 8 accumulators."""
    f32 = DataType.parse("float32")
    avx512, avx2 = Target("c -mcpu=skylake-avx512"), Target(AVX2)
    assert max_pixels(avx512, 2) == 14 and max_pixels(avx2, 2) == 6
    assert max_pixels(avx512, 2, memory_filters=True) == 15
    assert max_pixels(avx2, 2, memory_filters=True) == 7
    assert nchwc_tile(56, 56, 32, f32, avx512) == NchwcTile(1, 14, 2)
    assert nchwc_tile(7, 7, 32, f32, avx512) == NchwcTile(1, 7, 2)
    assert nchwc_tile(56, 56, 16, f32, avx512) == NchwcTile(1, 28, 1)
    # AVX2: the input block's loop unrolled needs 3 spare registers (5 pixels, 10 accumulators)
    assert nchwc_tile(56, 56, 16, f32, avx2) == NchwcTile(1, 5, 2, unrolled_block=True)
    assert nchwc_tile(7, 7, 16, f32, avx2) == NchwcTile(1, 7, 2)  # not unrolled: one from memory
    assert nchwc_tile(14, 14, 16, f32, avx2) == NchwcTile(1, 5, 2, unrolled_block=True)
    assert not any(nchwc_tile(n, n, 16, f32, avx512).unrolled_block for n in (7, 14, 56))
    # a row of 3 taps unrolled where 6+ pixels still fit: 11 with AVX-512, 1x8 divides 56
    assert max_pixels(avx512, 2, 3) == 11 and max_pixels(avx2, 2, 3) < 6
    assert nchwc_tile(56, 56, 32, f32, avx512, 3) == NchwcTile(1, 8, 2, taps=3)
    at28 = nchwc_tile(28, 28, 32, f32, avx512, 3)
    assert at28.taps == 3 and 28 % at28.th == 0 and 28 % at28.tw == 0
    assert nchwc_tile(56, 56, 16, f32, avx2, 3).taps == 1
    for tgt in (avx512, avx2):
        regs = tgt.cpu.vector_registers
        for oh, ow, ob in [(56, 56, 32), (7, 7, 16), (28, 28, 8), (112, 112, 16), (3, 5, 32)]:
            tile = nchwc_tile(oh, ow, ob, f32, tgt, 3)
            assert tile.vectors == -(-ob // (tgt.vector_bytes // 4))
            assert registers_of(tile) <= regs, (tgt, oh, ow, ob)


HOST_ISA = Target("c").cpu.isa


@pytest.mark.parametrize(
    ("target", "reg", "stride"),
    [
        pytest.param(AVX2, "ymm", 1, id="avx2", marks=needs_avx2),
        pytest.param(AVX2, "ymm", 2, id="avx2-strided", marks=needs_avx2),
        pytest.param(
            "c",
            "zmm",
            1,
            id="avx512-host",
            marks=pytest.mark.skipif(
                HOST_ISA != "avx512",
                reason=f"the host has no AVX-512 (Target('c').cpu.isa is {HOST_ISA!r}); the "
                "avx2 cases cover this machine's kernels",
            ),
        ),
        pytest.param(
            "c",
            "zmm",
            2,
            id="avx512-host-strided",
            marks=pytest.mark.skipif(HOST_ISA != "avx512", reason="the host has no AVX-512"),
        ),
    ],
)
def test_micro_kernel_keeps_accumulators_in_registers(
    target: str, reg: str, stride: int, rng: np.random.Generator
) -> None:
    """The NCHWc micro-kernel for AVX2 and the AVX-512 host, dense and strided: right against
    numpy, FMAs on the target's registers only, one register per accumulator (pixels x
    vectors), no vector spill in the inner loop, and no gather (the input is broadcast)."""
    tgt = Target(target)
    lanes = tgt.vector_bytes // 4
    ob = 2 * lanes
    x = rng.standard_normal((1, 32, 12, 28)).astype("float32")
    f = rng.standard_normal((ob, 32, 3, 3)).astype("float32")
    xb, fb = transform_array(x, "NCHW", "NCHW16c"), transform_array(f, "OIHW", f"OIHW16i{ob}o")
    xt, ft = te.placeholder(xb.shape, name="x"), te.placeholder(fb.shape, name="f")
    y = x86.conv2d_nchwc(xt, ft, stride, 1, target=tgt)
    tile = y.op.input_tensors[0].op.attrs["tile"]
    assert tile.vectors == 2 and tile.pixels <= max_pixels(tgt, 2, tile.taps)
    assert tile.taps == (3 if reg == "zmm" else 1)  # the row of taps unrolled with AVX-512
    # AVX2: the loop over an input block's channels unrolled (`UNROLL_BLOCK_REGISTERS`)
    assert tile.unrolled_block == (reg == "ymm")
    mod = _build([y], [xt, ft], target)
    got = np.zeros(shape_of(y), "float32")
    mod["main"](xb, fb, got)
    want = transform_array(conv_ref(x, f, stride, 1, 1, 1), "NCHW", f"NCHW{ob}c")
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    asm = machine_code(mod)
    if reg == "ymm":
        assert "%zmm" not in asm, "AVX2 code uses AVX-512 registers"
    hot = hot_loop(asm)
    fmas = [ln for ln in hot if "vfmadd" in ln]
    accumulators = tile.pixels * tile.vectors
    assert len(fmas) >= accumulators * tile.taps
    assert len(fmas) >= accumulators and all(f"%{reg}" in ln for ln in fmas)
    assert len(fma_accumulators(hot)) >= accumulators, "\n".join(hot)
    assert not vector_spills(hot), "vector registers spilled:\n" + "\n".join(hot)
    assert not [ln for ln in hot if "gather" in ln or "vpinsr" in ln or "vinsert" in ln]


def _err(fn: Any, *parts: str) -> None:
    with pytest.raises((IRError, IRValueError)) as info:
        fn()
    for p in parts:
        assert p in str(info.value), str(info.value)


def test_bad_input_names_operator_and_tensor() -> None:
    x = te.placeholder((1, 2, 8, 8, 16), name="img")
    f = te.placeholder((1, 2, 3, 3, 16, 16), name="filt")
    conv = topi.nn.conv2d_nchwc
    _err(lambda: conv(te.placeholder((1, 32, 8, 8), name="flat"), f), "'flat'", "5-D")
    _err(lambda: conv(x, f, groups=3), "'img'", "'filt'", "groups=3")
    ints = te.placeholder((1, 2, 3, 3, 16, 16), "int32", name="ints")
    _err(lambda: x86.conv2d_nchwc(x, ints), "conv2d_nchwc", "dtypes")
    _err(lambda: conv(x, f, stride=0), "stride")
    big = te.placeholder((1, 2, 9, 9, 16, 16), name="big")
    _err(lambda: x86.conv2d_nchwc(x, big), "does not fit")


def test_channel_blocks_loop_inside_the_tiles_when_all_filters_fit_in_l2() -> None:
    """Small filters (a 1x1 of 256 -> 64): every spatial tile loops over all output blocks, its
    input read from L1; large filters (3x3, 512 -> 512) and a single block keep the blocks
    outermost. Both orders are checked against numpy by the tests above."""
    x = te.placeholder((1, 8, 14, 14, 32), name="x")
    one_by_one = te.placeholder((2, 8, 1, 1, 32, 32), name="f1")
    wide = te.placeholder((16, 16, 3, 3, 32, 32), name="f3")
    single = te.placeholder((1, 8, 3, 3, 32, 32), name="fs")

    def tile(f: Any, data: Any = x) -> NchwcTile:
        return x86.conv2d_nchwc(data, f, 1, 1).op.input_tensors[0].op.attrs["tile"]

    assert tile(one_by_one).blocks_inner
    assert not tile(wide, te.placeholder((1, 16, 14, 14, 32), name="x16")).blocks_inner
    assert not tile(single).blocks_inner


@pytest.mark.parametrize("target", ["c", pytest.param(AVX2, marks=needs_avx2)])
def test_row_bands_when_the_tiles_loop_over_many_output_blocks(
    target: str, rng: np.random.Generator
) -> None:
    """With the blocks inside the tiles and at least `BAND_MIN_BLOCKS` of them, the row tiles
    go in bands (the last one partial here) and (band, block) runs in parallel; a residual add
    in the epilogue reads along each band. Checked against numpy; few blocks keep one band."""
    inputs, outs, arrays, wants = [], [], [], []
    for k, (c, h0, o, kk, pad) in enumerate([(64, 24, 256, 1, 0), (32, 30, 128, 3, 1)]):
        for h in range(
            h0, h0 + 8
        ):  # the first size whose last band is partial (tiles differ per ISA)
            case = (1, c, h, h, o, kk, 1, pad, 1, 1, 16, 16)
            ts, arrs, _, (s, p, d, g) = _operands(case, k, rng)
            y = x86.conv2d_nchwc(*ts, s, p, d, g, name=f"y{k}", target=target)
            tile = y.op.input_tensors[0].op.attrs["tile"]
            assert tile.blocks_inner and 0 < tile.band < -(-h // tile.th)
            if (-(-h // tile.th)) % tile.band:
                break
        else:
            pytest.fail(f"no size from {h0} gives a partial last band: {tile}")
        res = te.placeholder(shape_of(y), name=f"r{k}")
        outs.append(topi.relu(topi.add(y, res)))
        inputs += [*ts, res]
        r = rng.standard_normal(shape_of(y)).astype("float32")
        arrays += [*arrs, r]
        x = transform_array(arrs[0], f"NCHW{16}c", "NCHW")
        f = transform_array(arrs[1], "OIHW16i16o", "OIHW")
        conv = transform_array(conv_ref(x, f, s, p, d, g), "NCHW", "NCHW16c")
        wants.append(np.maximum(conv + r, 0))
    few = te.placeholder((4, 4, 1, 1, 16, 16), name="few")
    acc = x86.conv2d_nchwc(inputs[0], few, 1, 0, target=target).op.input_tensors[0]
    assert acc.op.attrs["tile"].band == 0
    results = [np.zeros(shape_of(t), "float32") for t in outs]
    _build(outs, inputs, target)["main"](*arrays, *results)
    for got, want in zip(results, wants):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("stride", [1, 2])
def test_depthwise_kernel_is_vectorized_along_the_channel_block(
    stride: int, rng: np.random.Generator
) -> None:
    """Depthwise (MobileNet's 3x3, dense and strided): right against numpy; its hot loop does
    full-width vector FMAs on whole channel blocks, with no gather and no lane-by-lane insert,
    and a row of taps unrolled (at least pixels x taps FMAs per iteration)."""
    tgt = Target("c")
    width = tgt.vector_bytes // 4
    reg = "zmm" if width == 16 else "ymm"
    cb = 2 * width
    x = rng.standard_normal((1, 2 * cb, 13, 30)).astype("float32")
    f = rng.standard_normal((2 * cb, 1, 3, 3)).astype("float32")
    xb, fb = transform_array(x, "NCHW", f"NCHW{cb}c"), transform_array(f, "OIHW", f"OIHW1i{cb}o")
    xt, ft = te.placeholder(xb.shape, name="x"), te.placeholder(fb.shape, name="f")
    y = x86.conv2d_nchwc(xt, ft, stride, 1, 1, 2 * cb)
    tile = y.op.input_tensors[0].op.attrs["tile"]
    mod = _build([y], [xt, ft], "c")
    got = np.zeros(shape_of(y), "float32")
    mod["main"](xb, fb, got)
    want = transform_array(conv_ref(x, f, stride, 1, 1, 2 * cb), "NCHW", f"NCHW{cb}c")
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    hot = hot_loop(machine_code(mod))
    fmas = [ln for ln in hot if "vfmadd" in ln]
    assert len(fmas) >= tile.pixels * tile.vectors * 3, "\n".join(hot)
    assert all(f"%{reg}" in ln for ln in fmas)
    assert not [ln for ln in hot if "gather" in ln or "vpinsr" in ln or "vinsert" in ln]


@pytest.mark.parametrize(
    ("data", "weight", "stride", "in_place"),
    [
        ((1, 2, 32, 32, 32), (2, 2, 3, 3, 32, 32), 2, True),  # small: the copy would be 8%
        ((1, 3, 64, 64, 1), (1, 3, 3, 3, 1, 32), 1, True),  # a stem
        ((1, 2, 56, 56, 32), (2, 2, 3, 3, 32, 32), 1, False),  # big: the copy is 2%
        ((1, 4, 7, 7, 32), (4, 4, 3, 3, 32, 32), 1, False),  # one tile per row: none plain
    ],
)
def test_padding_is_read_in_place_where_it_pays(
    data: tuple[int, ...], weight: tuple[int, ...], stride: int, in_place: bool
) -> None:
    """In place: no padded copy stage, the tile loops marked for `LoopPartition`; the result
    matches the reference either way. Dense convolutions read in place only with AVX-512's 32
    vector registers (`IN_PLACE_REGISTERS`): on an AVX2 host they keep the copy."""
    in_place = in_place and cpu_target(Target("c")).cpu.vector_registers >= IN_PLACE_REGISTERS
    xt, wt = te.placeholder(data, name="x"), te.placeholder(weight, name="w")
    yt = x86.conv2d_nchwc(xt, wt, stride, 1, 1, 1, target="c")
    acc = yt.op.input_tensors[0]
    assert bool(acc.op.attrs["padding_in_place"]) == in_place
    (pad,) = (t for t in acc.op.input_tensors if t.op.name.endswith("_pad"))
    assert bool(pad.op.attrs.get("no_inline")) != in_place  # a copy stage, or inlined reads
    text = str(te.lower(x86.schedule_conv2d_nchwc(yt, "c"), [xt, wt, yt]))
    assert ('"pragma_loop_partition": 2' in text) == in_place  # the tile loops (GUARD)
    rng = np.random.default_rng(1)
    x = rng.standard_normal(data, dtype="float32")
    w = rng.standard_normal(weight, dtype="float32") / np.float32(10)
    cb, ob = data[-1], weight[-1]
    plain_x = transform_array(x, f"NCHW{cb}c", "NCHW")
    plain_w = transform_array(w, f"OIHW{cb}i{ob}o", "OIHW")
    want = transform_array(conv_ref(plain_x, plain_w, stride, 1, 1, 1), "NCHW", f"NCHW{ob}c")
    got = np.zeros(shape_of(yt), "float32")
    _build([yt], [xt, wt], "c")["main"](x, w, got)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
