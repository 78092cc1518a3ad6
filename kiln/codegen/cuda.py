"""CodeGenCUDA: the device functions of a lowered module as one CUDA translation unit.

Input (the kernel contract of SplitHostDevice / LowerDeviceKernelLaunch):

- a *kernel* is a PrimFunc with ``calling_conv`` 2 and a ``global_symbol``; it becomes
  ``extern "C" __global__ void __launch_bounds__(n) <symbol>(...)``, with launch bounds when the
  threads per block are a constant. Its parameters are typed data pointers and scalars.
- any other device function becomes a ``__device__`` function; as in `CodeGenC`, every function
  is declared first and defined after, so calls may go in any direction.
- thread indices come from ``thread_extent`` attributes (``T.launch_thread``) or thread-bound
  loops (``T.thread_binding``): the variable *is* ``threadIdx.x`` etc., no loop is emitted.
- ``Allocate`` in scope ``shared`` is a ``__shared__`` array, ``shared.dyn`` views the kernel's
  ``extern __shared__`` buffer (at most one per kernel: run MergeSharedMemoryAllocations),
  ``local`` is a per-thread array; ``tvm_storage_sync("shared")`` is ``__syncthreads()``.
- float16 / bfloat16 are CUDA's ``half`` / ``__nv_bfloat16`` and compute natively; float8 types
  are stored as bytes and computed in float, as in C. Math calls arrive lowered by `LowerIntrin`
  (with the target's ``fast_math``, float32 math is already ``__expf``, ``__logf``...).

Device code cannot raise Python errors: a failed ``AssertStmt`` prints its message and traps.
"""

from __future__ import annotations

from typing import Any, Callable, ClassVar

from kiln.codegen.c import CodeGenC, Exit, FuncState
from kiln.codegen.c_expr import c_string, is_op
from kiln.codegen.c_message import assert_message, message_values, printf_cast, printf_format
from kiln.codegen.c_prelude import storage_float_suffix
from kiln.codegen.cuda_prelude import NATIVE_FLOATS, CudaPrelude
from kiln.errors import CodegenError
from kiln.ir.dtype import DataType
from kiln.ir.module import IRModule
from kiln.ir.visitor import post_order_visit
from kiln.tir import expr as E
from kiln.tir import stmt as S
from kiln.tir.analysis.device import is_kernel
from kiln.tir.attrs import NOALIAS
from kiln.tir.type import PointerType

THREAD_TAGS = frozenset(f"{k}.{a}" for k in ("threadIdx", "blockIdx") for a in ("x", "y", "z"))

DYN_SHMEM = "kiln_dyn_shmem"
SHMEM_ALIGN = 16


