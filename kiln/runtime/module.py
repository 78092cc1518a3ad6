"""`Module`: a compiled kiln library loaded through tvm-ffi, usable without the compiler.

Library convention (what the C code generator must emit):

- Every exposed function `name` is an exported C symbol `__tvm_ffi_<name>` with the tvm-ffi
  `TVMFFISafeCallType` signature

      int __tvm_ffi_<name>(void* self, const TVMFFIAny* args, int32_t num_args,
                           TVMFFIAny* result);

  returning 0 on success, or -1 after `TVMFFIErrorSetRaisedFromCStr("ValueError", "msg")` (the
  kind names a Python exception class: ValueError, TypeError, RuntimeError, ...). `name` must
  be a C identifier. Private functions are `static` and not listed.
- The library lists its exposed names: the codegen appends `metadata_c_source(names)`
  (`kiln.runtime.metadata`) to every generated source. That snippet defines one more safe-call
  function, the symbol `__tvm_ffi___kiln_func_names` (tvm-ffi name `__kiln_func_names`), which
  takes no arguments and returns the names joined by newlines as a tvm-ffi String.
  `load_module` calls it, so a loaded library knows its functions with nothing but tvm-ffi.

- Given the functions' arguments (`ArgInfo`: name, dtype, tensor or scalar, written or not),
  the snippet also defines `__tvm_ffi___kiln_func_args` (tvm-ffi name `__kiln_func_args`),
  returning them as JSON: ``{"main": [["A", "float32", 1, 0], ...]}``. It is read only when a
  call fails before its entry runs (see `LibraryFunction`).

Libraries without that symbol (hand-written tvm-ffi libraries) still load; their exposed names
are unknown, `get_func_names()` is empty and lookups go straight to the symbol table.

A function of a `Module` is a `LibraryFunction`: calling it calls the tvm-ffi function directly
(no Python in between unless the call fails), and passing it to tvm-ffi (e.g. into a VM's
function table) passes the raw tvm-ffi function.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

import tvm_ffi

from kiln.errors import FunctionNotFoundError, KilnError
from kiln.runtime.function import LibraryFunction
from kiln.runtime.metadata import FUNC_ARGS_FUNC, FUNC_NAMES_FUNC, SYMBOL_PREFIX, ArgInfo
from kiln.runtime.toolchain import compile_c, discard_entry


def _read_func_args(ffi_mod: tvm_ffi.Module) -> dict[str, tuple[ArgInfo, ...]]:
    if not ffi_mod.implements_function(FUNC_ARGS_FUNC):
        return {}
    table = json.loads(str(ffi_mod.get_function(FUNC_ARGS_FUNC)()))
    return {
        f: tuple(ArgInfo(str(n), str(t), bool(k), bool(w)) for n, t, k, w in rows)
        for f, rows in table.items()
    }


def _read_func_names(ffi_mod: tvm_ffi.Module) -> list[str] | None:
    if not ffi_mod.implements_function(FUNC_NAMES_FUNC):
        return None
    text = str(ffi_mod.get_function(FUNC_NAMES_FUNC)())
    return text.split("\n") if text else []


class Module:
    """A loaded kiln library: exposed functions by name, plus the source when built in-process.

    Invariants: `path` is the loaded shared library; `get_func_names()` is the library's own
    list (read from the library, never from the compiler); functions returned are
    `LibraryFunction`s over the raw tvm-ffi functions (``.ffi_function``), cached per name;
    `imported_modules` holds modules this one depends on (e.g. a CUDA device module), which
    `export_library` does not yet embed.
    """

    def __init__(
        self,
        ffi_module: tvm_ffi.Module,
        path: Path,
        func_names: list[str] | None,
        source: str | None = None,
    ) -> None:
        self.ffi_module = ffi_module
        self.path = path
        self.imported_modules: list[Module] = []
        self._func_names = func_names
        self._source = source
        self._funcs: dict[str, LibraryFunction] = {}
        self._args: dict[str, tuple[ArgInfo, ...]] | None = None

    def __repr__(self) -> str:
        return f"Module({str(self.path)!r}, functions={self.get_func_names()})"

    def __getitem__(self, name: str) -> LibraryFunction:
        return self.get_function(name)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name in self.get_func_names()

    def get_func_names(self) -> list[str]:
        """The exposed function names, in the order the code generator listed them."""
        return list(self._func_names or [])

    def get_function(self, name: str) -> LibraryFunction:
        """The exposed function `name`; raises `FunctionNotFoundError` for any other name."""
        func = self._funcs.get(name)
        if func is not None:
            return func
        if self._func_names is not None and name not in self._func_names:
            raise self._not_found(name, "")
        try:
            raw = self.ffi_module.get_function(name)
        except AttributeError:
            raise self._not_found(name, f" (symbol {SYMBOL_PREFIX}{name} is missing)") from None
        func = LibraryFunction(raw, name, lambda: self.get_func_args(name))
        self._funcs[name] = func
        return func

    def get_func_args(self, name: str) -> tuple[ArgInfo, ...] | None:
        """The arguments of exposed function `name` as the library lists them (None when the
        library does not say: it carries no argument metadata)."""
        if self._args is None:
            self._args = _read_func_args(self.ffi_module)
        return self._args.get(name)

    def _not_found(self, name: str, detail: str) -> FunctionNotFoundError:
        if self._func_names is None:
            listed = "unknown (the library carries no kiln metadata)"
        else:
            listed = ", ".join(self._func_names) or "none"
        return FunctionNotFoundError(
            f"module {self.path.name} has no exposed function {name!r}{detail}; "
            f"exposed functions: {listed}"
        )

    def inspect_source(self, fmt: str = "c") -> str:
        """The generated source this module was built from (only for modules built in-process)."""
        if fmt not in ("c", ""):
            raise KilnError(f"inspect_source: unknown format {fmt!r}; this module has only 'c'")
        if self._source is None:
            raise KilnError(
                f"inspect_source: no source kept for {self.path}: it was loaded from a file. "
                "Only modules built in this process keep their source; the build cache keeps "
                "a .c file beside each cached .so."
            )
        return self._source

    def export_library(self, path: str | os.PathLike[str]) -> Path:
        """Copy the shared library to `path` (atomically) for later `load_module`."""
        if self.imported_modules:
            raise KilnError("export_library: embedding imported modules is not supported yet")
        dest = Path(path)
        dest.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=dest.parent, prefix=f".{dest.name}.", suffix=".tmp")
        os.close(fd)
        try:
            shutil.copyfile(self.path, tmp)
            os.chmod(tmp, 0o755)
            os.replace(tmp, dest)
        finally:
            Path(tmp).unlink(missing_ok=True)
        return dest


def load_module(path: str | os.PathLike[str], *, source: str | None = None) -> Module:
    """Load a shared library built by kiln (or any tvm-ffi library) as a `Module`."""
    lib = Path(path).resolve()
    if not lib.is_file():
        raise KilnError(f"load_module: no such library file: {lib}")
    try:
        ffi_mod = tvm_ffi.load_module(str(lib))
    except Exception as e:
        raise KilnError(f"load_module: cannot load {lib}: {e}") from e
    return Module(ffi_mod, lib, _read_func_names(ffi_mod), source)


def build_module(
    source: str, *, flags: tuple[str, ...] | None = None, name_hint: str = "kiln"
) -> Module:
    """Compile `source` (cached, see `compile_c`) and load it, keeping the source on the module.

    A cached library that does not load although its digest matches (damaged together with its
    sidecar) is discarded and built once more; if the fresh build does not load either, the
    `KilnError` says so."""
    lib = compile_c(source, flags=flags, name_hint=name_hint)
    try:
        return load_module(lib, source=source)
    except KilnError:
        discard_entry(lib)
    lib = compile_c(source, flags=flags, name_hint=name_hint)
    try:
        return load_module(lib, source=source)
    except KilnError as e:
        raise KilnError(
            f"{e}\n(the library was rebuilt from its source {lib.with_suffix('.c')} and still "
            "does not load: check the compiler and flags, e.g. KILN_CC)"
        ) from e
