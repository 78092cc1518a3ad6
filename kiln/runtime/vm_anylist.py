"""Compiled mode's C contract: how a ``__vmtir__`` function talks to the VM through any-lists.

The compiler half turns each VM function ``name`` into the PrimFunc
``__vmtir__<name>(ctx_ptr: handle, r: handle, c: handle, f: handle)`` (``global_symbol``
``"__vmtir__<name>"``, no buffers) and builds it like any exposed PrimFunc, in the same library
as the kernels: the library exports ``__tvm_ffi___vmtir__<name>`` (tvm-ffi safe call) and lists
it in its metadata. The C code generator also exports ``__vmtir_entry__<name>()``
(`VMTIR_ENTRY_PREFIX`), which returns the address of the typed function; when a library has it
the VM calls that address directly, skipping the checked entry. The VM calls it with four
opaque pointers:

- ``ctx_ptr``: the VM context. It starts with ``KilnVMContextHeader`` (see `ANYLIST_C_HEADER`);
  pass it on where a builtin takes ``ctx`` (a handle argument becomes an opaque pointer).
- ``r``: the registers, ``TVMFFIAny[num_registers]`` owned by this call's frame. Parameters are
  in ``r[0..n-1]``; the function stores its result in ``r[n]`` (n = number of parameters, the
  seed's ``ret_reg``); the VM takes it from there after a successful return. Every register
  starts as None and is released by the VM after the call, on success and on error.
- ``c``: the constant pool, ``TVMFFIAny[]`` owned by the VM (read only).
- ``f``: the function table as ``TVMFFIAny[]`` owned by the VM (read only): ``f[i]`` is a
  tvm-ffi Function for table entry i, VM functions included.

An any-list item is an owned ``TVMFFIAny``. Generated C includes `ANYLIST_C_HEADER` once (it is
self-contained: static inline helpers over libtvm_ffi, no link to the VM runtime) and emits:

- ``anylist_getitem(l, i)``, only as a call argument: ``KILN_ANYLIST_GET(l, i)``, the item
  itself (borrowed, not a copy);
- ``anylist_resetitem(l, i)``: ``kiln_vm_anylist_resetitem(l, i);``
- ``anylist_setitem_call_packed(l, i, "g", a...)``: ``kiln_vm_call_packed(ctx_ptr, &cache, "g",
  argv, k, l, i)`` with one ``static void* volatile cache = NULL`` per call site;
- the same for a builtin ``g`` of `kiln.runtime.vm_builtins.BUILTINS` (index b):
  ``kiln_vm_call_builtin(ctx_ptr, &cache, b, "g", argv, k, l, i)``, a direct call of the runtime's
  C entry through ``ctx_ptr`` (``KilnVMContextHeader.builtins[b]``); and for
  ``vm.builtin.copy`` with a destination, ``kiln_vm_anylist_copy(l, i, &item)`` inline;
- ``call_packed("vm.builtin.check_tensor_info", x, ndim, dtype, err_ctx)`` with a constant
  ``ndim``, and ``call_packed("vm.builtin.match_shape", x, None, ndim, code, v, ..., err_ctx)``
  with constant codes 0 / 1 and values: the call behind an inline guard
  (``kiln_vm_tensor_ok`` / ``kiln_vm_shape_ok``) that skips it when the check passes, so errors
  still come from the builtin (`c_unless_tensor_ok`, `c_unless_shape_ok`);
- ``anylist_setitem_call_cpacked(l, i, "s", a..., NULL)``: ``kiln_vm_call_cpacked(ctx_ptr,
  __tvm_ffi_s, "s", argv, k, l, i)``, a direct call of the library's own entry symbol; the
  trailing null resource handle of the seed's convention is not an argument;
- ``call_packed("g", a...)`` / ``call_cpacked("s", a..., NULL)`` as statements: the same with
  ``l`` NULL and ``i`` -1 (the result is dropped);
- ``call_packed("vm.builtin.read_if_cond", x)`` used for its value (``If``): the host code
  generator's value-returning packed call (``kiln_call_global`` + ``kiln_any_int``).

``__tvm_ffi_s`` needs a prior declaration ``int __tvm_ffi_s(void*, const TVMFFIAny*, int32_t,
TVMFFIAny*);``. The helpers return 0, or -1 with a tvm-ffi error raised: the ``__vmtir__``
function must then return -1 at once (the VM releases the frame). Arguments, by TIR value:

- ``anylist_getitem(l, i)``: ``KILN_ANYLIST_GET(l, i)``, the item itself (not a copy);
- ``anylist_heap_load(anylist_getitem(l, i), slot)``, an integer: ``kiln_vm_heap_load(
  &KILN_ANYLIST_GET(l, i), slot)``, int64 ``slot`` of the shape heap that item holds (a dim
  passed to a kernel called directly);
- an integer: ``(TVMFFIAny){.type_index = kTVMFFIInt, .v_int64 = (int64_t)(e)}``; a bool:
  ``kTVMFFIBool`` the same way; a float: ``kTVMFFIFloat`` with ``.v_float64``;
- a handle (``ctx_ptr``): ``kTVMFFIOpaquePtr`` with ``.v_ptr``, or ``kTVMFFINone`` when NULL;
  ``reinterpret("handle", 0)`` is None;
- a string literal: ``kTVMFFIRawStr`` with ``.v_c_str``.

A call stores its result in ``l[i]`` after the call returns, releasing what was there, so an
argument may read the slot it overwrites. Calling another VM function:
``anylist_setitem_call_packed(r, d, "vm.builtin.invoke_closure", ctx_ptr, anylist_getitem(f, k),
args...)`` with k its function-table index. While the VM profiles, both helpers time each call
and report it through ``ctx_ptr``; callees not named ``vm.builtin.*`` become rows of
`VirtualMachine.profile`, in both modes alike.

The ``c_*`` functions below print exactly these forms; the runtime's tests build hand-written
``__vmtir__`` functions with them, and the C code generator may call them.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

ANYLIST_C_HEADER = (Path(__file__).parent / "vm_c" / "anylist.h").read_text()
"""The C every library with ``__vmtir__`` functions includes (after ``<tvm/ffi/c_api.h>``)."""

SAFE_CALL_DECL = (
    "int {symbol}(void* self, const TVMFFIAny* args, int32_t num_args, TVMFFIAny* result);"
)
ENTRY_PREFIX = "__tvm_ffi_"


def c_getitem(lst: str, index: int | str) -> str:
    """``anylist_getitem(lst, index)`` as a call argument."""
    return f"KILN_ANYLIST_GET({lst}, {index})"


def c_resetitem(lst: str, index: int | str) -> str:
    """``anylist_resetitem(lst, index)`` as a statement."""
    return f"kiln_vm_anylist_resetitem({lst}, {index});"


def c_any(kind: str, expr: str = "") -> str:
    """A ``TVMFFIAny`` argument of ``kind`` int / bool / float / handle / str / none / item."""
    if kind == "item":
        return expr
    if kind == "int":
        return f"(TVMFFIAny){{.type_index = kTVMFFIInt, .v_int64 = (int64_t)({expr})}}"
    if kind == "bool":
        return f"(TVMFFIAny){{.type_index = kTVMFFIBool, .v_int64 = (int64_t)({expr})}}"
    if kind == "float":
        return f"(TVMFFIAny){{.type_index = kTVMFFIFloat, .v_float64 = (double)({expr})}}"
    if kind == "handle":
        return (
            f"(TVMFFIAny){{.type_index = ({expr}) == NULL ? kTVMFFINone : kTVMFFIOpaquePtr, "
            f".v_ptr = (void*)({expr})}}"
        )
    if kind == "str":
        return f"(TVMFFIAny){{.type_index = kTVMFFIRawStr, .v_c_str = {expr}}}"
    if kind == "none":
        return "(TVMFFIAny){.type_index = kTVMFFINone}"
    raise ValueError(f"unknown any-list argument kind {kind!r}")


def _argv(args: Sequence[str]) -> str:
    return f"TVMFFIAny argv[{max(len(args), 1)}] = {{{', '.join(args) or '{0}'}}};"


def _c_string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def c_call_packed(
    name: str,
    args: Sequence[str],
    dst: tuple[str, int | str] | None = None,
    *,
    ctx: str = "ctx_ptr",
    on_error: str = "return -1;",
) -> str:
    """``anylist_setitem_call_packed(dst[0], dst[1], name, *args)`` (``dst`` None:
    ``call_packed`` dropping the result) as a C block; ``args`` are `c_any` / `c_getitem`."""
    lst, index = dst if dst is not None else ("NULL", -1)
    call = (
        f"kiln_vm_call_packed({ctx}, &cache, {_c_string(name)}, argv, {len(args)}, {lst}, {index})"
    )
    return (
        f"{{ static void* volatile cache = NULL; {_argv(args)} if ({call} != 0) {{ {on_error} }} }}"
    )


def c_call_builtin(
    name: str,
    index: int,
    args: Sequence[str],
    dst: tuple[str, int | str] | None = None,
    *,
    ctx: str = "ctx_ptr",
    on_error: str = "return -1;",
) -> str:
    """`c_call_packed` of the builtin ``name`` at ``index`` in `BUILTINS`, called directly
    through the VM context (see the module docstring)."""
    lst, slot = dst if dst is not None else ("NULL", -1)
    call = (
        f"kiln_vm_call_builtin({ctx}, &cache, {index}, {_c_string(name)}, argv, {len(args)}, "
        f"{lst}, {slot})"
    )
    return (
        f"{{ static void* volatile cache = NULL; {_argv(args)} if ({call} != 0) {{ {on_error} }} }}"
    )


def c_copy(dst: tuple[str, int | str], item: str, *, on_error: str = "return -1;") -> str:
    """``anylist_setitem_call_packed(dst[0], dst[1], "vm.builtin.copy", item)`` inline."""
    lst, slot = dst
    copy = f"kiln_vm_anylist_copy({lst}, {slot}, &item)"
    return f"{{ TVMFFIAny item = {item}; if ({copy} != 0) {{ {on_error} }} }}"


def c_unless_tensor_ok(item: str, ndim: int, dtype: str, call: str) -> str:
    """``call`` (a ``vm.builtin.check_tensor_info(item, ndim, dtype, ...)`` block) run only when
    the inline guard ``kiln_vm_tensor_ok`` cannot tell that the check passes."""
    guard = f"kiln_vm_tensor_ok(&kiln_x, {ndim}, &kiln_d)"
    return f"{{ TVMFFIAny kiln_x = {item}, kiln_d = {dtype}; if (!{guard}) {call} }}"


def c_unless_shape_ok(item: str, ndim: int, spec: Sequence[int], call: str) -> str:
    """``call`` (a ``vm.builtin.match_shape(item, None, ndim, *spec, ...)`` block, every code 0
    or 1) run only when the inline guard ``kiln_vm_shape_ok`` cannot tell that it passes."""
    values = ", ".join(str(int(v)) for v in spec) or "0"
    decl = f"static const int64_t kiln_spec[{max(len(spec), 1)}] = {{{values}}};"
    guard = f"kiln_vm_shape_ok(&kiln_x, {ndim}, kiln_spec)"
    return f"{{ {decl} TVMFFIAny kiln_x = {item}; if (!{guard}) {call} }}"


def c_call_cpacked(
    symbol: str,
    args: Sequence[str],
    dst: tuple[str, int | str] | None = None,
    *,
    ctx: str = "ctx_ptr",
    on_error: str = "return -1;",
) -> str:
    """``anylist_setitem_call_cpacked(dst[0], dst[1], symbol, *args)`` (``dst`` None:
    ``call_cpacked``) as a C block calling ``__tvm_ffi_<symbol>`` of the same library directly;
    declare it first with `c_cpacked_decl`."""
    lst, index = dst if dst is not None else ("NULL", -1)
    fn = ENTRY_PREFIX + symbol
    call = (
        f"kiln_vm_call_cpacked({ctx}, {fn}, {_c_string(symbol)}, argv, {len(args)}, {lst}, {index})"
    )
    return f"{{ {_argv(args)} if ({call} != 0) {{ {on_error} }} }}"


def c_cpacked_decl(symbol: str) -> str:
    """The declaration `c_call_cpacked` needs for ``symbol``."""
    return SAFE_CALL_DECL.format(symbol=ENTRY_PREFIX + symbol)
