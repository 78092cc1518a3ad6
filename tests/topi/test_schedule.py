"""The default schedules' structure: vectorized and parallel loops where they pay, fused
prologues and epilogues, per-row scratch only for softmax / layer_norm, the registry, the graph
helpers (rfactor, recompute_for) and `kiln.build_op`."""

from __future__ import annotations

import numpy as np
import pytest

import kiln
from kiln import te, tir, topi
from kiln.errors import IRError, IRValueError
from kiln.ir import Target
from kiln.tir.attrs import PARALLEL_GRAIN
from kiln.topi.generic import recompute_for, rfactor
from kiln.topi.generic.common import ACCUMULATOR_VECTORS, SCHEDULES, ScheduleContext
from kiln.topi.generic.nn import SOFTMAX_ACC_FACTOR
from tests.topi.conftest import allocations_of, loops_of

ACC = ACCUMULATOR_VECTORS * Target("c").vector_bytes // 4
"""float32 partial results a reduction keeps on the host (a few vector registers' worth)."""


def _lower(outs, inputs):
    outs = list(outs) if isinstance(outs, (list, tuple)) else [outs]
    return te.lower(topi.schedule_for(outs), [*inputs, *outs])


def _kinds(func) -> list[tir.ForKind]:
    return [lp.kind for lp in loops_of(func)]


def _alloc_elems(func) -> list[int]:
    out = []
    for a in allocations_of(func):
        n = 1
        for e in a.extents:
            n *= e.value
        out.append(n)
    return out


@pytest.mark.parametrize(
    ("target", "lanes"), [("c -mcpu=haswell", 8), ("c -mcpu=x86-64-v4", 16), ("c", None)]
)
def test_injective_vectorizes_and_parallelizes_big_tensors(target: str, lanes: int | None) -> None:
    """Vector loops are one register of the target wide (the host's for plain ``c``)."""
    lanes = lanes or Target("c").vector_bytes // 4
    x = te.placeholder((1024, 1024), name="x")  # about 200 us on one core: worth threads
    y = topi.exp(x)
    f = te.lower(topi.schedule_for(y, target), [x, y])
    vec = [lp for lp in loops_of(f) if lp.kind == tir.ForKind.VECTORIZED]
    assert len(vec) == 1 and vec[0].extent.value == lanes
    assert _kinds(f).count(tir.ForKind.PARALLEL) == 1
    small = te.placeholder((3, 5), name="s")
    g = _lower(topi.exp(small), [small])
    assert tir.ForKind.PARALLEL not in _kinds(g)
    mid = te.placeholder((32, 256), name="m")  # ~2 us: below PARALLEL_MIN_NS, one thread
    assert tir.ForKind.PARALLEL not in _kinds(_lower(topi.exp(mid), [mid]))


def test_prologue_is_inlined_into_the_reduction() -> None:
    n = 1 << 22
    x = te.placeholder((n,), name="x")
    s = topi.sum(topi.relu(topi.add(topi.multiply(x, 2.0), 1.0)))
    f = _lower(s, [x])
    assert max(_alloc_elems(f)) <= 64 * ACC  # partial sums only, no full-size temporary
    assert tir.ForKind.PARALLEL in _kinds(f) and tir.ForKind.VECTORIZED in _kinds(f)


def test_mean_epilogue_hosts_the_reduction() -> None:
    x = te.placeholder((300, 500), name="x")
    f = _lower(topi.mean(x, axis=1), [x])
    assert max(_alloc_elems(f)) <= ACC
    g = _lower(topi.mean(x, axis=0), [x])
    assert max(_alloc_elems(g)) <= ACC


@pytest.mark.parametrize("which", ["log_softmax", "layer_norm"])
def test_row_operators_use_per_row_scratch_only(which: str) -> None:
    x = te.placeholder((1024, 1024), name="x")
    y = getattr(topi.nn, which)(x)
    f = _lower(y, [x])
    assert max(_alloc_elems(f)) <= ACC
    assert _kinds(f).count(tir.ForKind.PARALLEL) == 1
    assert _kinds(f).count(tir.ForKind.VECTORIZED) >= 4


