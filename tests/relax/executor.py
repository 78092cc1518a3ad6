"""A test-only evaluator of legalized relax functions (until kiln has a VM): bindings of
``call_tir`` run the compiled PrimFunc on numpy arrays; tuples, indexing and aliases are
evaluated in Python. Symbolic dims are bound from the arguments' shapes."""

from __future__ import annotations

from typing import Any

import numpy as np

import kiln
from kiln import relax
from kiln.arith import simplify
from kiln.ir import GlobalVar, IRModule
from kiln.tir import PrimFunc
from kiln.tir.functor import substitute


def build_prim_funcs(mod: IRModule) -> Any:
    """Compile every PrimFunc of ``mod`` (each exposed under its own name)."""
    funcs = {
        GlobalVar(gv.name_hint): f.with_attr("global_symbol", gv.name_hint)
        for gv, f in mod.items()
        if isinstance(f, PrimFunc)
    }
    return kiln.build(IRModule(funcs), target="c")


def run(mod: IRModule, name: str, *args: np.ndarray, lib: Any = None) -> Any:
    """Evaluate relax function ``name`` of a legalized ``mod`` on numpy arrays."""
    lib = lib or build_prim_funcs(mod)
    func = mod[name]
    env: dict[int, Any] = {}
    dims: dict[Any, int] = {}
    for p, a in zip(func.params, args):
        env[id(p)] = a
        _bind_dims(p.struct_info, a, dims)
    for block in func.body.blocks:
        for b in block.bindings:
            env[id(b.var)] = _eval(b.value, env, dims, lib)
    return _eval(func.body.body, env, dims, lib)


def _bind_dims(sinfo: Any, value: Any, dims: dict[Any, int]) -> None:
    if isinstance(sinfo, relax.TensorStructInfo) and sinfo.dims is not None:
        for d, n in zip(sinfo.dims, value.shape):
            if isinstance(d, kiln.tir.Var):
                dims.setdefault(d, n)


def _concrete(sinfo: Any, dims: dict[Any, int]) -> np.ndarray:
    shape = tuple(int(simplify(substitute(d, dims)).value) for d in sinfo.dims)
    return np.zeros(shape, dtype="bool" if sinfo.dtype.is_bool else str(sinfo.dtype))


def _eval(e: Any, env: dict[int, Any], dims: dict[Any, int], lib: Any) -> Any:
    if isinstance(e, relax.Var):
        return env[id(e)]
    if isinstance(e, relax.Constant):
        return e.data
    if isinstance(e, relax.Tuple):
        return tuple(_eval(f, env, dims, lib) for f in e.fields)
    if isinstance(e, relax.TupleGetItem):
        return _eval(e.tuple_value, env, dims, lib)[e.index]
    if isinstance(e, relax.Call) and getattr(e.op, "name", "") == "relax.call_tir":
        ins = [_eval(a, env, dims, lib) for a in e.args[1].fields]
        out_sinfo = e.sinfo_args[0]
        fields = out_sinfo.fields if isinstance(out_sinfo, relax.TupleStructInfo) else [out_sinfo]
        outs = [_concrete(f, dims) for f in fields]
        extra = []
        if len(e.args) > 2:
            extra = [int(simplify(substitute(v, dims)).value) for v in e.args[2].values]
        lib[e.args[0].name_hint](*ins, *outs, *extra)
        return tuple(outs) if isinstance(out_sinfo, relax.TupleStructInfo) else outs[0]
    raise NotImplementedError(f"the test executor cannot evaluate {type(e).__name__}")
