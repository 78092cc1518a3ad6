"""The call boundary of built functions, for the arguments the entry's basic checks let through:
overlapping arguments of ``tir.noalias`` functions, read-only arrays, ints beyond their type,
bfloat16 / float8 arrays from numpy (ml_dtypes)."""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import kiln
from kiln import te, tir
from kiln.runtime import ArgInfo, Module
from tests.codegen.helpers import loop, prim_func

N = 8


def _te_build(outs: Callable[..., te.Tensor], *shapes: tuple[int, ...], dtype: str = "float32"):
    ins = [te.placeholder(s, dtype, name) for s, name in zip(shapes, "ABCD")]
    out = outs(*ins)
    return kiln.build(te.lower(te.create_schedule(out), [*ins, out]))["main"]


@pytest.fixture(scope="module")
def add() -> Any:
    """main(A, B, C): C = A + B over float32[8] (TE: noalias)."""
    return _te_build(lambda a, b: te.compute((N,), lambda i: a[i] + b[i], name="C"), (N,), (N,))


# -- overlap ------------------------------------------------------------------------------------
def test_output_overlapping_an_input_is_refused_naming_both(add: Any) -> None:
    a, b = np.ones(N, "float32"), np.ones(N, "float32")
    with pytest.raises(ValueError, match="main: arguments A and C overlap in memory; this kernel"):
        add(a, b, a)
    with pytest.raises(ValueError, match="main: arguments B and C overlap"):
        base = np.zeros(2 * N, "float32")
        add(a, base[4 : 4 + N], base[:N])  # partial overlap of two views
    np.testing.assert_array_equal(a, 1)  # nothing ran


def test_inputs_may_share_memory_and_disjoint_views_pass(add: Any) -> None:
    a = np.arange(N, dtype="float32")
    c = np.zeros(N, "float32")
    add(a, a, c)
    np.testing.assert_array_equal(c, 2 * a)
    base = np.arange(2 * N, dtype="float32")
    add(base[N:], base[N:], base[:N])  # output right before the inputs: no shared byte
    np.testing.assert_array_equal(base[:N], 2 * np.arange(N, 2 * N))


def test_functions_without_noalias_have_no_overlap_check() -> None:
    f = prim_func(
        "shift",
        {"A": ((N,), "float32"), "B": ((N,), "float32")},
        lambda A, B: loop(N - 1, lambda i: tir.BufferStore(B, A[i + 1], (i,))),
    )
    m = kiln.build(f)
    assert "kiln_check_overlap" not in m.inspect_source()
    a = np.arange(N, dtype="float32")
    m["shift"](a, a)  # in place, loop order: a C memmove
    np.testing.assert_array_equal(a[:-1], np.arange(1, N))


def _kernels() -> dict[str, tuple[Any, list[tuple[int, ...]], Callable[..., np.ndarray]]]:
    k = te.reduce_axis((0, N), name="k")
    return {
        "add": (
            _te_build(lambda a, b: te.compute((N,), lambda i: a[i] + b[i], name="C"), (N,), (N,)),
            [(N,), (N,), (N,)],
            lambda a, b: a + b,
        ),
        "transpose": (
            _te_build(lambda a: te.compute((N, N), lambda i, j: a[j, i], name="B"), (N, N)),
            [(N, N), (N, N)],
            lambda a: a.T,
        ),
        "matmul": (
            _te_build(
                lambda a, b: te.compute(
                    (N, N), lambda i, j: te.sum(a[i, k] * b[k, j], axis=[k]), name="C"
                ),
                (N, N),
                (N, N),
            ),
            [(N, N), (N, N), (N, N)],
            lambda a, b: a @ b,
        ),
    }


def _view(base: np.ndarray, shape: tuple[int, ...], rng: random.Random) -> np.ndarray:
    """A contiguous view of ``shape`` at a random offset into ``base``."""
    size = int(np.prod(shape))
    start = rng.randrange(0, base.size - size + 1)
    return base[start : start + size].reshape(shape)


def test_overlapping_calls_are_refused_or_match_copy_semantics() -> None:
    """Random views of one buffer as inputs and output: every call either raises naming two
    arguments or computes what numpy computes on copies of the inputs."""
    rng = random.Random(10)
    kernels = _kernels()
    refused = matched = 0
    for _ in range(600):
        name = rng.choice(sorted(kernels))
        fn, shapes, ref = kernels[name]
        base = np.random.default_rng(rng.randrange(2**31)).standard_normal(160).astype("float32")
        views = [_view(base, s, rng) for s in shapes]
        ins = [np.array(v) for v in views[:-1]]
        try:
            fn(*views)
        except ValueError as e:
            assert "overlap in memory" in str(e), str(e)
            refused += 1
            continue
        np.testing.assert_allclose(views[-1], ref(*ins), rtol=1e-5, atol=1e-5, err_msg=name)
        matched += 1
    assert refused > 50 and matched > 50, (refused, matched)


def test_cuda_entry_knows_outputs_through_the_kernel_launch() -> None:
    """The host function only launches; what the kernel stores decides the outputs."""
    pytest.importorskip("cuda.bindings", reason="NVRTC (cuda-bindings) is not installed")
    a, b = te.placeholder((64,), name="A"), te.placeholder((64,), name="B")
    c = te.compute((64,), lambda i: a[i] + b[i], name="C")
    target = kiln.ir.Target("cuda", host="c")
    m = kiln.build(te.lower(kiln.topi.schedule_for([c], target), [a, b, c]), target=target)
    assert [x.written for x in m.get_func_args("main")] == [False, False, True]
    # the entry's overlap pairs (kiln.codegen.c_entry_table): (A, C) and (B, C)
    assert re.search(r"_pairs\[\] = \{0, 2, 1, 2\};", m.inspect_source())


