"""RenameSymbolicDims: a symbolic dim gets its new name everywhere (signature, shapes, prim
values, struct info), stays one var, and the module computes what it did."""

# ruff: noqa: F841 - names in R scripts are script variables, not Python locals

from __future__ import annotations

import numpy as np
import pytest

import kiln
from kiln.errors import PassError
from kiln.ir import assert_structural_equal
from kiln.ir.visitor import distinct_nodes
from kiln.relax.analysis.well_formed import verify_module
from kiln.relax.transform import RenameSymbolicDims
from kiln.script import ir as I
from kiln.script import relax as R
from kiln.script import tir as T
from kiln.tir.expr import Var as TirVar


@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("s0", "s1"), "float32")):
        s0 = T.int64(is_size_var=True)
        s1 = T.int64(is_size_var=True)
        with R.dataflow():
            a = R.arange(R.prim_value(0), R.prim_value(s1), R.prim_value(1), dtype="int64")
            b = R.reshape(x, R.shape([s0 * s1]))
            c = R.reshape(b, R.shape([s0, s1]))
            y = R.add(c, R.astype(a, "float32"))
            R.output(y)
        return y


def _vars(mod: object) -> dict[str, set[int]]:
    """tir var name -> the ids of the var objects with that name."""
    out: dict[str, set[int]] = {}
    for n in distinct_nodes(mod["main"]):  # type: ignore[index]
        if isinstance(n, TirVar):
            out.setdefault(n.name, set()).add(id(n))
    return out


def test_a_renamed_dim_is_one_var_with_the_new_name_everywhere() -> None:
    after = RenameSymbolicDims((("s0", "batch"), ("s1", "seq")))(Module)
    verify_module(after)
    assert_structural_equal(after, Module)  # names aside, the same module
    names = _vars(after)
    assert "s0" not in names and "s1" not in names
    assert len(names["batch"]) == 1 and len(names["seq"]) == 1, names
    assert 'R.Tensor(("batch", "seq"), dtype="float32")' in after.script()
    x = np.random.default_rng(0).standard_normal((3, 5)).astype("float32")
    got = kiln.compile(after)(x).numpy()
    np.testing.assert_allclose(got, x + np.arange(5, dtype="float32"), rtol=1e-6)


def test_nothing_to_rename_returns_the_same_module() -> None:
    assert RenameSymbolicDims((("n", "batch"),))(Module) is Module
    assert RenameSymbolicDims()(Module) is Module


def test_a_new_name_another_var_has_is_an_error() -> None:
    with pytest.raises(PassError, match="cannot rename symbolic dim 's0' of 'main' to 's1'"):
        RenameSymbolicDims((("s0", "s1"),))(Module)
