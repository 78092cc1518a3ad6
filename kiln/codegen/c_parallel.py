"""Parallel loops of the C backend: launches of kiln's thread pool (`kiln.runtime.thread_pool`)
and OpenMP regions.

A parallel loop whose body is one call of a ``kiln.no_error`` function taking the loop variable
first (what `OutlineParallelLoops` makes) is printed as a call of the pool::

    struct kiln_parctx3 kiln_par4 = {lo, a, b};          /* the call's other arguments */
    kiln_pool_launch(extent, grain, kiln_parrange3, &kiln_par4);

with, at file scope before the function definitions, the context struct and the range function
the pool calls for each chunk ``[begin, end)``::

    static void kiln_parrange3(void* p, int64_t begin, int64_t end) {
      for (i = begin; i < end; ++i) body((int32_t)(ctx->lo + i), ctx->a0, ctx->a1);
    }

``grain`` is the loop's `kiln.tir.attrs.PARALLEL_GRAIN` (0 without): a shorter loop runs on the
calling thread. Other parallel loops (a body that may raise) stay OpenMP regions
(`emit_omp_loop`): ``#pragma omp parallel for`` (below a grain, a serial copy instead), an error
slot that a failing iteration fills and the others skip on, re-raised after the region.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from kiln.ir.function import GlobalVar
from kiln.tir import expr as E
from kiln.tir import stmt as S
from kiln.tir.analysis import free_vars, get_type
from kiln.tir.attrs import PARALLEL_GRAIN

if TYPE_CHECKING:
    from kiln.codegen.c import CodeGenC


def outlined_call(cg: CodeGenC, s: S.For) -> E.Call | None:
    """The call of loop ``s``'s body when the pool can run the loop, else None."""
    call = s.body.value if isinstance(s.body, S.Evaluate) else None
    if not (isinstance(call, E.Call) and isinstance(call.op, GlobalVar)):
        return None
    callee = cg.lookup(call.op)
    if not callee.no_error or callee.returns_value or not call.args:
        return None
    if call.args[0] is not s.loop_var:
        return None
    if any(s.loop_var in free_vars(S.Evaluate(a)) for a in call.args[1:]):
        return None
    return call


def emit_pool_loop(cg: CodeGenC, s: S.For, call: E.Call) -> None:
    """Print parallel loop ``s`` (body: ``call``, see `outlined_call`) as a pool launch."""
    cg.prelude.need("thread_pool")
    callee = cg.lookup(call.op)  # type: ignore[arg-type]
    params = callee.func.params
    ctx_t, rng, inst = cg.temp("parctx"), cg.temp("parrange"), cg.temp("par")
    fields, inits, uses = ["int64_t lo;"], [f"(int64_t)({cg.expr(s.min)})"], []
    for k, (a, p) in enumerate(zip(call.args[1:], params[1:])):
        want = cg.c_type(p.type_annotation)
        have = cg.c_type(get_type(a))
        fields.append(f"{want} a{k};")
        inits.append(cg.expr(a) if want == have else f"(({want}){cg.expr(a)})")
        uses.append(f"c->a{k}")
    loop_t = cg.c_type(params[0].type_annotation)
    args = ", ".join([f"({loop_t})(c->lo + i)", *uses])
    cg.parallel_defs.append(
        f"struct {ctx_t} {{ {' '.join(fields)} }};\n"
        f"static void {rng}(void* p, int64_t b, int64_t e) {{\n"
        f"  const struct {ctx_t}* c = (const struct {ctx_t}*)p;\n"
        f"  for (int64_t i = b; i < e; ++i) {callee.c_name}({args});\n"
        "}\n"
    )
    grain = int(s.annotations.get(PARALLEL_GRAIN, 0))
    cg.emit("{")
    cg.emit(f"{cg.INDENT}struct {ctx_t} {inst} = {{{', '.join(inits)}}};")
    extent = f"(int64_t)({cg.expr(s.extent)})"
    cg.emit(f"{cg.INDENT}kiln_pool_launch({extent}, {grain}, {rng}, &{inst});")
    cg.emit("}")


def emit_omp_loop(cg: CodeGenC, s: S.For, head: str) -> None:
    """Print parallel loop ``s`` (its ``for`` line: ``head``) as an OpenMP region whose errors
    are handed over through an error slot and re-raised after the region. A loop with a grain
    (`kiln.tir.attrs.PARALLEL_GRAIN`) runs as the region from that trip count up, else as a
    serial copy of the loop.

    NOTE: the serial copy, not an OpenMP ``if`` clause: ``GOMP_parallel`` costs ~0.5 us per
    call even when the clause is false (measured on Zen 3, libgomp of gcc 12), a third of a
    symbolic-size softmax over 16 rows of 8 and 0.5 us per kernel of a small dynamic model."""
    grain = s.annotations.get(PARALLEL_GRAIN)
    if grain is None:
        _emit_region(cg, s, head)
        return
    cg.emit(f"if ({cg.expr(s.extent)} >= {int(grain)}) {{")
    cg.level += 1
    _emit_region(cg, s, head)
    cg.level -= 1
    cg.emit("} else {")
    cg.level += 1
    cg.stmt(replace(s, kind=S.ForKind.SERIAL, annotations={}))
    cg.level -= 1
    cg.emit("}")


def _emit_region(cg: CodeGenC, s: S.For, head: str) -> None:
    slot, label = cg.temp("perr"), cg.temp("next")
    ex = cg.parallel_exit(slot, label)
    cg.fn.exits.append(ex)
    cg.level += 1
    try:
        with cg.capture() as body:
            cg.stmt(s.body)
    finally:
        cg.level -= 1
        cg.fn.exits.pop()
    if ex.used:
        cg.emit(f"void* volatile {slot} = NULL;")
    first, last = cg.mark_loop(s)
    cg.emit(cg.PARALLEL_PRAGMA)
    cg.emit(head + first)
    if ex.used:
        cg.emit(f"{cg.INDENT}if ({slot} != NULL) continue;")
    cg.lines.extend(body)
    if ex.check_pending:
        # NOTE: the flag is thread-local, so a worker must hand its error over here.
        handover = f"kiln_error_pending = 0; kiln_par_capture(&{slot});"
        cg.emit(f"{cg.INDENT}if (kiln_error_pending) {{ {handover} }}")
    if ex.used:
        cg.emit(f"{cg.INDENT}{label}:;")
    cg.emit("}" + last)
    if ex.used:
        cg.emit_guard(f"{slot} != NULL", (f"kiln_par_reraise({slot});",))
