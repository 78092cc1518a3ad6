"""CodeGenC: ``restrict`` data pointers for ``tir.noalias`` functions (parallel bodies included),
and scalar ``reinterpret`` as a union compound literal instead of memcpy."""

from __future__ import annotations

import numpy as np
import pytest

import kiln
from kiln import te, tir
from kiln.codegen.c_host import codegen_c
from kiln.driver.build import lower
from tests.codegen.helpers import build, loop, module, prim_func

ROWS, COLS = 16, 64


def _source(f: tir.PrimFunc) -> str:
    """The generated C of ``f`` after the default pipeline, without compiling it."""
    return codegen_c(lower(f))


def _typed_function(source: str) -> str:
    """The generated C from the typed functions on (no prelude, no tvm-ffi entries)."""
    start = source.index("static int32_t main")
    return source[start : source.index("TVM_FFI_DLL_EXPORT int __tvm_ffi_main")]


def _axpy(noalias: bool, parallel: bool) -> tir.PrimFunc:
    """C[i, j] = 2 * A[i, j] + B[j], the outer loop optionally parallel."""
    kind = tir.ForKind.PARALLEL if parallel else tir.ForKind.SERIAL

    def body(A: tir.Buffer, B: tir.Buffer, C: tir.Buffer) -> tir.Stmt:
        def row(i: tir.Var) -> tir.Stmt:
            return loop(
                COLS,
                lambda j: tir.BufferStore(C, A[i, j] * tir.const(2.0, "float32") + B[j], (i, j)),
                name="j",
            )

        return loop(ROWS, row, kind=kind)

    f = prim_func(
        "main",
        {"A": ((ROWS, COLS), "float32"), "B": ((COLS,), "float32"), "C": ((ROWS, COLS), "float32")},
        body,
    )
    return f.with_attr("tir.noalias", True) if noalias else f


def _run_axpy(f: tir.PrimFunc) -> tuple[np.ndarray, str]:
    m = build(f)
    rng = np.random.default_rng(1)
    a = rng.standard_normal((ROWS, COLS)).astype("float32")
    b = rng.standard_normal(COLS).astype("float32")
    c = np.zeros_like(a)
    m.get_function("main")(a, b, c)
    np.testing.assert_allclose(c, 2 * a + b, rtol=1e-6, atol=1e-6)
    return c, m.inspect_source()


@pytest.mark.parametrize("parallel", [False, True], ids=["serial", "parallel"])
def test_restrict_only_with_noalias(parallel: bool) -> None:
    _, plain = _run_axpy(_axpy(noalias=False, parallel=parallel))
    _, noalias = _run_axpy(_axpy(noalias=True, parallel=parallel))
    assert "restrict" not in _typed_function(plain)
    typed = _typed_function(noalias)
    assert "float* restrict A_data, float* restrict B_data, float* restrict C_data" in typed
    # the entry wrapper's own locals stay unqualified
    entry = noalias[noalias.index("TVM_FFI_DLL_EXPORT int __tvm_ffi_main") :]
    assert "restrict" not in entry.split("kiln metadata")[0]


def test_outlined_parallel_body_prints_restrict_parameters_and_an_unchecked_call() -> None:
    """OutlineParallelLoops moves the body into ``main_par`` (``tir.noalias``, ``kiln.no_error``):
    its pointer parameters are restrict, and the parallel loop becomes a launch on kiln's thread
    pool whose range function calls it without a check."""
    plain = _source(_axpy(noalias=False, parallel=True))
    noalias = _source(_axpy(noalias=True, parallel=True))
    assert "main_par" not in plain
    helper = noalias[noalias.index("static int32_t main_par(") :]
    head = helper.split("{", 1)[0]
    assert "float* restrict A_data" in head and "float* restrict C_data" in head
    assert "int32_t i" in head and "restrict i" not in head
    assert "#pragma omp parallel" not in noalias
    launch = noalias[noalias.index("kiln_pool_launch((") :].split("return 0;")[0]
    assert "C_data[" not in launch and "kiln_par_capture" not in launch  # no error slot
    rng = noalias[noalias.index("static void kiln_parrange") :].split("}\n", 1)[0]
    assert "main_par(" in rng and "!= 0" not in rng


