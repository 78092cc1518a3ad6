"""CodeGenCHost: CodeGenC plus what a host library needs to be called through tvm-ffi.

- For every exposed function, after all typed definitions, an exported entry
  ``int __tvm_ffi_<symbol>(void* self, const TVMFFIAny* args, int32_t num_args,
  TVMFFIAny* result)`` that performs the checks of its `PackedAPI` (from MakePackedAPI) in order,
  binds symbolic dimensions, and calls the typed function; a scalar result goes to ``result``.
- ``call_packed("name", ...)``: a call of a global tvm-ffi function, looked up once per call site
  and cached in a static; ``call_cpacked("name", ...)``: a direct call of the entry symbol
  ``__tvm_ffi_<name>``. Both pass ints, floats, bools, strings and pointers; an error raised by
  the callee unwinds the caller.
- In a compiled-mode VM function (``__vmtir__<name>(ctx_ptr, r, c, f)``), the any-list builtins
  and call statements print exactly the C forms of the runtime's contract
  (`kiln.runtime.vm_anylist`, whose helpers print them): ``anylist_setitem_call_packed`` /
  ``_cpacked``, ``anylist_resetitem``, ``anylist_getitem`` as a packed argument, and
  ``call_packed`` / ``call_cpacked`` statements, which go through the VM context (``ctx_ptr``,
  the function's first parameter) so their callees show in ``vm.profile``. Builtins
  (``vm.builtin.*``) are called directly through the context's table, ``vm.builtin.copy`` into
  a register inline. The trailing null
  resource handle of ``call_cpacked`` (TVM's convention) is not passed: the callee's entry
  would count it as an argument.
- For a ``tir.noalias`` function the entry also checks that the byte ranges of the argument
  pairs listed in ``PackedAPI.overlaps`` are disjoint (`emit_overlap_checks`).
- The file ends with `kiln.runtime.metadata_c_source` listing the exposed names and, per
  function, its arguments (name, dtype, tensor or scalar, written or not: `signature`), which
  the runtime reads to explain a call that fails before the entry runs.
"""

from __future__ import annotations

from typing import ClassVar

from kiln.codegen import c_entry_table as table
from kiln.codegen.c import CodeGenC, Exit, FuncState
from kiln.codegen.c_expr import c_string, is_op
from kiln.codegen.c_host_prelude import HOST_HELPERS, QUICK_COMPILE, QUICK_VM_LINES
from kiln.codegen.c_prelude import Prelude
from kiln.errors import CodegenError
from kiln.ir.dtype import DataType
from kiln.ir.module import IRModule
from kiln.ir.op import Op
from kiln.runtime import ArgInfo, metadata_c_source
from kiln.runtime.vm_anylist import (
    ANYLIST_C_HEADER,
    c_any,
    c_call_builtin,
    c_call_cpacked,
    c_call_packed,
    c_copy,
    c_cpacked_decl,
    c_getitem,
    c_resetitem,
    c_unless_shape_ok,
    c_unless_tensor_ok,
)
from kiln.runtime.vm_builtins import builtin, builtin_index
from kiln.runtime.vm_format import VMTIR_ENTRY_PREFIX, VMTIR_PREFIX
from kiln.tir import expr as E
from kiln.tir import stmt as S
from kiln.tir.attrs import PACKED_API, WEAK_SYMBOL
from kiln.tir.function import PrimFunc
from kiln.tir.packed_api import CountCheck, DimCheck, PackedAPI, PackedArg

DL_CODES = {
    "int": 0,
    "uint": 1,
    "float": 2,
    "handle": 3,
    "bfloat": 4,
    "bool": 6,
    "float8_e4m3fn": 10,
    "float8_e5m2": 12,
}
"""DLPack type codes of kiln dtype kinds."""

ENTRY_PARAMS = ("self", "args", "num_args", "result")
COUNT_HELPER = r"""
static int kiln_check_count(const DLTensor* t, int64_t limit, const char* fn, const char* name,
                            const char* type) {
  int64_t n = 1;
  for (int d = 0; d < t->ndim; ++d) {
    if (t->shape[d] == 0) return 0;
  }
  for (int d = 0; d < t->ndim; ++d) {
    if (__builtin_mul_overflow(n, t->shape[d], &n)) n = INT64_MAX;
  }
  if (n <= limit) return 0;
  return kiln_fail("ValueError", "%s: argument %s has %lld elements; this kernel indexes it with "
                   "%s (at most %lld)", fn, name, (long long)n, type, (long long)limit);
}
"""
"""The entry's element-count check (`CountCheck`): a tensor the kernel indexes in too narrow a
type is refused instead of read out of bounds."""
FIELDS = {"shape": 0, "strides": 1, "elem_offset": 2}


