"""Attention for the CPU, a block of query rows at a time: ``softmax(q @ k^T * scale + bias) @ v``.

The computes (`attention`) and their schedule (`schedule_attention`) make one kernel in which
no more than one block of scores exists at a time:

1. ``<name>_kt`` copies the key transposed, ``[..., D, T]`` (at the root, once per call), so
   the score product reads ``cols`` consecutive keys per step.
2. per block of ``rows`` query rows (the blocks run in parallel), and per batch element:
   - ``<name>_qk`` accumulates a ``rows x cols`` tile of ``q @ k^T`` in registers (the
     register-blocked loop of `kiln.topi.x86.dense`); ``<name>_score`` writes it scaled and
     biased into the block's ``rows x T`` scores;
   - the row maxima, ``exp(score - max)`` over the block (in place of the scores' next use)
     and the row sums, as `kiln.topi.generic.nn` computes softmax, one row in L1;
   - ``<name>_pv`` accumulates a ``rows x cols`` tile of ``exp @ v`` in registers, and the
     output divides it by the row sums.

The query rows are padded to whole blocks of `ROWS` (the rows past the end read the last query
row again; their results are never stored), the product's columns to whole register tiles
(the columns past the value's width read its last column again; never stored: a head width of
20 in 16-column tiles accumulated its second tile with lane-masked stores, 3.5x slower) and the
keys to whole score tiles (`_key_cols`: the
padded keys are zero, their scores the lowest float and their exponentials zero), so every
stage runs whole register tiles and whole vectors for any length, a ViT's prime 197 tokens too.

The normalization is applied to the ``rows x E`` product instead of the ``rows x T``
probabilities (one division per output instead of per score). A row whose every score is
``-inf`` (a fully masked row) weighs every value equally, as `kiln.topi.nn.softmax` does (the
row maximum starts at the lowest float, not at ``-inf``).
"""

from __future__ import annotations

from typing import Any

from kiln import te
from kiln.ir.dtype import DataType
from kiln.ir.target import Target
from kiln.te import Schedule, Tensor
from kiln.tir import op as tir_op
from kiln.topi.generic.common import ScheduleContext, register_schedule
from kiln.topi.generic.nn import SOFTMAX_ACC_FACTOR, exp_in_row, reduce_in_row
from kiln.topi.nn.attention import check_attention, read_bias
from kiln.topi.nn.softmax import row_reduce, shifted_exp
from kiln.topi.tag import Pattern, attrs_for
from kiln.topi.utils import const_int, fconst
from kiln.topi.x86 import common
from kiln.topi.x86.cpu import TILE_ROWS, cpu_target, lanes, round_up, tile_vectors

ATTENTION = "x86_attention"
"""Tag of the output stage; its attrs hold the other stages (``parts``) and the block size."""


def _part(shape: Any, fn: Any, name: str) -> Tensor:
    """A stage the schedule places itself (never inlined)."""
    return te.compute(shape, fn, name=name, attrs=attrs_for(ATTENTION, Pattern.OPAQUE))


ROWS = 8
"""Query rows per block (at most) with 32 vector registers (AVX-512): tiles of 8 rows by 3
vectors, 24 accumulators (GCC spills beyond). With 16 (AVX2) a block has `TILE_ROWS` rows and
its tiles 2 vectors, as the matrix products' (8-row blocks with 16 accumulators spilled:
measured on Zen 3, 1 thread, -O2, Whisper-tiny's attention (6 heads, 750 tokens) 33 -> 38
GFLOP/s, DeiT-tiny's (197 tokens) 35 -> 49)."""


MIN_ACCUMULATORS = 10
"""A register tile with fewer accumulators waits on its FMAs' latency (see `block_rows`)."""


SHORT_ROWS = 4096
"""With AVX2, query rows whose score and value rows multiply to at most this many values keep
`ROWS`-row blocks (the fewest padded rows of 6-8) of 3-vector tiles, spilling a few
accumulators: their blocks are so short that the block count, not the tiles, sets the time
(MobileViT's 49 tokens with heads of 20, 1 thread: 7-row blocks 265 us, 8-row 289, 6-row
313-330, 4-row 331-344)."""


