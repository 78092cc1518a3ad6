"""CallTIRRewrite: destination-passing calls become an explicit output allocation and a call.

``y = R.call_tir(f, (a, b), out_sinfo)`` (and ``R.call_lowered(f, (a, b), out_sinfo, ...)``,
what `LowerTE` writes) becomes

    y = R.builtin.alloc_tensor(shape, dtype, 0)      # one allocation per output
    _ = f(a, b, y)                                   # a call of the kernel, returning nothing

and every use of ``y`` reads the allocation (a tuple of them for several outputs; ``y[i]`` reads
the i-th allocation). A ``call_tir`` with ``tir_vars`` passes them through
``vm.builtin.call_tir_dyn(f, a, b, y, shape)``, which appends the shape's values as int
arguments. ``R.call_dps_packed(g, (a,), out_sinfo)`` becomes a call of the packed function
``g(a, y)``. Output shapes may be symbolic (`VMShapeLower` computes them later).

A ``call_lowered`` of an ``Extern=1`` function (external C, see `LowerTE`) calls the symbol of
that function, ``ExternFunc("<name>")(a, b, y)``: the VM finds it in the library when the
module's ``external_mods`` link it there, else by name. A ``call_lowered`` naming a host shape
function (``prim_shape_fn_var``, result dims unknown) first computes its output shapes: each
argument is passed as a 1-D int64 tensor holding its shape (state 2) or its value (state 1:
a shape or an integer; an int64 tensor as it is), written by ``shape_tensor_<ndim>`` kernels
this pass adds; each output's shape comes back in an int64 tensor, becomes a shape
(``vm.builtin.tensor_to_shape``), is matched to fresh symbolic dims (`VMShapeLower` stores
them) and sizes the allocation. The same IR serves both VM modes.

Postcondition: no ``call_tir``, ``call_lowered`` and ``call_dps_packed`` remain; ``Extern=1``
functions are left as they are.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from kiln.errors import PassError
from kiln.ir.function import GlobalVar
from kiln.ir.module import IRModule
from kiln.ir.op import Op
from kiln.ir.transform import Pass, PassContext
from kiln.relax.analysis.primitive import EXTERN
from kiln.relax.binding import VarBinding
from kiln.relax.expr import Call, Expr, ExternFunc, Function, ShapeExpr, Tuple, TupleGetItem, Var
from kiln.relax.expr_functor import ExprMutator
from kiln.relax.op.builtin import SHAPE_FN_DATA, SHAPE_FN_SHAPE, alloc_tensor
from kiln.relax.struct_info import (
    INT64,
    UNIT,
    PrimStructInfo,
    ShapeStructInfo,
    TensorStructInfo,
    TupleStructInfo,
)
from kiln.runtime.vm_builtins import builtin
from kiln.tir import stmt as S
from kiln.tir.buffer import decl_buffer
from kiln.tir.expr import Cast, IntImm, PrimExpr
from kiln.tir.expr import Var as TirVar
from kiln.tir.function import PrimFunc

DPS_OPS = ("relax.call_tir", "relax.call_dps_packed", "relax.call_lowered")
"""The destination-passing operators this pass rewrites."""

CALL_TIR_DYN = builtin("call_tir_dyn").name
TENSOR_TO_SHAPE = builtin("tensor_to_shape").name
PASS = "CallTIRRewrite"


def shape_tensor_kernel(ndim: int) -> PrimFunc:
    """``shape_tensor_<ndim>(out, d0, ..., d<ndim-1>)``: ``out[i] = d_i``, int64 values as the
    1-D int64 tensor a shape function reads."""
    out = TirVar("out", "handle")
    buf = decl_buffer((IntImm(INT64, ndim),), "int64", "out")
    dims = [TirVar(f"d{i}", INT64) for i in range(ndim)]
    body = S.seq(*(S.BufferStore(buf, d, (IntImm(INT64, i),)) for i, d in enumerate(dims)))
    return PrimFunc((out, *dims), body, buffer_map={out: buf})


class _Rewriter(ExprMutator):
    def __init__(self, mod: IRModule) -> None:
        super().__init__(mod)
        self.mod = mod
        self.packers: dict[int, GlobalVar] = {}

    def visit_var_binding(self, b: VarBinding) -> None:
        call = b.value
        if not (isinstance(call, Call) and isinstance(call.op, Op) and call.op.name in DPS_OPS):
            super().visit_var_binding(b)
            return
        call = self.visit(call)
        dynamic = call.op.name == "relax.call_lowered" and "prim_shape_fn_var" in call.attrs
        outs = self.computed_outputs(call, b.var) if dynamic else self.allocate_outputs(call, b.var)
        self.builder.emit(self.kernel_call(call, [*self.arg_fields(call.args[1]), *outs]), "_")
        result: Expr = outs[0] if len(outs) == 1 else Tuple(tuple(outs))
        self.var_remap[id(b.var)] = self.builder.normalize(result)

    def kernel_call(self, call: Call, args: list[Expr]) -> Call:
        """The call of ``call``'s callee with its inputs, then its outputs."""
        callee = call.args[0]
        if call.op.name == "relax.call_dps_packed":
            return Call(callee, tuple(args), sinfo_args=(UNIT,))
        if call.op.name == "relax.call_lowered" and self.is_extern(callee):
            return Call(ExternFunc(callee.name_hint), tuple(args), sinfo_args=(UNIT,))
        if len(call.args) == 3:  # call_tir with tir_vars
            items = (callee, *args, call.args[2])
            return Call(ExternFunc(CALL_TIR_DYN), items, sinfo_args=(UNIT,))
        return Call(callee, tuple(args))

    def visit_TupleGetItem(self, t: TupleGetItem) -> Expr:
        """An item of a multi-output call reads its allocation directly."""
        new = super().visit_TupleGetItem(t)
        if isinstance(new, TupleGetItem) and isinstance(new.tuple_value, Tuple):
            return new.tuple_value.fields[new.index]
        return new

    def is_extern(self, gv: Any) -> bool:
        func = self.mod.functions.get(gv) if isinstance(gv, GlobalVar) else None
        return isinstance(func, Function) and bool(func.get_attr(EXTERN))

    def allocate_outputs(self, call: Call, var: Var) -> list[Var]:
        outs = []
        for hint, f in _output_fields(call, var):
            if f.dims is None:
                raise PassError(
                    PASS,
                    f"output {hint!r} of {call.op.name} has unknown dims ({f}) and no shape "
                    "function; fix: give the call known dims, or lower it with LowerTE",
                )
            outs.append(self.builder.emit(alloc_tensor(list(f.dims), f.dtype), hint))
        return outs

    def arg_fields(self, args: Expr) -> list[Expr]:
        """The arguments of a destination-passing call, one per field of its argument tuple."""
        if isinstance(args, Tuple):
            return list(args.fields)
        sinfo = args.struct_info_
        assert isinstance(sinfo, TupleStructInfo)  # call_tir's infer checked it
        items = (TupleGetItem(args, i) for i in range(len(sinfo.fields)))
        return [self.builder.normalize_arg(item) for item in items]

    # -- outputs sized by a shape function -----------------------------------------------------
    def computed_outputs(self, call: Call, var: Var) -> list[Var]:
        """Run the call's host shape function, then allocate the outputs it sized."""
        shape_fn = call.attrs["prim_shape_fn_var"]
        prim = self.mod.functions.get(shape_fn)
        if not isinstance(prim, PrimFunc):
            raise PassError(PASS, f"shape function {shape_fn.name_hint!r} is not in the module")
        inputs = self.arg_fields(call.args[1])
        states = list(call.attrs["prim_shape_fn_states"])
        packed = [self.shape_arg(a, s, var.name_hint) for a, s in zip(inputs, states)]
        fields = _output_fields(call, var)
        ranks = [int(prim.buffer_map[p].shape[0].value) for p in prim.params[-len(fields) :]]
        souts = [
            self.builder.emit(alloc_tensor([n], "int64"), f"{hint}_shape")
            for (hint, _), n in zip(fields, ranks)
        ]
        self.builder.emit(Call(shape_fn, (*packed, *souts)), "_")
        outs = []
        for (hint, f), t, n in zip(fields, souts, ranks):
            shape = Call(ExternFunc(TENSOR_TO_SHAPE), (t,), sinfo_args=(ShapeStructInfo(None, n),))
            dims = [TirVar(f"{hint}_d{i}", INT64) for i in range(n)]
            computed = self.builder.emit(shape, f"{hint}_shape_of")
            self.builder.match_cast(computed, ShapeStructInfo(dims), f"{hint}_dims")
            outs.append(self.builder.emit(alloc_tensor(dims, f.dtype), hint))
        return outs

    def shape_arg(self, arg: Expr, state: int, hint: str) -> Expr:
        """What a shape function takes for ``arg``: its shape or its value as an int64 tensor."""
        sinfo = arg.struct_info_
        if isinstance(sinfo, TensorStructInfo):
            if state == SHAPE_FN_DATA:
                return arg  # an int64 tensor of values, passed as it is
            dims = sinfo.dims if sinfo.dims is not None else self.bind_dims(arg, sinfo, hint)
            return self.pack(list(dims), hint)
        if state == SHAPE_FN_DATA and isinstance(sinfo, ShapeStructInfo):
            values = sinfo.values if sinfo.values is not None else self.bind_dims(arg, sinfo, hint)
            return self.pack(list(values), hint)
        if state == SHAPE_FN_DATA and isinstance(sinfo, PrimStructInfo) and sinfo.dtype.is_integer:
            value = sinfo.value
            if value is None:
                value = TirVar(f"{hint}_v", sinfo.dtype)
                self.builder.match_cast(arg, PrimStructInfo(sinfo.dtype, value), f"{hint}_v")
            return self.pack([value], hint)
        raise PassError(
            PASS,
            f"a shape function cannot take {arg!r} ({sinfo}) with state {state} (expected "
            f"{SHAPE_FN_SHAPE} for a tensor's shape, {SHAPE_FN_DATA} for a shape or an int)",
        )

    def bind_dims(self, arg: Expr, sinfo: Any, hint: str) -> list[PrimExpr]:
        """Fresh symbolic dims matched to ``arg``'s (a tensor or shape of known rank)."""
        if sinfo.ndim < 0:
            raise PassError(
                PASS,
                f"{arg!r} ({sinfo}) has no known rank, which its shape function needs; fix: "
                "match_cast it to a rank",
            )
        dims: list[PrimExpr] = [TirVar(f"{hint}_a{i}", INT64) for i in range(sinfo.ndim)]
        cast = (
            TensorStructInfo(dims, sinfo.dtype)
            if isinstance(sinfo, TensorStructInfo)
            else ShapeStructInfo(dims)
        )
        self.builder.match_cast(arg, cast, f"{hint}_arg")
        return dims

    def pack(self, values: list[PrimExpr], hint: str) -> Var:
        """A fresh 1-D int64 tensor holding ``values`` (written by ``shape_tensor_<n>``)."""
        n = len(values)
        gv = self.packers.get(n)
        if gv is None:
            gv = self.builder.add_func(shape_tensor_kernel(n), f"shape_tensor_{n}")
            self.packers[n] = gv
        out = self.builder.emit(alloc_tensor([n], "int64"), f"{hint}_in")
        wide = [v if v.dtype == INT64 else Cast(INT64, v) for v in values]
        call = Call(ExternFunc(CALL_TIR_DYN), (gv, out, ShapeExpr(wide)), sinfo_args=(UNIT,))
        self.builder.emit(call, "_")
        return out


def _output_fields(call: Call, var: Var) -> list[tuple[str, TensorStructInfo]]:
    """(name hint, struct info) of each output of a destination-passing call."""
    sinfo = call.sinfo_args[0]
    fields = sinfo.fields if isinstance(sinfo, TupleStructInfo) else (sinfo,)
    out = []
    for i, f in enumerate(fields):
        assert isinstance(f, TensorStructInfo)  # the ops' infer checked it
        out.append((var.name_hint if len(fields) == 1 else f"{var.name_hint}_{i}", f))
    return out


@dataclass(frozen=True)
class CallTIRRewrite(Pass):
    """Explicit output allocation for destination-passing calls (module docstring)."""

    name: ClassVar[str] = "call-tir-rewrite"

    def run(self, mod: IRModule, ctx: PassContext) -> IRModule:
        rewriter = _Rewriter(mod)
        changed = {}
        for gv, func in mod.items():
            if isinstance(func, Function) and not func.get_attr(EXTERN):
                new = rewriter.visit(func)
                if new is not func:
                    changed[gv] = new
        if not changed:
            return mod
        return rewriter.builder.get().update_all(changed)
