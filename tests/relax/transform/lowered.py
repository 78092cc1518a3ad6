"""A test-only reference runner of lowered graph functions (LowerTE's output, before the VM
passes): the module's PrimFuncs (lowered kernels and shape functions) and its external C
(``external_mods``) are built into one library, and the graph function's bindings are evaluated
in order on numpy arrays: a ``call_lowered`` runs its shape function first when it has one,
allocates the outputs and calls the callee with inputs, outputs, then its ``tir_vars`` -- what
the VM does after CallTIRRewrite (tests/vm runs the same modules through kiln.relax.build)."""

from __future__ import annotations

from typing import Any

import numpy as np
import tvm_ffi

from kiln import relax
from kiln.arith import simplify
from kiln.codegen.build import generate_c
from kiln.driver.build import lower
from kiln.ir import GlobalVar, IRModule, Target
from kiln.relax.backend import EXTERNAL_MODS, linked_source
from kiln.runtime import build_module
from kiln.runtime.toolchain import DEFAULT_FLAGS
from kiln.tir import PrimFunc
from kiln.tir.functor import substitute


def build(mod: IRModule) -> Any:
    """One library: every PrimFunc of ``mod`` exposed under its name, plus the external C."""
    funcs = {
        GlobalVar(gv.name_hint): f.with_attr("global_symbol", gv.name_hint).without_attr("target")
        for gv, f in mod.items()
        if isinstance(f, PrimFunc)
    }
    gen = generate_c(lower(IRModule(funcs), "c"), Target("c"))
    externals = list(mod.get_attr(EXTERNAL_MODS, ()))
    source, flags = linked_source(gen.source, externals)
    lib = build_module(source, flags=(*DEFAULT_FLAGS, *flags), name_hint="lowered")
    return tvm_ffi.load_module(str(lib.path))


def run(mod: IRModule, name: str, *args: np.ndarray, lib: Any = None) -> Any:
    """Evaluate graph function ``name`` of a lowered ``mod`` on numpy arrays."""
    lib = lib or build(mod)
    func = mod[name]
    env: dict[int, Any] = {}
    dims: dict[Any, int] = {}
    for p, a in zip(func.params, args):
        env[id(p)] = a
        sinfo = p.struct_info
        if isinstance(sinfo, relax.TensorStructInfo) and sinfo.dims is not None:
            for d, n in zip(sinfo.dims, a.shape):
                dims.setdefault(d, n)
    for block in func.body.blocks:
        for b in block.bindings:
            env[id(b.var)] = _eval(b.value, env, dims, lib)
    return _eval(func.body.body, env, dims, lib)


def _shape(dims_: Any, dims: dict[Any, int]) -> tuple[int, ...]:
    return tuple(int(simplify(substitute(d, dims)).value) for d in dims_)


def _outputs(call: relax.Call, ins: list[Any], dims: dict[Any, int], lib: Any) -> list[Any]:
    sinfo = call.sinfo_args[0]
    fields = sinfo.fields if isinstance(sinfo, relax.TupleStructInfo) else [sinfo]
    shape_fn = call.attrs.get("prim_shape_fn_var")
    if shape_fn is None:
        shapes = [_shape(f.dims, dims) for f in fields]
    else:
        states = call.attrs["prim_shape_fn_states"]
        sargs = [np.array(x.shape if s == 2 else x, "int64") for x, s in zip(ins, states)]
        souts = [np.zeros(f.ndim, "int64") for f in fields]
        lib[shape_fn.name_hint](*sargs, *souts)
        shapes = [tuple(int(v) for v in s) for s in souts]
    return [np.zeros(s, dtype=str(f.dtype)) for s, f in zip(shapes, fields)]


def _eval(e: Any, env: dict[int, Any], dims: dict[Any, int], lib: Any) -> Any:
    if isinstance(e, relax.Var):
        return env[id(e)]
    if isinstance(e, relax.Constant):
        return e.data
    if isinstance(e, relax.Tuple):
        return tuple(_eval(f, env, dims, lib) for f in e.fields)
    if isinstance(e, relax.TupleGetItem):
        return _eval(e.tuple_value, env, dims, lib)[e.index]
    if isinstance(e, relax.Call) and getattr(e.op, "name", "") == "relax.call_lowered":
        ins = [np.ascontiguousarray(_eval(a, env, dims, lib)) for a in e.args[1].fields]
        outs = _outputs(e, ins, dims, lib)
        extra = _shape(e.args[2].values, dims) if len(e.args) == 3 else ()  # tir_vars
        lib[e.args[0].name_hint](*ins, *outs, *extra)
        return tuple(outs) if isinstance(e.sinfo_args[0], relax.TupleStructInfo) else outs[0]
    raise NotImplementedError(f"the test runner cannot evaluate {type(e).__name__}")
