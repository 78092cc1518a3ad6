"""Matrix products: `topi.nn` / `topi.x86` matmul, dense and batch_matmul against numpy, the
x86 schedules (packed and plain computes, epilogues, registry), the generated kernel, and errors.

Builds dominate the run time, so each test puts several products into one function.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from kiln import te, tir, topi
from kiln.errors import IRError, IRValueError
from kiln.ir import Target
from kiln.ir.dtype import DataType
from kiln.ir.visitor import pre_order_nodes
from kiln.tir.attrs import PARALLEL_GRAIN
from kiln.topi import x86
from kiln.topi.x86.cpu import TILE_ROWS, matmul_tile, tile_vectors
from kiln.topi.x86.dense import ACC_TAG
from tests.topi.conftest import (
    VECTOR_REG,
    fma_accumulators,
    hot_loop,
    loops_of,
    machine_code,
    shape_of,
    vector_spills,
)


def _compile(sch: te.Schedule, args: list[Any], target: Target | str = "c") -> Any:
    from kiln.driver import build

    func = te.lower(sch, args)
    assert tir.verify_well_formed(func) == []
    return build(func, target=target)


def _run(
    sch: te.Schedule, inputs: list[Any], outs: list[Any], *arrays: np.ndarray, target: str = "c"
) -> list[Any]:
    results = [np.zeros(shape_of(t), dtype=str(t.dtype)) for t in outs]
    _compile(sch, [*inputs, *outs], target)["main"](*arrays, *results)
    return results


def _operands(n: int, m: int, k: int, ta: bool, tb: bool, tag: str) -> tuple[Any, Any]:
    a = te.placeholder((k, n) if ta else (n, k), name=f"A{tag}")
    b = te.placeholder((m, k) if tb else (k, m), name=f"B{tag}")
    return a, b


def _rand(rng: np.random.Generator, t: Any) -> np.ndarray:
    return rng.standard_normal(shape_of(t)).astype(str(t.dtype))


def _t(x: np.ndarray, flag: bool) -> np.ndarray:
    return np.swapaxes(x, -1, -2) if flag else x


FLAGS = [(False, False), (False, True), (True, False), (True, True)]


AVX2 = "c -mcpu=haswell"
"""An AVX2 + FMA target: its code runs on AVX-512 machines too."""

RUNS_AVX2 = Target("c").cpu.isa in ("avx2", "avx512")
needs_avx2 = pytest.mark.skipif(not RUNS_AVX2, reason="the host cannot run AVX2 (haswell) code")


@pytest.mark.parametrize(
    ("make", "target"),
    [
        (x86.matmul, "c"),
        pytest.param(x86.matmul, AVX2, marks=needs_avx2),
        (topi.nn.matmul, "c"),
        pytest.param(topi.nn.matmul, AVX2, marks=needs_avx2),
    ],
    ids=["x86", "x86-avx2", "plain", "plain-avx2"],
)
def test_matmul_odd_shapes_and_transposes(make: Any, target: str, rng: np.random.Generator) -> None:
    shapes = [(1, 1, 1), (17, 33, 65), (7, 5, 3), (6, 16, 4), (13, 40, 9)]
    inputs, outs, want = [], [], []
    extra = {"target": target} if make is x86.matmul else {}
    for s, (n, m, k) in enumerate(shapes):
        for f, (ta, tb) in enumerate(FLAGS):
            a, b = _operands(n, m, k, ta, tb, f"{s}_{f}")
            inputs += [a, b]
            outs.append(make(a, b, ta, tb, name=f"C{s}_{f}", **extra))
    arrays = [_rand(rng, t) for t in inputs]
    for j in range(0, len(arrays), 2):
        (ta, tb) = FLAGS[(j // 2) % 4]
        want.append(_t(arrays[j], ta) @ _t(arrays[j + 1], tb))
    got = _run(x86.schedule_matmul(outs, target), inputs, outs, *arrays, target=target)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-4)


def test_dense_bias_relu_epilogue_float64_and_int32(rng: np.random.Generator) -> None:
    x, w, bias = (
        te.placeholder(s, name=n) for s, n in [((19, 23), "x"), ((37, 23), "w"), ((37,), "b")]
    )
    y = x86.dense(x, w, bias)
    r = te.compute(y.shape, lambda i, j: tir.Max(y[i, j], tir.const(0.0)), name="relu")
    x64, w64 = te.placeholder((9, 5), "float64", "x64"), te.placeholder((3, 5), "float64", "w64")
    plain = topi.nn.dense(x64, w64)
    xi, wi = te.placeholder((7, 30), "int32", "xi"), te.placeholder((30, 21), "int32", "wi")
    ints = x86.matmul(xi, wi)
    inputs = [x, w, bias, x64, w64, xi, wi]
    arrays = [_rand(rng, t) for t in inputs[:5]]
    arrays += [rng.integers(-50, 50, shape_of(t)).astype("int32") for t in (xi, wi)]
    outs = [r, plain, ints]
    got = _run(x86.schedule_dense(outs), inputs, outs, *arrays)
    xv, wv, bv = arrays[:3]
    np.testing.assert_allclose(got[0], np.maximum(xv @ wv.T + bv, 0), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(got[1], arrays[3] @ arrays[4].T, rtol=1e-12)
    np.testing.assert_array_equal(got[2], arrays[5] @ arrays[6])


@pytest.mark.parametrize("make", [x86.batch_matmul, topi.nn.batch_matmul], ids=["x86", "plain"])
def test_batch_matmul_with_transposes_and_broadcast(make: Any, rng: np.random.Generator) -> None:
    cases = [((3, 17, 9), (3, 9, 20), False, False), ((2, 9, 5), (2, 7, 9), True, True)]
    cases.append(((1, 6, 11), (4, 11, 18), False, False))
    cases.append(((4, 6, 11), (1, 18, 11), False, True))
    inputs, outs = [], []
    for c, (sa, sb, ta, tb) in enumerate(cases):
        a, b = te.placeholder(sa, name=f"A{c}"), te.placeholder(sb, name=f"B{c}")
        inputs += [a, b]
        outs.append(make(a, b, ta, tb, name=f"C{c}"))
    arrays = [_rand(rng, t) for t in inputs]
    got = _run(x86.schedule_batch_matmul(outs), inputs, outs, *arrays)
    for c, (_, _, ta, tb) in enumerate(cases):
        want = _t(arrays[2 * c], ta) @ _t(arrays[2 * c + 1], tb)
        np.testing.assert_allclose(got[c], want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("m", [64, 5], ids=["cols64", "narrow"])
def test_symbolic_rows_take_full_guard_free_tiles(m: int, rng: np.random.Generator) -> None:
    """A symbolic row count still gets `TILE_ROWS`-row register tiles (rows past the end are
    computed again from the last row), no guard inside the reduction, the epilogue in the same
    nest, and the row tiles in parallel with a run-time grain."""
    n = te.size_var("n")
    x, w, b = (
        te.placeholder(s, name=nm) for s, nm in [((n, 40), "x"), ((40, m), "w"), ((m,), "b")]
    )
    y = topi.relu(topi.add(x86.matmul(x, w), b))
    func = te.lower(topi.schedule_for(y), [x, w, b, y])
    loops = loops_of(func)
    assert any(lp.kind == tir.ForKind.UNROLLED and lp.extent.value >= TILE_ROWS for lp in loops)
    k_loop = next(lp for lp in loops if lp.loop_var.name == "k")
    assert not [s for s in pre_order_nodes(k_loop.body) if isinstance(s, tir.IfThenElse)]
    par = [lp for lp in loops if lp.kind == tir.ForKind.PARALLEL]
    assert len(par) == 1 and PARALLEL_GRAIN in par[0].annotations
    fn = _compile(topi.schedule_for(y), [x, w, b, y])["main"]
    wv, bv = rng.standard_normal((40, m), "float32"), rng.standard_normal(m, "float32")
    for rows in (1, 5, 6, 13, 64):
        xv = rng.standard_normal((rows, 40), "float32")
        out = np.zeros((rows, m), "float32")
        fn(xv, wv, bv, out)
        np.testing.assert_allclose(out, np.maximum(xv @ wv + bv, 0), rtol=1e-4, atol=1e-4)


def test_plain_columns_past_the_tile_read_zero_padded_copies(rng: np.random.Generator) -> None:
    """Swin's window attention scores: a batched product of two activations, ``[B, 49, 32] @
    [B, 32, 49]`` (49 columns: three whole tiles and a partial one) with a bias. The columns are
    padded to whole tiles (zero-padded copies of ``b``), so the accumulation stores whole
    vectors, never lane by lane (measured [64, 3, 49, 32] x [64, 3, 32, 49] on one Zen 3 core:
    10.6 -> 1.6 ms)."""
    a, b = te.placeholder((4, 49, 32), name="a"), te.placeholder((4, 32, 49), name="b")
    bias = te.placeholder((49,), name="bias")
    y = topi.add(topi.nn.batch_matmul(a, b), bias)
    func = te.lower(topi.schedule_for(y), [a, b, bias, y])
    k_loop = next(lp for lp in loops_of(func) if lp.loop_var.name == "k")
    assert not [s for s in pre_order_nodes(k_loop.body) if isinstance(s, tir.IfThenElse)]
    fn = _compile(topi.schedule_for(y), [a, b, bias, y])["main"]
    av, bv = (
        rng.standard_normal((4, 49, 32), "float32"),
        rng.standard_normal((4, 32, 49), "float32"),
    )
    cv = rng.standard_normal(49, "float32")
    out = np.zeros((4, 49, 49), "float32")
    fn(av, bv, cv, out)
    np.testing.assert_allclose(out, av @ bv + cv, rtol=1e-4, atol=1e-4)


def test_symbolic_shapes_use_the_plain_compute(rng: np.random.Generator) -> None:
    n = te.size_var("n")
    a, b = te.placeholder((n, 12), name="A"), te.placeholder((12, 10), name="B")
    c = x86.matmul(a, b)
    assert c.op.tag == "matmul" and c.op.reduce_axis
    mod = _compile(x86.schedule_matmul(c), [a, b, c])
    av, bv = rng.standard_normal((5, 12), "float32"), rng.standard_normal((12, 10), "float32")
    out = np.zeros((5, 10), "float32")
    mod["main"](av, bv, out)
    np.testing.assert_allclose(out, av @ bv, rtol=1e-4, atol=1e-4)


def test_registered_with_schedule_for(rng: np.random.Generator) -> None:
    x, w = te.placeholder((10, 8), name="x"), te.placeholder((20, 8), name="w")
    b = te.placeholder((20,), name="b")
    y = topi.relu(x86.dense(x, w))
    plain = topi.nn.dense(x, w, b, name="plain")
    sch = topi.schedule_for([y, plain])
    acc = next(s for s in sch.stages if s.op.tag == ACC_TAG)
    assert acc.attach_type == "scope"
    # the plain product is a register tile computed inside its bias epilogue's tile loop
    product = next(s for s in sch.stages if s.name == "plain_matmul")
    assert product.attach_type == "scope" and product.attach_stage.name == "plain"
    xv, wv, bv = (_rand(rng, t) for t in (x, w, b))
    got = _run(sch, [x, w, b], [y, plain], xv, wv, bv)
    np.testing.assert_allclose(got[0], np.maximum(xv @ wv.T, 0), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(got[1], xv @ wv.T + bv, rtol=1e-4, atol=1e-4)


HOST_ISA = Target("c").cpu.isa


@pytest.mark.parametrize(
    ("target", "reg"),
    [
        pytest.param(AVX2, "ymm", id="avx2"),
        pytest.param(
            "c",
            "zmm",
            id="avx512-host",
            marks=pytest.mark.skipif(
                HOST_ISA != "avx512",
                reason=f"the host has no AVX-512 (Target('c').cpu.isa is {HOST_ISA!r}); the "
                "avx2 case covers this machine's kernels",
            ),
        ),
    ],
)
def test_kernel_is_register_blocked_vector_code(
    target: str, reg: str, rng: np.random.Generator
) -> None:
    """The same matmul built for AVX2 (an explicit haswell target, which runs on AVX-512
    machines too) and for the AVX-512 host: right against numpy, the target's tile, FMAs on the
    target's registers only, every accumulator in a register of its own and no vector spill in
    the inner loop."""
    tgt = Target(target)
    a, b = te.placeholder((48, 64), name="A"), te.placeholder((64, 80), name="B")
    c = x86.matmul(a, b, target=tgt)
    tile = c.op.input_tensors[0].op.attrs["tile"]
    lanes = tgt.vector_bytes // 4
    assert (tile.rows, tile.lanes) == (6, lanes) and tile.vectors == tile_vectors(tgt)
    assert tile.rows * tile.vectors + tile.vectors + 1 <= tgt.cpu.vector_registers
    mod = _compile(x86.schedule_matmul(c, tgt), [a, b, c], tgt)
    if reg == "zmm" or RUNS_AVX2:
        av, bv = _rand(rng, a), _rand(rng, b)
        out = np.zeros((48, 80), "float32")
        mod["main"](av, bv, out)
        np.testing.assert_allclose(out, av @ bv, rtol=1e-4, atol=1e-4)
    src = mod.inspect_source()
    assert "kiln_float32x" in src[src.index("matmul_acc_data") :]  # explicit GCC vectors
    asm = machine_code(mod)
    assert {m.group(1) for m in VECTOR_REG.finditer(asm)} <= {"xmm", "ymm", "zmm"}
    if reg == "ymm":
        assert "%zmm" not in asm, "AVX2 code uses AVX-512 registers"
    assert f"kiln_float32x{2 * lanes}" not in src, "vectors wider than the target's"
    hot = hot_loop(asm)
    fmas = [x for x in hot if "vfmadd" in x]
    assert len(fmas) >= tile.rows * tile.vectors and all(f"%{reg}" in x for x in fmas)
    assert len(fma_accumulators(hot)) >= tile.rows * tile.vectors, "\n".join(hot)
    assert not vector_spills(hot), "vector registers spilled:\n" + "\n".join(hot)
    if not (reg == "zmm" or RUNS_AVX2):
        pytest.skip(f"the host cannot run AVX2 code (ISA {HOST_ISA!r}); the code was checked")


def _err(fn: Any, *parts: str) -> None:
    with pytest.raises((IRError, IRValueError)) as info:
        fn()
    for p in parts:
        assert p in str(info.value), str(info.value)


def test_bad_input_names_operator_and_tensor() -> None:
    a, b = te.placeholder((4, 3), name="lhs"), te.placeholder((5, 6), name="rhs")
    _err(lambda: x86.matmul(a, b), "matmul", "inner dimensions", "'lhs'", "'rhs'")
    _err(lambda: topi.nn.matmul(a, b, transpose_a=True), "matmul", "'lhs'")
    _err(lambda: topi.nn.dense(a, te.placeholder((2, 4), name="w")), "dense", "'w'")
    v = te.placeholder((3,), name="vec")
    _err(lambda: topi.nn.matmul(v, b), "matmul", "'vec'", "rank 2")
    i = te.placeholder((3, 5), "int32", name="ints")
    _err(lambda: topi.nn.matmul(i, b), "matmul", "'ints'", "'rhs'", "dtypes")
    w = te.placeholder((6, 3), name="w")
    _err(lambda: x86.dense(a, w, te.placeholder((5,), name="bias")), "dense", "'bias'", "(6,)")
    p, q = te.placeholder((2, 3, 4), name="p"), te.placeholder((3, 4, 5), name="q")
    _err(lambda: topi.nn.batch_matmul(p, q), "batch_matmul", "batch sizes", "'p'", "'q'")


def test_explicit_vector_code_chunks_masks_and_fallback(rng: np.random.Generator) -> None:
    """The emitter paths the kernels rely on (`kiln.codegen.c_vector`): chunks of the
    native width plus power-of-two and scalar remainders, ramps folded through // and %, a
    per-lane guard as a masked store that reads arguments only in active lanes, and the
    `omp simd` fallback for a per-lane choice between loads."""
    a, b = te.placeholder((5, 13), name="a"), te.placeholder((13,), name="b")
    c = te.compute((5, 13), lambda i, j: a[i, j] * tir.const(2.0) + b[j], name="c")
    q = te.placeholder((24,), name="q")
    d = te.compute((2, 12), lambda i, j: q[i * 12 + j // 12 * 12 + j % 12], name="d")
    f = te.compute((3,), lambda i: q[i] + tir.const(1.0), name="f")
    e = te.compute((5, 13), lambda i, j: te.if_then_else(j < 7, a[i, j], b[j]), name="e")
    sch = te.create_schedule([c, d, e, f])
    for t, factor in ((c, 8), (e, 8)):
        _, ji = sch[t].split(t.op.axis[1], factor=factor)
        sch[t].vectorize(ji)
        sch[t].pragma(ji, "explicit_vector")
    for t in (d, f):  # 12 lanes: 8 + 4; 3 lanes: 2 + 1 (a scalar statement)
        sch[t].vectorize(t.op.axis[-1])
        sch[t].pragma(t.op.axis[-1], "explicit_vector")
    mod = _compile(sch, [a, b, q, c, d, e, f])
    av, bv, qv = (_rand(rng, t) for t in (a, b, q))
    outs = [np.zeros(shape_of(t), "float32") for t in (c, d, e, f)]
    mod["main"](av, bv, qv, *outs)
    np.testing.assert_allclose(outs[0], av * 2 + bv, rtol=1e-6)
    np.testing.assert_array_equal(outs[1], qv.reshape(2, 12))
    np.testing.assert_array_equal(outs[2], np.where(np.arange(13) < 7, av, bv))
    np.testing.assert_allclose(outs[3], qv[:3] + 1, rtol=1e-6)
    src = mod.inspect_source()
    assert "if (kiln_m" in src  # the masked store of c's ragged last chunk
    assert "#pragma omp simd" in src  # e falls back: both sides of its choice are loads


@pytest.mark.parametrize(
    ("n", "rows"), [(48, 6), (64, 5), (66, 6), (65, 5), (7, 5), (12, 6), (128, 5)]
)
def test_a_tile_one_row_shorter_where_it_pads_fewer_rows(n: int, rows: int) -> None:
    for tgt in (Target(AVX2), Target("c -mcpu=skylake-avx512")):
        tile = matmul_tile(n, 512, DataType.parse("float32"), tgt)
        assert tile.rows == rows and tile.vectors == tile_vectors(tgt)
        assert -(-n // tile.rows) * tile.rows <= -(-n // TILE_ROWS) * TILE_ROWS


@pytest.mark.parametrize("rows", [0, 1, 5, 6, 13, 64])
def test_packed_matmul_with_symbolic_rows_is_register_tiled(rows: int) -> None:
    """Symbolic batch and token count: whole row tiles (the rows past the end read the last row
    again), the same register tile as a constant shape; correct at any row count."""
    from kiln.topi.layout import transform_array

    b, n = tir.SizeVar("b", "int64"), tir.SizeVar("n", "int64")
    i64 = [tir.IntImm("int64", v) for v in (32,)]
    x = te.placeholder((b, n, i64[0]), name="x")
    w = np.random.default_rng(rows).standard_normal((32, 40)).astype("float32")
    panels = transform_array(w, "KN", "NK16n")
    p = te.placeholder(tuple(tir.IntImm("int64", d) for d in panels.shape), name="p")
    y = x86.matmul_packed(x, p, 40)
    acc = y.op.input_tensors[0]
    assert acc.op.tag == ACC_TAG  # the packed kernel, not the generic compute
    mod = _compile(topi.schedule_for(y, target="c"), [x, p, y])
    xv = np.random.default_rng(rows + 1).standard_normal((3, rows, 32)).astype("float32")
    out = np.zeros((3, rows, 40), "float32")
    mod["main"](xv, panels, out)
    np.testing.assert_allclose(out, xv @ w, rtol=1e-5, atol=1e-5)