def test_te_kernel_parallel_vectorized_matches_numpy() -> None:
    A = te.placeholder((ROWS, COLS), name="A")
    Bias = te.placeholder((COLS,), name="Bias")
    B = te.compute((ROWS, COLS), lambda i, j: A[i, j] * tir.const(3.0) - Bias[j], name="B")
    s = te.create_schedule(B)
    i, j = B.op.axis
    s[B].parallel(i)
    _, ji = s[B].split(j, factor=8)
    s[B].vectorize(ji)
    m = kiln.build(te.lower(s, [A, Bias, B]))
    assert "restrict" in m.inspect_source()
    rng = np.random.default_rng(2)
    a = rng.standard_normal((ROWS, COLS)).astype("float32")
    bias = rng.standard_normal(COLS).astype("float32")
    out = np.zeros_like(a)
    m.get_function("main")(a, bias, out)
    np.testing.assert_allclose(out, a * 3 - bias, rtol=1e-6, atol=1e-6)  # GCC may fuse to fma


# -- reinterpret ------------------------------------------------------------------------------
SPECIALS32 = np.array(
    [0.0, -0.0, 1.0, -1.5, np.inf, -np.inf, np.nan, 1e-45, -3.4e38, 2.5e-39], dtype="float32"
)
SPECIALS64 = np.array(
    [0.0, -0.0, 1.0, -1.5, np.inf, -np.inf, np.nan, 5e-324, -1.7e308, 2.2e-310], dtype="float64"
)


def _bits(src: str, dst: str) -> tir.PrimFunc:
    n = 16
    return prim_func(
        f"cast_{src}_{dst}",
        {"A": ((n,), src), "B": ((n,), dst)},
        lambda A, B: loop(n, lambda i: tir.BufferStore(B, tir.reinterpret(dst, A[i]), (i,))),
    )


PAIRS = [
    ("float32", "int32"),
    ("float32", "uint32"),
    ("int32", "float32"),
    ("uint32", "float32"),
    ("float64", "int64"),
    ("int64", "float64"),
]


@pytest.fixture(scope="module")
def bits_module() -> kiln.runtime.Module:
    return build(module(**{f"{s}_{d}": _bits(s, d) for s, d in PAIRS}))


def _inputs(src: str) -> np.ndarray:
    wide = src.endswith("64")
    floats = np.resize(SPECIALS64 if wide else SPECIALS32, 16)
    floats[-1] = np.float64(-2.0).astype(floats.dtype)
    if src.startswith("float"):
        return floats
    return floats.view(src)  # every float bit pattern, NaN payloads and -0.0 included


@pytest.mark.parametrize(("src", "dst"), PAIRS, ids=[f"{s}-{d}" for s, d in PAIRS])
def test_scalar_reinterpret_is_bit_exact(
    bits_module: kiln.runtime.Module, src: str, dst: str
) -> None:
    a = _inputs(src)
    out = np.zeros(16, dtype=dst)
    bits_module.get_function(f"cast_{src}_{dst}")(a, out)
    uint = f"uint{a.dtype.itemsize * 8}"
    np.testing.assert_array_equal(out.view(uint), a.view(uint))
    np.testing.assert_array_equal(out, a.view(dst))


def test_scalar_reinterpret_uses_a_union_not_memcpy() -> None:
    source = _source(_bits("float32", "int32"))
    typed = source[source.index("static int32_t cast_") :]
    assert "union { float a; int32_t b; }" in typed
    assert "memcpy" not in typed


def test_reinterpret_in_vectorized_loop_matches_numpy() -> None:
    """2^n built from exponent bits, times |x| from masked sign bits, under `vectorize`."""
    X = te.placeholder((ROWS, COLS), name="X")
    N = te.placeholder((ROWS, COLS), name="N", dtype="int32")

    def fn(i: tir.PrimExpr, j: tir.PrimExpr) -> tir.PrimExpr:
        absx = tir.reinterpret("float32", tir.reinterpret("int32", X[i, j]) & 0x7FFFFFFF)
        pow2 = tir.reinterpret("float32", (N[i, j] + 127) << 23)
        return absx * pow2

    Y = te.compute((ROWS, COLS), fn, name="Y")
    s = te.create_schedule(Y)
    _, ji = s[Y].split(Y.op.axis[1], factor=16)
    s[Y].vectorize(ji)
    m = kiln.build(te.lower(s, [X, N, Y]))
    source = m.inspect_source()
    typed = source[source.index("static int32_t main") :].split("TVM_FFI_DLL_EXPORT")[0]
    assert "memcpy" not in typed and "#pragma omp simd" in typed
    rng = np.random.default_rng(3)
    x = rng.standard_normal((ROWS, COLS)).astype("float32")
    x[0, :4] = [-0.0, np.inf, -np.inf, np.nan]
    n = rng.integers(-20, 20, (ROWS, COLS)).astype("int32")
    y = np.zeros_like(x)
    m.get_function("main")(x, n, y)
    expect = np.abs(x) * np.ldexp(np.float32(1), n).astype("float32")
    np.testing.assert_array_equal(y.view("uint32"), expect.view("uint32"))