def test_softmax_keeps_exp_once_and_row_values_in_scratch() -> None:
    """One row loop: ``exp(x - max)`` is one row of scratch, read by the sum and the output."""
    x = te.placeholder((1024, 1024), name="x")
    f = _lower(topi.nn.softmax(x), [x])
    sizes = sorted(_alloc_elems(f))
    assert sizes[-1] == 1024 and sizes[-2] <= SOFTMAX_ACC_FACTOR * ACC  # one row of exp, partials
    assert _kinds(f).count(tir.ForKind.PARALLEL) == 1
    small = te.placeholder((8, 512), name="s")  # ~2 us on one core: one thread
    assert tir.ForKind.PARALLEL not in _kinds(_lower(topi.nn.softmax(small), [small]))


@pytest.mark.parametrize("op", [topi.nn.softmax, topi.nn.log_softmax], ids=["softmax", "log"])
def test_a_symbolic_row_keeps_one_vector_of_partials(op) -> None:
    """A row of symbolic length reduces into one vector of partials (a sequence of 8 fills it
    once, with no guarded remainder); the results match numpy at lengths around the vector."""
    n = te.size_var("n")
    x = te.placeholder((2, n, n), name="x")
    y = op(x)
    f = _lower(y, [x])
    lanes = Target("c").vector_bytes // 4
    assert max(_alloc_elems_const(f)) == lanes  # the partials (the exp row is symbolic)
    fn = kiln.build_op(y, [x, y])
    for size in (1, lanes - 1, lanes, 2 * lanes + 3):
        a = np.random.default_rng(size).standard_normal((2, size, size)).astype("float32")
        out = np.zeros_like(a)
        fn(a, out)
        e = np.exp(a - a.max(-1, keepdims=True))
        want = e / e.sum(-1, keepdims=True)
        want = np.log(want) if op is topi.nn.log_softmax else want
        np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-6)


def test_a_short_row_reduces_in_vectors_and_guards_only_its_last_vector() -> None:
    """Swin's window softmax, rows of 49: the max and the sum keep one vector of partials (not a
    chain of 49 scalar steps) and, after `LoopPartition`, every vector loop but the last runs
    unguarded (measured 64x3x49x49 on one Zen 3 core: 3.3 -> 0.59 ms)."""
    from kiln.driver import lower

    x = te.placeholder((6, 49), name="x")
    y = topi.nn.softmax(x)
    lanes = Target("c").vector_bytes // 4
    assert lanes in _alloc_elems(_lower(y, [x]))  # the max's and the sum's partials
    lowered = lower(_lower(y, [x]))
    vector_loops = [
        lp for f in lowered.functions.values() for lp in tir.pre_order_nodes(f.body)
        if isinstance(lp, tir.For) and lp.kind == tir.ForKind.VECTORIZED
    ]  # fmt: skip
    plain = [
        lp for lp in vector_loops
        if not any(isinstance(n, tir.IfThenElse) for n in tir.pre_order_nodes(lp.body))
    ]  # fmt: skip
    assert len(plain) >= 3  # the exponential, the output, the partials
    fn = kiln.build_op(y, [x, y])
    a = np.random.default_rng(0).standard_normal((6, 49)).astype("float32")
    out = np.zeros_like(a)
    fn(a, out)
    e = np.exp(a - a.max(-1, keepdims=True))
    np.testing.assert_allclose(out, e / e.sum(-1, keepdims=True), rtol=1e-5, atol=1e-6)


def test_an_element_wise_row_of_49_guards_only_its_last_vector() -> None:
    """A mask added to rows of 49 (Swin): the row's vector loop is partitioned, so all but its
    last vector are plain vector code (measured [1, 64, 3, 49, 49] + mask on one Zen 3 core:
    478 -> 153 us)."""
    from kiln.driver import lower

    x, m = te.placeholder((2, 3, 49), name="x"), te.placeholder((3, 49), name="m")
    y = topi.add(x, m)
    lowered = lower(_lower(y, [x, m]))
    plain = [
        lp for f in lowered.functions.values() for lp in tir.pre_order_nodes(f.body)
        if isinstance(lp, tir.For) and lp.kind == tir.ForKind.VECTORIZED
        and not any(isinstance(n, tir.IfThenElse) for n in tir.pre_order_nodes(lp.body))
    ]  # fmt: skip
    assert plain
    fn = kiln.build_op(y, [x, m, y])
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((2, 3, 49), "float32"), rng.standard_normal((3, 49), "float32")
    out = np.zeros_like(a)
    fn(a, b, out)
    np.testing.assert_array_equal(out, a + b)


