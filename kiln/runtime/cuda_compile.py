"""Compile CUDA C++ to a CUBIN with NVRTC (no GPU needed), cached on disk like the C toolchain.

NVRTC comes from the `kiln[cuda]` extra: `cuda-bindings` (its Python bindings), the
`nvidia-cuda-nvrtc` wheel (the library) and `nvidia-cuda-runtime` (``cuda_fp16.h``,
``cuda_bf16.h`` and the other headers device code includes), all CUDA 13.0.x.

`compile_cuda(source, arch)` returns the CUBIN bytes. Options are
``-arch=<arch> -std=c++17 -default-device -I<wheel include dir>`` plus any given; the
``-default-device`` option makes unannotated functions ``__device__`` functions, which lets the
C helpers shared with CodeGenC compile as device code.

Cache layout (in `config.load().cache_dir`, made and checked by `toolchain.cache_directory`),
for ``key = sha256(source, options, NVRTC version)`` and ``stem = <name_hint>-<key[:32]>``:
``<stem>.cu`` (the source, kept for reading and for error messages), ``<stem>.cubin`` and
``<stem>.cubin.sha256`` (valid only when it matches), and ``<stem>.lock`` serializing builders
of one key. NVRTC errors raise `ToolchainError` with the NVRTC log and the kept ``.cu`` path; a
missing NVRTC raises `ToolchainError` naming the extra.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from kiln.errors import ToolchainError
from kiln.runtime.toolchain import _atomic_write, _is_valid_entry, _locked, _stem, cache_directory

INSTALL_HINT = "install kiln's CUDA extra: pip install 'kiln[cuda]'"


def _nvrtc() -> Any:
    try:
        from cuda.bindings import nvrtc
    except ImportError as e:
        raise ToolchainError("nvrtc", f"NVRTC is not available ({e}); {INSTALL_HINT}") from e
    return nvrtc


@functools.lru_cache(maxsize=None)
def nvrtc_version() -> str:
    """NVRTC's version as ``major.minor``."""
    err, major, minor = _nvrtc().nvrtcVersion()
    _check(err, "nvrtcVersion")
    return f"{major}.{minor}"


@functools.lru_cache(maxsize=None)
def cuda_include_dirs() -> tuple[str, ...]:
    """Directories of the CUDA headers shipped in the NVIDIA wheels (``cuda_fp16.h``...)."""
    try:
        import nvidia
    except ImportError:
        return ()
    found = []
    for root in getattr(nvidia, "__path__", []):
        for sub in ("cu13/include", "cuda_runtime/include", "cuda_nvrtc/include"):
            path = Path(root) / sub
            if (path / "cuda_fp16.h").is_file():
                found.append(str(path))
    return tuple(dict.fromkeys(found))


def nvrtc_options(arch: str, extra: Sequence[str] = ()) -> tuple[str, ...]:
    """The full NVRTC option list for ``arch`` (e.g. ``sm_90``)."""
    includes = tuple(f"-I{d}" for d in cuda_include_dirs())
    return (f"-arch={arch}", "-std=c++17", "-default-device", *includes, *extra)


def _check(err: Any, what: str) -> None:
    if int(err) != 0:
        raise ToolchainError("nvrtc", f"{what} failed: {err!r}")


def _log(nvrtc: Any, prog: Any) -> str:
    err, size = nvrtc.nvrtcGetProgramLogSize(prog)
    if int(err) != 0 or size <= 1:
        return ""
    buf = b" " * size
    nvrtc.nvrtcGetProgramLog(prog, buf)
    return buf.rstrip(b"\0 ").decode(errors="replace")


def run_nvrtc(source: str, options: Sequence[str], name: str = "kernel.cu") -> bytes:
    """Compile ``source`` with NVRTC and return the CUBIN; raises `ToolchainError` on failure."""
    nvrtc = _nvrtc()
    err, prog = nvrtc.nvrtcCreateProgram(source.encode(), name.encode(), 0, [], [])
    _check(err, "nvrtcCreateProgram")
    try:
        opts = [o.encode() for o in options]
        (err,) = nvrtc.nvrtcCompileProgram(prog, len(opts), opts)
        if int(err) != 0:
            cmd = " ".join(["nvrtc", *options, name])
            raise ToolchainError(cmd, _log(nvrtc, prog) or repr(err), name)
        err, size = nvrtc.nvrtcGetCUBINSize(prog)
        _check(err, "nvrtcGetCUBINSize")
        if size == 0:
            raise ToolchainError("nvrtc", "NVRTC produced no CUBIN: give a real -arch=sm_XX")
        cubin = b" " * size
        (err,) = nvrtc.nvrtcGetCUBIN(prog, cubin)
        _check(err, "nvrtcGetCUBIN")
        return cubin
    finally:
        nvrtc.nvrtcDestroyProgram(prog)


def cuda_cache_key(source: str, options: Sequence[str]) -> str:
    """sha256 over the source, the options and the NVRTC version."""
    h = hashlib.sha256()
    for part in (source, "\0".join(options), nvrtc_version()):
        data = part.encode()
        h.update(len(data).to_bytes(8, "little"))
        h.update(data)
    return h.hexdigest()


def compile_cuda(
    source: str, arch: str, *, options: Sequence[str] = (), name_hint: str = "kiln"
) -> bytes:
    """Compile CUDA ``source`` for ``arch`` to a CUBIN, through the on-disk cache."""
    opts = nvrtc_options(arch, options)
    key = cuda_cache_key(source, opts)
    cache_dir = cache_directory()  # NOTE: created 0700 and checked, as for the C toolchain
    stem = _stem(name_hint, key)
    cubin, digest = cache_dir / f"{stem}.cubin", cache_dir / f"{stem}.cubin.sha256"
    if _is_valid_entry(cubin, digest):
        return cubin.read_bytes()
    with _locked(cache_dir / f"{stem}.lock"):
        if _is_valid_entry(cubin, digest):
            return cubin.read_bytes()
        src = cache_dir / f"{stem}.cu"
        _atomic_write(src, source.encode())
        try:
            data = run_nvrtc(source, opts, str(src))
        except ToolchainError as e:
            raise ToolchainError(e.cmd, e.stderr, str(src)) from None
        _atomic_write(cubin, data)
        _atomic_write(digest, (hashlib.sha256(data).hexdigest() + "\n").encode())
    return data
