"""The metadata C every kiln library carries, so that it loads with nothing but tvm-ffi.

`metadata_c_source(names, args)` is the snippet the code generator appends to a library: the
exposed function names (``__kiln_func_names``) and, given ``args``, each one's parameters as
`ArgInfo` rows in JSON (``__kiln_func_args``); `kiln.runtime.module` describes the convention
and reads both back. It lives apart from `kiln.runtime.module` because it needs no loaded
library: the CUDA memory library (`kiln.runtime.cuda_memory`), which the tensor helpers use,
is built with it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

FUNC_NAMES_FUNC = "__kiln_func_names"
"""The tvm-ffi name of the metadata function; its C symbol is `__tvm_ffi___kiln_func_names`."""
FUNC_ARGS_FUNC = "__kiln_func_args"
"""The tvm-ffi name of the function returning every exposed function's arguments as JSON."""
_RESERVED = (FUNC_NAMES_FUNC, FUNC_ARGS_FUNC)

SYMBOL_PREFIX = "__tvm_ffi_"
"""Prefix tvm-ffi puts before a function name to find its C symbol."""

_C_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


@dataclass(frozen=True)
class ArgInfo:
    """One parameter of an exposed function as its library lists it: a tensor of ``dtype`` or a
    scalar of type ``dtype``; ``written`` when the function may write through it."""

    name: str
    dtype: str
    tensor: bool
    written: bool


def metadata_c_source(
    func_names: Sequence[str], args: Mapping[str, Sequence[ArgInfo]] | None = None
) -> str:
    """C that exports `__tvm_ffi___kiln_func_names`, returning `func_names` (in order), and,
    given ``args``, `__tvm_ffi___kiln_func_args` (see module docstring)."""
    names = list(func_names)
    for name in names:
        if not isinstance(name, str) or not _C_IDENT.match(name):
            raise ValueError(f"exposed function name {name!r} is not a C identifier")
        if name in _RESERVED:
            raise ValueError(f"{name!r} is reserved for kiln's metadata functions")
    dups = sorted({n for n in names if names.count(n) > 1})
    if dups:
        raise ValueError(f"exposed function names listed twice: {dups}")
    literal = '"' + "\\n".join(names) + '"'
    sym = SYMBOL_PREFIX + FUNC_NAMES_FUNC
    return f"""
/* kiln metadata: the exposed functions of this library (see kiln/runtime/module.py). */
#include <tvm/ffi/c_api.h>
#ifdef __cplusplus
extern "C"
#endif
TVM_FFI_DLL_EXPORT int {sym}(void* self, const TVMFFIAny* args,
                                                int32_t num_args, TVMFFIAny* result) {{
  static const char names[] = {literal};
  TVMFFIByteArray bytes;
  (void)self;
  (void)args;
  if (num_args != 0) {{
    TVMFFIErrorSetRaisedFromCStr("TypeError", "{FUNC_NAMES_FUNC} takes no arguments");
    return -1;
  }}
  bytes.data = names;
  bytes.size = sizeof(names) - 1;
  return TVMFFIStringFromByteArray(&bytes, result);
}}
""" + (_args_c_source(args) if args is not None else "")


def _args_c_source(args: Mapping[str, Sequence[ArgInfo]]) -> str:
    table = {
        f: [[a.name, a.dtype, int(a.tensor), int(a.written)] for a in v] for f, v in args.items()
    }
    text = json.dumps(table, separators=(",", ":"))  # ASCII only
    literal = '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("?", "\\?") + '"'
    sym = SYMBOL_PREFIX + FUNC_ARGS_FUNC
    return f"""
TVM_FFI_DLL_EXPORT int {sym}(void* self, const TVMFFIAny* args,
                                               int32_t num_args, TVMFFIAny* result) {{
  static const char text[] = {literal};
  TVMFFIByteArray bytes;
  (void)self;
  (void)args;
  (void)num_args;
  bytes.data = text;
  bytes.size = sizeof(text) - 1;
  return TVMFFIStringFromByteArray(&bytes, result);
}}
"""
