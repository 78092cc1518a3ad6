"""CallShapeFunctions: a lowered call whose result shape is unknown calls its shape function
first, and then has known (symbolic) output dims.

`LowerTE` cross-links a ``call_lowered`` whose result dims are unknown (``R.Tensor(ndim=2)``)
to a host shape function (``prim_shape_fn_var``, ``prim_shape_fn_states``). Here

    b = R.call_lowered(f, (a,), out_sinfo=R.Tensor(ndim=2, dtype="float32"),
                       prim_shape_fn_var=shape_func_f, prim_shape_fn_states=[2], ...)

becomes

    b_in0 = R.call_tir(shape_tensor_2, (), R.Tensor((2,), "int64"), tir_vars=R.shape([m, 7]))
    b_shape = R.call_tir(shape_func_f, (b_in0,), out_sinfo=R.Tensor((2,), "int64"))
    b_shape_of = R.call_pure_packed("vm.builtin.tensor_to_shape", b_shape, ...)
    b_dims = R.match_cast(b_shape_of, R.Shape([b_d0, b_d1]))
    b = R.call_lowered(f, (a,), out_sinfo=R.Tensor((b_d0, b_d1), "float32"), ...)

Each argument reaches the shape function as a 1-D int64 tensor: its shape (state 2), or its
value (state 1: a shape or an integer; an int64 tensor is passed as it is). The tensors are
written by ``shape_tensor_<n>`` PrimFuncs this pass adds (``out[i] = d_i``, the dims passed as
``tir_vars``); an argument of unknown dims is first matched to fresh ones. Each output's shape
comes back in an int64 tensor, becomes a shape value and is matched to fresh symbolic dims
(`VMShapeLower` stores them in the shape heap), which size the output: `CallTIRRewrite` then
allocates it like any other. The same IR serves both VM modes.

Postcondition: no ``call_lowered`` names a shape function; ``Extern=1`` functions are left as
they are.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from kiln.errors import PassError
from kiln.ir.function import GlobalVar
from kiln.ir.module import IRModule
from kiln.ir.node import as_attrs
from kiln.ir.op import Op
from kiln.ir.transform import Pass, PassContext
from kiln.relax.analysis.primitive import EXTERN
from kiln.relax.binding import VarBinding
from kiln.relax.expr import Call, Expr, Function, ShapeExpr, Tuple, TupleGetItem, Var
from kiln.relax.expr_functor import ExprMutator
from kiln.relax.op.builtin import SHAPE_FN_DATA, SHAPE_FN_SHAPE, call_pure_packed, call_tir
from kiln.relax.struct_info import (
    INT64,
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

TENSOR_TO_SHAPE = builtin("tensor_to_shape").name
PASS = "CallShapeFunctions"
SHAPE_FN_ATTRS = (
    "prim_shape_fn_var",
    "prim_shape_fn_states",
    "prim_shape_fn_num_inputs",
    "prim_shape_fn_num_outputs",
    "all_prim_shape_fn_vars",
)
"""The attributes of ``call_lowered`` that cross-link its shape function."""


def shape_tensor_kernel(ndim: int) -> PrimFunc:
    """``shape_tensor_<ndim>(out, d0, ..., d<ndim-1>)``: ``out[i] = d_i``, int64 values as the
    1-D int64 tensor a shape function reads."""
    out = TirVar("out", "handle")
    buf = decl_buffer((IntImm(INT64, ndim),), "int64", "out")
    dims = [TirVar(f"d{i}", INT64) for i in range(ndim)]
    body = S.seq(*(S.BufferStore(buf, d, (IntImm(INT64, i),)) for i, d in enumerate(dims)))
    return PrimFunc((out, *dims), body, buffer_map={out: buf})


def _int64_tensor(n: int) -> TensorStructInfo:
    return TensorStructInfo([IntImm(INT64, n)], "int64")


class _Caller(ExprMutator):
    def __init__(self, mod: IRModule) -> None:
        super().__init__(mod)
        self.mod = mod
        self.packers: dict[int, GlobalVar] = {}

    def visit_var_binding(self, b: VarBinding) -> None:
        call = b.value
        op = call.op if isinstance(call, Call) else None
        if not (isinstance(op, Op) and op.name == "relax.call_lowered"):
            super().visit_var_binding(b)
            return
        call = self.visit(call)
        if "prim_shape_fn_var" not in call.attrs:
            self.reemit(b, call)
            return
        out_sinfo = self.computed_out_sinfo(call, b.var.name_hint)
        attrs = as_attrs({k: v for k, v in call.attrs.items() if k not in SHAPE_FN_ATTRS})
        self.reemit(b, Call(call.op, call.args, attrs, (out_sinfo,), span=call.span))

    def computed_out_sinfo(self, call: Call, hint: str) -> Any:
        """Call the shape function of ``call``; the struct info of its outputs, with the
        computed dims (fresh symbolic variables bound by match_cast)."""
        shape_fn = call.attrs["prim_shape_fn_var"]
        prim = self.mod.functions.get(shape_fn)
        if not isinstance(prim, PrimFunc):
            raise PassError(PASS, f"shape function {shape_fn.name_hint!r} is not in the module")
        args = call.args[1]
        assert isinstance(args, Tuple)  # call_lowered's builder makes one
        states = list(call.attrs["prim_shape_fn_states"])
        items = enumerate(zip(args.fields, states))
        packed = [self.shape_arg(a, s, f"{hint}_in{k}") for k, (a, s) in items]
        sinfo = call.sinfo_args[0]
        fields = sinfo.fields if isinstance(sinfo, TupleStructInfo) else (sinfo,)
        ranks = [int(prim.buffer_map[p].shape[0].value) for p in prim.params[-len(fields) :]]
        outs = [_int64_tensor(n) for n in ranks]
        shapes = self.builder.emit(call_tir(shape_fn, packed, outs), f"{hint}_shape")
        computed = []
        for k, (f, n) in enumerate(zip(fields, ranks)):
            name = hint if len(fields) == 1 else f"{hint}_{k}"
            item = shapes if len(fields) == 1 else TupleGetItem(shapes, k)
            value = call_pure_packed(TENSOR_TO_SHAPE, item, sinfo_args=ShapeStructInfo(None, n))
            dims: list[PrimExpr] = [TirVar(f"{name}_d{i}", INT64) for i in range(n)]
            shape = self.builder.emit(value, f"{name}_shape_of")
            self.builder.match_cast(shape, ShapeStructInfo(dims), f"{name}_dims")
            assert isinstance(f, TensorStructInfo)  # call_lowered's infer checked it
            computed.append(TensorStructInfo(dims, f.dtype))
        return computed[0] if len(computed) == 1 else TupleStructInfo(tuple(computed))

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
                self.builder.match_cast(arg, PrimStructInfo(sinfo.dtype, value), f"{hint}_cast")
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
        dims: list[PrimExpr] = [TirVar(f"{hint}_{i}", INT64) for i in range(sinfo.ndim)]
        cast = (
            TensorStructInfo(dims, sinfo.dtype)
            if isinstance(sinfo, TensorStructInfo)
            else ShapeStructInfo(dims)
        )
        self.builder.match_cast(arg, cast, f"{hint}_cast")
        return dims

    def pack(self, values: list[PrimExpr], hint: str) -> Var:
        """A 1-D int64 tensor holding ``values`` (written by ``shape_tensor_<n>``)."""
        n = len(values)
        gv = self.packers.get(n)
        if gv is None:
            gv = self.builder.add_func(shape_tensor_kernel(n), f"shape_tensor_{n}")
            self.packers[n] = gv
        wide = [v if v.dtype == INT64 else Cast(INT64, v) for v in values]
        packed = call_tir(gv, (), _int64_tensor(n), tir_vars=ShapeExpr(wide))
        return self.builder.emit(packed, hint)


@dataclass(frozen=True)
class CallShapeFunctions(Pass):
    """Call the shape functions of lowered calls of unknown result shape (module docstring)."""

    name: ClassVar[str] = "call-shape-functions"

    def run(self, mod: IRModule, ctx: PassContext) -> IRModule:
        caller = _Caller(mod)
        changed = {}
        for gv, func in mod.items():
            if isinstance(func, Function) and not func.get_attr(EXTERN):
                new = caller.visit(func)
                if new is not func:
                    changed[gv] = new
        if not changed:
            return mod
        return caller.builder.get().update_all(changed)
