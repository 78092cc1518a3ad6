"""AlterOpLayout: the layouts the CPU kernels want, chosen once per chain of operators.

For a CPU target, in each dataflow block of every graph function that is not primitive,
external or a ``Compiler`` function (other blocks are left alone):

- ``conv2d`` (NCHW / OIHW, a `Constant` weight, constant shapes except perhaps a symbolic batch
  N, the data's dtype) becomes a
  conv2d over channel-blocked layouts (`kiln.topi.x86.conv2d_nchwc`): data ``NCHW<cb>c``,
  weight ``OIHW<ki>i<ob>o``, output ``NCHW<ob>c``. ``ob`` is `channel_block` of the output channels
  per group; ``cb`` is the data's block when it already has one that fits, else
  `channel_block` of the input channels (per group); depthwise convolutions keep one block
  throughout (``ki = 1``). The weight becomes ``layout_transform(w, "OIHW", ...)``, which
  `FoldConstant` evaluates at compile time. NOTE: a weight passed in at run time would be
  repacked on every call (as the NCHW kernel repacks it internally), so those convolutions
  keep NCHW and need no conversions around them.
- an operator whose operand is already blocked stays blocked: element-wise operators,
  broadcasting binary operators (another operand is converted: a per-channel one
  ``[1, C, 1, 1]`` to the block, a channel-less one reshaped to rank 5, a scalar kept),
  ``max_pool2d`` / ``avg_pool2d`` (``layout="NCHW<b>c"``), reductions over N, H and W with
  ``keepdims``, and ``adaptive_avg_pool2d`` to 1 x 1 (a mean over H and W).
- ``concat`` over the channels (axis 1) of rank-4 operands, one of them blocked, each with whole
  blocks of channels: the operands in the first one's block, joined along ``C / <b>``.
- any other use of a blocked value -- an operator without a blocked form, a value the block
  exports -- reads it converted back to NCHW: one ``layout_transform`` per value, bound to the
  value's own variable, so conversions happen at the chain's boundary only and callers see the
  model's layouts.
- ``matmul(x, w)`` with ``w`` a 2-D `Constant` (``K x N``) and ``x`` of rank 2 or more (its
  leading dims may be symbolic: tokens, batch; a Linear over NHWC images) becomes
  ``matmul_packed(x, layout_transform(w, "KN", "NK<cols>n"), N)`` with the
  column panels of the register tile `kiln.topi.x86.cpu.matmul_tile` picks, packed once by
  `FoldConstant` instead of by the kernel on every call.

A symbolic batch (only the first dimension symbolic, `batch_dims`) is carried through every
convolution rule: the blocked kernels loop over the images outermost.

Postcondition: every function computes what it did; its parameters and results keep their
layouts.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, ClassVar

from kiln.ir.dtype import DataType
from kiln.ir.function import BaseFunc, GlobalVar
from kiln.ir.module import IRModule
from kiln.ir.node import Attrs
from kiln.ir.op import Op
from kiln.ir.target import Target
from kiln.ir.transform import PassContext
from kiln.relax import op as R
from kiln.relax.analysis.primitive import is_lowerable
from kiln.relax.analysis.struct_info import static_dims
from kiln.relax.binding import Binding, BindingBlock, DataflowBlock, VarBinding
from kiln.relax.expr import Call, Constant, DataflowVar, Expr, Function, Tuple, Var
from kiln.relax.expr_functor import ExprMutator
from kiln.relax.function_pass import FunctionPass
from kiln.relax.op.nn.conv import conv_blocks, pool_block
from kiln.relax.op.registry import find_op_def
from kiln.relax.struct_info import TensorStructInfo
from kiln.topi.tag import Pattern
from kiln.topi.x86.cpu import TILE_ROWS, lanes, matmul_tile

BINARY_FAMILY = "kiln/relax/op/binary.py"
POOLS = ("relax.nn.max_pool2d", "relax.nn.avg_pool2d")
REDUCTIONS = ("relax.sum", "relax.mean", "relax.max", "relax.min")


def channel_block(channels: int, target: Target, dtype: DataType) -> int:
    """The channel block for ``channels``: the largest of two vectors of ``target``, one
    vector, half a vector... that divides it."""
    block = 2 * lanes(target, dtype)
    while block > 1 and channels % block:
        block //= 2
    return block


def batch_dims(e: Any) -> list[Any] | None:
    """``e``'s shape when it is a tensor of known dtype whose dimensions are constant except
    perhaps the first (a symbolic batch, kept as its expression); the rest are ints."""
    sinfo = getattr(e, "struct_info_", None)
    if not isinstance(sinfo, TensorStructInfo) or sinfo.dims is None or sinfo.dtype.is_void:
        return None
    dims = [getattr(d, "value", d) for d in sinfo.dims]
    if any(not isinstance(d, int) for d in dims[1:]):
        return None
    return dims


def leading_symbolic_dims(e: Any) -> list[Any] | None:
    """``e``'s shape when it is a tensor of known dtype whose last dimension is constant (the
    others may be symbolic: tokens, batch); constant dims as ints."""
    sinfo = getattr(e, "struct_info_", None)
    if not isinstance(sinfo, TensorStructInfo) or sinfo.dims is None or sinfo.dtype.is_void:
        return None
    dims = [getattr(d, "value", d) for d in sinfo.dims]
    return dims if dims and isinstance(dims[-1], int) else None


@dataclass
class _Blocked:
    """A value available in ``NCHW<block>c`` as ``expr``; ``var`` is its NCHW variable."""

    expr: Expr
    block: int
    var: Var


class _Alter(ExprMutator):
    def __init__(self, mod: IRModule, target: Target) -> None:
        super().__init__(mod)
        self.target = target
        self.blocked: dict[int, _Blocked] = {}
        self.plain: set[int] = set()
        self.dataflow = False

    # -- traversal -------------------------------------------------------------------------------
    def visit_binding_block(self, block: BindingBlock) -> BindingBlock | None:
        if not isinstance(block, DataflowBlock):
            return super().visit_binding_block(block)
        self.dataflow, self.blocked, self.plain = True, {}, set()
        try:
            return super().visit_binding_block(block)
        finally:
            self.dataflow = False

    def visit_binding(self, b: Binding) -> None:
        if not self.dataflow:
            return super().visit_binding(b)
        value = self.visit(b.value)
        if value is not b.value:
            value = self.builder.normalize(value)
        new = self.rewrite(value) if isinstance(b, VarBinding) else None
        if new is None:
            self.need_plain(value)
            return super().visit_binding(b)
        expr, block = new
        if isinstance(expr, Call) and expr.span is None:
            expr = replace(expr, span=value.span)  # NOTE: keeps the model node's name (profiles)
        if block == 0:
            self.reemit(b, expr)  # type: ignore[arg-type]
            return None
        var = self.builder.emit(expr, f"{b.var.name_hint}_nchw{block}c")
        self.blocked[id(b.var)] = _Blocked(var, block, b.var)
        if not isinstance(b.var, DataflowVar):
            self.materialize(self.blocked[id(b.var)])
        return None

    def need_plain(self, e: Any) -> None:
        """Convert every blocked variable ``e`` reads back to NCHW (once each)."""
        if isinstance(e, Var):
            hit = self.blocked.get(id(e))
            if hit is not None:
                self.materialize(hit)
        elif isinstance(e, Tuple):
            for f in e.fields:
                self.need_plain(f)
        elif isinstance(e, Call):
            for a in e.args:
                self.need_plain(a)

    def materialize(self, hit: _Blocked) -> None:
        if id(hit.var) in self.plain:
            return
        self.plain.add(id(hit.var))
        value = self.builder.normalize(R.layout_transform(hit.expr, f"NCHW{hit.block}c", "NCHW"))
        self.builder.emit_normalized(VarBinding(hit.var, value))

    # -- rules -----------------------------------------------------------------------------------
    def rewrite(self, value: Any) -> tuple[Expr, int] | None:
        """The blocked replacement of ``value`` and its block (0: a replacement whose result is
        not blocked), or None when it stays."""
        if not isinstance(value, Call) or not isinstance(value.op, Op):
            return None
        rec = find_op_def(value.op)
        if rec is not None and rec.name == "relax.matmul":
            return self.matmul(value)
        if rec is None or batch_dims(value) is None:
            return None
        if rec.name == "relax.nn.conv2d":
            return self.conv2d(value)
        if rec.name == "relax.concat":
            return self.concat(value)
        first = self.blocked.get(id(value.args[0])) if value.args else None
        if rec.family == BINARY_FAMILY:
            return self.broadcast(value)
        if first is None:
            return None
        if rec.pattern == Pattern.ELEMWISE and all(
            not isinstance(a.struct_info_, TensorStructInfo) for a in value.args[1:]
        ):
            return Call(value.op, (first.expr, *value.args[1:]), value.attrs), first.block
        return self.window(value, rec.name, first)

    def conv2d(self, call: Call) -> tuple[Expr, int] | None:
        a = call.attrs
        x, w = call.args
        xd, wd = batch_dims(x), static_dims(w)
        dtype = x.struct_info_.dtype  # type: ignore[union-attr]
        if conv_blocks(call) is not None or xd is None or wd is None or len(xd) != 4:
            return None
        if not isinstance(w, Constant):
            return None  # see the module docstring
        if a["out_dtype"] is not None and str(a["out_dtype"]) != str(dtype):
            return None
        groups, c, (o, cg) = a["groups"], xd[1], wd[:2]
        og = o // groups
        have = self.blocked[id(x)].block if id(x) in self.blocked else 0
        if cg == 1 and og == 1:
            cb = have or channel_block(c, self.target, dtype)
            ob, ki = cb, 1
        else:
            ob = channel_block(og, self.target, dtype)
            cb = have if have and cg % have == 0 else channel_block(cg, self.target, dtype)
            ki = cb
        xb = self.blocked_input(x, cb)
        wb = self.builder.emit(R.layout_transform(w, "OIHW", f"OIHW{ki}i{ob}o"), "w_packed")
        layouts = {
            "data_layout": f"NCHW{cb}c",
            "kernel_layout": f"OIHW{ki}i{ob}o",
            "out_layout": f"NCHW{ob}c",
        }
        args = (a["strides"], a["padding"], a["dilation"], groups)
        return R.nn.conv2d(xb, wb, *args, **layouts, out_dtype=a["out_dtype"]), ob

    def blocked_input(self, x: Expr, block: int) -> Expr:
        """``x`` in ``NCHW<block>c``: converted from its blocked form or from NCHW."""
        hit = self.blocked.get(id(x))
        if hit is None:
            return self.builder.emit(R.layout_transform(x, "NCHW", f"NCHW{block}c"), "x_blocked")
        if hit.block == block:
            return hit.expr
        relayout = R.layout_transform(hit.expr, f"NCHW{hit.block}c", f"NCHW{block}c")
        return self.builder.emit(relayout, "x_reblocked")

    def broadcast(self, call: Call) -> tuple[Expr, int] | None:
        out = batch_dims(call)
        firsts = [self.blocked[id(a)] for a in call.args if id(a) in self.blocked]
        if out is None or len(out) != 4 or not firsts:
            return None
        block, args = firsts[0].block, []
        for arg in call.args:
            dims = batch_dims(arg)
            if id(arg) in self.blocked:
                args.append(self.blocked_input(arg, block))
            elif dims is None or len(dims) > 4 or len(dims) < 4 and static_dims(arg) is None:
                return None
            elif not dims:
                args.append(arg)
            else:
                shape = [1] * (4 - len(dims)) + dims
                if shape[1] == out[1]:
                    x = arg if len(dims) == 4 else self.builder.emit(R.reshape(arg, shape))
                    args.append(self.blocked_input(x, block))
                elif shape[1] == 1:
                    args.append(self.builder.emit(R.reshape(arg, [*shape, 1])))
                else:
                    return None
        return Call(call.op, tuple(args), call.attrs), block

    def concat(self, call: Call) -> tuple[Expr, int] | None:
        """A concat over the channels of blocked operands (DenseNet's, SqueezeNet's) stays
        blocked when every operand's channels are whole blocks: in ``NCHW<b>c`` it joins the
        channel-block axis, a contiguous copy per operand."""
        (tup,) = call.args
        fields = tup.fields if isinstance(tup, Tuple) else ()
        firsts = [self.blocked[id(f)] for f in fields if id(f) in self.blocked]
        if not firsts or call.attrs["axis"] % 4 != 1:
            return None
        block = firsts[0].block
        for f in fields:
            dims = batch_dims(f)
            if dims is None or len(dims) != 4 or dims[1] % block:
                return None
        blocked = Tuple(tuple(self.blocked_input(f, block) for f in fields))
        return R.concat(blocked, axis=1), block

    def window(self, call: Call, name: str, first: _Blocked) -> tuple[Expr, int] | None:
        """Pools and reductions over N, H, W of a blocked operand."""
        a, x = call.attrs, first.expr
        if name in POOLS:
            if pool_block(call) or name == POOLS[1] and a["dilation"] != (1, 1):
                return None
            layout = f"NCHW{first.block}c"
            return Call(
                call.op, (x,), Attrs({**a, "layout": layout, "out_layout": layout})
            ), first.block
        if name == "relax.nn.adaptive_avg_pool2d":
            size = a["output_size"]
            if batch_dims(call)[2:] != [1, 1] or size is not None and tuple(size) != (1, 1):
                return None
            return R.mean(x, [2, 3], keepdims=True), first.block
        if name in REDUCTIONS and a["keepdims"] and a["axis"] is not None:
            axes = {ax % 4 for ax in a["axis"]}
            if axes <= {0, 2, 3}:
                return Call(call.op, (x,), Attrs({**a, "axis": tuple(sorted(axes))})), first.block
        return None

    def matmul(self, call: Call) -> tuple[Expr, int] | None:
        x, w = call.args
        xd, wd = leading_symbolic_dims(x), static_dims(w)
        if not isinstance(w, Constant) or xd is None or wd is None or len(wd) != 2:
            return None
        dtype = x.struct_info_.dtype  # type: ignore[union-attr]
        if len(xd) < 2 or call.struct_info_.dtype != dtype:  # type: ignore[union-attr]
            return None
        k, units = wd
        rows = xd[-2] if isinstance(xd[-2], int) else TILE_ROWS
        tile = matmul_tile(rows, units, dtype, self.target)
        panels = self.builder.emit(R.layout_transform(w, "KN", f"NK{tile.cols}n"), "w_panels")
        return R.matmul_packed(x, panels, units), 0


@dataclass(frozen=True)
class AlterOpLayout(FunctionPass):
    """Channel-blocked convolutions and packed constant matmul weights for ``target``'s CPU
    kernels (see the module docstring); nothing for other targets."""

    name: ClassVar[str] = "alter-op-layout"
    target: Target

    def transform(self, gv: GlobalVar, func: Function, mod: IRModule, ctx: PassContext) -> BaseFunc:
        if self.target.device != "cpu" or not is_lowerable(func):
            return func
        return _Alter(mod, self.target).visit(func)


__all__ = ["AlterOpLayout", "channel_block"]
