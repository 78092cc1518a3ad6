"""LowerIntrin: math builtins become C calls (or vectorizable float32 arithmetic in vectorized
CPU loops), floor division becomes C division; numerics checked against numpy."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import kiln
from kiln import te, tir
from kiln.errors import PassError
from kiln.ir import GlobalVar, IRModule, Target
from kiln.tir import op as tir_op
from kiln.tir.transform import FlattenBuffer, LowerIntrin
from tests.codegen.helpers import loop, prim_func

N = 64


def _map(dt: str, fn: Callable[[tir.PrimExpr], tir.PrimExpr], kind: Any = None) -> tir.PrimFunc:
    """B[i] = fn(A[i]) over N elements (loop kind ``kind``, default serial)."""
    kind = kind or tir.ForKind.SERIAL
    return prim_func(
        "f",
        {"A": ((N,), dt), "B": ((N,), dt)},
        lambda A, B: loop(N, lambda i: tir.BufferStore(B, fn(A[i]), (i,)), kind=kind),
    )


def lower(func: tir.PrimFunc, target: Target | None = None) -> tir.PrimFunc:
    mod = FlattenBuffer()(IRModule({GlobalVar("f"): func}))
    return LowerIntrin(target or Target("c"))(mod)["f"]


def nodes(func: tir.PrimFunc) -> list[Any]:
    found: list[Any] = []
    tir.post_order_visit(func.body, found.append)
    return found


def calls(func: tir.PrimFunc) -> list[str]:
    """Names of the C functions called (``call_pure_extern``) and builtins left."""
    out = []
    for n in nodes(func):
        if isinstance(n, tir.Call) and n.op_name == "tir.call_pure_extern":
            out.append(n.args[0].value)
        elif isinstance(n, tir.Call) and n.op.get_attr("math"):
            out.append(n.op_name)
    return out


# -- structure --------------------------------------------------------------------------------
@pytest.mark.parametrize(("dt", "symbol"), [("float32", "expf"), ("float64", "exp")])
def test_scalar_math_calls_libm_for_the_argument_width(dt: str, symbol: str) -> None:
    assert calls(lower(_map(dt, tir.exp))) == [symbol]


def test_rsqrt_and_sigmoid_are_written_with_other_operations() -> None:
    out = lower(_map("float32", lambda v: tir_op.math("rsqrt", v) + tir_op.math("sigmoid", v)))
    assert sorted(calls(out)) == ["expf", "sqrtf"]
    assert any(isinstance(n, tir.Div) for n in nodes(out))


@pytest.mark.parametrize("k", [1.0, 2.0, 3.0, 4.0])
def test_small_constant_powers_are_multiplications(k: float) -> None:
    out = lower(_map("float32", lambda v: tir_op.math("pow", v, tir.const(k))))
    assert calls(out) == []
    assert sum(isinstance(n, tir.Mul) for n in nodes(out)) == {1: 0, 2: 1, 3: 2, 4: 2}[int(k)]
    x = np.array([0.0, -0.0, 1.5, -2.25, 1e20, -1e-30, np.inf, -np.inf, np.nan] * 8, "float32")
    y = np.zeros_like(x[:N])
    kiln.build(out.with_attr("global_symbol", "f"))["f"](x[:N], y)
    with np.errstate(all="ignore"):
        np.testing.assert_allclose(y, np.power(x[:N], np.float32(k)), rtol=2e-7)


@pytest.mark.parametrize("k", [0.5, 2.5, -1.0])
def test_other_powers_call_libm(k: float) -> None:
    out = lower(_map("float32", lambda v: tir_op.math("pow", v, tir.const(k))))
    assert calls(out) == ["powf"]


def test_float16_is_computed_in_float32() -> None:
    out = lower(_map("float16", tir.exp))
    (call,) = [n for n in nodes(out) if isinstance(n, tir.Call)]
    assert str(call.dtype) == "float32" and str(call.args[1].dtype) == "float32"
    assert any(isinstance(n, tir.Cast) and str(n.dtype) == "float16" for n in nodes(out))


def test_vectorized_loops_get_the_vectorizable_approximation() -> None:
    fns = {
        "exp": tir.exp,
        "log": lambda v: tir_op.math("log", v),
        "tanh": lambda v: tir_op.math("tanh", v),
        "erf": lambda v: tir_op.math("erf", v),
        "sigmoid": lambda v: tir_op.math("sigmoid", v),
    }
    for name, fn in fns.items():
        out = lower(_map("float32", fn, tir.ForKind.VECTORIZED))
        assert calls(out) == [], name  # no libm call left
    # pow has no approximation; float64 keeps libm; scalar loops keep libm
    assert calls(lower(_map("float32", lambda v: tir_op.math("pow", v, v), "vectorized"))) == [
        "powf"
    ]
    assert calls(lower(_map("float64", tir.exp, tir.ForKind.VECTORIZED))) == ["exp"]
    assert calls(lower(_map("float32", tir.exp))) == ["expf"]


def test_cuda_fast_math_and_rsqrtf() -> None:
    func = _map("float32", lambda v: tir.exp(v) + tir_op.math("rsqrt", v))
    kernel = func.with_attr("target", Target("cuda")).with_attr("calling_conv", 2)
    assert sorted(calls(lower(kernel, Target("cuda")))) == ["expf", "rsqrtf"]
    fast = Target("cuda", {"fast_math": True})
    assert sorted(calls(lower(kernel, fast))) == ["__expf", "rsqrtf"]
    # host code of a CUDA build is C: no fast math, no approximation choice by target
    host = func.with_attr("target", Target("cuda", host="c"))
    assert "__expf" not in calls(lower(host, fast))


def test_integer_floor_division() -> None:
    """A loop index over a positive constant is plain ``/`` and ``%``; a signed value gets the
    select that corrects truncation; unsigned is always plain."""

    def index_math(A: Any, B: Any) -> tir.Stmt:
        return loop(
            N, lambda i: tir.BufferStore(B, A[tir.FloorDiv(i, 8) * 8 + tir.FloorMod(i, 8)], (i,))
        )

    out = lower(prim_func("f", {"A": ((N,), "float32"), "B": ((N,), "float32")}, index_math))
    assert not any(isinstance(n, (tir.FloorDiv, tir.FloorMod, tir.Select)) for n in nodes(out))
    signed = lower(_map("int32", lambda v: tir.FloorDiv(v, 3)))
    assert any(isinstance(n, tir.Select) for n in nodes(signed))
    assert not any(isinstance(n, tir.FloorDiv) for n in nodes(signed))
    unsigned = lower(_map("uint32", lambda v: tir.FloorMod(v, v)))
    assert not any(isinstance(n, (tir.FloorMod, tir.Select)) for n in nodes(unsigned))


def test_float_division_and_modulo_call_floor_and_fmod() -> None:
    out = lower(_map("float32", lambda v: tir.FloorDiv(v, v) + tir.FloorMod(v, v) + tir.Mod(v, v)))
    assert sorted(calls(out)) == ["floorf", "floorf", "fmodf"]


def test_math_of_integers_is_an_error_naming_the_function() -> None:
    bad = _map("int32", lambda v: tir.Call("int32", tir.builtin.op("exp"), (v,)))
    with pytest.raises(PassError, match="lower-intrin: f: exp needs float arguments"):
        lower(bad)


def test_the_emitter_refuses_what_was_not_lowered() -> None:
    from kiln.codegen import CodegenError, codegen_c
    from kiln.tir.transform import MakePackedAPI

    mod = MakePackedAPI()(FlattenBuffer()(IRModule({GlobalVar("f"): _map("float32", tir.exp)})))
    with pytest.raises(CodegenError, match="run the LowerIntrin pass first"):
        codegen_c(mod)


# -- numerics ---------------------------------------------------------------------------------
M = 1 << 16


def _build_vector_map(name: str) -> Callable[..., Any]:
    x = te.placeholder((M,), name="x")
    y = te.compute((M,), lambda i: tir_op.math(name, x[i]), name="y")
    s = te.create_schedule([y])
    _, inner = s[y].split(y.op.axis[0], factor=16)
    s[y].vectorize(inner)
    mod = kiln.build(te.lower(s, [x, y], name="main"))
    assert "f(" not in mod.inspect_source().split("static int32_t main")[1].split("TVM_FFI")[0]
    return mod["main"]


SPECIALS = [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-30, -1e-30, 1.0, -1.0, 1e-40, -1e-40]
CASES = {
    "exp": (np.exp, lambda r: r.uniform(-110, 90, M), 1.0),
    "log": (np.log, lambda r: np.exp(r.uniform(-103, 88, M)), 1.5),
    "tanh": (np.tanh, lambda r: r.uniform(-12, 12, M) * r.uniform(0, 1, M) ** 4, 3.0),
    "erf": (np.vectorize(math.erf, otypes=[float]), lambda r: r.uniform(-5, 5, M), 7.0),
    "sigmoid": (lambda v: 1 / (1 + np.exp(-v)), lambda r: r.uniform(-60, 60, M), 3.0),
}
"""name: (float64 reference, float32 inputs, max error in units of the last place)."""


@pytest.mark.parametrize("name", sorted(CASES))
def test_vectorized_approximations_match_numpy(name: str) -> None:
    ref, sample, max_ulp = CASES[name]
    x = sample(np.random.default_rng(7)).astype("float32")
    x[: len(SPECIALS)] = SPECIALS
    y = np.zeros_like(x)
    _build_vector_map(name)(x, y)
    with np.errstate(all="ignore"):
        want64 = ref(x.astype("float64"))
        want = want64.astype("float32")
    special = ~np.isfinite(want) | ~np.isfinite(y)
    np.testing.assert_array_equal(y[special], want[special])  # inf, -inf, NaN where numpy has them
    ulp = np.spacing(np.abs(want[~special])).astype("float64")
    err = np.abs(y[~special] - want64[~special]) / ulp
    assert err.max() <= max_ulp, (name, err.max(), x[~special][err.argmax()])


def test_erf_absolute_error_is_below_4e_7() -> None:
    x = np.linspace(-4.5, 4.5, M).astype("float32")
    y = np.zeros_like(x)
    _build_vector_map("erf")(x, y)
    want = np.vectorize(math.erf)(x.astype("float64"))
    assert np.abs(y - want).max() < 4e-7
    assert y[0] == -1.0 and y[-1] == 1.0


@pytest.mark.parametrize("dt", ["int32", "int64"])
def test_signed_floor_division_matches_numpy(dt: str) -> None:
    rng = np.random.default_rng(3)
    a = rng.integers(-1000, 1000, N).astype(dt)
    b = rng.choice([-7, -3, -1, 1, 2, 5, 16], N).astype(dt)

    def body(A: Any, B: Any, Q: Any, R: Any) -> tir.Stmt:
        def each(i: tir.Var) -> tir.Stmt:
            q = tir.BufferStore(
                Q, tir.FloorDiv(A[i], B[i]) + tir.FloorDiv(A[i], tir.const(-4, dt)), (i,)
            )
            r = tir.BufferStore(
                R, tir.FloorMod(A[i], B[i]) + tir.FloorMod(A[i], tir.const(6, dt)), (i,)
            )
            return tir.seq(q, r)

        return loop(N, each)

    spec = {k: ((N,), dt) for k in "ABQR"}
    mod = kiln.build(prim_func("main", spec, body))
    q, r = np.zeros(N, dt), np.zeros(N, dt)
    mod["main"](a, b, q, r)
    np.testing.assert_array_equal(q, a // b + a // -4)
    np.testing.assert_array_equal(r, a % b + a % 6)


def test_floor_division_by_a_shape_variable_in_a_loop_over_it_is_plain() -> None:
    """Inside a loop of ``n * s`` iterations ``s`` (a shape variable) is at least 1 and the
    loop index is non-negative, so ``i // s`` and ``i % s`` need no sign correction."""
    n, s = tir.SizeVar("n", "int64"), tir.SizeVar("s", "int64")
    i = tir.Var("i", "int64")
    A = tir.decl_buffer((n * s,), "float32", "A")
    store = tir.BufferStore(A, A[tir.FloorDiv(i, s) * s + tir.FloorMod(i, s)], (i,))
    body = tir.For(i, tir.const(0, "int64"), n * s, tir.ForKind.SERIAL, store)
    a = tir.Var("A", "handle")
    f = tir.PrimFunc((a, n, s), body, buffer_map={a: A}, attrs={"global_symbol": "f"})
    out = lower(f)
    assert not any(isinstance(x, (tir.FloorDiv, tir.FloorMod, tir.Select)) for x in nodes(out))