def block_rows(s: int, t: int, e: int, target: Target) -> tuple[int, int]:
    """Query rows per block and the most vectors in a row of a register tile on ``target``,
    for ``s`` query rows, ``t`` keys and a value width ``e``: `ROWS` rows with 32 registers,
    and with 16 for short rows (`SHORT_ROWS`); otherwise, of `TILE_ROWS` and the two counts
    below it, the one with the least padded work in the value product (rows padded to whole
    blocks, columns to whole tiles, a tile of fewer than `MIN_ACCUMULATORS` counted as that
    many), the most rows on ties.
    NOTE: AVX-512 keeps its measured 8-row blocks (fewer rows there are not measured)."""
    if target.cpu.vector_registers >= 32:
        rows = min(ROWS, s)
        return rows, tile_vectors(target, rows)
    if t * e <= SHORT_ROWS:
        most = min(ROWS, s)
        return min(range(most, max(0, most - 3), -1), key=lambda r: round_up(s, r)), 3
    width = lanes(target, DataType.parse("float32"))

    def cost(r: int) -> float:
        cols = _cols(e, width, tile_vectors(target, r))
        acc = r * cols // width
        return round_up(s, r) * round_up(e, cols) * max(acc, MIN_ACCUMULATORS) / acc

    most = min(TILE_ROWS, s)
    rows = min(range(most, max(0, most - 3), -1), key=cost)
    return rows, tile_vectors(target, rows)


def _key_cols(t: int, rows: int, lanes: int, most: int) -> int:
    """Columns of a ``rows``-row register tile of the score product over ``t`` keys: the whole
    vectors (at most ``most``) that pad ``t`` least, counting a tile too narrow to keep the FMA
    units busy (fewer FMAs than loads per step) as wider work."""

    def cost(v: int) -> tuple[float, int]:
        padded = round_up(t, v * lanes)
        return padded * max(rows * v, rows + v) / (rows * v), -v

    return min(range(1, most + 1), key=cost) * lanes


def _cols(n: int, lanes: int, most: int) -> int:
    """Columns of a register tile over ``n`` columns: whole vectors, at most ``most``,
    dividing ``n`` where a count of vectors does."""
    fits = [v for v in range(most, 0, -1) if n % (v * lanes) == 0]
    return (fits[0] if fits else most) * lanes


def _clamped(i: Any, n: int, padded: int) -> Any:
    """Index ``i`` of a padded axis read from an axis of ``n``: the rows past the end read the
    last row again (their results are never stored)."""
    return i if padded == n else tir_op.min_(i, n - 1)


def _scores(
    q: Tensor, k: Tensor, bias: Tensor | None, scale: float, name: str, pad: tuple[int, int]
) -> dict[str, Any]:
    """The transposed key, the register-tiled product and the scaled, biased scores, over
    ``pad`` (query rows, keys): whole row blocks and whole column tiles. The key's padding is
    zero and the padded keys' scores are ``-inf``."""
    nb = q.ndim - 2
    *batch, s, d = q.shape
    t = k.shape[-2]
    (s, t), (sp, tp) = (const_int(s), const_int(t)), pad

    def key(*i: Any) -> Any:
        value = k[(*i[:nb], _clamped(i[nb + 1], t, tp), i[nb])]
        return value if tp == t else tir_op.select(i[nb + 1] < t, value, fconst(0.0, k.dtype))

    kt = _part((*batch, d, tp), key, f"{name}_kt")
    rd = te.reduce_axis(d, name="d")
    qk = te.compute(
        (*batch, sp, tp),
        lambda *i: te.sum(
            q[(*i[:nb], _clamped(i[nb], s, sp), rd)] * kt[(*i[:nb], rd, i[nb + 1])], axis=rd
        ),
        name=f"{name}_qk",
        attrs=attrs_for(ATTENTION, Pattern.OPAQUE),
    )

    def score_of(*i: Any) -> Any:
        value = qk[i] * fconst(scale, q.dtype)
        if bias is not None:
            at = (*i[:nb], _clamped(i[nb], s, sp), _clamped(i[nb + 1], t, tp))
            value = value + read_bias(bias, at)
        return value if tp == t else tir_op.select(i[nb + 1] < t, value, tir_op.min_value(q.dtype))

    return {"kt": kt, "qk": qk, "score": _part(qk.shape, score_of, f"{name}_score")}


