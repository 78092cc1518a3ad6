"""Attention (`kiln.topi.nn.attention`, `kiln.topi.x86.attention`) against numpy: shapes that
divide the blocks and shapes that do not, masks (a fully masked row as kiln's softmax computes it),
no more than one block of scores in scratch, and bad input."""

from __future__ import annotations

import numpy as np
import pytest

from kiln import te, tir, topi
from kiln.errors import IRError, IRValueError
from kiln.topi.x86.attention import block_rows
from kiln.topi.x86.cpu import cpu_target
from tests.topi.conftest import allocations_of, run


def _reference(q, k, v, bias, scale):
    s = (q.astype("float64") @ np.swapaxes(k, -1, -2)) * scale
    if bias is not None:
        s = s + bias
    with np.errstate(invalid="ignore"):
        e = np.exp(s - s.max(-1, keepdims=True))
        return (e / e.sum(-1, keepdims=True)) @ v


def _inputs(rng, qs, ks, vs, bs):
    arrays = [rng.standard_normal(s).astype("float32") for s in (qs, ks, vs)]
    placeholders = [te.placeholder(s, name=n) for s, n in zip((qs, ks, vs), "qkv")]
    if bs is not None:
        bias = np.where(rng.random(bs) < 0.3, -np.inf, rng.standard_normal(bs)).astype("float32")
        arrays.append(bias)
        placeholders.append(te.placeholder(bs, name="bias"))
    return arrays, placeholders


@pytest.mark.parametrize(
    "qs, ks, vs, bs",
    [
        ((1, 4, 128, 64), (1, 4, 128, 64), (1, 4, 128, 64), (1, 1, 1, 128)),
        ((2, 3, 17, 8), (2, 3, 33, 8), (2, 3, 33, 20), (2, 3, 17, 33)),
        ((12, 5), (7, 5), (7, 40), None),
        ((2, 9, 64), (2, 64, 64), (2, 64, 32), (9, 64)),
    ],
)
def test_x86_and_generic_attention_match_numpy(qs, ks, vs, bs, rng) -> None:
    arrays, ph = _inputs(rng, qs, ks, vs, bs)
    scale = 0.37
    bias = ph[3] if bs is not None else None
    outs = [topi.x86.attention(*ph[:3], bias, scale), topi.nn.attention(*ph[:3], bias, scale)]
    ref = _reference(*arrays[:3], arrays[3] if bs is not None else None, scale)
    for got in run(outs, ph, *arrays):
        np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("s, t", [(16, 24), (13, 29)])
