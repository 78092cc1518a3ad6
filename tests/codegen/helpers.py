"""Small builders for hand-written TIR in codegen tests (no script dialect needed)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import kiln
from kiln import tir
from kiln.ir import GlobalVar, IRModule
from kiln.runtime import Module

ArgSpec = tuple[tuple[Any, ...], str] | str
"""A tensor argument ``(shape, dtype)`` or a scalar argument ``dtype``."""


def prim_func(
    symbol: str | None,
    args: Mapping[str, ArgSpec],
    body: Callable[..., tir.Stmt | tir.PrimExpr],
    ret: str | None = None,
) -> tir.PrimFunc:
    """A PrimFunc whose ``body(**named)`` gets a Buffer per tensor argument, a Var per scalar."""
    params, bmap, named = [], {}, {}
    for name, spec in args.items():
        if isinstance(spec, str):
            v = tir.Var(name, spec)
            params.append(v)
            named[name] = v
        else:
            shape, dtype = spec
            h = tir.Var(name, "handle")
            buf = tir.decl_buffer(shape, dtype, name)
            params.append(h)
            bmap[h] = buf
            named[name] = buf
    attrs = {"global_symbol": symbol} if symbol else {}
    ret_type = tir.PrimType(ret) if ret else tir.VOID
    stmt = body(**named)
    return tir.PrimFunc(tuple(params), stmt, ret_type, buffer_map=bmap, attrs=attrs)


def loop(
    extent: Any,
    body: Callable[[tir.Var], tir.Stmt | tir.PrimExpr],
    kind: tir.ForKind = tir.ForKind.SERIAL,
    name: str = "i",
    dtype: str = "int32",
) -> tir.For:
    """``for name in range(extent): body(name)``."""
    v = tir.Var(name, dtype)
    return tir.For(v, tir.const(0, dtype), tir.convert(extent, dtype), kind, body(v))


def f32(x: float) -> tir.PrimExpr:
    return tir.const(float(x), "float32")


def module(**funcs: tir.PrimFunc) -> IRModule:
    return IRModule({GlobalVar(name): f for name, f in funcs.items()})


def build(obj: IRModule | tir.PrimFunc, **kwargs: Any) -> Module:
    return kiln.build(obj, **kwargs)
