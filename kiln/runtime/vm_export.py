"""One-file deployment: the kernels, the VM functions and the constants in one shared library.

`export_library(exe, "model.so")` compiles, into one library:

- the C of the executable's library (kernels, and ``__vmtir__`` functions in compiled mode);
- kiln's runtime library (`kiln.runtime.vm_runtime.runtime_units`: the VM builtins and
  interpreter, the thread pool), so loading the file needs no C compiler and no cache;
- `blob_c_source()`: the exported function ``__kiln_vm_executable`` (tvm-ffi safe call), which
  returns the serialized executable (`Executable.serialize`: function table, bytecode,
  constants) as a uint8 tensor viewing the library's data, zero-copy;
- that blob itself, embedded by an assembler file (``.incbin``), never as a C array literal, so
  a 45 MB weight blob costs the assembler a copy, not the C compiler a parse. NOTE: it lives in
  a writable data section: a tensor the VM returns may be a constant, and writing into it must
  not crash the process (the pages stay shared with the file until written).

`load_executable(load_module("model.so"))`, or simply ``VirtualMachine(load_module(...))``, reads
it back with nothing but the runtime layer; the library's runtime becomes the process's when the
process has none yet (`load_vm_runtime`). Constants stay views of the library's memory; each
view keeps the library loaded (the blob tensor holds a reference to the tvm-ffi module).

The blob and the assembler file are written to the kiln cache directory under names derived
from the blob's sha256 and passed to `compile_units` as extra inputs, so the build cache key covers
the blob's content and exporting the same executable twice compiles once. They exist only while
a link reads them (`toolchain.build_inputs`): the library holds the blob, and it is not kept twice.
"""

from __future__ import annotations

import hashlib
import os
import platform
import shutil
import tempfile
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from kiln.errors import KilnError
from kiln.runtime.module import Module, metadata_c_source
from kiln.runtime.parallel_build import OBJECT_NAME, compile_object, compile_units
from kiln.runtime.toolchain import DEFAULT_FLAGS, build_inputs, cache_directory
from kiln.runtime.vm_format import Executable, deserialize
from kiln.runtime.vm_runtime import RUNTIME_FLAGS, load_vm_runtime, runtime_loaded, runtime_units

BLOB_FUNC = "__kiln_vm_executable"
"""The tvm-ffi name of the function returning the embedded executable blob."""

_BLOB_C = r"""
/* kiln VM executable blob (see kiln/runtime/vm_export.py). */
#include <stdlib.h>
#include <tvm/ffi/c_api.h>

extern const unsigned char kiln_vm_blob_begin[];
extern const unsigned char kiln_vm_blob_end[];

typedef struct {
  DLManagedTensorVersioned m;
  int64_t shape[1];
} KilnVMBlobTensor;

static void kiln_vm_blob_deleter(DLManagedTensorVersioned* m) {
  if (m->manager_ctx != NULL) TVMFFIObjectDecRef(m->manager_ctx);
  free(m);
}

/* (module) -> uint8 tensor over the embedded blob; the tensor keeps `module` (this library)
 * alive. */
TVM_FFI_DLL_EXPORT int __tvm_ffi___kiln_vm_executable(void* self, const TVMFFIAny* args,
                                                        int32_t num_args, TVMFFIAny* result) {
  KilnVMBlobTensor* b;
  TVMFFIObjectHandle out;
  (void)self;
  if (num_args != 1 || args[0].type_index != kTVMFFIModule) {
    TVMFFIErrorSetRaisedFromCStr("TypeError", "__kiln_vm_executable expects its module");
    return -1;
  }
  b = (KilnVMBlobTensor*)calloc(1, sizeof(KilnVMBlobTensor));
  if (b == NULL) {
    TVMFFIErrorSetRaisedFromCStr("MemoryError", "__kiln_vm_executable: out of memory");
    return -1;
  }
  TVMFFIObjectIncRef(args[0].v_obj);
  b->shape[0] = (int64_t)(kiln_vm_blob_end - kiln_vm_blob_begin);
  b->m.version.major = DLPACK_MAJOR_VERSION;
  b->m.version.minor = DLPACK_MINOR_VERSION;
  b->m.manager_ctx = args[0].v_obj;
  b->m.deleter = kiln_vm_blob_deleter;
  b->m.dl_tensor.data = (void*)kiln_vm_blob_begin;
  b->m.dl_tensor.device.device_type = kDLCPU;
  b->m.dl_tensor.ndim = 1;
  b->m.dl_tensor.dtype.code = kDLUInt;
  b->m.dl_tensor.dtype.bits = 8;
  b->m.dl_tensor.dtype.lanes = 1;
  b->m.dl_tensor.shape = b->shape;
  if (TVMFFITensorFromDLPackVersioned(&b->m, 0, 0, &out) != 0) return -1;
  result->type_index = kTVMFFITensor;
  result->zero_padding = 0;
  result->v_obj = (TVMFFIObject*)out;
  return 0;
}
"""


def blob_c_source() -> str:
    """The C exporting ``__kiln_vm_executable`` (appended to the library's source)."""
    return _BLOB_C


