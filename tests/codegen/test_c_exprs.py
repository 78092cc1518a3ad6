"""CodeGenC, expressions: scalars, casts, select, math, integer division, storage-only floats."""

from __future__ import annotations

from collections.abc import Callable

import ml_dtypes
import numpy as np
import pytest

import kiln
from kiln import tir
from kiln.ir import GlobalVar, IRModule
from kiln.runtime import Module
from tests.codegen.helpers import loop, prim_func

N = 64


def _map(name: str, src: str, dst: str, fn: Callable[[tir.PrimExpr], tir.PrimExpr]) -> tir.PrimFunc:
    """B[i] = fn(A[i]) over N elements."""
    return prim_func(
        name,
        {"A": ((N,), src), "B": ((N,), dst)},
        lambda A, B: loop(N, lambda i: tir.BufferStore(B, fn(A[i]), (i,))),
    )


def _zip(
    name: str, dt: str, fn: Callable[[tir.PrimExpr, tir.PrimExpr], tir.PrimExpr]
) -> tir.PrimFunc:
    """C[i] = fn(A[i], B[i]) over N elements."""
    return prim_func(
        name,
        {"A": ((N,), dt), "B": ((N,), dt), "C": ((N,), dt)},
        lambda A, B, C: loop(N, lambda i: tir.BufferStore(C, fn(A[i], B[i]), (i,))),
    )


def _f32(x: float) -> tir.PrimExpr:
    return tir.const(x, "float32")


KERNELS: dict[str, tir.PrimFunc] = {
    "to_int": _map("to_int", "float32", "int32", lambda x: tir.Cast("int32", x)),
    "to_bool": _map("to_bool", "float32", "bool", lambda x: tir.Cast("bool", x)),
    "from_bool": _map("from_bool", "bool", "float64", lambda x: tir.Cast("float64", x)),
    "select": _map("select", "float32", "float32", lambda x: tir.Select(x > _f32(0), x, _f32(-1))),
    "exp": _map("exp", "float32", "float32", tir.exp),
    "sqrt64": _map("sqrt64", "float64", "float64", tir.sqrt),
    "sigmoid": _map("sigmoid", "float32", "float32", lambda x: tir.math("sigmoid", x)),
    "rsqrt": _map("rsqrt", "float32", "float32", lambda x: tir.math("rsqrt", x)),
    "tanh": _map("tanh", "float32", "float32", lambda x: tir.math("tanh", x)),
    "floordiv": _zip("floordiv", "int32", tir.FloorDiv),
    "floormod": _zip("floormod", "int32", tir.FloorMod),
    "truncdiv": _zip("truncdiv", "int32", tir.Div),
    "truncmod": _zip("truncmod", "int32", tir.Mod),
    "fdiv": _zip("fdiv", "float32", tir.FloorDiv),
    "fmod": _zip("fmod", "float32", tir.FloorMod),
    "minmax": _zip("minmax", "int64", lambda a, b: tir.Min(a, b) * 3 + tir.Max(a, b)),
    "bits": _zip("bits", "int32", lambda a, b: (a & b) ^ (a | (b << 2)) ^ (a >> 1)),
    "pow": _zip("pow", "float32", lambda a, b: tir.math("pow", a, b)),
    "let": _map(
        "let",
        "int32",
        "int32",
        lambda x: tir.Let(v := tir.Var("v", "int32"), x * 3, v * v + v),
    ),
    "reinterpret": _map("reinterpret", "float32", "int32", lambda x: tir.reinterpret("int32", x)),
    "popcount": _map(
        "popcount", "int32", "int32", lambda x: tir.call_intrin("int32", "popcount", x)
    ),
}


