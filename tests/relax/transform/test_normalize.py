"""Normalize: hand-built IR gets struct info and A-normal form; normal IR is left alone."""

from __future__ import annotations

import pytest

from kiln import relax
from kiln.errors import IRValueError
from kiln.ir import GlobalVar, IRModule
from kiln.relax import op as R
from kiln.relax.analysis.well_formed import well_formed_errors
from kiln.relax.transform import Normalize


def test_hand_built_function_is_normalized() -> None:
    x = relax.Var("x", relax.TensorStructInfo([3], "float32"))
    body = relax.SeqExpr((), R.exp(R.add(x, x)))
    mod = IRModule({GlobalVar("main"): relax.Function([x], body)})
    assert well_formed_errors(mod) != []
    out = Normalize()(mod)
    f = out["main"]
    assert well_formed_errors(out) == []
    ops = [b.value.op.name for blk in f.body.blocks for b in blk.bindings]
    assert ops == ["relax.add", "relax.exp"]
    assert f.ret_struct_info.dims[0].value == 3
    assert Normalize()(out) is out


def test_shape_mistake_is_reported() -> None:
    x = relax.Var("x", relax.TensorStructInfo([3], "float32"))
    y = relax.Var("y", relax.TensorStructInfo([4], "float32"))
    mod = IRModule({GlobalVar("main"): relax.Function([x, y], R.add(x, y))})
    with pytest.raises(IRValueError, match="relax.add: operands do not broadcast: dim 3 vs 4"):
        Normalize()(mod)