def _alloc_elems_const(func) -> list[int]:
    """Element counts of the allocations of constant size."""
    out = []
    for a in allocations_of(func):
        if all(isinstance(e, tir.IntImm) for e in a.extents):
            out.append(int(np.prod([e.value for e in a.extents])))
    return out


def test_register_schedule_dispatches_on_tag(rng) -> None:
    seen = []

    def custom(sch, t, ctx: ScheduleContext) -> None:
        seen.append(t.name)
        sch[t].parallel(sch[t].op.axis[0])
        ctx.done.add(sch[t])

    topi.register_schedule("test_custom_tag")(custom)
    try:
        x = te.placeholder((64, 8), name="x")
        k = te.reduce_axis((0, 8), name="k")
        y = te.compute((64,), lambda i: te.sum(x[i, k], axis=k), name="y", tag="test_custom_tag")
        f = kiln.build_op(y, [x, y])
        assert seen == ["y"]
        a, out = rng.standard_normal((64, 8)).astype("float32"), np.zeros(64, "float32")
        f(a, out)
        np.testing.assert_allclose(out, a.sum(1), rtol=1e-5)
    finally:
        SCHEDULES.pop("test_custom_tag")


def test_rfactor_and_recompute_for_preconditions() -> None:
    x = te.placeholder((4, 50), name="x")
    y = topi.exp(x)
    sch = te.create_schedule(y)
    with pytest.raises(IRError, match=r"rfactor: 'T_exp' is not a reduction"):
        rfactor(sch, y, 16)
    s = topi.sum(x, 1)
    sch = te.create_schedule(s)
    sch[s].parallel(s.op.axis[0])
    with pytest.raises(IRError, match=r"rfactor: stage 'T_sum' is already scheduled"):
        rfactor(sch, s, 16)
    with pytest.raises(IRError, match=r"recompute_for: 'x' is a placeholder"):
        recompute_for(sch, s, [x])


def test_rfactor_with_parts_and_tail_by_hand(rng) -> None:
    x = te.placeholder((3, 1000), name="x")
    s = topi.max(x, axis=1)
    sch = te.create_schedule(s)
    rf = rfactor(sch, s, 16, parts=3)
    assert rf.shape[-2].value == 3 and rf.shape[-1].value == 16
    from kiln.driver import build

    f = build(te.lower(sch, [x, s]))["main"]
    a, out = rng.standard_normal((3, 1000)).astype("float32"), np.zeros(3, "float32")
    f(a, out)
    np.testing.assert_array_equal(out, a.max(1))


def test_schedule_for_rejects_non_compute_outputs() -> None:
    x = te.placeholder((3,), name="x")
    with pytest.raises(IRError, match=r"schedule_for: outputs must be computed te.Tensors"):
        topi.schedule_for(x)
    with pytest.raises(IRValueError, match=r"schedule_for: needs at least one output"):
        topi.schedule_for([])


def test_symbolic_stage_runs_in_parallel_above_a_grain() -> None:
    """A symbolic row count cannot be judged when scheduling: the parallel loop carries a grain,
    printed as an OpenMP region with a serial copy of the loop below it; both compute the same."""

    n = te.size_var("n")
    x = te.placeholder((n, 64), name="x")
    y = topi.exp(x)
    f = _lower(y, [x])
    (par,) = [lp for lp in loops_of(f) if lp.kind == tir.ForKind.PARALLEL]
    grain = par.annotations[PARALLEL_GRAIN]
    assert 1 < grain < 1 << 20
    fn = kiln.build_op(y, [x, y])
    for rows in (1, 3 * grain):
        a = np.random.default_rng(rows).standard_normal((rows, 64)).astype("float32")
        out = np.zeros_like(a)
        fn(a, out)
        np.testing.assert_allclose(out, np.exp(a), rtol=1e-5)