def _lazy(A: tir.Buffer, B: tir.Buffer) -> tir.Stmt:
    """if_then_else evaluates only the chosen side: no division by zero happens."""
    return loop(
        N, lambda i: tir.BufferStore(B, tir.if_then_else(A[i].ne(0), 100 // A[i], -1), (i,))
    )


KERNELS["lazy"] = prim_func("lazy", {"A": ((N,), "int32"), "B": ((N,), "int32")}, _lazy)


@pytest.fixture(scope="module")
def built() -> Module:
    return kiln.build(IRModule({GlobalVar(name): f for name, f in KERNELS.items()}))


def _run(built: Module, name: str, *inputs: np.ndarray, out: str) -> np.ndarray:
    result = np.zeros(N, dtype=out)
    built[name](*inputs, result)
    return result


RNG = np.random.default_rng(0)
FLOATS = (RNG.standard_normal(N) * 10).astype("float32")
INTS = RNG.integers(-50, 50, N).astype("int32")
NONZERO = np.where(INTS == 0, 7, INTS).astype("int32")


def test_casts(built: Module) -> None:
    np.testing.assert_array_equal(
        _run(built, "to_int", FLOATS, out="int32"), FLOATS.astype("int32")
    )
    x = FLOATS.copy()
    x[::3] = 0
    np.testing.assert_array_equal(_run(built, "to_bool", x, out="bool"), x != 0)
    flags = x != 0
    np.testing.assert_array_equal(_run(built, "from_bool", flags, out="float64"), flags * 1.0)


def test_select_and_lazy_if_then_else(built: Module) -> None:
    np.testing.assert_array_equal(
        _run(built, "select", FLOATS, out="float32"), np.where(FLOATS > 0, FLOATS, -1)
    )
    a = INTS.copy()
    a[::4] = 0
    expect = np.where(a != 0, 100 // np.where(a == 0, 1, a), -1).astype("int32")
    np.testing.assert_array_equal(_run(built, "lazy", a, out="int32"), expect)


def test_math_intrinsics(built: Module) -> None:
    small = FLOATS / 10
    pos = np.abs(FLOATS) + 0.5
    close = dict(rtol=2e-6, atol=1e-7)
    np.testing.assert_allclose(_run(built, "exp", small, out="float32"), np.exp(small), **close)
    np.testing.assert_allclose(_run(built, "tanh", small, out="float32"), np.tanh(small), **close)
    np.testing.assert_allclose(
        _run(built, "sigmoid", small, out="float32"), 1 / (1 + np.exp(-small)), **close
    )
    np.testing.assert_allclose(_run(built, "rsqrt", pos, out="float32"), 1 / np.sqrt(pos), **close)
    wide = pos.astype("float64")
    np.testing.assert_array_equal(_run(built, "sqrt64", wide, out="float64"), np.sqrt(wide))
    np.testing.assert_allclose(_run(built, "pow", pos, small, out="float32"), pos**small, rtol=1e-5)
    source = built.inspect_source()
    assert "expf(" in source and "tanhf(" in source and "sqrt(" in source


def test_integer_division_semantics(built: Module) -> None:
    a, b = INTS, NONZERO
    np.testing.assert_array_equal(_run(built, "floordiv", a, b, out="int32"), a // b)
    np.testing.assert_array_equal(_run(built, "floormod", a, b, out="int32"), a % b)
    np.testing.assert_array_equal(_run(built, "truncdiv", a, b, out="int32"), np.fix(a / b))
    np.testing.assert_array_equal(_run(built, "truncmod", a, b, out="int32"), np.fmod(a, b))
    fa, fb = FLOATS, np.where(np.abs(FLOATS) < 1, 3.0, FLOATS[::-1]).astype("float32")
    np.testing.assert_allclose(_run(built, "fdiv", fa, fb, out="float32"), np.floor(fa / fb))
    np.testing.assert_allclose(
        _run(built, "fmod", fa, fb, out="float32"),
        fa - np.floor(fa / fb) * fb,
        rtol=1e-5,
        atol=1e-5,
    )


def test_min_max_bits_let_reinterpret_popcount(built: Module) -> None:
    a64, b64 = INTS.astype("int64"), NONZERO.astype("int64")
    expect = np.minimum(a64, b64) * 3 + np.maximum(a64, b64)
    np.testing.assert_array_equal(_run(built, "minmax", a64, b64, out="int64"), expect)
    a, b = INTS, NONZERO
    bits = (a & b) ^ (a | (b << 2)) ^ (a >> 1)
    np.testing.assert_array_equal(_run(built, "bits", a, b, out="int32"), bits)
    np.testing.assert_array_equal(_run(built, "let", a, out="int32"), (3 * a) ** 2 + 3 * a)
    np.testing.assert_array_equal(
        _run(built, "reinterpret", FLOATS, out="int32"), FLOATS.view("int32")
    )
    pop = np.array([bin(int(x) & 0xFFFFFFFF).count("1") for x in a], dtype="int32")
    np.testing.assert_array_equal(_run(built, "popcount", a, out="int32"), pop)


# -- storage-only floats -------------------------------------------------------------------------

torch = pytest.importorskip("torch")

STORAGE = {
    "float16": (np.float16, "torch.float16"),
    "bfloat16": (ml_dtypes.bfloat16, "torch.bfloat16"),
    "float8_e4m3fn": (ml_dtypes.float8_e4m3fn, "torch.float8_e4m3fn"),
    "float8_e5m2": (ml_dtypes.float8_e5m2, "torch.float8_e5m2"),
}


def _storage_module() -> IRModule:
    funcs = {}
    for dt in STORAGE:
        m = 65536 if dt in ("float16", "bfloat16") else 256
        funcs[f"narrow_{dt}"] = _cvt(f"narrow_{dt}", "float32", dt, 4096)
        funcs[f"widen_{dt}"] = _cvt(f"widen_{dt}", dt, "float32", m)
        funcs[f"axpy_{dt}"] = prim_func(
            f"axpy_{dt}",
            {"A": ((N,), dt), "B": ((N,), dt), "C": ((N,), dt)},
            lambda A, B, C, dt=dt: loop(
                N, lambda i: tir.BufferStore(C, A[i] * tir.const(1.5, dt) + B[i], (i,))
            ),
        )
    return IRModule({GlobalVar(k): f for k, f in funcs.items()})


def _cvt(name: str, src: str, dst: str, n: int) -> tir.PrimFunc:
    return prim_func(
        name,
        {"A": ((n,), src), "B": ((n,), dst)},
        lambda A, B: loop(n, lambda i: tir.BufferStore(B, tir.Cast(dst, A[i]), (i,))),
    )


@pytest.fixture(scope="module")
def storage() -> Module:
    return kiln.build(_storage_module())


def _torch(x: np.ndarray, dt: str) -> object:
    """A torch tensor of storage dtype `dt` with the bits of the ml_dtypes/numpy array `x`."""
    tdt = eval(STORAGE[dt][1])  # noqa: S307 - a fixed table of torch dtype names
    bits = x.view("uint16" if x.itemsize == 2 else "uint8")
    carrier = torch.from_numpy(bits.view("int16" if x.itemsize == 2 else "uint8").copy())
    return carrier.view(tdt)


def _bits(t: object, itemsize: int) -> np.ndarray:
    carrier = t.view(torch.int16 if itemsize == 2 else torch.uint8)  # type: ignore[attr-defined]
    return carrier.numpy().view("uint16" if itemsize == 2 else "uint8")


def _same(got: np.ndarray, want: np.ndarray) -> None:
    """Equal as floats, NaN where NaN (any NaN payload)."""
    with np.errstate(invalid="ignore"):
        g, w = got.astype("float64"), want.astype("float64")
    np.testing.assert_array_equal(np.isnan(g), np.isnan(w))
    np.testing.assert_array_equal(g[~np.isnan(g)], w[~np.isnan(w)])


EDGES = np.array(
    [
        0.0,
        -0.0,
        1.0,
        -1.0,
        65504,
        65519,
        65520,
        1e6,
        -1e6,
        448,
        460,
        464,
        470,
        57344,
        61440,
        6e-8,
        3e-8,
        2.9e-8,
        1e-40,
        5.96e-8,
        np.inf,
        -np.inf,
        np.nan,
        1 / 3,
        2 / 3,
        1.00048828125,
    ],
    dtype="float32",
)


@pytest.mark.parametrize("dt", list(STORAGE))
def test_storage_float_conversions_match_ml_dtypes(storage: Module, dt: str) -> None:
    np_t = STORAGE[dt][0]
    itemsize = np.dtype(np_t).itemsize
    rng = np.random.default_rng(1)
    scale = 10.0 ** rng.uniform(-12, 6, 4096 - len(EDGES))
    x = np.concatenate([EDGES, (rng.standard_normal(len(scale)) * scale)]).astype("float32")
    out = torch.zeros(4096, dtype=eval(STORAGE[dt][1]))  # noqa: S307
    storage[f"narrow_{dt}"](torch.from_numpy(x), out)
    with np.errstate(over="ignore", invalid="ignore"):
        want = x.astype(np_t)
    _same(_bits(out, itemsize).view(np_t), want)
    count = 65536 if itemsize == 2 else 256
    every = np.arange(count, dtype="uint16" if itemsize == 2 else "uint8").view(np_t)
    wide = torch.zeros(count, dtype=torch.float32)
    storage[f"widen_{dt}"](_torch(every, dt), wide)
    _same(wide.numpy(), every.astype("float32"))


@pytest.mark.parametrize("dt", list(STORAGE))
def test_storage_float_arithmetic_is_float32_rounded_on_store(storage: Module, dt: str) -> None:
    # LegalizeStorage (issue 5): bf16/fp8 are computed in float32 and rounded once, on store;
    # float16 keeps per-operation rounding.
    np_t = STORAGE[dt][0]
    rng = np.random.default_rng(2)
    a = rng.standard_normal(N).astype(np_t)
    b = rng.standard_normal(N).astype(np_t)
    c = torch.zeros(N, dtype=eval(STORAGE[dt][1]))  # noqa: S307
    storage[f"axpy_{dt}"](_torch(a, dt), _torch(b, dt), c)
    if dt == "float16":  # a real arithmetic type: each operation rounds, as numpy's float16 does
        want = (a.astype("float32") * np.float32(1.5)).astype(np_t).astype("float32") + b
        want = want.astype(np_t)
    else:
        want = (a.astype("float32") * np.float32(1.5) + b.astype("float32")).astype(np_t)
    _same(_bits(c, np.dtype(np_t).itemsize).view(np_t), want)
    assert "uint16_t*" in storage.inspect_source() and "uint8_t*" in storage.inspect_source()


def test_numpy_float16_arrays_pass_directly(storage: Module) -> None:
    a = np.linspace(-2, 2, N).astype("float16")
    b = np.ones(N, dtype="float16")
    c = np.zeros(N, dtype="float16")
    storage["axpy_float16"](a, b, c)
    np.testing.assert_array_equal(c, (a * np.float16(1.5)) + b)


def test_a_vector_select_is_a_blend_of_its_mask() -> None:
    """A select of explicit vectors by a compare of same-width vectors is one blend of bits
    (no lane-by-lane loop, which GCC's -O2 leaves scalar), both sides evaluated, NaN
    conditions false as in scalar C, and values bit-exact (-0.0, NaN, inf pass through)."""
    from kiln import te
    from kiln.topi.x86 import common

    x = te.placeholder((64,), name="x")
    y = te.compute((64,), lambda i: tir.Select(x[i] < 0.5, x[i] * 2.0, x[i] - 1.0), name="y")
    s = te.create_schedule(y)
    _, inner = s[y].split(y.op.axis[0], factor=8)
    common.vectorize(s[y], inner)
    mod = kiln.build(te.lower(s, [x, y]), target="c")
    assert "for (int kiln_l" not in mod.inspect_source()
    a = np.random.default_rng(0).standard_normal(64).astype("float32")
    a[:6] = [np.nan, np.inf, -np.inf, -0.0, 0.5, 0.49999997]
    out = np.zeros(64, "float32")
    mod["main"](a, out)
    with np.errstate(invalid="ignore"):
        want = np.where(a < 0.5, a * 2, a - 1).astype("float32")
    np.testing.assert_array_equal(out.view("uint32"), want.view("uint32"))
