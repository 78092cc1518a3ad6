"""The kernel cache: a kernel lowered, generated and compiled once is reused by every later build.

A model's library is built from translation units of kernels (`kiln.codegen.units`); the C
compiler's objects are cached per unit text (`kiln.runtime.parallel_build`), but a unit packs
several kernels, so another model (or the same one with another input size) that shares some of
them wrote other units and compiled them all again. This cache remembers, per kernel, the unit
that holds it:

- the key (`kernel_key`, docs/architecture.md's one kernel key) is a sha256 over
  `structural_digest` of the kernel's scheduled PrimFunc as LowerTE made it (its schedule's
  knobs are in it; names are not), the target, the C compiler's identity and flags, and
  `source_fingerprint` (a changed kiln never reuses an older one's kernel);
- a kernel compiled in a unit gets the exported name `canonical_symbol` (its base name and key),
  the same in every model; each model's library exports the kernel under its own name too,
  through a forwarding entry (`alias_c_source`), so the VM, profiles and ``kiln.load`` see the
  model's names;
- an entry, ``<KILN_CACHE_DIR>/kernels/kiln_kernel-<key>.json``, names the unit's C text in the
  build cache (``kiln_unit-<...>.c``), the kernel's symbol and its argument description. A
  later build whose kernel has an entry skips the kernel's TIR passes, C generation and
  compile: it links the unit's cached object (a unit whose text is gone is a miss).

A reused unit may hold kernels the model does not call: they are linked (weak symbols, so a
kernel compiled in two units links once) and never called. ``KILN_DEBUG`` turns the cache off
(the passes it skips are what debugging looks at).
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from kiln import config
from kiln.ir.structural import structural_digest
from kiln.ir.target import Target
from kiln.runtime import ArgInfo, disk_cache
from kiln.runtime.toolchain import cache_key, find_compiler
from kiln.tir.attrs import WEAK_SYMBOL
from kiln.tir.function import PrimFunc

FORMAT = "kiln-kernel-cache-1"
"""Changes whenever the entry layout or the kernel's C interface changes."""


@dataclass(frozen=True)
class CachedKernel:
    """A cache entry: the C text of the unit holding the kernel, its symbol and arguments."""

    unit: str
    symbol: str
    args: tuple[ArgInfo, ...]


@functools.lru_cache(maxsize=1)
def source_fingerprint() -> str:
    """sha256 over the relative path and content of every ``.py``, ``.c`` and ``.h`` file of the
    kiln package (memoized per process)."""
    root = Path(__file__).resolve().parent.parent
    h = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        if path.suffix in (".py", ".c", ".h") and path.is_file():
            h.update(str(path.relative_to(root)).encode() + b"\0")
            h.update(path.read_bytes() + b"\0")
    return h.hexdigest()


def enabled() -> bool:
    return config.load().debug == 0


def kernel_key(funcs: Sequence[PrimFunc], target: Target, flags: Sequence[str]) -> str:
    """The key of the kernel made of ``funcs`` (the exposed one first, then its callees)."""
    parts = [FORMAT, source_fingerprint(), str(target)]
    parts += [structural_digest(f.without_attr("global_symbol")) for f in funcs]
    return cache_key("\n".join(parts), tuple(flags), tuple(find_compiler()))


def canonical_symbol(name: str, key: str) -> str:
    """The exported name of a cached kernel: ``name`` without its numbering, and the key."""
    return f"{re.sub(r'_[0-9]+$', '', name)}_k{key[:20]}"


def _entry(key: str, create: bool = False) -> Path:
    return disk_cache.subfolder("kernels", create=create) / f"kiln_kernel-{key[:40]}.json"


def lookup(key: str) -> CachedKernel | None:
    """The entry for ``key`` whose unit text is still in the build cache; None otherwise."""
    try:
        meta = json.loads(_entry(key).read_text())
        unit = (config.load().cache_dir / meta["unit"]).read_text()
        args = tuple(ArgInfo(**a) for a in meta["args"])
        symbol = str(meta["symbol"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return CachedKernel(unit, symbol, args)


def record(key: str, unit_file: Path, symbol: str, args: Sequence[ArgInfo]) -> None:
    """Remember that the unit compiled from ``unit_file`` (in the build cache) holds the kernel
    ``key`` under ``symbol``. Failures to write are ignored: the cache is an optimization."""
    root = config.load().cache_dir
    meta = {"format": FORMAT, "unit": unit_file.name, "symbol": symbol}
    meta["args"] = [asdict(a) for a in args]
    try:
        if unit_file.parent != root:
            return
        dest = _entry(key, create=True)
        tmp = disk_cache.temp_path(dest)
        try:
            tmp.write_text(json.dumps(meta))
            os.replace(tmp, dest)
        finally:
            tmp.unlink(missing_ok=True)
    except (OSError, TypeError, ValueError):
        return


def weak(func: PrimFunc, symbol: str) -> PrimFunc:
    """``func`` exported as the weak symbol ``symbol``."""
    return func.with_attr("global_symbol", symbol).with_attr(WEAK_SYMBOL, True)


def alias_c_source(aliases: dict[str, str]) -> str:
    """C exporting each model name of ``aliases`` as a forward to its kernel's symbol."""
    out = []
    for name, symbol in aliases.items():
        sig = "(void* self, const TVMFFIAny* args, int32_t num_args, TVMFFIAny* result)"
        out.append(f"int __tvm_ffi_{symbol}{sig};")
        out.append(
            f"TVM_FFI_DLL_EXPORT int __tvm_ffi_{name}{sig} {{\n"
            f"  return __tvm_ffi_{symbol}(self, args, num_args, result);\n}}"
        )
    return "\n".join(out) + "\n"


__all__ = ["CachedKernel", "alias_c_source", "canonical_symbol", "kernel_key", "lookup", "record"]