def dl_dtype(dtype: DataType) -> str:
    """``(DLDataType){code, bits, lanes}`` as tvm-ffi reports ``dtype`` (bool is 8 bits)."""
    bits = 8 if dtype.is_bool else dtype.bits
    return f"(DLDataType){{{DL_CODES[dtype.kind]}, {bits}, {dtype.lanes}}}"


class CodeGenCHost(CodeGenC):
    """C for the host: typed functions, tvm-ffi entries, packed calls, metadata."""

    ENTRY_PREFIX: ClassVar[str] = "__tvm_ffi_"

    def __init__(self) -> None:
        super().__init__()
        for name in ENTRY_PARAMS:  # an entry's parameters must not hide the function it calls
            self.names.reserve(name)
        self.prelude = Prelude(HOST_HELPERS)
        self.entries: list[str] = []
        self.exposed: list[str] = []
        self.signatures: dict[str, tuple[ArgInfo, ...]] = {}
        self.check_pending = False

    def add_module(self, mod: IRModule) -> None:
        super().add_module(mod)
        self.check_pending = any(st.returns_value for st in self.funcs.values())
        for st in self.funcs.values():
            if st.func.global_symbol is not None:
                self.define_entry(st)

    def define_function(self, st: FuncState) -> None:
        super().define_function(st)
        if st.label.startswith(VMTIR_PREFIX) and self.defs[-1].count("\n") > QUICK_VM_LINES:
            self.defs[-1] = QUICK_COMPILE + self.defs[-1]

    def finish(self, metadata: bool = True) -> str:
        """The translation unit; without ``metadata``, the library's list of exposed functions
        is left out (one unit of several: another unit carries the list of them all)."""
        tail = [metadata_c_source(self.exposed, self.signatures)] if metadata else []
        return "\n".join([super().finish(), *self.entries, *tail])

    # -- entries ----------------------------------------------------------------------------
    def define_entry(self, st: FuncState) -> None:
        api = st.func.get_attr(PACKED_API)
        if not isinstance(api, PackedAPI):
            raise CodegenError(
                f"exposed function {st.label!r} has no packed API: run the MakePackedAPI pass "
                "before codegen (kiln.build does)"
            )
        names = self.names.child()
        for n in ENTRY_PARAMS:
            names.reserve(n)
        entry = FuncState(st.gv, st.func, self.ENTRY_PREFIX + api.symbol, api.symbol, names)
        entry.exits = [Exit("function", 0)]
        self._fn, self.lines, self.level = entry, [], 1
        self.prelude.need("tensor_args")
        self.emit("(void)self;")
        self.emit_entry_prologue(st)
        tables = ""
        if table.table_ready(api):
            tables, tensors = self.emit_table_checks(st, api)
        else:
            tensors = self.emit_checks(api)
        for a, t in zip(api.args, tensors):
            if a.buffer is not None:
                self.emit_data_pointer(a, t)
        self.emit_call(st, api)
        sig = "int32_t num_args, TVMFFIAny* result"
        head = f"TVM_FFI_DLL_EXPORT int {entry.c_name}(void* self, const TVMFFIAny* args, {sig})"
        if st.func.get_attr(WEAK_SYMBOL):  # NOTE: a cached kernel linked from two units
            head = "__attribute__((weak)) " + head
        self.entries.append(f"{tables}{head} {{\n" + "\n".join(self.lines) + "\n}\n")
        if api.symbol.startswith(VMTIR_PREFIX) and not self.check_pending:
            self.entries.append(vmtir_entry(api.symbol[len(VMTIR_PREFIX) :], st.c_name))
        self.exposed.append(api.symbol)
        self.signatures[api.symbol] = signature(api)
        self._fn = None

    def emit_checks(self, api: PackedAPI) -> list[str]:
        """The plan's checks, a C statement each; returns the tensors' C names."""
        self.emit_arg_count(api)
        tensors = [self.emit_unpack(api, i, a) for i, a in enumerate(api.args)]
        for i in api.compact:
            self.emit(
                f"if (kiln_check_compact({tensors[i]}, {self.fn_lit(api)}, "
                f"{c_string(api.args[i].name)}) != 0) return -1;"
            )
        for count in api.counts:
            self.emit_count_check(api, count, tensors[count.arg])
        where: dict[E.Var, str] = {a.param: f"argument {a.name}" for a in api.args if not a.buffer}
        for check in api.checks:
            self.emit_dim_check(api, check, tensors[check.arg], where)
        self.emit_overlap_checks(api, tensors)
        return tensors

    def emit_table_checks(self, st: FuncState, api: PackedAPI) -> tuple[str, list[str]]:
        """The plan as static tables and calls (`c_entry_table`): (tables, tensors' C names)."""
        self.prelude.need_function("kiln_check_tensors", table.TABLE_HELPER)
        tables, calls = table.entry_tables(api, f"kiln_{st.c_name}", int_range, dl_dtype)
        if api.overlaps:
            self.prelude.need("overlap_args")
            self.prelude.need_function("kiln_check_pairs", table.PAIRS_HELPER)
        slots = table.variable_slots(api)
        self.emit(f"DLTensor* kiln_t[{len(api.args)}];")
        self.emit(f"int64_t kiln_v[{max(len(slots), 1)}];")
        dev = self.tensor_device_type(st.func)
        self.emit(f"if ({calls[0]}, {dev}, kiln_t, kiln_v) != 0) return -1;")
        for call in calls[1:]:
            self.emit(f"if ({call} != 0) return -1;")
        for k, var in enumerate(slots):
            ctype = self.type_of(var.dtype)
            self.emit(f"{ctype} {self.bind_var(var)} = ({ctype})kiln_v[{k}];")
        return tables, [f"kiln_t[{i}]" for i in range(len(api.args))]

    def emit_entry_prologue(self, st: FuncState) -> None:
        """Hook: code at the start of an entry, before any argument is read (CUDA: driver check)."""

    def tensor_device_type(self, func: PrimFunc) -> int:
        """Hook: the DLPack device type the tensor arguments of ``func``'s entry must have."""
        return 1  # kDLCPU

    def fn_lit(self, api: PackedAPI) -> str:
        return c_string(api.symbol)

    def emit_arg_count(self, api: PackedAPI) -> None:
        n = len(api.args)
        names = ", ".join(a.name for a in api.args)
        plural = "" if n == 1 else "s"
        msg = f"{api.symbol}: expected {n} argument{plural} ({names})".replace("%", "%%")
        msg += ", got %d"
        self.emit(f"if (num_args != {n}) {{")
        self.emit(f'  return kiln_fail("TypeError", {c_string(msg)}, (int)num_args);')
        self.emit("}")

    def emit_unpack(self, api: PackedAPI, i: int, a: PackedArg) -> str:
        """Unpack argument ``i``; returns the C name of its DLTensor* (or "" for scalars)."""
        fn, name = self.fn_lit(api), c_string(a.name)
        if a.buffer is not None:
            t = self.fn.names.fresh(f"{a.name}_tensor")
            dt, ndim = a.buffer.dtype, len(a.buffer.shape)
            self.emit(f"DLTensor* {t};")
            call = f"kiln_arg_tensor(args, {i}, {fn}, {name}, {dl_dtype(dt)}, {c_string(str(dt))}"
            dev = self.tensor_device_type(self.fn.func)
            self.emit(f"if ({call}, {ndim}, {dev}, &{t}) != 0) return -1;")
            return t
        self.prelude.need("scalar_args")
        var = a.param
        cname = self.bind_var(var)
        self.emit_scalar(var, cname, f"args, {i}, {fn}, {name}")
        return ""

    def emit_scalar(self, var: E.Var, cname: str, where: str) -> None:
        dt = var.dtype
        ctype = self.c_type(var.type_annotation)
        tmp = self.temp("a")
        if dt.is_bool:
            self.emit(f"bool {cname};")
            self.emit(f"if (kiln_arg_bool({where}, &{cname}) != 0) return -1;")
        elif dt.is_integer:
            lo, hi = int_range(dt)
            self.emit(f"int64_t {tmp};")
            rng = f"{c_string(str(dt))}, {lo}, {hi}"
            self.emit(f"if (kiln_arg_int({where}, {rng}, &{tmp}) != 0) return -1;")
            self.emit(f"{ctype} {cname} = ({ctype}){tmp};")
        elif dt.is_float:
            self.emit(f"double {tmp};")
            self.emit(f"if (kiln_arg_float({where}, {c_string(str(dt))}, &{tmp}) != 0) return -1;")
            value = self.round_storage_float(dt, f"(float){tmp}") if dt.bits < 32 else tmp
            self.emit(f"{ctype} {cname} = ({ctype}){value};")
        elif dt.is_handle:
            self.emit(f"void* {tmp};")
            self.emit(f"if (kiln_arg_handle({where}, &{tmp}) != 0) return -1;")
            self.emit(f"{ctype} {cname} = ({ctype}){tmp};")
        else:
            raise CodegenError(
                f"{self.fn.label}: parameter {var.name!r} of type {dt} is unsupported"
            )

    def emit_count_check(self, api: PackedAPI, check: CountCheck, tensor: str) -> None:
        """The tensor must have at most ``check.limit`` elements (its kernel's index type)."""
        helper = self.prelude.need_function("kiln_check_count", COUNT_HELPER)
        name, dt = c_string(api.args[check.arg].name), c_string(str(check.index_dtype))
        where = f"{self.fn_lit(api)}, {name}, {dt}"
        self.emit(f"if ({helper}({tensor}, {check.limit}LL, {where}) != 0) return -1;")

    def emit_overlap_checks(self, api: PackedAPI, tensors: list[str]) -> None:
        """The pairs of ``api.overlaps`` must not share a byte (a noalias function's restrict
        pointers; written after the shape checks, so shapes are known to be right)."""
        if api.overlaps:
            self.prelude.need("overlap_args")
        for i, j in api.overlaps:
            names = f"{c_string(api.args[i].name)}, {c_string(api.args[j].name)}"
            self.emit(
                f"if (kiln_check_overlap({tensors[i]}, {tensors[j]}, {self.fn_lit(api)}, "
                f"{names}) != 0) return -1;"
            )

    def emit_dim_check(
        self, api: PackedAPI, check: DimCheck, tensor: str, where: dict[E.Var, str]
    ) -> None:
        arg = api.args[check.arg]
        what = arg.name if check.field == "elem_offset" else f"{arg.name}.{check.field}"
        what = f"{what}[{check.axis}]" if check.field != "elem_offset" else f"{what}.elem_offset"
        got = f"kiln_dim({tensor}, {FIELDS[check.field]}, {check.axis})"
        fn = self.fn_lit(api)
        value = check.value
        if check.binds and isinstance(value, E.Var):
            lo, hi = int_range(value.dtype)
            cname = self.bind_var(value)
            var = f"{c_string(value.name)}, {c_string(str(value.dtype))}"
            self.emit(
                f"if (kiln_bind_int({got}, {lo}, {hi}, {fn}, {c_string(what)}, {var}) != 0) "
                "return -1;"
            )
            self.emit(f"{self.type_of(value.dtype)} {cname} = ({self.type_of(value.dtype)}){got};")
            where[value] = what
            return
        if isinstance(value, E.Var):
            note = f" ({value.name}, from {where.get(value, 'an earlier argument')})"
        elif isinstance(value, E.IntImm):
            note = ""
        else:
            note = f" (the value of {self.expr(value)})"
        args = f"{fn}, {c_string(what)}, {c_string(note)}"
        self.emit(
            f"if (kiln_check_dim({got}, (int64_t){self.expr(value)}, {args}) != 0) return -1;"
        )

    def emit_data_pointer(self, a: PackedArg, tensor: str) -> None:
        buf = a.buffer
        assert buf is not None
        ctype = self.c_type(a.param.type_annotation)
        offset = buf.elem_offset
        folded = offset is None or (isinstance(offset, E.IntImm) and offset.value == 0)
        base = f"(char*){tensor}->data" + (f" + {tensor}->byte_offset" if folded else "")
        self.emit(f"{ctype} {self.bind_var(a.param)} = ({ctype})({base});")

    def emit_call(self, st: FuncState, api: PackedAPI) -> None:
        args = ", ".join(self.var_name(v) for v in api.typed_params)
        call = f"{st.c_name}({args})"
        pending = "if (kiln_error_pending) { kiln_error_pending = 0; return -1; }"
        if self.check_pending:
            self.prelude.need("pending")
        if not st.returns_value:
            if not self.check_pending:
                self.emit(f"return {call};")
                return
            self.emit(f"int32_t kiln_rc = {call};")
            self.emit(pending)
            self.emit("return kiln_rc;")
            return
        dt = st.func.ret_type.dtype  # type: ignore[union-attr]
        self.emit(f"{self.c_type(st.func.ret_type)} kiln_ret = {call};")
        if self.check_pending:
            self.emit(pending)
        self.emit(f"*result = {self.to_any(dt, 'kiln_ret')};")
        self.emit("return 0;")

    def to_any(self, dt: DataType, code: str) -> str:
        """A ``TVMFFIAny`` holding the scalar ``code`` of type ``dt``."""
        if dt.is_handle:
            self.prelude.need("packed_call")
            return f"kiln_ptr_any({code})"
        if dt.is_bool:
            return f"(TVMFFIAny){{.type_index = kTVMFFIBool, .v_int64 = (int64_t){code}}}"
        if dt.is_integer:
            return f"(TVMFFIAny){{.type_index = kTVMFFIInt, .v_int64 = (int64_t){code}}}"
        if dt.is_float:
            return f"(TVMFFIAny){{.type_index = kTVMFFIFloat, .v_float64 = (double){code}}}"
        raise CodegenError(f"cannot pass a {dt} value through tvm-ffi")

    def call_launch_kernel(self, e: E.Call) -> str:
        raise CodegenError(
            f"{self.fn.label}: launches a GPU kernel; build the module with a device target "
            "(e.g. Target('cuda', host='c')), whose host code generator emits launches"
        )

    # -- packed calls -----------------------------------------------------------------------
    def call_call_packed(self, e: E.Call) -> str:
        name = _callee_name(e)
        cache = self.temp("pf")
        self.prelude.need("packed_call")
        self.prelude.need_function(cache, f"static void* volatile {cache} = NULL;")
        return self.packed_call(
            e, lambda argv, n, r: f"kiln_call_global(&{cache}, {c_string(name)}, {argv}, {n}, &{r})"
        )

    def call_call_cpacked(self, e: E.Call) -> str:
        sym = self.ENTRY_PREFIX + _callee_name(e)
        self.prelude.need("packed_call")
        sig = "void* self, const TVMFFIAny* args, int32_t num_args, TVMFFIAny* result"
        self.extern_decls.setdefault(sym, f"int {sym}({sig});")
        return self.packed_call(e, lambda argv, n, r: f"{sym}(NULL, {argv}, {n}, &{r})")

    call_tvm_call_packed = call_call_packed

    def packed_call(self, e: E.Call, make_call: object) -> str:
        argv, r = self.temp("argv"), self.temp("r")
        args = [self.to_packed_arg(a) for a in e.args[1:]]
        n = len(args)
        call = make_call(argv, n, r)  # type: ignore[operator]
        exits = " ".join(self.error_exit())
        init = f"TVMFFIAny {argv}[{max(n, 1)}] = {{{', '.join(args) or '{0}'}}};"
        reset = (
            f"TVMFFIAny {r}; {r}.type_index = kTVMFFINone; {r}.zero_padding = 0; {r}.v_int64 = 0;"
        )
        value = self.from_any(e.dtype, r)
        return f"({{ {init} {reset} if ({call} != 0) {{ {exits} }} {value}; }})"

    def to_packed_arg(self, a: E.PrimExpr) -> str:
        if is_op(a, "anylist_getitem"):
            lst, index = a.args  # type: ignore[attr-defined]
            return c_getitem(self.expr(lst), self.expr(index))
        if is_null_handle(a):
            return c_any("none")
        if isinstance(a, E.StringImm):
            return f"(TVMFFIAny){{.type_index = kTVMFFIRawStr, .v_c_str = {c_string(a.value)}}}"
        if a.dtype.lanes > 1:
            raise CodegenError("call_packed: vector arguments are not supported")
        return self.to_any(a.dtype, self.expr(a))

    def from_any(self, dt: DataType, r: str) -> str:
        if dt.is_void:
            return f"(void)kiln_any_int(&{r})"
        if dt.is_handle:
            return f"kiln_any_ptr(&{r})"
        if dt.is_float:
            return self.round_storage_float(dt, f"({self.type_of(dt)})kiln_any_float(&{r})")
        return f"({self.type_of(dt)})kiln_any_int(&{r})"

    # -- compiled-mode VM functions ---------------------------------------------------------
    def stmt_Evaluate(self, s: S.Evaluate) -> None:
        v = s.value
        name = _builtin_name(v)
        if name in VM_STATEMENTS:
            if self.fn.label.startswith(VMTIR_PREFIX):
                self.emit_vm_statement(v)  # type: ignore[arg-type]
                return
            if name.startswith("anylist_"):
                raise CodegenError(
                    f"{self.fn.label}: {name} is only valid in a compiled-mode VM function "
                    f"({VMTIR_PREFIX}<name>)"
                )
        super().stmt_Evaluate(s)

    def emit_vm_statement(self, e: E.Call) -> None:
        """One call of a ``__vmtir__`` function, in the form of `kiln.runtime.vm_anylist`."""
        self.prelude.need_function("kiln_vm_anylist_header", ANYLIST_C_HEADER)
        name, args = _builtin_name(e), e.args
        if name == "anylist_resetitem":
            self.emit(c_resetitem(self.expr(args[0]), self.expr(args[1])))
            return
        dst = None
        if name.startswith("anylist_setitem"):
            dst, args = (self.expr(args[0]), self.expr(args[1])), args[2:]
        callee = _callee_name(E.Call(e.dtype, e.op, args))
        rest = args[1:]
        ctx = self.var_name(self.fn.func.params[0])
        exits = " ".join(self.error_exit())
        if name.endswith("cpacked"):
            if rest and is_null_handle(rest[-1]):
                rest = rest[:-1]  # TVM's resource handle: not an argument of the callee
            items = [self.vm_arg(a) for a in rest]
            self.extern_decls.setdefault(self.ENTRY_PREFIX + callee, c_cpacked_decl(callee))
            self.emit(c_call_cpacked(callee, items, dst, ctx=ctx, on_error=exits))
            return
        items = [self.vm_arg(a) for a in rest]
        index = builtin_index(callee)
        if callee == COPY and dst is not None and len(items) == 1:
            self.emit(c_copy(dst, items[0], on_error=exits))
        elif index is not None:
            call = c_call_builtin(callee, index, items, dst, ctx=ctx, on_error=exits)
            self.emit(call if dst is not None else vm_guarded(callee, rest, items, call))
        else:
            self.emit(c_call_packed(callee, items, dst, ctx=ctx, on_error=exits))

    def vm_arg(self, a: E.PrimExpr) -> str:
        """An argument of a ``__vmtir__`` call, as the contract's ``TVMFFIAny`` form."""
        if is_op(a, "anylist_getitem"):
            lst, index = a.args  # type: ignore[attr-defined]
            return c_getitem(self.expr(lst), self.expr(index))
        if is_null_handle(a):
            return c_any("none")
        if isinstance(a, E.StringImm):
            return c_any("str", c_string(a.value))
        dt = a.dtype
        if dt.lanes > 1 or not (dt.is_handle or dt.is_bool or dt.is_integer or dt.is_float):
            raise CodegenError(f"{self.fn.label}: cannot pass a {dt} value to a VM call")
        kind = (
            "handle"
            if dt.is_handle
            else "bool"
            if dt.is_bool
            else "int"
            if dt.is_integer
            else "float"
        )
        return c_any(kind, self.expr(a))

    def call_anylist_heap_load(self, e: E.Call) -> str:
        item, slot = e.args
        if not is_op(item, "anylist_getitem"):
            raise CodegenError(f"{self.fn.label}: anylist_heap_load reads an any-list item")
        lst, index = item.args  # type: ignore[attr-defined]
        item_c = c_getitem(self.expr(lst), self.expr(index))
        return f"kiln_vm_heap_load(&{item_c}, {self.expr(slot)})"

    def call_anylist_getitem(self, e: E.Call) -> str:
        raise CodegenError(f"{self.fn.label}: anylist_getitem is only valid as a packed argument")