def asm_source(blob: Path) -> str:
    """An assembler file defining ``kiln_vm_blob_begin`` / ``_end`` around ``blob``'s bytes."""
    quoted = str(blob).replace("\\", "\\\\").replace('"', '\\"')
    progbits = (
        "%progbits" if platform.machine().lower().startswith(("arm", "aarch")) else "@progbits"
    )
    return (
        "/* kiln VM executable blob, included as bytes (see kiln/runtime/vm_export.py). */\n"
        '    .section .data.kiln_vm_blob,"aw"\n'
        "    .balign 64\n"
        "    .globl kiln_vm_blob_begin\n    .hidden kiln_vm_blob_begin\n"
        "kiln_vm_blob_begin:\n"
        f'    .incbin "{quoted}"\n'
        "    .globl kiln_vm_blob_end\n    .hidden kiln_vm_blob_end\n"
        "kiln_vm_blob_end:\n"
        "    .byte 0\n"
        f'    .section .note.GNU-stack,"",{progbits}\n'
    )


def _library_source(exe: Executable, source: str | None) -> str:
    if source is not None:
        return source
    lib = exe.library
    if lib is None:
        return metadata_c_source([])
    if isinstance(lib, Module):
        try:
            return lib.inspect_source()
        except KilnError as e:
            raise KilnError(f"export_library: {e}; pass source= explicitly") from e
    raise KilnError("export_library: pass the C source of the executable's library as source=")


def export_flags(flags: Sequence[str] | None) -> tuple[str, ...]:
    """The flags `export_library` compiles and links with, given the executable's ``flags``."""
    base = DEFAULT_FLAGS if flags is None else tuple(flags)
    # NOTE: -lpthread is link-only (the cached objects of the units stay valid): the thread
    # pool's pthread calls resolve even where libc does not hold them and the flags lack -fopenmp.
    return (*base, *(() if "-lpthread" in base else ("-lpthread",)))


def prebuild_runtime(flags: Sequence[str] | None) -> list[Future[Path | None]]:
    """Start compiling, one compiler process at a time in a background thread, the objects
    that exporting an executable compiled with ``flags`` will link besides its own units
    (kiln's runtime and `blob_c_source`), and, when this process has no runtime yet, those of
    the runtime `load_vm_runtime` builds; returns at once, with a future per object (its
    path, or None when it failed).

    The objects land in the build cache, where the later builds find them (nothing is lost if
    those start first: the cache builds each entry once). A cold compile thus runs these
    compilers beside its own Python work instead of after it. Failures are left to the later
    builds to report."""
    jobs = [] if runtime_loaded() else [(u, RUNTIME_FLAGS) for u in runtime_units()]
    jobs += [(u, export_flags(flags)) for u in (*runtime_units(), blob_c_source())]
    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="kiln-prebuild")
    futures = [pool.submit(_compile_quietly, unit, unit_flags) for unit, unit_flags in jobs]
    pool.shutdown(wait=False)
    return futures


def _compile_quietly(unit: str, flags: tuple[str, ...]) -> Path | None:
    try:
        return compile_object(unit, flags=flags, name_hint=OBJECT_NAME)
    except Exception:  # noqa: BLE001 - the build that needs the object reports the failure
        return None


def export_library(
    exe: Executable,
    path: str | os.PathLike[str],
    *,
    source: str | None = None,
    flags: tuple[str, ...] | None = None,
    units: tuple[str, ...] | None = None,
) -> Path:
    """Write ``exe`` and its library into the one shared library ``path`` (see module docstring).

    ``source`` is the C of the library (default: the source its in-process `Module` kept), or
    ``units`` its translation units; every unit is compiled as by `compile_units` (cached per
    unit, so the objects of a model's build are only linked again); ``flags`` replaces the C
    compiler's default flags as in `compile_c`.
    """
    blob = exe.serialize()
    digest = hashlib.sha256(blob).hexdigest()[:32]
    cache = cache_directory()
    blob_path = cache / f"kiln_vm_blob-{digest}.bin"
    asm_path = cache / f"kiln_vm_blob-{digest}.s"
    link = (*export_flags(flags), str(asm_path))
    own = units if units else (_library_source(exe, source),)
    # NOTE: the blob is only read while linking: the library holds it, so it is not kept
    with build_inputs({blob_path: blob, asm_path: asm_source(blob_path).encode()}):
        lib, _, _ = compile_units(
            (*own, *runtime_units(), blob_c_source()), flags=link, name_hint="kiln_vm_model"
        )
    dest = Path(path)
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=dest.parent, prefix=f".{dest.name}.", suffix=".tmp")
    os.close(fd)
    try:
        shutil.copyfile(lib, tmp)
        os.chmod(tmp, 0o755)
        os.replace(tmp, dest)
    finally:
        Path(tmp).unlink(missing_ok=True)
    return dest


def load_executable(module: Module) -> Executable:
    """The executable inside a library written by `export_library` (its library is ``module``)."""
    ffi = module.ffi_module
    name = module.path.name
    if not ffi.implements_function(BLOB_FUNC):
        raise KilnError(
            f"{name} is not a kiln VM executable: it exports no {BLOB_FUNC} function "
            "(write one with export_library)"
        )
    load_vm_runtime(module)  # its runtime becomes the process's, or is checked against it
    blob_tensor: Any = ffi.get_function(BLOB_FUNC)(ffi)
    blob = np.from_dlpack(blob_tensor)
    return deserialize(blob, module, where=str(module.path))
