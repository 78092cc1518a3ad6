"""Graph-level programs built with kiln.relax.build and run by the VM, in both modes with
identical results, checked against numpy: call_tir, call_packed to a Python function, If,
tuples, closures, constants, symbolic batch sizes, shape functions, calls between functions."""

# ruff: noqa: F841 - names in R scripts are script variables, not Python locals

from __future__ import annotations

import numpy as np
import pytest
import tvm_ffi

import kiln
from kiln.script import ir as I
from kiln.script import relax as R
from kiln.script import tir as T
from tests.relax.transform.test_legalize_ops import MLP, _reference
from tests.vm.harness import machine, run_both

RNG = np.random.default_rng(7)


def f32(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype("float32")


@I.ir_module
class Kernels:
    @T.prim_func
    def add_one(X: T.handle, Y: T.handle):
        n = T.int64()
        x = T.match_buffer(X, (n,), "float32")
        y = T.match_buffer(Y, (n,), "float32")
        for i in range(n):
            y[i] = x[i] + T.float32(1)

    @T.prim_func
    def scale(X: T.handle, Y: T.handle, k: T.int64):
        n = T.int64()
        x = T.match_buffer(X, (n,), "float32")
        y = T.match_buffer(Y, (n,), "float32")
        for i in range(n):
            y[i] = x[i] * T.Cast("float32", k)

    @R.function
    def main(x: R.Tensor(("n",), "float32")) -> R.Tensor(("n",), "float32"):
        n = T.int64()
        cls = Kernels
        a = R.call_tir(cls.add_one, (x,), out_sinfo=R.Tensor((n,), "float32"))
        b = R.call_tir(cls.add_one, (a,), out_sinfo=R.Tensor((n,), "float32"))
        c = R.call_tir(cls.scale, (b,), out_sinfo=R.Tensor((n,), "float32"), tir_vars=R.shape([3]))
        return c


@pytest.mark.parametrize("n", [1, 5, 64])
def test_call_tir_chain_with_a_symbolic_length(n: int) -> None:
    x = f32(n)
    np.testing.assert_allclose(run_both(Kernels, "main", x), (x + 2) * 3, rtol=1e-6)


def test_mlp_with_a_symbolic_batch() -> None:
    for batch in (1, 5, 17):
        args = [f32(batch, 16), f32(32, 16), f32(32), f32(32, 4)]
        got = run_both(MLP, "main", *args)
        np.testing.assert_allclose(got, _reference(*args), rtol=1e-4, atol=1e-6)


@tvm_ffi.register_global_func("kiln.test.vm.double_plus", override=True)
def _double_plus(x: object, k: int) -> object:
    return tvm_ffi.from_dlpack(np.from_dlpack(x) * 2 + k)


@I.ir_module
class Packed:
    @R.function
    def main(x: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
        out = R.Tensor((4,), "float32")
        y = R.call_packed("kiln.test.vm.double_plus", x, R.prim_value(1), sinfo_args=out)
        z = R.add(y, x)
        return z


def test_call_packed_to_a_python_function() -> None:
    x = f32(4)
    np.testing.assert_allclose(run_both(Packed, "main", x), x * 3 + 1, rtol=1e-6)


@tvm_ffi.register_global_func("kiln.test.vm.dps_sub", override=True)
def _dps_sub(a: object, b: object, out: object) -> None:
    np.from_dlpack(out)[:] = np.from_dlpack(a) - np.from_dlpack(b)


@I.ir_module
class Destination:
    @R.function
    def main(x: R.Tensor((4,), "float32"), y: R.Tensor((4,), "float32")):
        d = R.call_dps_packed("kiln.test.vm.dps_sub", (x, y), out_sinfo=R.Tensor((4,), "float32"))
        e = R.multiply(d, d)
        return e


def test_call_dps_packed_writes_into_the_allocated_output() -> None:
    x, y = f32(4), f32(4)
    np.testing.assert_allclose(run_both(Destination, "main", x, y), (x - y) ** 2, rtol=1e-5)


@I.ir_module
class Branches:
    @R.function
    def main(c: R.Tensor((), "bool"), x: R.Tensor((3,), "float32")) -> R.Tensor((3,), "float32"):
        if c:
            y = R.add(x, x)
            z = R.multiply(y, x)
        else:
            z = R.subtract(x, x)
        w = R.add(z, x)
        return w


@pytest.mark.parametrize("cond", [True, False])
def test_if_runs_the_chosen_branch(cond: bool) -> None:
    x = f32(3)
    want = (x + x) * x + x if cond else x
    got = run_both(Branches, "main", np.array(cond), x)
    np.testing.assert_allclose(got, want, rtol=1e-6)


@I.ir_module
class Tuples:
    @R.function
    def main(t: R.Tuple(R.Tensor((2,), "float32"), R.Tensor((2,), "float32"))):
        a = t[0]
        b = t[1]
        s = R.add(a, b)
        out = (s, (a, R.multiply(a, b)), R.shape([2, 3]))
        return out


def test_tuples_in_and_out() -> None:
    a, b = f32(2), f32(2)
    s, (a2, p), shape = run_both(Tuples, "main", (a, b))
    np.testing.assert_allclose(s, a + b, rtol=1e-6)
    np.testing.assert_array_equal(a2, a)
    np.testing.assert_allclose(p, a * b, rtol=1e-6)
    assert tuple(shape) == (2, 3)


@I.ir_module
class Closures:
    @R.function
    def main(x: R.Tensor((4,), "float32"), y: R.Tensor((4,), "float32")):
        @R.function
        def add_y(z: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
            s = R.add(z, y)
            return s

        @R.function
        def twice(z: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
            s = R.add(z, z)
            return s

        a = add_y(x)
        b = add_y(a)
        c = twice(b)
        return (c, add_y)


def test_closures_capture_and_are_returned() -> None:
    x, y = f32(4), f32(4)
    c, closure = run_both(Closures, "main", x, y)
    np.testing.assert_allclose(c, (x + 2 * y) * 2, rtol=1e-6)
    assert isinstance(closure, tvm_ffi.Function)


def test_a_returned_closure_can_be_called_from_python() -> None:
    from tests.vm.harness import machine

    x, y = f32(4), f32(4)
    for mode in ("bytecode", "compiled"):
        _, closure = machine(Closures, mode)["main"](x, y)
        np.testing.assert_allclose(np.from_dlpack(closure(x)), x + y, rtol=1e-6)


W = np.arange(12, dtype="float32").reshape(3, 4) / 10


@I.ir_module
class Constants:
    @R.function
    def main(x: R.Tensor((2, 3), "float32")):
        y = R.matmul(x, R.const(W))
        z = R.add(y, R.const(1.5, "float32"))
        k = R.const([7, 8, 9], "int64")
        return (z, k)


def test_constants_tensor_and_scalar() -> None:
    x = f32(2, 3)
    z, k = run_both(Constants, "main", x)
    np.testing.assert_allclose(z, x @ W + 1.5, rtol=1e-5)
    np.testing.assert_array_equal(k, [7, 8, 9])


@I.ir_module
class Calls:
    @R.function
    def square(x: R.Tensor(("n",), "float32")) -> R.Tensor(("n",), "float32"):
        y = R.multiply(x, x)
        return y

    @R.function
    def main(x: R.Tensor(("n",), "float32")) -> R.Tensor(("n",), "float32"):
        cls = Calls
        a = cls.square(x)
        b = cls.square(a)
        return b


def test_functions_call_each_other() -> None:
    x = f32(6)
    np.testing.assert_allclose(run_both(Calls, "main", x), x**4, rtol=1e-5)
    np.testing.assert_allclose(run_both(Calls, "square", x), x**2, rtol=1e-6)


@I.ir_module
class DataDependent:
    @T.prim_func
    def count_positive(X: T.handle, S: T.handle):
        n = T.int64()
        x = T.match_buffer(X, (n,), "float32")
        s = T.match_buffer(S, (1,), "int64")
        s[0] = T.int64(0)
        for i in range(n):
            if x[i] > T.float32(0):
                s[0] = s[0] + T.int64(1)

    @T.prim_func
    def head(X: T.handle, Y: T.handle):
        n = T.int64()
        m = T.int64()
        x = T.match_buffer(X, (n,), "float32")
        y = T.match_buffer(Y, (m,), "float32")
        for i in range(m):
            y[i] = x[i] * T.float32(2)

    @R.function
    def main(x: R.Tensor(("n",), "float32")):
        m = T.int64()
        cls = DataDependent
        count = R.call_tir(cls.count_positive, (x,), out_sinfo=R.Tensor((1,), "int64"))
        s = R.call_pure_packed("vm.builtin.tensor_to_shape", count, sinfo_args=R.Shape(ndim=1))
        t = R.match_cast(s, R.Shape([m]))
        y = R.call_tir(cls.head, (x,), out_sinfo=R.Tensor((m,), "float32"))
        z = R.call_tir(cls.head, (y,), out_sinfo=R.Tensor((m * 2 - m,), "float32"))
        return z


def test_a_shape_function_sizes_the_output() -> None:
    """A hand-written shape function (count_positive) decides the output length at run time;
    match_cast binds it; a compound dim of it (m * 2 - m) is computed by a generated one."""
    x = np.array([1.0, -2.0, 3.0, 4.0, -5.0], dtype="float32")
    got = run_both(DataDependent, "main", x)
    np.testing.assert_array_equal(got, x[:3] * 4)


def test_inputs_as_kiln_tensors_and_vm_results() -> None:
    from tests.vm.harness import machine

    x = f32(8)
    for mode in ("bytecode", "compiled"):
        main = machine(Kernels, mode)["main"]
        first = main(kiln.tensor(x))  # a kiln (tvm-ffi) tensor in, an NDArray out
        again = main(first)  # an NDArray goes back in as it is
        np.testing.assert_allclose(np.asarray(again), ((x + 2) * 3 + 2) * 3, rtol=1e-5)


def test_inputs_as_torch_tensors() -> None:
    torch = pytest.importorskip("torch")
    x = f32(8)
    for mode in ("bytecode", "compiled"):
        out = machine(Kernels, mode)["main"](torch.from_numpy(x))
        assert isinstance(out, torch.Tensor), type(out)  # torch in, torch out (zero-copy)
    got = run_both(Kernels, "main", torch.from_numpy(x))
    np.testing.assert_allclose(got, (x + 2) * 3, rtol=1e-6)


@I.ir_module
class Scalars:
    @R.function
    def main(c: R.Prim("bool"), s: R.Shape(["n", 2]), k: R.Prim("int64")):
        n = T.int64()
        if c:
            out = (R.prim_value(3), R.str("yes"), s, k)
        else:
            out = (R.prim_value(n * 5), R.str("no"), R.shape([n + 1]), k)
        return out


@pytest.mark.parametrize("cond", [True, False])
def test_scalars_strings_and_shapes_as_values(cond: bool) -> None:
    got = run_both(Scalars, "main", cond, tvm_ffi.Shape((4, 2)), 9)
    want = (3, "yes", (4, 2), 9) if cond else (20, "no", (5,), 9)
    assert (got[0], got[1], tuple(got[2]), got[3]) == want
