"""HoistDimsOnly: values computed from dims and constants only (a mask over ``seq``, position
ids) move to ``<name>_dims_only``, which the VM runs once per distinct dims
(``vm.builtin.call_memoized``); results stay right when the dims change, in both VM modes."""

# ruff: noqa: F841 - names in R scripts are script variables, not Python locals

from __future__ import annotations

import numpy as np
import pytest

import kiln
from kiln.relax.analysis.well_formed import verify_module
from kiln.relax.transform import HoistDimsOnly
from kiln.script import ir as I
from kiln.script import relax as R
from kiln.script import tir as T


@I.ir_module
class Masked:
    @R.function
    def main(x: R.Tensor(("batch", "seq"), "float32")):
        batch = T.int64(is_size_var=True)
        seq = T.int64(is_size_var=True)
        with R.dataflow():
            a = R.arange(R.prim_value(0), R.prim_value(seq), R.prim_value(1), dtype="int64")
            b = R.expand_dims(a, axis=[0])
            c = R.broadcast_to(b, R.shape([batch, seq]))
            d = R.astype(c, "float32")
            e = R.multiply(d, R.const(0.5, "float32"))
            y = R.add(x, e)
            R.output(y)
        return y


def expected(x: np.ndarray) -> np.ndarray:
    return x + np.arange(x.shape[1], dtype="float32") * 0.5


def test_the_dims_only_values_move_to_a_function_called_through_the_memo() -> None:
    mod = HoistDimsOnly()(Masked)
    verify_module(mod)
    names = {gv.name_hint for gv in mod.functions}
    assert "main_dims_only" in names
    main = mod["main"]
    ops = [
        getattr(getattr(b.value, "op", None), "name", None)
        or getattr(getattr(b.value, "op", None), "global_symbol", None)
        for block in main.body.blocks
        for b in block.bindings
    ]
    assert "vm.builtin.call_memoized" in ops
    assert "relax.arange" not in ops and ops.count("relax.add") == 1
    dims = mod["main_dims_only"].params[0].struct_info_.values
    assert [v.name for v in dims] == ["seq", "batch"]


@pytest.mark.parametrize("exec_mode", ["compiled", "bytecode"])
def test_results_follow_the_dims_across_calls(exec_mode: str) -> None:
    model = kiln.compile(Masked, exec_mode=exec_mode)
    rng = np.random.default_rng(0)
    for shape in [(2, 5), (3, 7), (2, 5), (1, 1), (3, 7)]:
        x = rng.standard_normal(shape).astype("float32")
        np.testing.assert_allclose(model(x).numpy(), expected(x), rtol=1e-6, atol=1e-6)


def test_a_returned_dims_only_value_stays() -> None:
    @I.ir_module
    class Returns:
        @R.function
        def main(x: R.Tensor(("n",), "float32")):
            n = T.int64(is_size_var=True)
            with R.dataflow():
                a = R.arange(R.prim_value(0), R.prim_value(n), R.prim_value(1), dtype="int64")
                y = R.astype(a, "float32")
                R.output(y)
            return y  # the caller owns what it gets: a remembered tensor must not escape

    assert HoistDimsOnly()(Returns) is Returns
    model = kiln.compile(Returns)
    got = model(np.zeros(4, "float32")).numpy()
    got[0] = 42.0  # writing the result must not change the next call's
    np.testing.assert_array_equal(model(np.zeros(4, "float32")).numpy(), np.arange(4))