def test_a_fully_masked_row_is_computed_as_by_softmax(s, t, rng) -> None:
    """kiln's softmax gives a row of -inf equal weights (its max starts at the lowest float);
    the fused kernel must agree with it (the model's numerics do not change with fusion), also
    where the rows and keys are padded to whole blocks (13 = 8 + 5 rows, 29 keys)."""
    arrays, ph = _inputs(rng, (s, 8), (t, 8), (t, 16), None)
    mask = np.zeros((s, t), "float32")
    mask[3] = -np.inf
    b = te.placeholder((s, t), name="mask")
    outs = [topi.x86.attention(*ph, b), topi.nn.attention(*ph, b)]
    fused, plain = run(outs, [*ph, b], *arrays, mask)
    np.testing.assert_allclose(fused, plain, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(fused[3], arrays[2].mean(0), rtol=1e-5, atol=1e-6)
    ref = _reference(*arrays, mask, 1 / np.sqrt(8))
    np.testing.assert_allclose(np.delete(fused, 3, 0), np.delete(ref, 3, 0), rtol=1e-4, atol=1e-5)


def test_scratch_holds_one_block_of_scores(rng) -> None:
    ph = [te.placeholder((1, 2, 256, 32), name=n) for n in "qkv"]
    out = topi.x86.attention(*ph)
    func = te.lower(topi.schedule_for(out), [*ph, out])
    sizes = [int(np.prod([int(e.value) for e in a.extents])) for a in allocations_of(func)]
    rows, _ = block_rows(256, 256, 32, cpu_target("c"))
    assert max(sizes) == 2 * 256 * 32  # the transposed key; scores: rows x 256 at a time
    assert any(s == rows * 256 for s in sizes)


def test_prime_lengths_take_whole_register_tiles() -> None:
    """197 query rows and keys (a ViT's tokens, a prime) are padded to whole row blocks and
    score tiles: the score product's stores are plain vector stores, never lane-masked
    (measured 1x3x197x197x64 on one Zen 3 core: 1.48 ms with one-row blocks and masked
    tails, 0.75 ms padded)."""
    ph = [te.placeholder((1, 3, 197, 64), name=n) for n in "qkv"]
    out = topi.x86.attention(*ph)
    func = te.lower(topi.schedule_for(out), [*ph, out])
    guards = [
        n for n in tir.pre_order_nodes(func.body)
        if isinstance(n, tir.IfThenElse) and "attention_qk" in str(n.then_case)
    ]  # fmt: skip
    assert guards == []
    loops = [n for n in tir.pre_order_nodes(func.body) if isinstance(n, tir.For)]
    rows, _ = block_rows(197, 197, 64, cpu_target("c"))
    assert any(lp.kind == tir.ForKind.UNROLLED and lp.extent.value == rows for lp in loops)


@pytest.mark.parametrize(
    ("target", "regs"), [("c -mcpu=haswell", 16), ("c -mcpu=skylake-avx512", 32)]
)
def test_register_tiles_fit_the_vector_registers(target: str, regs: int) -> None:
    """Both products' tiles keep their accumulators, a row of vectors and a broadcast in the
    target's registers (AVX2: 6 rows of 2 vectors; 8-row tiles spilled)."""
    ph = [te.placeholder((1, 2, 100, 64), name=n) for n in "qkv"]
    attrs = topi.x86.attention(*ph, target=target).op.attrs
    lanes = 8 if regs == 16 else 16
    for cols in (attrs["qk_cols"], attrs["pv_cols"]):
        vectors = cols // lanes
        assert attrs["rows"] * vectors + vectors + 1 <= regs, (attrs["rows"], cols)


def test_bad_input_names_the_operand() -> None:
    q, k = te.placeholder((4, 8), name="q"), te.placeholder((6, 8), name="k")
    with pytest.raises(IRValueError, match="key's and the value's lengths differ"):
        topi.nn.attention(q, k, te.placeholder((5, 3), name="v"))
    with pytest.raises(IRValueError, match="query's and the key's widths differ"):
        topi.x86.attention(q, te.placeholder((6, 7), name="k2"), te.placeholder((6, 3)))
    with pytest.raises(IRValueError, match="bias 'b' .* does not broadcast"):
        topi.nn.attention(q, k, te.placeholder((6, 3)), te.placeholder((4, 5), name="b"))
    with pytest.raises(IRValueError, match="value 'v' is int32"):
        topi.nn.attention(q, k, te.placeholder((6, 3), "int32", name="v"))
    with pytest.raises(IRError, match="float"):
        topi.nn.attention(te.placeholder((4, 8), "int32"), k, k)


def test_value_widths_that_are_not_whole_tiles_pad_the_product() -> None:
    """A head width of 20 (MobileViT) is computed in whole register tiles: the product's
    accumulation is never guarded per lane (measured 4x4x49x49x20 on one Zen 3 core, at the
    model's -O2: 3.0 -> 14.8 GFLOP/s); the padded columns are never stored."""
    ph = [te.placeholder((1, 2, 49, 20), name=n) for n in "qkv"]
    out = topi.x86.attention(*ph)
    pv = out.op.attrs["parts"]["pv"]
    width = pv.shape[-1].value
    assert width % out.op.attrs["pv_cols"] == 0 and width > 20
    func = te.lower(topi.schedule_for(out), [*ph, out])
    # a lane-masked accumulation: a store to the product under a guard on its column
    masked = [
        n for n in tir.pre_order_nodes(func.body)
        if isinstance(n, tir.IfThenElse) and "20" in str(n.condition)
        and any(
            isinstance(m, tir.BufferStore) and m.buffer.name == "attention_pv"
            for m in tir.pre_order_nodes(n.then_case)
        )
    ]  # fmt: skip
    assert masked == []
