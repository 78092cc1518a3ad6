"""Integer division by zero: refused when the divisor is the constant 0 (when built, in the script,
in the verifier, after simplification), a Python error from the kernel when it is 0 at run time,
never a SIGFPE; float division stays IEEE. Checked against numpy."""

from __future__ import annotations

import numpy as np
import pytest

import kiln
import kiln.script
from kiln import tir
from kiln.errors import IRValueError, PassError, ScriptError, VerifyError
from kiln.tir.attrs import EXPLICIT_VECTOR

HEAD = 'from kiln.script import tir as T\n@T.prim_func\ndef f(I: T.Buffer((8,), "int32"), '
HEAD += 'O: T.Buffer((8,), "int32"), k: T.int32, n: T.int32):\n'


def build(body: str):
    """The kernel ``f(I, O, k, n)`` whose body is ``body`` (indented by the caller)."""
    return kiln.build(kiln.script.from_source(HEAD + body, "div.py"))["f"]


def run(f, k: int, n: int = 8, values: np.ndarray | None = None) -> np.ndarray:
    i = np.arange(-3, 5, dtype=np.int32) if values is None else values
    o = np.full(8, 99, dtype=np.int32)
    f(i, o, k, n)
    return o


x = tir.Var("x")


@pytest.mark.parametrize(
    "make",
    [
        lambda: x // 0,
        lambda: x % 0,
        lambda: tir.truncdiv(x, 0),
        lambda: tir.truncmod(x + 1, 0),
        lambda: tir.floordiv(x, tir.const(0)),
        lambda: tir.Ramp(x, 1, 4) // tir.Broadcast(tir.const(0), 4),
    ],
    ids=["floordiv", "floormod", "truncdiv", "truncmod", "floordiv-fn", "vector"],
)
def test_builders_refuse_a_zero_constant_divisor(make) -> None:
    with pytest.raises(IRValueError, match="division by zero: .* 0 \\(the divisor is the constant"):
        make()


def test_float_division_by_zero_is_ieee() -> None:
    f = kiln.build(
        kiln.script.from_source(
            "from kiln.script import tir as T\n@T.prim_func\n"
            'def f(A: T.Buffer((3,), "float32")):\n'
            "    for i in range(3):\n"
            "        A[i] = A[i] / T.float32(0)\n",
            "fdiv.py",
        )
    )["f"]
    a = np.array([1, -1, 0], dtype=np.float32)
    with np.errstate(divide="ignore", invalid="ignore"):
        want = a / np.float32(0)
    f(a)
    np.testing.assert_array_equal(a, want)


@pytest.mark.parametrize(
    "expr,col",
    [("I[i] // 0", 16), ("I[i] % 0", 16), ("T.truncdiv(I[i], 0)", 16), ("T.floormod(k, 0)", 16)],
)
def test_script_reports_a_zero_constant_divisor_at_its_line(expr: str, col: int) -> None:
    with pytest.raises(ScriptError, match="division by zero") as info:
        kiln.script.from_source(HEAD + f"    for i in range(8):\n        O[i] = {expr}\n", "d.py")
    assert (info.value.span.line, info.value.span.column) == (5, col)


def test_verifier_reports_hand_built_zero_divisor() -> None:
    o_h = tir.Var("O", "handle")
    O = tir.decl_buffer((8,), "int32", "O")
    body = tir.BufferStore(O, tir.FloorMod(O[1], tir.const(0)), (0,))
    func = tir.PrimFunc((o_h,), body, buffer_map={o_h: O}, attrs={"global_symbol": "f"})
    with pytest.raises(VerifyError, match="division by zero"):
        kiln.build(func)


def test_divisor_simplified_to_zero_fails_the_build_naming_it() -> None:
    text = HEAD + "    for i in range(8):\n        O[i] = I[i] // (k - k)\n"
    with pytest.raises(PassError, match=r"division by zero: the divisor of I\[i\] // 0") as info:
        kiln.build(kiln.script.from_source(text, "d.py"))
    assert "d.py:5" in str(info.value)


OPS = {
    "//": np.floor_divide,
    "%": np.remainder,
    "T.truncdiv": lambda a, b: np.trunc(a / b).astype(np.int32),
    "T.truncmod": np.fmod,
}


@pytest.mark.parametrize("op", list(OPS))
def test_zero_divisor_at_run_time_raises_and_others_compute(op: str) -> None:
    expr = f"I[i] {op} k" if not op.startswith("T.") else f"{op}(I[i], k)"
    f = build(f"    for i in range(8):\n        O[i] = {expr}\n")
    values = np.arange(-3, 5, dtype=np.int32)
    for k in (3, -2, 1):
        np.testing.assert_array_equal(run(f, k), OPS[op](values, np.int32(k)))
    with pytest.raises(ValueError, match=r"f: division by zero: the divisor of I\[i\] .* is 0"):
        run(f, 0)


