"""CodeGenC: a lowered TIR module as one C translation unit.

Layout of the output: prelude (includes, helpers, vector typedefs), declarations of outside
functions used through ``call_extern``, a forward declaration of every PrimFunc, then every
definition. Because all functions are declared first, any function may call any other, in any
order (mutual recursion included).

Naming: exposed functions keep their ``global_symbol`` as C name when it is free; private
functions are named after their `GlobalVar`; both are made unique and C-safe by `CNameSupply`
(a private function called ``int`` becomes ``int_1``). Locals of a function come from a child
supply, so they never shadow a function. Two functions claiming one ``global_symbol`` is an error.

Calling convention of the typed C functions: a function returning void in TIR returns an
``int32_t`` error code (0 ok, -1 with a tvm-ffi error raised); its callers check it and unwind.
A function returning a value returns it directly and flags errors in ``kiln_error_pending``.
Every error exit frees the heap scratch buffers live at that point. A parallel loop whose body
is an outlined no-error call runs on kiln's thread pool (`kiln.codegen.c_parallel`); any other
parallel loop is an OpenMP region. Inside an OpenMP parallel loop an error cannot return: it
is moved to a shared slot, the iteration ends, and the thread that started the loop raises it
afterwards. A function marked ``kiln.no_error`` (the bodies
`OutlineParallelLoops` moves out of parallel loops) is called without a check, and emitting an
error exit in one is an internal error.

Loops: a vectorized loop is printed as a scalar loop under ``#pragma omp simd`` (GCC's
auto-vectorizer does the rest); explicit vector code arrives already written with vectors
(`kiln.tir.transform.VectorizeLoop`), and an ``IfThenElse`` on a vector condition (which only
that pass produces) is a masked store. `CodeGenC.vector_loops` maps the line of each loop kiln
asked to vectorize to that loop, so the compiler's missed-vectorization notes can name it
(`kiln.codegen.vector_report`).

Subclasses (CUDA) override the class attributes and the ``stmt_<Node>`` / ``expr_<Node>`` /
``call_<op>`` methods they need; `kiln.codegen.c_host.CodeGenCHost` adds the tvm-ffi
entry points.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar

from kiln.codegen.c_expr import CExprEmitter, c_string, is_op
from kiln.codegen.c_message import assert_message, message_values, printf_cast, printf_format
from kiln.codegen.c_parallel import emit_omp_loop, emit_pool_loop, outlined_call
from kiln.codegen.names import C_HEADER_NAMES, CNameSupply
from kiln.codegen.vector_report import VectorLoop, loop_marks, strip_loop_marks
from kiln.errors import CodegenError
from kiln.ir.deep import descend
from kiln.ir.dtype import DataType
from kiln.ir.function import GlobalVar
from kiln.ir.module import IRModule
from kiln.tir import expr as E
from kiln.tir import stmt as S
from kiln.tir.analysis import get_type
from kiln.tir.attrs import NO_ERROR, NOALIAS, STACK_ALLOC_BYTES
from kiln.tir.builtin import MATH_SYMBOLS
from kiln.tir.function import PrimFunc
from kiln.tir.type import PointerType, TupleType


@dataclass
class Exit:
    """Where an error unwinds to: the function's caller, or the end of a parallel iteration."""

    kind: str  # "function" | "parallel"
    heap_mark: int
    slot: str = ""
    label: str = ""
    used: bool = False
    check_pending: bool = False  # a value-returning callee may flag an error in this iteration


@dataclass
class FuncState:
    """Emission state of one PrimFunc: its C name, local names, live heap buffers, exits."""

    gv: GlobalVar
    func: PrimFunc
    c_name: str
    label: str
    names: CNameSupply
    vars: dict[E.Var, str] = field(default_factory=dict)
    heap: list[str] = field(default_factory=list)  # release statements, innermost last
    exits: list[Exit] = field(default_factory=list)

    @property
    def returns_value(self) -> bool:
        return not (isinstance(self.func.ret_type, TupleType) and not self.func.ret_type.fields)

    @property
    def no_error(self) -> bool:
        """The function promises never to raise (`kiln.tir.attrs.NO_ERROR`): calls go unchecked."""
        return bool(self.func.get_attr(NO_ERROR, False))


