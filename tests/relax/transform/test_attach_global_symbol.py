"""AttachGlobalSymbol: private PrimFuncs are exported under their name; exported ones keep
theirs; two functions claiming one symbol is an error naming both."""

from __future__ import annotations

import pytest

from kiln import tir
from kiln.errors import PassError
from kiln.ir import GlobalVar, IRModule
from kiln.relax.transform import AttachGlobalSymbol


def kernel(symbol: str | None) -> tir.PrimFunc:
    attrs = {"global_symbol": symbol} if symbol else {}
    return tir.PrimFunc((), tir.Evaluate(0), attrs=attrs)


def test_private_prim_funcs_get_their_name() -> None:
    mod = IRModule({GlobalVar("add"): kernel(None), GlobalVar("mul"): kernel("my_mul")})
    out = AttachGlobalSymbol()(mod)
    assert out["add"].global_symbol == "add"
    assert out["mul"] is mod["mul"]
    assert AttachGlobalSymbol()(out) is out


def test_a_symbol_claimed_twice_is_an_error() -> None:
    mod = IRModule({GlobalVar("add"): kernel(None), GlobalVar("other"): kernel("add")})
    with pytest.raises(PassError, match="'add' and 'other' would both be exported as 'add'"):
        AttachGlobalSymbol()(mod)
