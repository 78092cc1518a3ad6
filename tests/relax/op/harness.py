"""Run graph-level operators against numpy: build one relax function per case, legalize it to
``call_tir`` of TE PrimFuncs, compile every PrimFunc of a batch as one library, run each with
numpy arrays (symbolic dims bound from the inputs' shapes) and compare with the reference."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest

import kiln
from kiln import relax, tir
from kiln.arith import simplify
from kiln.errors import KilnError
from kiln.ir import GlobalVar, IRModule
from kiln.relax.transform import LegalizeOps
from kiln.tir.functor import substitute


@dataclass
class Case:
    """One operator check: ``build(*vars)`` makes the call, ``ref(*arrays)`` the expected value.

    ``sym`` lists, per input, the axes that become symbolic in the symbolic run (default: axis
    0 of every input of the highest rank); equal extents share one variable.
    """

    op: str
    build: Callable[..., Any]
    inputs: Sequence[np.ndarray]
    ref: Callable[..., Any]
    sym: Sequence[Sequence[int]] | None = None
    rtol: float = 1e-5
    atol: float = 1e-6
    name: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


def _params(case: Case, symbolic: bool) -> tuple[list[relax.Var], dict[int, tir.Var]]:
    made: dict[int, tir.Var] = {}
    params = []
    top = max(a.ndim for a in case.inputs)
    for k, arr in enumerate(case.inputs):
        default = [0] if arr.ndim == top and arr.ndim else []
        axes = (case.sym[k] if case.sym is not None else default) if symbolic else []
        dims: list[Any] = []
        for d, ext in enumerate(arr.shape):
            if d in axes:
                v = made.setdefault(ext, tir.Var(f"n{ext}", "int64"))
                dims.append(v)
            else:
                dims.append(ext)
        dtype = "bool" if arr.dtype == np.bool_ else str(arr.dtype)
        params.append(relax.Var(f"x{k}", relax.TensorStructInfo(dims, dtype)))
    return params, made


@dataclass
class Built:
    case: Case
    gv: GlobalVar
    out_sinfo: Any
    tir_vars: Sequence[Any]
    values: dict[Any, int]
    args: list[np.ndarray]


def _legalized(case: Case, symbolic: bool, index: int) -> tuple[IRModule, Built]:
    params, made = _params(case, symbolic)
    bb = relax.BlockBuilder()
    with bb.function("main", params):
        out = bb.emit(case.build(*params))
        bb.emit_func_output(out)
    mod = LegalizeOps()(bb.get())
    binding = mod["main"].body.blocks[-1].bindings[-1]
    call = binding.value
    assert call.op.name == "relax.call_tir", f"{case.op}: not legalized: {call.op}"
    tvars = call.args[2].values if len(call.args) == 3 else ()
    values = {v: ext for ext, v in made.items()}
    args = []
    for a in call.args[1].fields:
        args.append(a.data if isinstance(a, relax.Constant) else case.inputs[params.index(a)])
    return mod, Built(case, call.args[0], call.sinfo_args[0], tvars, values, args)


def _concrete(sinfo: Any, values: dict[Any, int]) -> list[tuple[tuple[int, ...], str]]:
    fields = sinfo.fields if isinstance(sinfo, relax.TupleStructInfo) else (sinfo,)
    out = []
    for f in fields:
        dims = tuple(int(simplify(substitute(d, values)).value) for d in f.dims)
        out.append((dims, "bool" if f.dtype.is_bool else str(f.dtype)))
    return out


def run_cases(cases: Sequence[Case], symbolic: bool) -> None:
    """Legalize, build (one library) and check every case."""
    funcs: dict[str, Any] = {}
    built: list[Built] = []
    for i, case in enumerate(cases):
        try:
            mod, b = _legalized(case, symbolic, i)
        except Exception as e:
            raise AssertionError(f"{case.op} {case.name}: {type(e).__name__}: {e}") from e
        name = f"f{i}_{b.gv.name_hint}"
        funcs[name] = mod[b.gv].with_attr("global_symbol", name)
        b.gv = GlobalVar(name)
        built.append(b)
    lib = kiln.build(IRModule(funcs), target="c")
    for b in built:
        case = b.case
        outs = [np.zeros(s, dtype=d) for s, d in _concrete(b.out_sinfo, b.values)]
        extra = [int(simplify(substitute(v, b.values)).value) for v in b.tir_vars]
        lib[b.gv.name_hint](*b.args, *outs, *extra)
        want = case.ref(*case.inputs)
        wants = list(want) if isinstance(want, (list, tuple)) else [want]
        assert len(wants) == len(outs), (
            f"{case.op}: {len(outs)} outputs, reference has {len(wants)}"
        )
        for got, exp in zip(outs, wants):
            exp = np.asarray(exp)
            label = f"{case.op} {case.name} ({'symbolic' if symbolic else 'fixed'})"
            assert got.shape == exp.shape, f"{label}: shape {got.shape} vs {exp.shape}"
            if got.dtype.kind in "fc":
                np.testing.assert_allclose(got, exp, rtol=case.rtol, atol=case.atol, err_msg=label)
            else:
                np.testing.assert_array_equal(got, exp.astype(got.dtype), err_msg=label)


def cases_module(cases: Sequence[Case]) -> IRModule:
    """One relax function computing every case on its own inputs (parameters ``c<i>_<k>``),
    the results as a tuple: the cases through the whole pipeline (`kiln.compile`), where the
    op tests above stop at the legalized kernels."""
    params = [
        [relax.Var(f"c{i}_{k}", relax.TensorStructInfo(a.shape, str(a.dtype))) for k, a in
         enumerate(case.inputs)]
        for i, case in enumerate(cases)
    ]  # fmt: skip
    bb = relax.BlockBuilder()
    with bb.function("main", [p for ps in params for p in ps]):
        with bb.dataflow():
            outs = [bb.emit(case.build(*ps)) for case, ps in zip(cases, params)]
            out = bb.emit_output(relax.Tuple(outs))
        bb.emit_func_output(out)
    return bb.get()


def assert_emit_fails(build: Callable[..., Any], params: Sequence[relax.Var], message: str) -> None:
    """Emitting ``build(*params)`` raises a `KilnError` matching ``message`` (struct info is
    inferred, and checked, when a call is emitted)."""
    bb = relax.BlockBuilder()
    with bb.function("main", list(params)):
        with pytest.raises(KilnError, match=message):
            bb.emit(build(*params))
        bb.emit_func_output(params[0])