COPY = builtin("copy").name
CHECK_TENSOR_INFO = builtin("check_tensor_info").name
MATCH_SHAPE = builtin("match_shape").name

VM_STATEMENTS = frozenset(
    {
        "anylist_setitem_call_packed",
        "anylist_setitem_call_cpacked",
        "anylist_resetitem",
        "call_packed",
        "call_cpacked",
        "tvm_call_packed",
    }
)
"""Calls that a ``__vmtir__`` function evaluates as statements in the any-list contract's form."""


def vmtir_entry(name: str, c_name: str) -> str:
    """``__vmtir_entry__<name>()``: the address of the typed ``__vmtir__`` function ``c_name``
    (``int32_t (void*, void*, void*, void*)``), for the VM to call without the checked entry.
    NOTE: not listed in the metadata; the VM asks the library's symbols for it."""
    sig = "void* self, const TVMFFIAny* args, int32_t num_args, TVMFFIAny* result"
    return (
        f"TVM_FFI_DLL_EXPORT int __tvm_ffi_{VMTIR_ENTRY_PREFIX}{name}({sig}) {{\n"
        "  (void)self; (void)args; (void)num_args;\n"
        "  result->type_index = kTVMFFIOpaquePtr; result->zero_padding = 0;\n"
        f"  result->v_ptr = (void*)&{c_name};\n"
        "  return 0;\n}\n"
    )


