"""``from_source(text, partial=True)``: a printed module that calls functions it does not hold
(what ``KILN_DEBUG=2`` prints after a pass) parses; without the flag it is an error."""

from __future__ import annotations

import pytest

from kiln.errors import ScriptError
from kiln.ir.function import GlobalVar
from kiln.relax.expr import Call
from kiln.relax.struct_info import TensorStructInfo
from kiln.script import from_source

TEXT = """
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((4,), dtype="float32")) -> R.Tensor((4,), dtype="float32"):
        cls = Module
        y = R.call_tir(cls.kernel, (x,), out_sinfo=R.Tensor((4,), dtype="float32"))
        z: R.Tensor((4,), dtype="float32") = cls.helper(y)
        return z

    @T.prim_func
    def other(A: T.Buffer((4,), "float32")):
        T.evaluate(Module.kernel2(A.data))
"""


def test_a_module_calling_functions_it_lacks_needs_partial() -> None:
    with pytest.raises(ScriptError, match="has no function 'kernel'"):
        from_source(TEXT)


def test_partial_parse_keeps_outside_calls_as_global_vars() -> None:
    mod = from_source(TEXT, partial=True)
    assert sorted(gv.name_hint for gv in mod.functions) == ["main", "other"]
    z_binding = mod["main"].body.blocks[0].bindings[1]
    call = z_binding.value
    assert isinstance(call, Call) and isinstance(call.op, GlobalVar)
    assert call.op.name_hint == "helper"
    sinfo = z_binding.var.struct_info
    assert isinstance(sinfo, TensorStructInfo) and [d.value for d in sinfo.shape.values] == [4]
    # only a call of an outside function takes its annotation on trust
    opaque = "R.call_pure_packed('f', y, sinfo_args=R.Object)"
    with pytest.raises(ScriptError, match="cannot be proven to fit"):
        from_source(TEXT.replace("cls.helper(y)", opaque), partial=True)
