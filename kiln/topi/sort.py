"""Top-k along one axis as a TIR kernel: ``topk_kernel``.

Each line along the axis is scanned once per result: the j-th result is the greatest element
(the least with ``largest=False``) that comes after the (j-1)-th in the order "value, then
index" (ties go to the lower index, as onnxruntime and numpy's stable sort order them). That
is O(n * k) per line with no scratch memory: meant for the small ``k`` models use (top-5
classes, beam widths); lines run in parallel.

NaN is greater than every number and equal to itself, so NaNs come first with ``largest`` and
last without (as ``torch.topk`` and numpy's sort place them).
"""

from __future__ import annotations

import math
from typing import Any

from kiln.ir.op import Op
from kiln.tir import op as tir_op
from kiln.tir import stmt as S
from kiln.tir.buffer import decl_buffer
from kiln.tir.expr import HANDLE, Call, IntImm, PrimExpr, StringImm
from kiln.tir.expr import Var as TirVar
from kiln.tir.function import PrimFunc

INT64 = "int64"


def _greater(a: PrimExpr, b: PrimExpr) -> PrimExpr:
    """``a > b`` with NaN above every number."""
    if not a.dtype.is_float:
        return a > b
    return (a > b) | (tir_op.math("isnan", a) & ~tir_op.math("isnan", b))


def _same(a: PrimExpr, b: PrimExpr) -> PrimExpr:
    if not a.dtype.is_float:
        return a.eq(b)
    return a.eq(b) | (tir_op.math("isnan", a) & tir_op.math("isnan", b))


def topk_kernel(dims: list[int], axis: int, k: Any, largest: bool, dtype: str) -> PrimFunc:
    """``topk(x, values, indices[, k])``: the ``k`` greatest (``largest``) or least elements of
    ``x`` (constant ``dims``) along ``axis`` in order, and their int64 indices. A symbolic
    ``k`` (a `tir` variable) is the function's last parameter."""
    n = dims[axis]
    outer, inner = math.prod(dims[:axis]), math.prod(dims[axis + 1 :])
    kk = k if isinstance(k, PrimExpr) else IntImm(INT64, k)
    out_dims = [IntImm(INT64, d) for d in dims]
    out_dims[axis] = kk
    xb = decl_buffer([IntImm(INT64, d) for d in dims], dtype, "x")
    vb, ib = decl_buffer(out_dims, dtype, "values"), decl_buffer(out_dims, INT64, "indices")
    xf = decl_buffer((IntImm(INT64, math.prod(dims)),), dtype, "xf", data=xb.data)
    count = outer * inner
    vf = decl_buffer((kk * count,), dtype, "vf", data=vb.data)
    jf = decl_buffer((kk * count,), INT64, "jf", data=ib.data)
    line, i, j = TirVar("line", INT64), TirVar("i", INT64), TirVar("j", INT64)
    o, r = line // inner, line % inner
    zero, one = IntImm(INT64, 0), IntImm(INT64, 1)
    best_v = decl_buffer((one,), dtype, "best_v", scope="local")
    best_i = decl_buffer((one,), INT64, "best_i", scope="local")
    v = xf[(o * n + i) * inner + r]
    prev_at = (o * kk + j - 1) * inner + r
    pv, pi = vf[prev_at], jf[prev_at]
    before = (lambda a, b: _greater(a, b)) if largest else (lambda a, b: _greater(b, a))
    after_prev = j.eq(zero) | before(pv, v) | (_same(v, pv) & (i > pi))
    better = (best_i[zero] < zero) | before(v, best_v[zero])
    take = S.seq(S.BufferStore(best_v, v, (zero,)), S.BufferStore(best_i, i, (zero,)))
    pick = S.IfThenElse(after_prev & better, take, None)
    scan = S.For(i, zero, IntImm(INT64, n), S.ForKind.SERIAL, pick)
    at = (o * kk + j) * inner + r
    step = S.seq(
        S.BufferStore(best_i, IntImm(INT64, -1), (zero,)),
        S.BufferStore(best_v, xf[(o * n) * inner + r], (zero,)),
        scan,
        S.BufferStore(vf, best_v[zero], (at,)),
        S.BufferStore(jf, best_i[zero], (at,)),
    )
    body = S.For(j, zero, kk, S.ForKind.SERIAL, step)
    for buf in (best_i, best_v):
        body = S.Allocate(buf.data, buf.dtype, (one,), True, S.DeclBuffer(buf, body))
    loop = S.For(line, zero, IntImm(INT64, count), S.ForKind.PARALLEL, body)
    for buf in (jf, vf, xf):
        loop = S.DeclBuffer(buf, loop)
    if isinstance(k, PrimExpr):
        text = StringImm(f"ValueError: TopK's k is {{}}; it must lie in 0..{n} (axis {axis})")
        message = Call(HANDLE, Op.get("tir.format"), (text, kk))
        loop = S.AssertStmt(kk <= IntImm(INT64, n), message, loop)
    handles = [TirVar(name, "handle") for name in ("x", "values", "indices")]
    params = [*handles, *([kk] if isinstance(k, PrimExpr) else [])]
    bmap = dict(zip(handles, (xb, vb, ib)))
    return PrimFunc(tuple(params), loop, buffer_map=bmap)