class CodeGenC(CExprEmitter):
    """Emit a module of lowered PrimFuncs as C (see module docstring)."""

    FUNC_QUALIFIER: ClassVar[str] = "static "
    ERROR_CODE_TYPE: ClassVar[str] = "int32_t"
    STACK_ALLOC_BYTES: ClassVar[int] = STACK_ALLOC_BYTES
    SMALL_SCRATCH_BYTES: ClassVar[int] = 4096
    """A symbolic-size scratch buffer up to this size lives in a stack array of this size."""
    INDENT: ClassVar[str] = "  "
    PLAIN_SCOPES: ClassVar[frozenset[str]] = frozenset({"global", "local"})
    PARALLEL_PRAGMA: ClassVar[str] = "#pragma omp parallel for schedule(static)"
    SIMD_PRAGMA: ClassVar[str] = "#pragma omp simd"

    def __init__(self) -> None:
        super().__init__()
        self.names = CNameSupply()
        self.funcs: dict[GlobalVar, FuncState] = {}
        self.by_symbol: dict[str, GlobalVar] = {}
        self.extern_decls: dict[str, str] = {}
        self.decls: list[str] = []
        self.defs: list[str] = []
        self.parallel_defs: list[str] = []
        self.lines: list[str] = []
        self.level = 0
        self.exit_count = 0
        self._fn: FuncState | None = None
        self._stmt_dispatch: dict[type, Callable[[Any], None]] = {}
        self._loops: list[tuple[str, str, bool]] = []
        self.vector_loops: list[VectorLoop] = []
        """After `finish`: where each loop is in the output (see `kiln.codegen.vector_report`)."""

    # -- module -----------------------------------------------------------------------------
    def add_module(self, mod: IRModule) -> None:
        """Declare, then define, every PrimFunc of ``mod``."""
        funcs = [(gv, f) for gv, f in mod.items() if isinstance(f, PrimFunc)]
        self.assign_names(funcs)
        for gv, _ in funcs:
            self.decls.append(self.signature(self.funcs[gv]) + ";")
        for gv, _ in funcs:
            self.define_function(self.funcs[gv])

    def finish(self) -> str:
        """The whole translation unit."""
        parts = [self.prelude.render()]
        if self.extern_decls:
            parts.append("\n".join(self.extern_decls.values()) + "\n")
        parts.append("\n".join(self.decls) + "\n")
        parts.extend(self.parallel_defs)
        parts.extend(self.defs)
        text, self.vector_loops = strip_loop_marks("\n".join(parts), self._loops)
        return text

    def assign_names(self, funcs: list[tuple[GlobalVar, PrimFunc]]) -> None:
        """C names for all functions: exposed first (keeping their symbol), then private."""
        exposed: dict[str, GlobalVar] = {}
        for gv, f in funcs:
            sym = f.global_symbol
            if sym is None:
                continue
            if sym in exposed:
                raise CodegenError(
                    f"functions {exposed[sym].name_hint!r} and {gv.name_hint!r} both have "
                    f"global_symbol {sym!r}; exported names must be unique in a module"
                )
            if not sym.isidentifier() or not sym.isascii():
                raise CodegenError(f"global_symbol {sym!r} of {gv.name_hint!r} is not a C name")
            exposed[sym] = gv
        ordered = [p for p in funcs if p[1].global_symbol] + [
            p for p in funcs if not p[1].global_symbol
        ]
        for gv, f in ordered:
            label = f.global_symbol or gv.name_hint
            c_name = self.names.fresh(label)
            self.funcs[gv] = FuncState(gv, f, c_name, label, CNameSupply())
            self.by_symbol.setdefault(label, gv)
        for gv, f in funcs:
            self.by_symbol.setdefault(gv.name_hint, gv)
            st = self.funcs[gv]
            st.names = self.names.child()
            for p in f.params:
                st.vars[p] = st.names.fresh(p.name)

    def signature(self, st: FuncState) -> str:
        ret = self.c_type(st.func.ret_type) if st.returns_value else self.ERROR_CODE_TYPE
        params = ", ".join(self.param_decl(st, p) for p in st.func.params) or "void"
        return f"{self.FUNC_QUALIFIER}{ret} {st.c_name}({params})"

    def param_decl(self, st: FuncState, p: E.Var) -> str:
        """``<type> <name>`` of a parameter; in a ``tir.noalias`` function a typed data pointer
        is ``restrict``, so GCC vectorizes a loop reading one buffer and writing another
        without versioning it for aliasing."""
        decl = self.declare(p, st.vars[p])
        if is_noalias(st.func) and isinstance(p.type_annotation, PointerType):
            return restrict_decl(decl)
        return decl

    def define_function(self, st: FuncState) -> None:
        self._fn = st
        st.exits = [Exit("function", 0)]
        self.lines, self.level = [], 1
        self.stmt(st.func.body)
        self.emit("return 0;")
        self.defs.append(f"{self.signature(st)} {{\n" + "\n".join(self.lines) + "\n}\n")
        self._fn = None

    # -- helpers ----------------------------------------------------------------------------
    @property
    def fn(self) -> FuncState:
        if self._fn is None:
            raise CodegenError("internal: no function is being emitted")
        return self._fn

    def emit(self, line: str) -> None:
        self.lines.append(self.INDENT * self.level + line)

    def emit_block(self, head: str, body: Callable[[], None], tail: str = "}") -> None:
        self.emit(head)
        self.level += 1
        body()
        self.level -= 1
        self.emit(tail)

    @contextmanager
    def capture(self) -> Iterator[list[str]]:
        """Collect the lines emitted inside the block instead of appending them."""
        saved, self.lines = self.lines, []
        try:
            yield self.lines
        finally:
            self.lines = saved

    def var_name(self, v: E.Var) -> str:
        name = self.fn.vars.get(v)
        if name is None:
            raise CodegenError(f"{self.fn.label}: variable {v.name!r} is used but not defined")
        return name

    def bind_var(self, v: E.Var) -> str:
        name = self.fn.names.fresh(v.name)
        self.fn.vars[v] = name
        return name

    def error_exit(self) -> list[str]:
        """Statements that unwind after an error was raised (frees live scratch first)."""
        st = self.fn
        if st.no_error:
            raise CodegenError(
                f"internal: {st.label} is marked {NO_ERROR} but needs an error exit; the pass "
                "that set the attribute missed something that can raise"
            )
        ex = st.exits[-1]
        ex.used = True
        self.exit_count += 1
        frees = list(reversed(st.heap[ex.heap_mark :]))
        if ex.kind == "parallel":
            self.prelude.need("parallel_errors")
            return [f"kiln_par_capture(&{ex.slot});", *frees, f"goto {ex.label};"]
        if st.returns_value:
            self.prelude.need("pending")
            return ["kiln_error_pending = 1;", *frees, "return 0;"]
        return [*frees, "return -1;"]

    def emit_guard(self, failed: str, before: tuple[str, ...] = ()) -> None:
        """``if (failed) { before; unwind }``."""
        self.emit(f"if ({failed}) {{")
        for line in (*before, *self.error_exit()):
            self.emit(self.INDENT + line)
        self.emit("}")

    # -- statements -------------------------------------------------------------------------
    def stmt(self, s: S.Stmt) -> None:
        fn = self._stmt_dispatch.get(type(s))
        if fn is None:
            fn = getattr(self, f"stmt_{type(s).__name__}", None)
            if fn is None:
                raise CodegenError(f"the C backend cannot emit statement {type(s).__name__}")
            self._stmt_dispatch[type(s)] = fn
        descend(self, fn, s)

    def stmt_SeqStmt(self, s: S.SeqStmt) -> None:
        for x in s.seq:
            self.stmt(x)

    def stmt_LetStmt(self, s: S.LetStmt) -> None:
        value = self.expr(s.value)
        name = self.bind_var(s.var)
        if s.var.dtype.lanes > 1 and s.var.dtype.element_of().is_bool:
            self.emit(f"__auto_type {name} = {value};")
        else:
            self.emit(f"{self.declare(s.var, name)} = {value};")
        self.stmt(s.body)

    def stmt_DeclBuffer(self, s: S.DeclBuffer) -> None:
        self.stmt(s.body)

    def stmt_AttrStmt(self, s: S.AttrStmt) -> None:
        if s.attr_key in ("thread_extent", "virtual_thread"):
            raise CodegenError(
                f"{self.fn.label}: {s.attr_key} needs a GPU target; the C backend runs on the host"
            )
        self.stmt(s.body)

    def stmt_IfThenElse(self, s: S.IfThenElse) -> None:
        if s.condition.dtype.lanes > 1:
            self.masked_store(s)
            return
        self.emit(f"if ({self.expr(s.condition)}) {{")
        self.level += 1
        self.stmt(s.then_case)
        self.level -= 1
        if s.else_case is not None:
            self.emit_block("} else {", lambda: self.stmt(s.else_case))  # type: ignore[arg-type]
        else:
            self.emit("}")

    def masked_store(self, s: S.IfThenElse) -> None:
        """``if (mask) buf[index] = vector``: the active lanes are stored; in the value, vector
        loads from the function's arguments read only the active lanes (an inactive lane may
        lie past the end of an argument), other loads read every lane."""
        store, lanes = s.then_case, s.condition.dtype.lanes
        if (
            s.else_case is not None
            or not isinstance(store, S.BufferStore)
            or store.value.dtype.lanes != lanes
        ):
            raise CodegenError(
                f"{self.fn.label}: a vector condition may only guard one vector store"
            )
        index = self.flat_index(store.buffer, store.indices, "store")
        ptr = self.buffer_pointer(store.buffer)
        m, i, v, lane = self.temp("m"), self.temp("i"), self.temp("v"), self.temp("l")
        self.emit(f"{{ __auto_type {m} = {self.expr(s.condition)};")
        self.load_mask = (m, frozenset(self.fn.func.params))
        try:
            value = self.expr(store.value)
        finally:
            self.load_mask = None
        self.emit(f"  __auto_type {i} = {self.expr(index)}; __auto_type {v} = {value};")
        elem = self.to_storage(store.buffer.dtype, f"{v}[{lane}]")
        loop = f"for (int {lane} = 0; {lane} < {lanes}; ++{lane}) if ({m}[{lane}]) "
        self.emit(f"  {loop}{ptr}[{i}[{lane}]] = {elem}; }}")

    def stmt_While(self, s: S.While) -> None:
        self.emit_block(f"while ({self.expr(s.condition)}) {{", lambda: self.stmt(s.body))

    def stmt_AssertStmt(self, s: S.AssertStmt) -> None:
        kind, message = assert_message(s.message)
        values = message_values(s.message)
        if values:  # NOTE: evaluated only on failure, inside the guard
            self.prelude.need("raise_fmt")
            args = "".join(f", {printf_cast(self.expr(v), v.dtype)}" for v in values)
            fmt = c_string(printf_format(message, values))
            raise_ = f"kiln_raise_fmt({c_string(kind)}, {fmt}{args});"
        else:
            self.prelude.need("raise")
            raise_ = f"kiln_raise({c_string(kind)}, {c_string(message)});"
        self.emit_guard(f"!{self.expr(s.condition)}", (raise_,))
        self.stmt(s.body)

    def stmt_Evaluate(self, s: S.Evaluate) -> None:
        v = s.value
        if isinstance(v, (E.IntImm, E.FloatImm, E.StringImm, E.Var)):
            return
        if isinstance(v, E.Call) and isinstance(v.op, GlobalVar):
            callee = self.lookup(v.op)
            if callee.no_error:
                self.emit(f"{self.call_global(v)};")
                return
            if not callee.returns_value:
                self.emit_guard(f"{self.call_global(v)} != 0")
                return
        if is_op(v, "ret"):
            self.emit_return(v.args[0])  # type: ignore[union-attr]
            return
        self.emit(f"{self.expr(v)};")

    def emit_return(self, value: E.PrimExpr) -> None:
        if any(x.kind == "parallel" for x in self.fn.exits):
            raise CodegenError(f"{self.fn.label}: T.ret inside a parallel loop is not supported")
        if not self.fn.returns_value:
            for release in reversed(self.fn.heap):
                self.emit(release)
            self.emit("return 0;")
            return
        rv = self.temp("rv")
        self.emit(f"{self.c_type(self.fn.func.ret_type)} {rv} = {self.expr(value)};")
        for release in reversed(self.fn.heap):
            self.emit(release)
        self.emit(f"return {rv};")

    def stmt_BufferStore(self, s: S.BufferStore) -> None:
        buf = s.buffer
        index = self.flat_index(buf, s.indices, "store")
        ptr = self.buffer_pointer(buf)
        value = self.expr(s.value)
        if index.dtype.lanes == 1:
            self.emit(f"{ptr}[{self.expr(index)}] = {self.to_storage(buf.dtype, value)};")
        elif (
            isinstance(index, E.Ramp) and E.is_const_int(index.stride, 1) and not buf.dtype.is_bool
        ):
            vt = self.unaligned_vector_type(s.value.dtype)
            self.emit(f"*({vt}*)({ptr} + {self.expr(index.base)}) = {value};")
        else:
            i, v, lane = self.temp("i"), self.temp("v"), self.temp("l")
            n = index.dtype.lanes
            elem = f"({v}[{lane}] != 0)" if buf.dtype.is_bool else f"{v}[{lane}]"
            loop = f"for (int {lane} = 0; {lane} < {n}; ++{lane}) {ptr}[{i}[{lane}]] = {elem};"
            decls = f"__auto_type {i} = {self.expr(index)}; __auto_type {v} = {value};"
            self.emit(f"{{ {decls} {loop} }}")

    def stmt_Allocate(self, s: S.Allocate) -> None:
        ty = s.buffer_var.type_annotation
        scope = ty.scope if isinstance(ty, PointerType) else "global"
        if scope not in self.PLAIN_SCOPES:
            self.allocate_scoped(s, scope)
            return
        count = E.const_product(s.extents)
        # NOTE: scratch is used through a ``restrict`` pointer. Over a plain local array GCC
        # kept a row reduction's vector accumulators (a scratch array) in memory, a store and a
        # reload per add, when the loop read another scratch array (softmax's sum over its exp
        # row: 308 -> 281 us over 1024x1024 on one Zen 4 core); through ``restrict`` pointers
        # they stay in registers. All accesses go through the pointer, so ``restrict`` holds.
        if count is not None and count * s.dtype.itemsize <= self.STACK_ALLOC_BYTES:
            elem, name = self.storage_type(s.dtype), self.bind_var(s.buffer_var)
            store = self.fn.names.fresh(f"{name}_storage")
            self.emit(f"{elem} {store}[{max(count, 1)}] __attribute__((aligned(64)));")
            self.emit(f"{elem}* restrict {name} = {store};")
            self.stmt(s.body)
            return
        self.prelude.need("alloc")
        self.heap_allocate(s, "kiln_alloc", "free", small=count is None)

    def heap_allocate(self, s: S.Allocate, alloc: str, release: str, small: bool = False) -> None:
        """``s``'s buffer from ``alloc(nbytes, func, name)`` (NULL: an error is raised), freed by
        ``release(pointer)`` after the body and on every error exit inside it. With ``small`` (a
        symbolic size), a size that fits `SMALL_SCRATCH_BYTES` takes a stack array instead (a
        softmax row over a symbolic sequence was a malloc and a free per row)."""
        elem, name = self.storage_type(s.dtype), self.bind_var(s.buffer_var)
        nbytes = " * ".join(
            [f"(int64_t){self.expr(x)}" for x in s.extents] + [str(s.dtype.itemsize)]
        )
        where = f"{c_string(self.fn.label)}, {c_string(s.buffer_var.name)}"
        call = f"({elem}*){alloc}({nbytes}, {where})"
        free = f"{release}({name});"
        if small:
            store = self.fn.names.fresh(f"{name}_stack")
            count = self.SMALL_SCRATCH_BYTES // s.dtype.itemsize
            self.emit(f"{elem} {store}[{count}] __attribute__((aligned(64)));")
            call = f"({nbytes}) <= {self.SMALL_SCRATCH_BYTES} ? {store} : {call}"
            free = f"if ({name} != {store}) {free}"
        self.emit(f"{elem}* restrict {name} = {call};")
        self.emit_guard(f"{name} == NULL")
        self.fn.heap.append(free)
        self.stmt(s.body)
        self.emit(self.fn.heap.pop())

    def allocate_scoped(self, s: S.Allocate, scope: str) -> None:
        """Allocation in a target-specific memory scope; the host C backend has none."""
        raise CodegenError(
            f"{self.fn.label}: allocation {s.buffer_var.name!r} in scope {scope!r} needs a GPU "
            "target; the C backend supports 'global' and 'local'"
        )

    # -- loops ------------------------------------------------------------------------------
    def stmt_For(self, s: S.For) -> None:
        if s.kind == S.ForKind.THREAD_BINDING:
            raise CodegenError(
                f"{self.fn.label}: loop {s.loop_var.name!r} is bound to a GPU thread; "
                "the C backend runs on the host"
            )
        lo, ext = self.expr(s.min), self.expr(s.extent)
        name = self.bind_var(s.loop_var)
        hi = ext if E.is_const_int(s.min, 0) else f"({lo} + {ext})"
        head = f"for ({self.type_of(s.loop_var.dtype)} {name} = {lo}; {name} < {hi}; ++{name}) {{"
        if s.kind == S.ForKind.PARALLEL:
            self.parallel_loop(s, head)
            return
        first, last = self.mark_loop(s)
        before = self.exit_count
        self.level += 1
        with self.capture() as body:
            self.stmt(s.body)
        self.level -= 1
        pragma = self.loop_pragma(s, body, self.exit_count != before)
        if pragma:
            self.emit(pragma)
        self.emit(head + first)
        self.lines.extend(body)
        self.emit("}" + last)

    def mark_loop(self, s: S.For) -> tuple[str, str]:
        """Invisible marks for the head and closing lines of loop ``s`` (see `vector_loops`)."""
        self._loops.append((self.fn.label, s.loop_var.name, s.kind == S.ForKind.VECTORIZED))
        return loop_marks(len(self._loops) - 1)

    def loop_pragma(self, s: S.For, body: list[str], exits: bool) -> str | None:
        """The pragma in front of a serial, vectorized or unrolled loop (None: none)."""
        if s.kind == S.ForKind.VECTORIZED:
            # NOTE: `omp simd` forbids jumps out of the loop and nested OpenMP constructs.
            nested = any("#pragma omp" in line for line in body)
            return "#pragma GCC ivdep" if exits or nested else self.SIMD_PRAGMA
        if s.kind == S.ForKind.UNROLLED:
            n = s.extent.value if isinstance(s.extent, E.IntImm) else 8
            return f"#pragma GCC unroll {min(max(n, 1), 65534)}"
        return None

    def parallel_exit(self, slot: str, label: str) -> Exit:
        """The error exit of an OpenMP region: errors go to ``slot``, the iteration ends at
        ``label``."""
        return Exit("parallel", len(self.fn.heap), slot, label)

    def parallel_loop(self, s: S.For, head: str) -> None:
        """A pool launch when the body is an outlined no-error call, else an OpenMP region
        (`kiln.codegen.c_parallel`)."""
        call = outlined_call(self, s)
        if call is not None:
            emit_pool_loop(self, s, call)
        else:
            emit_omp_loop(self, s, head)

    # -- calls ------------------------------------------------------------------------------
    def lookup(self, gv: GlobalVar) -> FuncState:
        st = self.funcs.get(gv)
        if st is None:
            other = self.by_symbol.get(gv.name_hint)
            st = self.funcs.get(other) if other is not None else None
        if st is None:
            raise CodegenError(f"call of {gv.name_hint!r}, which is not a function of the module")
        return st

    def call_global(self, e: E.Call) -> str:
        return self.direct_call(self.lookup(e.op), e.args)  # type: ignore[arg-type]

    def direct_call(self, callee: FuncState, args: tuple[E.PrimExpr, ...]) -> str:
        params = callee.func.params
        if len(args) != len(params):
            caller = self._fn.label if self._fn else "?"
            raise CodegenError(
                f"{caller}: calls {callee.label} with {len(args)} argument(s), but it takes "
                f"{len(params)} ({', '.join(p.name for p in params)})"
            )
        parallel = [x for x in self._fn.exits if x.kind == "parallel"] if self._fn else []
        if callee.returns_value and parallel:
            parallel[-1].check_pending = parallel[-1].used = True
            self.prelude.need("pending")
            self.prelude.need("parallel_errors")
        code = []
        for a, p in zip(args, params):
            want, have = self.c_type(p.type_annotation), self.c_type(get_type(a))
            code.append(self.expr(a) if want == have else f"(({want}){self.expr(a)})")
        return f"{callee.c_name}({', '.join(code)})"

    def call_call_extern(self, e: E.Call) -> str:
        name = e.args[0].value if isinstance(e.args[0], E.StringImm) else None
        if name is None:
            raise CodegenError("call_extern: the first argument must be the function's name")
        args = e.args[1:]
        # NOTE: a math function name (LowerIntrin's calls) always means the C library's, even
        # when a private function of the module has the same name (its C name differs).
        gv = None if name in MATH_SYMBOLS else self.by_symbol.get(name)
        if gv is not None:
            return self.direct_call(self.funcs[gv], args)
        self.declare_extern(name, e.dtype, args)
        fmt: Callable[..., str] = lambda *xs: f"{name}({', '.join(xs)})"  # noqa: E731
        if e.dtype.lanes > 1 or any(a.dtype.lanes > 1 for a in args):
            return self.lanewise(e.dtype, fmt, *args)  # a scalar C function, lane by lane
        return self.round_storage_float(e.dtype, fmt(*(self.expr(a) for a in args)))

    call_call_pure_extern = call_call_extern

    def declare_extern(self, name: str, dtype: DataType, args: tuple[E.PrimExpr, ...]) -> None:
        """One declaration of an outside function, typed from the call (pointers included)."""
        if name in self.extern_decls or name in MATH_SYMBOLS or name in C_HEADER_NAMES:
            return
        types = [
            "const char*"
            if isinstance(a, E.StringImm)
            else self.c_type(get_type(a))
            if a.dtype.lanes == 1
            else self.type_of(a.dtype.element_of())
            for a in args
        ]
        ret = "void" if dtype.is_void else self.type_of(dtype.element_of())
        self.extern_decls[name] = f"{ret} {name}({', '.join(types) or 'void'});"


def is_noalias(func: PrimFunc) -> bool:
    """True if ``func`` promises that its buffer arguments do not overlap (TE lowering sets it)."""
    return bool(func.get_attr(NOALIAS, False))


def restrict_decl(decl: str) -> str:
    """``T* name`` as ``T* restrict name``."""
    ty, _, name = decl.rpartition(" ")
    return f"{ty} restrict {name}"