# -- read-only arrays -------------------------------------------------------------------------
def test_read_only_output_is_refused_naming_the_argument(add: Any) -> None:
    a = np.ones(N, "float32")
    out = np.zeros(N, "float32")
    out.flags.writeable = False
    with pytest.raises(ValueError, match="main: argument C is a read-only array, but main writes"):
        add(a, a, out)


def test_read_only_inputs_are_passed_without_a_copy(add: Any) -> None:
    a = np.arange(N, dtype="float32")
    a.flags.writeable = False
    frozen = np.frombuffer(np.arange(N, dtype="float32").tobytes(), dtype="float32")
    c = np.zeros(N, "float32")
    add(a, frozen, c)
    np.testing.assert_array_equal(c, 2 * np.arange(N))


def test_library_lists_which_arguments_are_written() -> None:
    f = prim_func(
        "scale",
        {"x": "int8", "A": ((N,), "float32"), "B": ((N,), "float32")},
        lambda x, A, B: loop(N, lambda i: tir.BufferStore(B, A[i] * 2.0, (i,))),
    )
    m: Module = kiln.build(f)
    assert m.get_func_args("scale") == (
        ArgInfo("x", "int8", False, False),
        ArgInfo("A", "float32", True, False),
        ArgInfo("B", "float32", True, True),
    )
    m2 = kiln.runtime.load_module(m.path)  # read from the library file alone
    assert m2.get_func_args("scale") == m.get_func_args("scale")


# -- ints ---------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def ints() -> Any:
    spec = {"a": "int8", "b": "int32", "c": "uint8", "d": "int64", "A": ((1,), "int64")}

    def body(a: Any, b: Any, c: Any, d: Any, A: tir.Buffer) -> tir.Stmt:
        total = a.astype("int64") + b.astype("int64") + c.astype("int64") + d
        return tir.BufferStore(A, total, (0,))

    return kiln.build(prim_func("ints", spec, body))["ints"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((2**100, 0, 0, 0), "ints: argument a = 2**100 does not fit int8"),
        ((0, -(2**70), 0, 0), "ints: argument b = -2**70 does not fit int32"),
        ((300, 0, 0, 0), "ints: argument a = 300 does not fit int8"),
        ((0, 0, -1, 0), "ints: argument c = -1 does not fit uint8"),
        ((0, 0, 0, 2**63), "ints: argument d = 2**63 does not fit int64"),
        ((0, 0, np.uint64(2**64 - 1), 0), "ints: argument c = 18446744073709551615 does not fit"),
    ],
)
def test_ints_that_do_not_fit_name_value_and_type(ints: Any, args: tuple, message: str) -> None:
    out = np.zeros(1, "int64")
    with pytest.raises(ValueError) as info:
        ints(*args, out)
    assert message in str(info.value), str(info.value)


def test_ints_at_the_limits_pass(ints: Any) -> None:
    out = np.zeros(1, "int64")
    ints(-128, 2**31 - 1, 255, -(2**63) + 2**40, out)
    assert out[0] == -128 + 2**31 - 1 + 255 - 2**63 + 2**40


# -- storage floats from numpy -------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ["bfloat16", "float8_e4m3fn"])
def test_storage_float_kernels_take_ml_dtypes_arrays(dtype: str) -> None:
    ml_dtypes = pytest.importorskip("ml_dtypes", reason="ml_dtypes is not installed")
    np_dtype = np.dtype(getattr(ml_dtypes, dtype))
    fn = _te_build(
        lambda a, b: te.compute((N,), lambda i: a[i] * b[i], name="C"), (N,), (N,), dtype=dtype
    )
    a = np.linspace(-3, 3, N).astype(np_dtype)
    b = np.linspace(0.5, 2, N).astype(np_dtype)
    b.flags.writeable = False  # read-only and storage float at once
    c = np.zeros(N, np_dtype)
    fn(a, b, c)
    want = (a.astype("float32") * b.astype("float32")).astype(np_dtype)
    bits = f"uint{np_dtype.itemsize * 8}"
    np.testing.assert_array_equal(c.view(bits), want.view(bits))
    with pytest.raises(TypeError, match=f"main: argument A.dtype expected {dtype}, got uint"):
        fn(a.view(bits), b, c)  # the bits alone are not the type
    t = kiln.tensor(c)  # and both ways through kiln's tensor helpers
    assert str(t.dtype) == dtype and np.shares_memory(kiln.runtime.to_numpy(t), c)


def test_unconvertible_dlpack_objects_are_named(add: Any) -> None:
    class Broken:
        def __dlpack__(self, *args: Any, **kwargs: Any) -> Any:
            raise BufferError("this exporter is broken")

        def __dlpack_device__(self) -> tuple[int, int]:
            return (1, 0)

    with pytest.raises(ValueError, match="main: argument B .Broken. cannot be passed through"):
        add(np.zeros(N, "float32"), Broken(), np.zeros(N, "float32"))


def test_after_bridging_arrays_the_argument_still_wrong_is_named() -> None:
    ml_dtypes = pytest.importorskip("ml_dtypes", reason="ml_dtypes is not installed")
    fn = _te_build(
        lambda a, b: te.compute((N,), lambda i: a[i] + b[i], name="C"), (N,), (N,), dtype="bfloat16"
    )
    a = np.zeros(N, ml_dtypes.bfloat16)  # bridged (bfloat16), then B is the one at fault
    with pytest.raises(ValueError, match="main: argument B .ndarray. cannot be passed through"):
        fn(a, np.zeros(N, object), np.zeros(N, ml_dtypes.bfloat16))
