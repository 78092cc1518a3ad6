"""CallTIRRewrite: destination-passing calls become an output allocation and a call that returns
nothing; several outputs are several allocations; tir_vars go through vm.builtin.call_tir_dyn;
call_dps_packed becomes a call of the packed function; call_lowered calls its PrimFunc, or the
symbol of its Extern function; unknown output dims are an error."""

# ruff: noqa: F821, F841 - names in R scripts are script variables, not Python names

from __future__ import annotations

import pytest

from kiln.errors import PassError
from kiln.ir.structural import assert_structural_equal
from kiln.relax.analysis import verify_module
from kiln.relax.transform import CallTIRRewrite
from kiln.script import ir as I
from kiln.script import relax as R
from kiln.script import tir as T


def rewrite(mod):
    out = CallTIRRewrite()(mod)
    verify_module(out)
    return out


def test_one_output() -> None:
    @I.ir_module
    class Before:
        @R.function
        def main(x: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
            cls = Before
            y = R.call_tir(cls.copy, (x,), out_sinfo=R.Tensor((4,), "float32"))
            z = R.call_tir(cls.copy, (y,), out_sinfo=R.Tensor((4,), "float32"))
            return z

        @T.prim_func(private=True)
        def copy(X: T.Buffer((4,), "float32"), Y: T.Buffer((4,), "float32")):
            for i in range(4):
                Y[i] = X[i]

    @I.ir_module
    class Expected:
        @R.function
        def main(x: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
            cls = Expected
            y = R.builtin.alloc_tensor(R.shape([4]), R.dtype("float32"), R.prim_value(0))
            _ = cls.copy(x, y)
            z = R.builtin.alloc_tensor(R.shape([4]), R.dtype("float32"), R.prim_value(0))
            _1 = cls.copy(y, z)
            return z

        @T.prim_func(private=True)
        def copy(X: T.Buffer((4,), "float32"), Y: T.Buffer((4,), "float32")):
            for i in range(4):
                Y[i] = X[i]

    assert_structural_equal(rewrite(Before), Expected)


def test_several_outputs_and_their_items() -> None:
    @I.ir_module
    class Before:
        @R.function
        def main(x: R.Tensor((4,), "float32")):
            cls = Before
            parts = R.call_tir(
                cls.split,
                (x,),
                out_sinfo=[R.Tensor((2,), "float32"), R.Tensor((2,), "float32")],
            )
            a = parts[1]
            return (parts, a)

        @T.prim_func(private=True)
        def split(
            X: T.Buffer((4,), "float32"), A: T.Buffer((2,), "float32"), B: T.Buffer((2,), "float32")
        ):
            for i in range(2):
                A[i] = X[i]
                B[i] = X[i + 2]

    @I.ir_module
    class Expected:
        @R.function
        def main(x: R.Tensor((4,), "float32")):
            cls = Expected
            p0 = R.builtin.alloc_tensor(R.shape([2]), R.dtype("float32"), R.prim_value(0))
            p1 = R.builtin.alloc_tensor(R.shape([2]), R.dtype("float32"), R.prim_value(0))
            _ = cls.split(x, p0, p1)
            a = p1
            return ((p0, p1), a)

        @T.prim_func(private=True)
        def split(
            X: T.Buffer((4,), "float32"), A: T.Buffer((2,), "float32"), B: T.Buffer((2,), "float32")
        ):
            for i in range(2):
                A[i] = X[i]
                B[i] = X[i + 2]

    assert_structural_equal(rewrite(Before), Expected)


def test_tir_vars_and_dps_packed() -> None:
    @I.ir_module
    class Before:
        @R.function
        def main(x: R.Tensor(("n",), "float32")):
            n = T.int64()
            cls = Before
            y = R.call_tir(cls.fill, (), out_sinfo=R.Tensor((n,), "float32"), tir_vars=R.shape([7]))
            z = R.call_dps_packed("my.add", (x, y), out_sinfo=R.Tensor((n,), "float32"))
            return z

        @T.prim_func(private=True)
        def fill(Y: T.handle, k: T.int64):
            n = T.int64()
            y = T.match_buffer(Y, (n,), "float32")
            for i in range(n):
                y[i] = T.Cast("float32", k)

    @I.ir_module
    class Expected:
        @R.function
        def main(x: R.Tensor(("n",), "float32")):
            n = T.int64()
            cls = Expected
            y = R.builtin.alloc_tensor(R.shape([n]), R.dtype("float32"), R.prim_value(0))
            _ = R.call_packed(
                "vm.builtin.call_tir_dyn", cls.fill, y, R.shape([7]), sinfo_args=R.Tuple()
            )
            z = R.builtin.alloc_tensor(R.shape([n]), R.dtype("float32"), R.prim_value(0))
            _1 = R.call_packed("my.add", x, y, z, sinfo_args=R.Tuple())
            return z

        @T.prim_func(private=True)
        def fill(Y: T.handle, k: T.int64):
            n = T.int64()
            y = T.match_buffer(Y, (n,), "float32")
            for i in range(n):
                y[i] = T.Cast("float32", k)

    assert_structural_equal(rewrite(Before), Expected)


def test_a_module_without_destination_passing_calls_is_unchanged() -> None:
    @I.ir_module
    class Plain:
        @R.function
        def main(x: R.Tensor((4,), "float32")):
            y = R.call_packed("my.f", x, sinfo_args=R.Tensor((4,), "float32"))
            return y

    out = CallTIRRewrite()(Plain)
    assert out["main"] is Plain["main"]


def test_call_lowered_of_a_prim_func_and_of_an_extern_function() -> None:
    @I.ir_module
    class Before:
        @R.function
        def main(x: R.Tensor(("n",), "float32")):
            n = T.int64()
            cls = Before
            y = R.call_lowered(
                cls.copy,
                (x,),
                out_sinfo=R.Tensor((n,), "float32"),
                func_attrs={"Primitive": 1},
                all_prim_fn_vars=[cls.copy],
            )
            z = R.call_lowered(
                cls.ext, (y,), out_sinfo=R.Tensor((n,), "float32"), func_attrs={"Extern": 1}
            )
            return z

        @R.function(private=True)
        def ext(x: R.Tensor(("m",), "float32")) -> R.Tensor(("m",), "float32"):
            R.func_attr({"Extern": 1})
            y = R.add(x, x)
            return y

        @T.prim_func(private=True)
        def copy(X: T.handle, Y: T.handle):
            n = T.int64()
            x = T.match_buffer(X, (n,), "float32")
            y = T.match_buffer(Y, (n,), "float32")
            for i in range(n):
                y[i] = x[i]

    @I.ir_module
    class Expected:
        @R.function
        def main(x: R.Tensor(("n",), "float32")):
            n = T.int64()
            cls = Expected
            y = R.builtin.alloc_tensor(R.shape([n]), R.dtype("float32"), R.prim_value(0))
            _ = cls.copy(x, y)
            z = R.builtin.alloc_tensor(R.shape([n]), R.dtype("float32"), R.prim_value(0))
            _1 = R.call_packed("ext", y, z, sinfo_args=R.Tuple())
            return z

        @R.function(private=True)
        def ext(x: R.Tensor(("m",), "float32")) -> R.Tensor(("m",), "float32"):
            R.func_attr({"Extern": 1})
            y = R.add(x, x)
            return y

        @T.prim_func(private=True)
        def copy(X: T.handle, Y: T.handle):
            n = T.int64()
            x = T.match_buffer(X, (n,), "float32")
            y = T.match_buffer(Y, (n,), "float32")
            for i in range(n):
                y[i] = x[i]

    out = rewrite(Before)
    assert_structural_equal(out, Expected)
    assert out["ext"] is Before["ext"]  # an Extern function's body is left alone


def test_call_lowered_of_unknown_dims_without_a_shape_function_is_an_error() -> None:
    @I.ir_module
    class Bad:
        @R.function
        def main(x: R.Tensor((4,), "float32")):
            cls = Bad
            y = R.call_lowered(cls.copy, (x,), out_sinfo=R.Tensor(ndim=1, dtype="float32"))
            return y

        @T.prim_func(private=True)
        def copy(X: T.Buffer((4,), "float32"), Y: T.Buffer((4,), "float32")):
            for i in range(4):
                Y[i] = X[i]

    with pytest.raises(PassError, match="output 'y' of relax.call_lowered has unknown dims"):
        CallTIRRewrite()(Bad)
