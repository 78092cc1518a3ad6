"""Parallel loops through kiln's thread pool (`kiln.runtime.thread_pool`).

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
calling thread. Other parallel loops (a body that may raise) stay OpenMP regions.
"""

from __future__ import annotations

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
