"""One-file deployment: the kernels, the VM functions and the constants in one shared library.

`export_library(exe, "model.so")` writes one file:

- a shared library linked from the C of the executable's library (kernels, and ``__vmtir__``
  functions in compiled mode) and kiln's runtime (`kiln.runtime.vm_runtime.runtime_units`: the
  VM builtins and interpreter, the thread pool), so loading the file needs no C compiler and no
  cache. Its objects come from the build cache (a model's own units were compiled for its
  in-process library already): exporting links, it does not compile;
- after the library's last byte, at the next `PAGE`-aligned offset, the serialized executable
  (`Executable.serialize`: function table, bytecode, constants), written straight from the
  constants' arrays;
- a `TRAILER` at the end of the file: magic, the executable's offset and size, and the trailer's
  version. The dynamic loader maps only the library's own segments and never reads past them,
  so the appended bytes cost it nothing.

`load_executable(load_module("model.so"))`, or simply ``VirtualMachine(load_module(...))``, reads
it back with nothing but the runtime layer: the executable is mapped copy-on-write from the file
(``np.memmap(mode="c")``), so constants are views of pages shared with the page cache until
written (a tensor the VM returns may be a constant: writing into it changes the process's copy
only). The library's runtime becomes the process's when the process has none yet
(`load_vm_runtime`).

NOTE: the executable is appended rather than linked in (an assembler ``.incbin``): linking put a
100 MB weight set through the assembler and the linker, a copy each (ResNet-50's export 2.1 s of
its cold compile, 0.3 s now). Tools that rewrite a library (``strip``) drop what follows it.
"""

from __future__ import annotations

import os
import shutil
import struct
import tempfile
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import numpy as np

from kiln.errors import KilnError
from kiln.runtime.metadata import metadata_c_source
from kiln.runtime.module import Module
from kiln.runtime.parallel_build import OBJECT_NAME, compile_object, compile_units
from kiln.runtime.toolchain import DEFAULT_FLAGS
from kiln.runtime.vm_format import Executable, deserialize, write_executable
from kiln.runtime.vm_runtime import load_vm_runtime, runtime_units

TRAILER = struct.Struct("<8sQQQ")
"""The last bytes of an exported library: magic, executable offset, executable size, version."""
TRAILER_MAGIC = b"KILNEXE\x00"
TRAILER_VERSION = 1
PAGE = 65536
"""Alignment of the appended executable: a multiple of every page size in use, so the mapping
starts at the executable itself."""


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
    (kiln's runtime); returns at once, with a future per object (its path, or None when it
    failed).

    The objects land in the build cache, where the later builds find them (nothing is lost if
    those start first: the cache builds each entry once). A cold compile thus runs these
    compilers beside its own Python work instead of after it; the model it stores is loaded
    from its export, whose runtime becomes the process's (no runtime of its own is built).
    Failures are left to the later builds to report."""
    jobs = [(u, export_flags(flags)) for u in runtime_units()]
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
    """Write ``exe`` and its library into the one file ``path`` (see the module docstring).

    ``source`` is the C of the library (default: the source its in-process `Module` kept), or
    ``units`` its translation units; every unit is compiled as by `compile_units` (cached per
    unit, so the objects of a model's build are only linked again); ``flags`` replaces the C
    compiler's default flags as in `compile_c`.
    """
    own = units if units else (_library_source(exe, source),)
    lib, _, _ = compile_units((*own, *runtime_units()), flags=export_flags(flags),
                              name_hint="kiln_vm_model")  # fmt: skip
    dest = Path(path)
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=dest.parent, prefix=f".{dest.name}.", suffix=".tmp")
    os.close(fd)
    try:
        shutil.copyfile(lib, tmp)
        with open(tmp, "ab") as out:
            offset = -out.tell() % PAGE + out.tell()
            out.write(b"\0" * (offset - out.tell()))
            size = write_executable(exe, out)
            out.write(TRAILER.pack(TRAILER_MAGIC, offset, size, TRAILER_VERSION))
        os.chmod(tmp, 0o755)
        os.replace(tmp, dest)
    finally:
        Path(tmp).unlink(missing_ok=True)
    return dest


def _appended(path: Path) -> tuple[int, int] | None:
    """(offset, size) of the executable appended to the library ``path``; None when it has no
    kiln trailer. `KilnError` for a trailer of another version or one pointing outside."""
    try:
        with open(path, "rb") as f:
            end = f.seek(0, os.SEEK_END)
            if end < TRAILER.size:
                return None
            f.seek(end - TRAILER.size)
            magic, offset, size, version = TRAILER.unpack(f.read(TRAILER.size))
    except OSError as e:
        raise KilnError(f"cannot read {path}: {e.strerror}") from e
    if magic != TRAILER_MAGIC:
        return None
    if version != TRAILER_VERSION:
        raise KilnError(
            f"{path.name} was exported with kiln library format {version}; this kiln reads "
            f"format {TRAILER_VERSION}: export it again with this kiln"
        )
    if offset + size > end - TRAILER.size:
        raise KilnError(f"{path.name} is truncated: its executable lies past the end of the file")
    return offset, size


def load_executable(module: Module) -> Executable:
    """The executable appended to a library written by `export_library` (its library is
    ``module``; see the module docstring)."""
    found = _appended(module.path)
    if found is None:
        raise KilnError(
            f"{module.path.name} is not a kiln VM executable: no executable follows its "
            "library (write one with export_library)"
        )
    load_vm_runtime(module)  # its runtime becomes the process's, or is checked against it
    offset, size = found
    blob = np.memmap(module.path, dtype=np.uint8, mode="c", offset=offset, shape=(size,))
    return deserialize(blob, module, where=str(module.path))