def vm_guarded(callee: str, args: tuple[E.PrimExpr, ...], items: list[str], call: str) -> str:
    """``call`` of a check builtin behind its inline guard when the arguments the guard needs are
    constants (see `kiln.runtime.vm_anylist`), else ``call``."""
    consts = [a.value if isinstance(a, E.IntImm) else None for a in args]
    if callee == CHECK_TENSOR_INFO and len(args) == 4 and consts[1] is not None:
        return c_unless_tensor_ok(items[0], consts[1], items[2], call)
    if callee != MATCH_SHAPE or len(args) < 4 or not is_null_handle(args[1]):
        return call
    ndim, spec = consts[2], consts[3:-1]
    if ndim is None or len(spec) != 2 * ndim or any(v is None for v in spec):
        return call
    if any(code not in (0, 1) for code in spec[::2]):
        return call
    return c_unless_shape_ok(items[0], ndim, spec, call)  # type: ignore[arg-type]


def _builtin_name(e: E.PrimExpr) -> str:
    """``name`` of a call of the TIR builtin ``tir.<name>`` ("" for anything else)."""
    if isinstance(e, E.Call) and isinstance(e.op, Op) and e.op.name.startswith("tir."):
        return e.op.name[4:]
    return ""


def is_null_handle(a: E.PrimExpr) -> bool:
    """``reinterpret("handle", 0)``: a null pointer (None as a packed argument)."""
    return is_op(a, "reinterpret") and a.dtype.is_handle and E.is_const_int(a.args[0], 0)  # type: ignore[attr-defined]


