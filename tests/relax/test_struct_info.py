"""Struct info: the kinds of shape knowledge, fitting values to annotations (symbolic vars
bound on first use), joins for If branches and erasure of out-of-scope dims."""

from __future__ import annotations

import pytest

from kiln import relax, tir
from kiln.errors import IRError
from kiln.relax.analysis import (
    Fit,
    check_fits,
    erase_to_well_defined,
    is_base_of,
    struct_info_lca,
)

T = relax.TensorStructInfo


def test_tensor_shape_kinds() -> None:
    n = tir.Var("n", "int64")
    known = T([n, 4], "float32")
    assert known.ndim == 2 and known.dtype == "float32"
    assert isinstance(known.shape, relax.ShapeExpr) and known.shape[0] is n
    rank = T(None, "float16", ndim=3)
    assert rank.shape is None and rank.ndim == 3
    unknown = T(None, None)
    assert unknown.ndim == -1 and unknown.dtype.is_void
    with pytest.raises(IRError, match="ndim 3 does not match"):
        T([1, 2], "float32", ndim=3)
    with pytest.raises(IRError, match="int64"):
        T([tir.Var("k", "int32")], "float32")


def test_fits_pass_unknown_fail() -> None:
    n = tir.Var("n", "int64")
    assert check_fits(T([2, 3], "float32"), T([2, 3], "float32")) is Fit.PASS
    assert check_fits(T(None, "float32", ndim=2), T([2, 3], "float32")) is Fit.PASS
    assert check_fits(T([2, 3], "float32"), T(None, "float32", ndim=2)) is Fit.UNKNOWN
    assert check_fits(T([2, 3], "float32"), T([n, 3], "float32")) is Fit.UNKNOWN
    assert check_fits(T([2, 3], "float32"), T([2, 4], "float32")) is Fit.FAIL
    assert check_fits(T([2, 3], "int32"), T([2, 3], "float32")) is Fit.FAIL
    assert check_fits(relax.ObjectStructInfo(), relax.ShapeStructInfo([1])) is Fit.PASS
    assert check_fits(relax.ShapeStructInfo(ndim=1), T([1], "float32")) is Fit.FAIL
    assert is_base_of(T(None, None), T([n], "int8"))


def test_symbolic_vars_bind_on_first_use() -> None:
    n, m = tir.Var("n", "int64"), tir.Var("m", "int64")
    binds = {n: None}
    pattern = T([n, n * 2], "float32")
    assert check_fits(pattern, T([m, m * 2], "float32"), binds) is Fit.PASS
    assert binds[n] is m
    binds = {n: None}
    assert check_fits(pattern, T([3, 7], "float32"), binds) is Fit.FAIL


def test_tuple_prim_and_function_fits() -> None:
    a = relax.TupleStructInfo([T([2], "float32"), relax.PrimStructInfo("int64")])
    b = relax.TupleStructInfo([T([2], "float32"), relax.PrimStructInfo(value=3)])
    assert check_fits(a, b) is Fit.PASS
    assert check_fits(b, a) is Fit.UNKNOWN
    f = relax.FuncStructInfo([T([2], "float32")], T([2], "float32"))
    impure = relax.FuncStructInfo([T([2], "float32")], T([2], "float32"), purity=False)
    assert check_fits(f, impure) is Fit.FAIL
    assert check_fits(relax.FuncStructInfo.opaque_func(), f) is Fit.PASS


def test_join_for_if_branches() -> None:
    a, b = T([2, 3], "float32"), T([4, 3], "float32")
    j = struct_info_lca(a, b)
    assert j.shape is None and j.ndim == 2 and j.dtype == "float32"
    j = struct_info_lca(T([2], "float32"), T([2, 2], "int32"))
    assert j.ndim == -1 and j.dtype.is_void
    assert struct_info_lca(a, T([2, 3], "float32")) is a
    assert isinstance(struct_info_lca(a, relax.ShapeStructInfo([1])), relax.ObjectStructInfo)
    t = struct_info_lca(relax.TupleStructInfo([a]), relax.TupleStructInfo([b]))
    assert t.fields[0].ndim == 2


def test_erase_out_of_scope_dims() -> None:
    n, m = tir.Var("n", "int64"), tir.Var("m", "int64")
    s = relax.TupleStructInfo([T([n, m], "float32"), relax.ShapeStructInfo([n])])
    out = erase_to_well_defined(s, lambda v: v is n)
    assert out.fields[0].shape is None and out.fields[0].ndim == 2
    assert out.fields[1] is s.fields[1]