def test_floor_division_of_a_product_of_shape_variables_is_plain() -> None:
    """``(i * s + 3) // s`` with ``i`` a loop index and ``s`` a shape variable: every term is
    non-negative (the product has no constant bound under the int64 limit, but is never
    negative), and a zero ``s`` is guarded before: plain ``/`` and ``%``."""
    n, s = tir.SizeVar("n", "int64"), tir.SizeVar("s", "int64")
    i = tir.Var("i", "int64")
    A = tir.decl_buffer((n,), "float32", "A")
    flat = i * s + tir.const(3, "int64")
    store = tir.BufferStore(A, A[tir.FloorMod(tir.FloorDiv(flat, s), n)], (i,))
    body = tir.For(i, tir.const(0, "int64"), n, tir.ForKind.SERIAL, store)
    a = tir.Var("A", "handle")
    f = tir.PrimFunc((a, n, s), body, buffer_map={a: A}, attrs={"global_symbol": "f"})
    out = lower(f)
    assert not any(isinstance(x, (tir.FloorDiv, tir.FloorMod, tir.Select)) for x in nodes(out))


def test_dims_the_entry_binds_from_shapes_are_non_negative() -> None:
    """The graph level's dims are plain `Var`s, bound by the entry from tensor shapes (so never
    negative): a fused loop over ``b * 2 * ((s + 15) // 16)`` tiles divides its index by
    ``(s + 15) // 16`` with C's ``/`` and no guard inside the loop, even under a condition on
    the index (the loop runs only when ``s >= 1``); a division by ``s`` outside any loop is
    still guarded (``s`` may be 0)."""
    from kiln.tir.transform import MakePackedAPI

    b, s = tir.Var("b", "int64"), tir.Var("s", "int64")
    i = tir.Var("i", "int64")
    tiles = tir.FloorDiv(s + tir.const(15, "int64"), tir.const(16, "int64"))
    A = tir.decl_buffer((b, s), "float32", "A")
    B = tir.decl_buffer((b * 2 * tiles,), "float32", "B")
    row = tir.FloorDiv(tir.FloorDiv(i, tiles), tir.const(2, "int64"))
    col = tir.FloorMod(i, tiles) * tir.const(16, "int64")
    read = tir.BufferLoad(A, (row, tir.Min(col, s - tir.const(1, "int64"))))
    store = tir.IfThenElse(tir.LT(row, b), tir.BufferStore(B, read, (i,)))
    body = tir.SeqStmt((
        tir.For(i, tir.const(0, "int64"), b * 2 * tiles, tir.ForKind.SERIAL, store),
        tir.BufferStore(B, tir.Cast("float32", tir.FloorDiv(b, s)), (tir.const(0, "int64"),)),
    ))  # fmt: skip
    a, o = tir.Var("A", "handle"), tir.Var("B", "handle")
    f = tir.PrimFunc((a, o), body, buffer_map={a: A, o: B}, attrs={"global_symbol": "f"})
    mod = MakePackedAPI()(FlattenBuffer()(IRModule({GlobalVar("f"): f})))
    out = LowerIntrin(Target("c"))(mod)["f"]
    loop = next(n for n in nodes(out) if isinstance(n, tir.For))
    assert not any(isinstance(x, (tir.FloorDiv, tir.FloorMod, tir.Select)) for x in nodes(out))
    assert not any(isinstance(x, tir.AssertStmt) for x in nodes(loop))
    guards = [n.message.value for n in nodes(out) if isinstance(n, tir.AssertStmt)]
    assert any("b // s is 0" in g for g in guards), guards