def attention(
    q: Any, k: Any, v: Any, bias: Any = None, scale: float | None = None,
    name: str = "attention", target: Any = None,
) -> Tensor | None:  # fmt: skip
    """The CPU stages of attention (module docstring) for constant shapes, else None."""
    q, k, v, bias, scale = check_attention(q, k, v, bias, scale)
    if any(const_int(d) is None for t in (q, k, v) for d in t.shape):
        return None
    s, t = const_int(q.shape[-2]), const_int(k.shape[-2])
    tgt = cpu_target(target)
    width = lanes(tgt, q.dtype)
    rows, most = block_rows(s, t, const_int(v.shape[-1]), tgt)
    qk_cols = _key_cols(t, rows, width, most)
    pad = (round_up(s, rows), round_up(t, qk_cols))
    parts = _scores(q, k, bias, scale, name, pad)
    row, score = q.ndim - 1, parts["score"]
    mx = row_reduce(score, row, te.max, f"{name}_max")
    ex = shifted_exp(score, mx, row, f"{name}_exp", valid=t)
    total = row_reduce(ex, row, te.sum, f"{name}_sum")
    rp = te.reduce_axis(t, name="j")
    nb = q.ndim - 2
    e = const_int(v.shape[-1])
    pv_cols = _cols(e, width, most)
    e_pad = round_up(e, pv_cols)
    pv = te.compute(
        (*q.shape[:-2], pad[0], e_pad),
        lambda *i: te.sum(ex[(*i[:-1], rp)] * v[(*i[:nb], rp, _clamped(i[-1], e, e_pad))], axis=rp),
        name=f"{name}_pv",
        attrs=attrs_for(ATTENTION, Pattern.OPAQUE),
    )
    parts.update(max=mx, exp=ex, sum=total, pv=pv)
    attrs = attrs_for(
        ATTENTION, Pattern.OPAQUE, parts=parts, rows=rows, qk_cols=qk_cols, pv_cols=pv_cols,
    )  # fmt: skip
    return te.compute(
        (*q.shape[:-1], v.shape[-1]),
        lambda *i: pv[i] / total[i[:-1]],
        name=name,
        tag=ATTENTION,
        attrs=attrs,
    )


def _row_partials(n: int, lanes: int, most: int) -> int:
    """Partial results of a row reduction over ``n`` padded scores: the most whole vectors, up
    to ``most`` lanes, that divide ``n`` (a partial count that does not would widen the row)."""
    return max(v for v in range(lanes, most + 1, lanes) if n % v == 0)


def _tile_product(sch: Schedule, acc: Tensor, host: Any, at: Any) -> None:
    """Compute the product ``acc`` one register tile at a time at ``host``'s loop ``at``:
    reduction outermost, rows unrolled, columns as vectors."""
    st = sch[acc]
    st.compute_at(host, at)
    *_, ci, cj = st.op.axis
    st.reorder(st.op.reduce_axis[0], ci, cj)
    st.unroll(ci)
    common.vectorize(st, cj)


@register_schedule(ATTENTION)
def schedule_attention(sch: Schedule, out: Tensor, ctx: ScheduleContext) -> None:
    """One parallel loop over blocks of query rows (module docstring)."""
    op = sch[out].op
    p, rows = op.attrs["parts"], op.attrs["rows"]
    lanes, acc_lanes = ctx.lanes(out.dtype), ctx.accumulator_lanes(out.dtype)
    o = sch[out]
    *batch, i, j = o.op.axis
    io, ii = o.split(i, factor=rows)
    jo, ji = o.split(j, factor=op.attrs["pv_cols"])
    o.reorder(io, *batch, jo, ii, ji)
    if common.worth_parallel(common.work_of(sch[p["qk"]].op) * 2):
        o.parallel(io)
    o.unroll(ii)
    common.vectorize(o, ji)
    block = batch[-1] if batch else io
    _tile_product(sch, p["pv"], o, jo)
    partials = _row_partials(const_int(p["score"].shape[-1]), lanes, SOFTMAX_ACC_FACTOR * acc_lanes)
    reduce_in_row(sch, p["sum"], o, block, partials, lanes)
    # NOTE: the output reads neither; the block loop holds every reader (the sums, the product)
    ex = exp_in_row(sch, p["exp"], o, block, lanes)
    reduce_in_row(sch, p["max"], ex, ex.op.axis[-2], partials, lanes)
    sc = sch[p["score"]]
    sc.compute_at(ex, ex.leaf_iter_vars[0])
    *_, si, sj = sc.op.axis
    sjo, sji = sc.split(sj, factor=op.attrs["qk_cols"])
    sc.reorder(sjo, si, sji)
    common.vectorize(sc, sji)
    _tile_product(sch, p["qk"], sc, sjo)
    common.schedule_pack(sch[p["kt"]], common.work_of(sch[p["qk"]].op))
    ctx.done.update(sch[t] for t in (out, *p.values()))
