"""Graph-level expressions: construction, derived struct info, accessors and structural
comparison."""

from __future__ import annotations

import numpy as np
import pytest

from kiln import relax, tir
from kiln.errors import IRError
from kiln.ir import GlobalVar, IRModule, assert_structural_equal, structural_equal, structural_hash
from kiln.relax import op as R


def tensor(shape, dtype="float32"):
    return relax.TensorStructInfo(shape, dtype)


def test_var_kinds_and_struct_info_accessor() -> None:
    x = relax.Var("x", tensor([2, 3]))
    d = relax.DataflowVar("d", tensor([2, 3]))
    assert isinstance(d, relax.Var) and x.name_hint == "x"
    assert x.struct_info.ndim == 2 and x.struct_info.dtype == "float32"
    call = R.add(x, x)
    with pytest.raises(IRError, match="no struct info yet"):
        _ = call.struct_info


def test_constant_is_numpy_backed() -> None:
    c = relax.const([[1, 2], [3, 4]])
    assert c.data.dtype == np.int64 and c.struct_info.dims[1].value == 2
    f = relax.const(1.5)
    assert f.dtype == "float32" and f.struct_info.ndim == 0
    b = relax.const([True, False], "bool")
    assert b.struct_info.dtype == "bool"
    assert structural_equal(relax.const([np.nan, 1.0]), relax.const([np.nan, 1.0]))
    assert not structural_equal(relax.const([1.0, 2.0]), relax.const([1.0, 3.0]))
    assert structural_hash(relax.const([1, 2])) == structural_hash(relax.const([1, 2]))


def test_shape_expr_and_prim_value() -> None:
    n = tir.Var("n", "int64")
    s = relax.ShapeExpr([n, 4])
    assert s[0] is n and s[1].dtype == "int64" and len(s) == 2
    assert s.struct_info.values[1].value == 4
    with pytest.raises(IRError, match="int64"):
        relax.ShapeExpr([tir.Var("m", "int32")])
    p = relax.PrimValue(3)
    assert p.value.dtype == "int64" and p.struct_info.value.value == 3


def test_tuple_struct_info_and_indexing() -> None:
    x = relax.Var("x", tensor([2]))
    y = relax.Var("y", relax.ShapeStructInfo([1, 2]))
    t = relax.Tuple([x, y])
    assert isinstance(t.struct_info, relax.TupleStructInfo)
    item = t[1]
    assert isinstance(item, relax.TupleGetItem) and item.index == 1
    bb = relax.BlockBuilder()
    assert bb.normalize(item).struct_info is y.struct_info


def test_call_attrs_read_as_attributes() -> None:
    x = relax.Var("x", tensor([2, 3]))
    c = R.sum(x, axis=1, keepdims=True)
    assert c.attrs.axis == (1,) and c.attrs["keepdims"] is True
    assert c.op.name == "relax.sum"


def test_functions_live_beside_prim_funcs_and_compare_structurally() -> None:
    def make(names: tuple[str, str]):
        n = tir.Var(names[0], "int64")
        x = relax.Var(names[1], tensor([n, 4]))
        bb = relax.BlockBuilder()
        with bb.function("main", [x]):
            y = bb.emit(R.nn.relu(x))
            bb.emit_func_output(y)
        return bb.get()

    a, b = make(("n", "x")), make(("m", "inp"))
    assert_structural_equal(a, b)
    assert structural_hash(a) == structural_hash(b)
    prim = tir.PrimFunc((), tir.Evaluate(0))
    mod = a.update(GlobalVar("helper"), prim)
    assert isinstance(mod, IRModule) and len(mod) == 2
    f = a["main"]
    assert isinstance(f.struct_info, relax.FuncStructInfo)
    assert f.ret_struct_info.dims[0] is f.params[0].struct_info.dims[0]


def test_structural_mismatch_is_reported() -> None:
    x = relax.Var("x", tensor([2, 3]))
    y = relax.Var("x", tensor([2, 4]))
    assert not structural_equal(x, y, map_free_vars=True)
    df = relax.DataflowVar("x", tensor([2, 3]))
    assert not structural_equal(x, df, map_free_vars=True)


def test_bad_construction_is_an_error() -> None:
    with pytest.raises(IRError, match="relax expression"):
        relax.Call(R.add(relax.const(1), relax.const(2)).op, (1,))
    with pytest.raises(IRError, match="needs struct info"):
        relax.Function([relax.Var("x")], relax.const(1))