class CodeGenCUDA(CodeGenC):
    """Emit the device functions of a module as CUDA C++ (see module docstring)."""

    INDENT: ClassVar[str] = "  "
    BLEND_VECTORS: ClassVar[bool] = False

    def __init__(self) -> None:
        super().__init__()
        self.prelude = CudaPrelude()
        self.kernels: list[str] = []
        self._dyn_shmem = False

    # -- module and functions ---------------------------------------------------------------
    def add_module(self, mod: IRModule) -> None:
        super().add_module(mod)
        self.kernels = [st.c_name for st in self.funcs.values() if is_kernel(st.func)]

    def signature(self, st: FuncState) -> str:
        params = ", ".join(self.param_decl(st, p) for p in st.func.params) or "void"
        if is_kernel(st.func):
            bounds = threads_per_block(st.func.body)
            lb = f"__launch_bounds__({bounds}) " if bounds else ""
            return f'extern "C" __global__ void {lb}{st.c_name}({params})'
        ret = self.c_type(st.func.ret_type) if st.returns_value else "void"
        return f"__device__ {ret} {st.c_name}({params})"

    def param_decl(self, st: FuncState, p: E.Var) -> str:
        decl = self.declare(p, st.vars[p])
        noalias = st.func.get_attr(NOALIAS, False)
        if noalias and isinstance(p.type_annotation, PointerType) and is_kernel(st.func):
            ty, _, name = decl.rpartition(" ")
            return f"{ty} __restrict__ {name}"
        return decl

    def define_function(self, st: FuncState) -> None:
        self._fn = st
        st.exits = [Exit("function", 0)]
        self.lines, self.level = [], 1
        self._dyn_shmem = False
        self.stmt(st.func.body)
        self.defs.append(f"{self.signature(st)} {{\n" + "\n".join(self.lines) + "\n}\n")
        self._fn = None

    def error_exit(self) -> list[str]:
        return ["__trap();"]

    # -- statements -------------------------------------------------------------------------
    def stmt_AttrStmt(self, s: S.AttrStmt) -> None:
        if s.attr_key == "thread_extent":
            iv = s.node
            if not isinstance(iv, S.IterVar):
                raise CodegenError(f"{self.fn.label}: thread_extent must annotate an IterVar")
            self.bind_thread(iv.var, iv.thread_tag, None)
            self.stmt(s.body)
            return
        if s.attr_key == "virtual_thread":
            raise CodegenError(
                f"{self.fn.label}: virtual threads must be lowered before CUDA code generation"
            )
        self.stmt(s.body)

    def bind_thread(self, var: E.Var, tag: str, start: E.PrimExpr | None) -> None:
        """Make ``var`` stand for the CUDA index ``tag`` (plus ``start``) in the body."""
        if tag not in THREAD_TAGS:
            raise CodegenError(
                f"{self.fn.label}: unknown thread tag {tag!r} for {var.name!r}; expected one of "
                f"{', '.join(sorted(THREAD_TAGS))}"
            )
        code = f"(({self.type_of(var.dtype)}){tag})"
        if start is not None and not E.is_const_int(start, 0):
            code = f"({self.expr(start)} + {code})"
        self.fn.vars[var] = code

    def stmt_For(self, s: S.For) -> None:
        if s.kind == S.ForKind.THREAD_BINDING:
            tag = s.thread_binding.thread_tag if s.thread_binding is not None else ""
            self.bind_thread(s.loop_var, tag, s.min)
            self.stmt(s.body)
            return
        if s.kind == S.ForKind.PARALLEL:
            raise CodegenError(
                f"{self.fn.label}: a parallel loop ({s.loop_var.name!r}) cannot run in a CUDA "
                "kernel; bind it to threads (T.thread_binding) instead"
            )
        super().stmt_For(s)

    def loop_pragma(self, s: S.For, body: list[str], exits: bool) -> str | None:
        if s.kind in (S.ForKind.UNROLLED, S.ForKind.VECTORIZED):
            return "#pragma unroll"
        return None

    def stmt_Evaluate(self, s: S.Evaluate) -> None:
        v = s.value
        if isinstance(v, (E.IntImm, E.FloatImm, E.StringImm, E.Var)):
            return
        if is_op(v, "ret"):
            self.emit_return(v.args[0])  # type: ignore[union-attr]
            return
        self.emit(f"{self.expr(v)};")

    def emit_return(self, value: E.PrimExpr) -> None:
        if not self.fn.returns_value:
            self.emit("return;")
            return
        self.emit(f"return {self.expr(value)};")

    def stmt_AssertStmt(self, s: S.AssertStmt) -> None:
        _, message = assert_message(s.message)
        values = message_values(s.message)
        text = f"kiln: assertion failed in {self.fn.label}: {message}\n"
        if values:
            args = "".join(f", {printf_cast(self.expr(v), v.dtype)}" for v in values)
            printf = f"printf({c_string(printf_format(text, values))}{args});"
        else:
            printf = f'printf("%s", {c_string(text)});'
        self.emit(f"if (!{self.expr(s.condition)}) {{")
        self.emit(self.INDENT + printf)
        self.emit(f"{self.INDENT}__trap();")
        self.emit("}")
        self.stmt(s.body)

    def stmt_BufferStore(self, s: S.BufferStore) -> None:
        index = self.flat_index(s.buffer, s.indices, "store")
        if index.dtype.lanes == 1 or (
            isinstance(index, E.Ramp) and E.is_const_int(index.stride, 1)
        ):
            super().stmt_BufferStore(s)
            return
        ptr = self.buffer_pointer(s.buffer)
        i, v, lane = self.temp("i"), self.temp("v"), self.temp("l")
        n = index.dtype.lanes
        loop = f"for (int {lane} = 0; {lane} < {n}; ++{lane}) {ptr}[{i}[{lane}]] = {v}[{lane}];"
        self.emit(f"{{ auto {i} = {self.expr(index)}; auto {v} = {self.expr(s.value)}; {loop} }}")

    def stmt_LetStmt(self, s: S.LetStmt) -> None:
        value = self.expr(s.value)
        name = self.bind_var(s.var)
        self.emit(f"{self.declare(s.var, name)} = {value};")
        self.stmt(s.body)

    def stmt_Allocate(self, s: S.Allocate) -> None:
        ty = s.buffer_var.type_annotation
        scope = ty.scope if isinstance(ty, PointerType) else "global"
        elem = self.storage_type(s.dtype)
        if scope == "shared.dyn":
            self.allocate_dynamic_shared(s, elem)
            return
        count = E.const_product(s.extents)
        if scope not in ("shared", "local"):
            raise CodegenError(
                f"{self.fn.label}: cannot allocate {s.buffer_var.name!r} in scope {scope!r} "
                "inside CUDA device code; pass global arrays in as arguments (supported scopes: "
                "'shared', 'shared.dyn', 'local')"
            )
        if count is None:
            raise CodegenError(
                f"{self.fn.label}: {scope} allocation {s.buffer_var.name!r} needs a constant "
                "size in CUDA (use 'shared.dyn' for a size known only at launch)"
            )
        name = self.bind_var(s.buffer_var)
        qual = f"__shared__ __align__({SHMEM_ALIGN}) " if scope == "shared" else ""
        self.emit(f"{qual}{elem} {name}[{max(count, 1)}];")
        self.stmt(s.body)

    def allocate_dynamic_shared(self, s: S.Allocate, elem: str) -> None:
        if self._dyn_shmem:
            raise CodegenError(
                f"{self.fn.label}: more than one 'shared.dyn' allocation; CUDA has one dynamic "
                "shared buffer per kernel (run MergeSharedMemoryAllocations first)"
            )
        self._dyn_shmem = True
        name = self.bind_var(s.buffer_var)
        self.emit(f"extern __shared__ __align__({SHMEM_ALIGN}) unsigned char {DYN_SHMEM}[];")
        self.emit(f"{elem}* {name} = ({elem}*){DYN_SHMEM};")
        self.stmt(s.body)

    # -- calls ------------------------------------------------------------------------------
    def call_tvm_storage_sync(self, e: E.Call) -> str:
        scope = e.args[0].value if e.args and isinstance(e.args[0], E.StringImm) else "shared"
        if scope in ("shared", "shared.dyn"):
            return "__syncthreads()"
        if scope == "warp":
            return "__syncwarp()"
        raise CodegenError(
            f"{self.fn.label}: tvm_storage_sync({scope!r}) is not supported on CUDA "
            "(a grid-wide barrier needs a separate kernel launch)"
        )

    def call_launch_kernel(self, e: E.Call) -> str:
        raise CodegenError(
            f"{self.fn.label}: device code cannot launch kernels (dynamic parallelism is not "
            "supported); launches belong in host functions"
        )

    def declare_extern(self, name: str, dtype: DataType, args: tuple[E.PrimExpr, ...]) -> None:
        # NOTE: CUDA intrinsics (__expf, __shfl_down_sync, atomicAdd...) are declared by NVRTC.
        if name.startswith("__") or name.startswith("atomic"):
            return
        super().declare_extern(name, dtype, args)

    def call_prefetch(self, e: E.Call) -> str:
        """A CPU cache hint: GPU code has no use for it (global loads go through L2 anyway)."""
        return "((void)0)"

    def call_popcount(self, e: E.Call) -> str:
        fn = "__popcll" if e.args[0].dtype.bits == 64 else "__popc"
        return f"(({self.type_of(e.dtype)}){fn}({self.expr(e.args[0])}))"

    def call_reinterpret(self, e: E.Call) -> str:
        src, dst = e.args[0].dtype, e.dtype
        if src.itemsize != dst.itemsize:
            raise CodegenError(f"reinterpret: {src} and {dst} differ in size")
        s_t, d_t = self.storage_type(src), self.storage_type(dst)
        value = self.to_storage(src, self.expr(e.args[0]))
        back = self.from_storage(dst, "r")
        body = f"{s_t} a = {value}; {d_t} r; memcpy(&r, &a, sizeof(r)); return {back};"
        return f"([&]() {{ {body} }}())"

    # -- expressions NVRTC spells differently -----------------------------------------------
    def expr_Let(self, e: E.Let) -> str:
        name = self.bind_var(e.var)
        value, body = self.expr(e.value), self.expr(e.body)
        return f"([&]() {{ {self.declare(e.var, name)} = {value}; return {body}; }}())"

    def expr_Cast(self, e: E.Cast) -> str:
        src, dst = e.value.dtype, e.dtype
        if dst.lanes > 1:
            value = self.expr(e.value)
            return f"kiln_vcast<{self.type_of(dst.element_of())}>({value})"
        native_src = str(src) in NATIVE_FLOATS
        if str(dst) in NATIVE_FLOATS:
            value = self.expr(e.value)
            if src == dst:
                return value
            if src.is_float and src.bits == 64:
                conv = "__double2half" if str(dst) == "float16" else "__double2bfloat16"
                return f"{conv}({value})"
            return self.round_storage_float(dst, value)
        if native_src:
            value = self.expr(e.value)
            if dst.is_bool:
                return f"((float)({value}) != 0.0f)"
            return f"(({self.type_of(dst)})(float)({value}))"
        return super().expr_Cast(e)

    def expr_Not(self, e: E.Not) -> str:
        if e.dtype.lanes > 1:
            return self.lanewise(e.dtype, lambda x: f"!{x}", e.a)
        return super().expr_Not(e)

    def expr_And(self, e: E.BinaryOp) -> str:
        return (
            f"({self.expr(e.a)} && {self.expr(e.b)})" if e.dtype.lanes == 1 else self._bool_vec(e)
        )

    def expr_Or(self, e: E.BinaryOp) -> str:
        return (
            f"({self.expr(e.a)} || {self.expr(e.b)})" if e.dtype.lanes == 1 else self._bool_vec(e)
        )

    def _bool_vec(self, e: E.BinaryOp) -> str:
        op = "&&" if isinstance(e, E.And) else "||"
        return self.lanewise(e.dtype, lambda a, b: f"({a} {op} {b})", e.a, e.b)

    def expr_Ramp(self, e: E.Ramp) -> str:
        elem = self.type_of(e.dtype.element_of())
        self.prelude.need("vector")
        return f"kiln_ramp<{elem}, {e.lanes}>({self.expr(e.base)}, {self.expr(e.stride)})"

    def expr_Broadcast(self, e: E.Broadcast) -> str:
        elem = self.type_of(e.dtype.element_of())
        self.prelude.need("vector")
        return f"kiln_splat<{elem}, {e.lanes}>({self.expr(e.value)})"

    def lanewise(self, dtype: DataType, fmt: Callable[..., str], *operands: E.PrimExpr) -> str:
        vt = self.type_of(dtype)
        binds, args = [], []
        for k, op in enumerate(operands):
            binds.append(f"auto t{k} = {self.expr(op)};")
            args.append(f"t{k}[l]" if op.dtype.lanes > 1 else f"t{k}")
        loop = f"for (int l = 0; l < {dtype.lanes}; ++l) r[l] = {fmt(*args)};"
        return f"([&]() {{ {' '.join(binds)} {vt} r; {loop} return r; }}())"

    # -- types ------------------------------------------------------------------------------
    def type_of(self, dtype: DataType) -> str:
        native = NATIVE_FLOATS.get(str(dtype))
        if native is not None:
            self.prelude.need(native[2])
            return native[0]
        return super().type_of(dtype)

    def storage_type(self, dtype: DataType) -> str:
        if str(dtype) in NATIVE_FLOATS:
            return self.type_of(dtype)
        return super().storage_type(dtype)

    def vector_type(self, dtype: DataType) -> str:
        elem = dtype.element_of()
        self.prelude.need("vector")
        if elem.is_bool or elem.bits == 1:
            return f"kiln_vec<bool, {dtype.lanes}>"
        if str(elem) not in NATIVE_FLOATS and _storage_only(elem):
            raise CodegenError(f"vectors of {elem} are not supported by the CUDA backend")
        return f"kiln_vec<{self.type_of(elem)}, {dtype.lanes}>"

    def unaligned_vector_type(self, dtype: DataType) -> str:
        return self.vector_type(dtype)

    def round_storage_float(self, dtype: DataType, code: str) -> str:
        native = NATIVE_FLOATS.get(str(dtype.element_of()))
        if native is None:
            return super().round_storage_float(dtype, code)
        if dtype.lanes > 1:
            return code
        self.prelude.need(native[2])
        return f"{native[1]}((float)({code}))"

    def binary(self, e: E.BinaryOp, op: str) -> str:
        if str(e.dtype.element_of()) in NATIVE_FLOATS:
            return f"({self.expr(e.a)} {op} {self.expr(e.b)})"
        return super().binary(e, op)

    def from_storage(self, dtype: DataType, code: str) -> str:
        return (
            code if str(dtype.element_of()) in NATIVE_FLOATS else super().from_storage(dtype, code)
        )

    def to_storage(self, dtype: DataType, code: str) -> str:
        return code if str(dtype.element_of()) in NATIVE_FLOATS else super().to_storage(dtype, code)


