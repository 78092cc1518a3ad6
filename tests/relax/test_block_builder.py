"""BlockBuilder: functions, dataflow blocks, outputs, match_cast, A-normal form, call_te and
emit_te (run through kiln.build), and mistakes reported at emit naming the operator."""

from __future__ import annotations

import numpy as np
import pytest

from kiln import relax, te, tir, topi
from kiln.errors import IRError, IRValueError
from kiln.relax import op as R
from kiln.tir import PrimFunc
from tests.relax.executor import run


def tensor(shape, dtype="float32"):
    return relax.TensorStructInfo(shape, dtype)


def bindings(func: relax.Function) -> list:
    return [b for block in func.body.blocks for b in block.bindings]


def test_function_with_a_dataflow_block() -> None:
    n = tir.Var("n", "int64")
    x, y = relax.Var("x", tensor([n, 4])), relax.Var("y", tensor([4]))
    bb = relax.BlockBuilder()
    with bb.function("main", [x, y]):
        with bb.dataflow():
            lv = bb.emit(R.add(x, y))
            gv = bb.emit_output(R.nn.relu(lv))
        bb.emit_func_output(gv)
    mod = bb.get()
    f = mod["main"]
    assert f.global_symbol == "main" and f.is_pure
    (block,) = f.body.blocks
    assert isinstance(block, relax.DataflowBlock)
    assert isinstance(lv, relax.DataflowVar) and type(gv) is relax.Var
    assert f.body.body is gv and f.ret_struct_info.dims[0] is n


def test_nested_calls_are_bound_in_order() -> None:
    x = relax.Var("x", tensor([3]))
    bb = relax.BlockBuilder()
    with bb.function("f", [x], private=True):
        out = bb.emit(R.exp(R.add(R.negative(x), x)))
        bb.emit_func_output(out)
    f = bb.get()["f"]
    ops = [b.value.op.name for b in bindings(f)]
    assert ops == ["relax.negative", "relax.add", "relax.exp"]
    assert f.global_symbol is None
    assert bb.normalize(f) is f


def test_params_given_at_the_end_and_tuple_output() -> None:
    x = relax.Var("x", tensor([2]))
    bb = relax.BlockBuilder()
    with bb.function("f"):
        a = bb.emit(R.exp(x))
        gv = bb.emit_func_output([a, x], params=[x])
    f = bb.get()[gv]
    assert isinstance(f.ret_struct_info, relax.TupleStructInfo)
    assert bb.lookup_binding(a).op.name == "relax.exp"


def test_match_cast_defines_symbolic_vars() -> None:
    x = relax.Var("x", relax.TensorStructInfo(None, "float32", ndim=2))
    m, k = tir.Var("m", "int64"), tir.Var("k", "int64")
    bb = relax.BlockBuilder()
    with bb.function("f", [x]):
        y = bb.match_cast(x, tensor([m, k]))
        z = bb.emit(R.sum(y, axis=0))
        bb.emit_func_output(z)
    f = bb.get()["f"]
    assert isinstance(bindings(f)[0], relax.MatchCast)
    assert z.struct_info.dims[0] is k
    assert f.ret_struct_info.shape is None and f.ret_struct_info.ndim == 1


def test_mistakes_are_reported_at_emit_naming_op_and_operands() -> None:
    x, y = relax.Var("x", tensor([2, 3])), relax.Var("y", tensor([4]))
    bb = relax.BlockBuilder()
    with pytest.raises(IRValueError) as info:
        with bb.function("f", [x, y]):
            bb.emit(R.add(x, y))
    msg = str(info.value)
    assert "relax.add" in msg and "x (R.Tensor((2, 3)" in msg and "y (R.Tensor((4,)" in msg
    bb = relax.BlockBuilder()
    with pytest.raises(IRError, match="emit_output is only allowed inside a dataflow block"):
        with bb.function("f", [x]):
            bb.emit_output(x)
    bb = relax.BlockBuilder()
    with pytest.raises(IRError, match="inside a dataflow block"):
        with bb.function("f", [x]):
            with bb.dataflow():
                bb.emit_func_output(x)


def test_call_te_makes_a_private_prim_func_and_a_call_tir() -> None:
    n = tir.Var("n", "int64")
    x, y = relax.Var("x", tensor([n, 8])), relax.Var("y", tensor([8]))
    bb = relax.BlockBuilder()
    with bb.function("main", [x, y]):
        with bb.dataflow():
            a = bb.emit_te(topi.add, x, y)
            b = bb.emit_te(topi.add, a, y)
            c = bb.emit_te(lambda t: te.compute(t.shape, lambda i, j: t[i, j] * 2), b)
            out = bb.emit_output(c)
        bb.emit_func_output(out)
    mod = bb.get()
    prims = [gv.name_hint for gv, f in mod.items() if isinstance(f, PrimFunc)]
    assert prims == ["add", "lambda"], prims  # the second add reuses the first PrimFunc
    assert all(mod[p].global_symbol is None for p in prims)
    call = bindings(mod["main"])[0].value
    assert call.op.name == "relax.call_tir" and call.args[0].name_hint == "add"
    assert call.sinfo_args[0].dims[0] is n
    xv = np.random.default_rng(0).standard_normal((5, 8)).astype("float32")
    yv = np.arange(8, dtype="float32")
    np.testing.assert_allclose(run(mod, "main", xv, yv), (xv + 2 * yv) * 2, rtol=1e-6)


def test_call_te_passes_symbols_no_input_binds_as_tir_vars() -> None:
    n = tir.Var("n", "int64")
    x = relax.Var("x", relax.ShapeStructInfo([n]))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        out = bb.emit_te(lambda s: topi.full(s, 3.0, "float32"), relax.ShapeExpr([n, 2]))
        bb.emit_func_output(out)
    mod = bb.get()
    call = bindings(mod["main"])[0].value
    assert len(call.args) == 3 and call.args[2].values[0] is n
    prim = mod[call.args[0]]
    assert prim.params[-1] is n