def test_loop_invariant_guard_is_checked_once_before_the_loop() -> None:
    mod = kiln.build(
        kiln.script.from_source(
            HEAD + "    for i in T.parallel(8):\n        O[i] = I[i] // k\n", "p"
        )
    )
    src = mod.inspect_source()
    body = src[src.index("static int32_t f(int32_t") :]
    body = body[body.index("{") : body.index("\n}\n")]
    assert body.count("kiln_raise") == 1  # checked once, before the parallel loop
    assert body.index("kiln_raise") < body.index("#pragma omp parallel")
    with pytest.raises(ValueError, match="division by zero"):
        run(mod["f"], 0)
    np.testing.assert_array_equal(run(mod["f"], 2), np.arange(-3, 5) // 2)


def test_loop_that_does_not_run_does_not_divide() -> None:
    f = build("    for i in range(n):\n        O[i] = I[i] // k\n")
    assert (run(f, 0, n=0) == 99).all()
    with pytest.raises(ValueError, match="division by zero"):
        run(f, 0, n=1)


def test_guarded_division_is_only_checked_where_it_runs() -> None:
    f = build(
        "    for i in range(8):\n"
        "        O[i] = T.if_then_else(k != 0, I[i] // k, 7) + T.Select(k == 0, 1, I[i] % k)\n"
        "        if k > 0:\n"
        "            O[i] = O[i] + T.truncdiv(I[i], k)\n"
    )
    assert (run(f, 0) == 8).all()
    v = np.arange(-3, 5, dtype=np.int32)
    np.testing.assert_array_equal(run(f, 3), v // 3 + v % 3 + np.trunc(v / 3).astype(np.int32))


def test_divisor_varying_per_element_in_a_vectorized_loop() -> None:
    f = build("    for i in T.vectorized(8):\n        O[i] = n // I[i]\n")
    values = np.array([1, 2, -3, 4, 5, 6, 7, 9], dtype=np.int32)
    np.testing.assert_array_equal(run(f, 0, n=100, values=values), 100 // values)
    values[5] = 0
    with pytest.raises(ValueError, match="division by zero"):
        run(f, 0, n=100, values=values)


def test_divisor_varying_with_the_loop_variable() -> None:
    f = build("    for i in range(8):\n        O[i] = k // (i - 2)\n")
    with pytest.raises(ValueError, match=r"the divisor of k // \(?i - 2"):
        run(f, 5)


def test_vector_divisor_is_checked_lane_by_lane() -> None:
    """An explicitly vectorized loop divides vectors: every lane of the divisor is checked."""
    i_h, o_h = tir.Var("I", "handle"), tir.Var("O", "handle")
    I = tir.decl_buffer((8,), "int32", "I")
    O = tir.decl_buffer((8,), "int32", "O")
    i = tir.Var("i")
    loop = tir.For(
        i,
        0,
        8,
        tir.ForKind.VECTORIZED,
        tir.BufferStore(O, 100 // I[i], (i,)),
        annotations={EXPLICIT_VECTOR: 1},
    )
    func = tir.PrimFunc((i_h, o_h), loop, buffer_map={i_h: I, o_h: O}, attrs={"global_symbol": "f"})
    mod = kiln.build(func)
    assert "kiln_r" in mod.inspect_source()  # the lane loop of tir.vector_all
    values = np.array([1, 2, -3, 4, 5, 6, 7, 9], dtype=np.int32)
    o = np.zeros(8, np.int32)
    mod["f"](values, o)
    np.testing.assert_array_equal(o, 100 // values)
    values[3] = 0
    with pytest.raises(ValueError, match="division by zero"):
        mod["f"](values, o)


def test_constant_divisors_get_no_guard() -> None:
    mod = kiln.build(
        kiln.script.from_source(
            HEAD + "    for i in range(8):\n        O[i] = I[i] // 4 + i % 3\n", "c"
        )
    )
    assert "division by zero" not in mod.inspect_source()


def test_zero_divisor_in_an_argument_shape_is_a_mismatch_not_a_trap() -> None:
    f = kiln.build(
        kiln.script.from_source(
            "from kiln.script import tir as T\n@T.prim_func\n"
            "def f(a: T.handle, b: T.handle, m: T.int32):\n"
            "    n = T.int32()\n"
            '    A = T.match_buffer(a, (n,), "float32")\n'
            '    B = T.match_buffer(b, (n // m,), "float32")\n'
            "    for i in range(n // m):\n"
            "        B[i] = A[i * m]\n",
            "shape.py",
        )
    )["f"]
    a, b = np.arange(8, dtype=np.float32), np.zeros(4, np.float32)
    f(a, b, 2)
    np.testing.assert_array_equal(b, a[::2])
    with pytest.raises(ValueError, match=r"argument b.shape\[0\] expected -2147483648 .*m != 0"):
        f(a, b, 0)


def test_parallel_loop_with_a_grain_raises_from_its_region_and_from_its_serial_copy() -> None:
    """A parallel loop with a run-time grain runs as an OpenMP region from the grain up and as a
    serial copy below it (no ``if`` clause: ``GOMP_parallel`` costs ~0.5 us even when it is
    false); both compute the same and both raise a division by zero inside the loop."""
    mod = kiln.build(
        kiln.script.from_source(
            HEAD
            + '    for i in T.parallel(n, annotations={"pragma_parallel_grain": 4}):\n'
            + "        O[i] = I[i] // I[7 - i]\n",
            "grain.py",
        )
    )
    src = mod.inspect_source()
    body = src[src.index("static int32_t f(int32_t") :]
    body = body[: body.index("\n}\n")]
    assert "#pragma omp parallel for" in body and "if(" not in body and "} else {" in body
    values = np.array([5, -7, 9, 11, -13, 3, 2, 6], dtype=np.int32)
    for n in (2, 8):  # below the grain (serial copy), above it (the region)
        want = np.full(8, 99, dtype=np.int32)
        want[:n] = values[:n] // values[::-1][:n]
        np.testing.assert_array_equal(run(mod["f"], 1, n, values), want)
        zero = values.copy()
        zero[7] = 0
        with pytest.raises(ValueError, match="division by zero"):
            run(mod["f"], 1, n, zero)