def threads_per_block(body: S.Stmt) -> int | None:
    """The constant number of threads per block of a kernel body, or None when not constant."""
    extents: dict[str, int] = {}
    dynamic = False

    def visit(n: Any) -> None:
        nonlocal dynamic
        tag, ext = None, None
        if isinstance(n, S.AttrStmt) and n.attr_key == "thread_extent":
            tag, ext = getattr(n.node, "thread_tag", ""), n.value
        elif isinstance(n, S.For) and n.kind == S.ForKind.THREAD_BINDING and n.thread_binding:
            tag, ext = n.thread_binding.thread_tag, n.extent
        if tag is None or not tag.startswith("threadIdx."):
            return
        if not isinstance(ext, E.IntImm):
            dynamic = True
            return
        extents[tag] = max(extents.get(tag, 1), ext.value)

    post_order_visit(body, visit)
    if dynamic:
        return None
    total = 1
    for v in extents.values():
        total *= v
    return total


def _storage_only(dtype: DataType) -> bool:
    return storage_float_suffix(dtype) is not None


def codegen_cuda(mod: IRModule) -> str:
    """The CUDA source of the device functions of ``mod`` (kernels and their helpers; run
    `LowerIntrin` for the CUDA target first: kiln.build does)."""
    gen = CodeGenCUDA()
    gen.add_module(mod)
    return gen.finish()