def signature(api: PackedAPI) -> tuple[ArgInfo, ...]:
    """The arguments of ``api`` as the library's metadata lists them."""
    return tuple(
        ArgInfo(
            a.name,
            str(a.buffer.dtype if a.buffer is not None else a.param.dtype),
            a.buffer is not None,
            i in api.writes,
        )
        for i, a in enumerate(api.args)
    )


def _callee_name(e: E.Call) -> str:
    first = e.args[0] if e.args else None
    if not isinstance(first, E.StringImm):
        raise CodegenError(f"{e.op_name}: the first argument must be the function's name")
    return first.value


def int_range(dt: DataType) -> tuple[str, str]:
    """C literals of the smallest and largest value of an integer type (clamped to int64)."""
    if dt.is_bool or dt.bits == 1:
        return "0", "1"
    if dt.is_uint:
        hi = min(2**dt.bits - 1, 2**63 - 1)
        return "0", f"{hi}LL"
    lo, hi = -(2 ** (dt.bits - 1)), 2 ** (dt.bits - 1) - 1
    return (f"({lo + 1}LL - 1)", f"{hi}LL")


def codegen_c(mod: IRModule) -> str:
    """The C source of a lowered module (run the TIR pipeline first; see kiln.driver)."""
    gen = CodeGenCHost()
    gen.add_module(mod)
    return gen.finish()
