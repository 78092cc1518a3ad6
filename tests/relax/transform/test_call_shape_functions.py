"""CallShapeFunctions: a call_lowered of unknown result shape first calls its shape function
(arguments' shapes or values packed into int64 tensors by shape_tensor_<n>), its results become
fresh symbolic dims by match_cast, and the call_lowered gets those dims (and loses its shape
function attributes); calls without a shape function stay as they are."""

# ruff: noqa: F821, F841 - names in R scripts are script variables, not Python names

from __future__ import annotations

from typing import Any

import numpy as np

from kiln.errors import PassError
from kiln.ir.structural import assert_structural_equal
from kiln.relax import Call, ExternFunc, MatchCast
from kiln.relax.analysis import verify_module
from kiln.relax.struct_info import TensorStructInfo
from kiln.relax.transform import CallShapeFunctions, CallTIRRewrite, LowerTE
from kiln.script import ir as I
from kiln.script import relax as R
from kiln.tir import PrimFunc
from tests.relax.transform.lowered import build


def call_shape_functions(mod):
    out = CallShapeFunctions()(LowerTE("test")(mod))
    verify_module(out)
    return out


def steps(func: Any) -> list[tuple[str, str]]:
    """(variable, what it binds) for each binding of a function's body."""
    out = []
    for block in func.body.blocks:
        for b in block.bindings:
            v = b.value
            if isinstance(b, MatchCast):
                what = "match_cast"
            elif isinstance(v, Call) and isinstance(v.op, ExternFunc):
                what = v.op.global_symbol
            elif isinstance(v, Call) and getattr(v.op, "name", "") in ("relax.call_tir",):
                what = f"call_tir({v.args[0].name_hint})"
            elif isinstance(v, Call) and getattr(v.op, "name", "") == "relax.call_lowered":
                what = f"call_lowered({v.args[0].name_hint})"
            elif isinstance(v, Call):
                what = getattr(v.op, "name", type(v.op).__name__)
            else:
                what = type(v).__name__
            out.append((b.var.name_hint, what))
    return out


@I.ir_module
class Dynamic:
    @R.function(private=True)
    def dyn(x: R.Tensor(("n", 7), "float32")) -> R.Tensor(ndim=2, dtype="float32"):
        R.func_attr({"Primitive": 1})
        y = R.exp(x)
        return y

    @R.function
    def main(a: R.Tensor(("m", 7), "float32")) -> R.Tensor(ndim=2, dtype="float32"):
        cls = Dynamic
        b = cls.dyn(a)
        c = cls.dyn(b)
        return c


def test_the_shape_function_runs_first_and_its_results_become_dims() -> None:
    out = call_shape_functions(Dynamic)
    assert steps(out["main"]) == [
        ("b_in0", "call_tir(shape_tensor_2)"),  # a's shape (state 2) as an int64 tensor
        ("b_shape", "call_tir(shape_func_exp)"),  # the output's shape comes back here
        ("b_shape_of", "relax.call_pure_packed"),  # vm.builtin.tensor_to_shape
        ("b_dims", "match_cast"),  # fresh dims b_d0, b_d1 (VMShapeLower stores them)
        ("b", "call_lowered(test_fused_exp)"),
        ("c_in0", "call_tir(shape_tensor_2)"),  # b's dims are known now: b_d0, b_d1
        ("c_shape", "call_tir(shape_func_exp)"),
        ("c_shape_of", "relax.call_pure_packed"),
        ("c_dims", "match_cast"),
        ("c", "call_lowered(test_fused_exp)"),
    ]
    bindings = out["main"].body.blocks[0].bindings
    dims = bindings[3].struct_info.values
    assert [d.name for d in dims] == ["b_d0", "b_d1"]
    lowered = bindings[4].value
    assert lowered.sinfo_args[0].dims == dims
    assert "prim_shape_fn_var" not in lowered.attrs and "func_attrs" in lowered.attrs
    assert list(bindings[5].value.args[2].values) == list(dims)  # b packed from its new dims
    assert out["main"].ret_struct_info.ndim == 2


def test_shape_tensor_kernels_write_their_dims() -> None:
    out = call_shape_functions(Dynamic)
    packer = out["shape_tensor_2"]
    assert isinstance(packer, PrimFunc) and len(packer.params) == 3
    lib = build(out)
    t = np.zeros(2, "int64")
    lib["shape_tensor_2"](t, 5, 9)
    assert list(t) == [5, 9]


@I.ir_module
class Reshape:
    @R.function
    def ext_reshape(x: R.Tensor(("n",), "float32"), s: R.Shape(ndim=2)) -> R.Tensor(
        ndim=2, dtype="float32"
    ):
        R.func_attr({"Extern": 1})
        y = R.reshape(x, s)
        return y

    @R.function
    def main(x: R.Tensor(("n",), "float32"), s: R.Shape(ndim=2)):
        cls = Reshape
        y = cls.ext_reshape(x, s)
        return y


def test_a_shape_value_is_passed_as_its_data_after_getting_dims() -> None:
    out = call_shape_functions(Reshape)
    lowered = LowerTE("test")(Reshape)["main"].body.blocks[0].bindings[0].value
    assert list(lowered.attrs["prim_shape_fn_states"]) == [2, 1]
    assert steps(out["main"]) == [
        ("y_in0", "call_tir(shape_tensor_1)"),  # x's shape
        ("y_in1_cast", "match_cast"),  # s has no known values: fresh ones first
        ("y_in1", "call_tir(shape_tensor_2)"),  # s's values (state 1)
        ("y_shape", "call_tir(shape_func_reshape)"),
        ("y_shape_of", "relax.call_pure_packed"),
        ("y_dims", "match_cast"),
        ("y", "call_lowered(ext_reshape)"),
    ]
    assert out["ext_reshape"] is Reshape["ext_reshape"]


def test_calls_without_shape_function_are_unchanged_and_are_then_allocated() -> None:
    @I.ir_module
    class Static:
        @R.function
        def main(x: R.Tensor((4,), "float32")):
            with R.dataflow():
                y = R.exp(x)
                R.output(y)
            return y

    lowered = LowerTE("test")(Static)
    assert CallShapeFunctions()(lowered) is lowered
    with_fn = LowerTE("test")(Dynamic)
    try:
        CallTIRRewrite()(with_fn)
    except PassError as e:
        assert "run CallShapeFunctions first" in str(e)
    else:
        raise AssertionError("CallTIRRewrite allocated outputs of unknown dims")


def test_the_output_struct_info_keeps_its_dtype() -> None:
    out = call_shape_functions(Dynamic)
    call = out["main"].body.blocks[0].bindings[4].value
    assert isinstance(call.sinfo_args[0], TensorStructInfo)
    assert str(call.sinfo_args[0].dtype) == "float32"
    assert_structural_equal(call.args[0], out.get_global_var("test_fused_exp"))
