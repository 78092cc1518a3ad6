"""Top-k along one axis and the distinct values of a tensor as TIR kernels: ``topk_kernel``,
``unique_count_kernel`` and ``unique_kernel``.

Each line along the axis is scanned once per result: the j-th result is the greatest element
(the least with ``largest=False``) that comes after the (j-1)-th in the order "value, then
index" (ties go to the lower index, as onnxruntime and numpy's stable sort order them). That
is O(n * k) per line with no scratch memory: meant for the small ``k`` models use (top-5
classes, beam widths); lines run in parallel.

NaN is greater than every number and equal to itself, so NaNs come first with ``largest`` and
last without (as ``torch.topk`` and numpy's sort place them), and ``unique`` groups them.

``unique`` counts first (each element compared with those before it: O(n^2)), then picks the
k-th distinct value as the least greater than the (k-1)-th (O(n * u)): meant for the small
tensors models pass through it (ids, labels); a sort-based kernel is the next step for large
ones.
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


def unique_count_kernel(n: int, dtype: str) -> PrimFunc:
    """``count(x, out)``: ``out[0]`` = how many distinct values the ``n`` elements of ``x``
    hold (NaNs count as one value, as numpy's ``unique`` groups them)."""
    xb, ob = (
        decl_buffer((IntImm(INT64, n),), dtype, "x"),
        decl_buffer((IntImm(INT64, 1),), INT64, "out"),
    )
    i, j = TirVar("i", INT64), TirVar("j", INT64)
    zero, one = IntImm(INT64, 0), IntImm(INT64, 1)
    first = decl_buffer((one,), INT64, "first", scope="local")
    seen = S.IfThenElse(_same(xb[j], xb[i]), S.BufferStore(first, zero, (zero,)), None)
    per = S.seq(
        S.BufferStore(first, one, (zero,)),
        S.For(j, zero, i, S.ForKind.SERIAL, seen),
        S.BufferStore(ob, ob[zero] + first[zero], (zero,)),
    )
    body = S.seq(
        S.BufferStore(ob, zero, (zero,)), S.For(i, zero, IntImm(INT64, n), S.ForKind.SERIAL, per)
    )
    body = S.Allocate(first.data, first.dtype, (one,), True, S.DeclBuffer(first, body))
    handles = [TirVar("x", "handle"), TirVar("out", "handle")]
    return PrimFunc(tuple(handles), body, buffer_map=dict(zip(handles, (xb, ob))))


def unique_kernel(n: int, u: PrimExpr, dtype: str, in_order: bool) -> PrimFunc:
    """``unique(x, y, indices, inverse, counts, u)`` over the ``n`` elements of ``x`` with
    ``u`` distinct values (`unique_count_kernel`): ``y`` the values ascending (``in_order``:
    in the order of their first occurrence), ``indices`` where each first occurs, ``inverse``
    each element's position in ``y``, ``counts`` how often each occurs. The k-th value in
    ascending order is the least greater than the (k-1)-th: O(n * u)."""
    zero, one, nn = IntImm(INT64, 0), IntImm(INT64, 1), IntImm(INT64, n)
    xb, vb = decl_buffer((nn,), dtype, "x"), decl_buffer((nn,), INT64, "inverse")
    yb, ib, cb = (
        decl_buffer((u,), d, name)
        for d, name in ((dtype, "y"), (INT64, "indices"), (INT64, "counts"))
    )
    ys, js, cs, pos = (
        decl_buffer((u,), d, name)
        for d, name in ((dtype, "ys"), (INT64, "js"), (INT64, "cs"), (INT64, "pos"))
    )
    best_v = decl_buffer((one,), dtype, "best_v", scope="local")
    best_i, tally = (
        decl_buffer((one,), INT64, name, scope="local") for name in ("best_i", "tally")
    )
    w = TirVar("w", INT64)

    def count_into(store: Any, cond: PrimExpr, over: Any, extent: Any) -> Any:
        bump = S.IfThenElse(cond, S.BufferStore(tally, tally[zero] + 1, (zero,)), None)
        return S.seq(
            S.BufferStore(tally, zero, (zero,)),
            S.For(over, zero, extent, S.ForKind.SERIAL, bump),
            store,
        )

    # where value q goes: q, or how many values first occur before it
    q, e, w2 = TirVar("q", INT64), TirVar("e", INT64), TirVar("w2", INT64)
    where = S.BufferStore(pos, q if not in_order else tally[zero], (q,))
    place = count_into(where, js[w] < js[q], w, u) if in_order else where
    move = S.seq(*(S.BufferStore(o, b[q], (pos[q],)) for o, b in ((yb, ys), (ib, js), (cb, cs))))
    rank = count_into(S.BufferStore(vb, pos[tally[zero]], (e,)), _greater(xb[e], ys[w2]), w2, u)
    body = S.seq(
        _ascending(xb, (ys, js, cs), (best_v, best_i, tally), u, nn),
        S.For(q, zero, u, S.ForKind.SERIAL, S.seq(place, move)),
        S.For(e, zero, nn, S.ForKind.SERIAL, rank),
    )
    for buf in (tally, best_i, best_v):
        body = S.Allocate(buf.data, buf.dtype, (one,), True, S.DeclBuffer(buf, body))
    for buf in (pos, cs, js, ys):
        body = S.Allocate(buf.data, buf.dtype, (u,), True, S.DeclBuffer(buf, body))
    handles = [TirVar(name, "handle") for name in ("x", "y", "indices", "inverse", "counts")]
    bmap = dict(zip(handles, (xb, yb, ib, vb, cb)))
    return PrimFunc((*handles, u), body, buffer_map=bmap)


def _ascending(xb: Any, outs: tuple[Any, ...], best: tuple[Any, ...], u: Any, nn: Any) -> Any:
    """The loop that writes the ``u`` distinct values of ``xb`` ascending into ``outs``
    (values, first indices, counts): the k-th is the least greater than the (k-1)-th, found in
    one scan that keeps the least so far in ``best`` (value, index, count)."""
    zero, one = IntImm(INT64, 0), IntImm(INT64, 1)
    (ys, _, _), (best_v, best_i, tally) = outs, best
    k, i = TirVar("k", INT64), TirVar("i", INT64)
    v = xb[i]
    smaller = (best_i[zero] < zero) | _greater(best_v[zero], v)
    take = S.seq(*(S.BufferStore(b, e, (zero,)) for b, e in zip(best, (v, i, one))))
    bump = S.BufferStore(tally, tally[zero] + 1, (zero,))
    again = S.IfThenElse(_same(v, best_v[zero]), bump, None)
    after = k.eq(zero) | _greater(v, ys[k - 1])
    pick = S.IfThenElse(after, S.IfThenElse(smaller, take, again), None)
    step = S.seq(
        S.BufferStore(best_i, IntImm(INT64, -1), (zero,)),
        S.BufferStore(best_v, xb[zero], (zero,)),
        S.For(i, zero, nn, S.ForKind.SERIAL, pick),
        *(S.BufferStore(o, b[zero], (k,)) for o, b in zip(outs, best)),
    )
    return S.For(k, zero, u, S.ForKind.SERIAL, step)
