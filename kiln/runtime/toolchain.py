"""Compile generated C into a shared library, with an on-disk cache keyed by content.

`compile_c(source)` returns the path of a shared library built from `source`. The command is

    <cc> <flags> -I<tvm-ffi include> <stem>.c -o <tmp>
         -L<tvm-ffi lib dir> -ltvm_ffi -Wl,-rpath,<tvm-ffi lib dir> -Wl,--no-undefined -lm

where `<flags>` defaults to `DEFAULT_FLAGS` (`-O3 -march=native -fno-trapping-math
-fno-math-errno -fno-predictive-commoning -fopenmp -fPIC -shared`; `default_flags(march)` is the
same list for another CPU); given flags replace that list, and `-fPIC -shared` are added to them
when missing.
`march_macros` / `resolve_march` ask the compiler what a `-march=` value means (the `c` target
reads its CPU's ISA from them).
With `KILN_DEBUG=1` or more, GCC is also asked for `-fopt-info-vec-loop-optimized-missed`
(`report_flags`): its notes on the loops it vectorized (or turned into library calls) and those
it could not land in the kept compiler output.

Cache layout (all in `config.load().cache_dir`, a folder `kiln.runtime.disk_cache` creates 0700
and checks: no other user may write it), for `key = sha256(source, flags, compiler
version, CPU identity when -march=native)` and `stem = <name_hint>-<key[:32]>`:

- `<stem>.c`: the source, kept so users can read it and so compiler messages point at a real file;
- `<stem>.so`: the library;
- `<stem>.so.sha256`: hex sha256 of the library bytes; an entry is valid only when it matches;
- `<stem>.log`: what the compiler printed (stderr) when it built the library, warnings and
  optimization notes included (`compiler_output`);
- `<stem>.lock`: an advisory `flock` lock serializing builders of the same key.

`cached_build` is that protocol for any build step (`kiln.runtime.parallel_build` caches object
files and linked libraries with it); `publish_entry` moves a library built elsewhere into an
entry (kiln.compile's model cache). Every
compiler runs through `kiln.runtime.child_process.run_tool`: it dies with kiln, SIGKILL included.
A hit marks its entry used, and a store may evict least recently used entries
(`disk_cache.stored`, ``KILN_CACHE_MAX_BYTES``).

Invariants:
- A library path returned by `compile_c` was verified against its sidecar digest.
- Files are only ever published with `os.replace` from a temp file in the same directory, so a
  reader never sees a half-written `.so`; concurrent builders of one key compile once (the others
  wait on the lock, then find the entry) and leave exactly one `.so`. Temp files carry the
  writer's pid and are removed on any failure (a full disk included); a killed writer's are
  removed by the next process (`disk_cache`). A library whose digest cannot be written is removed.
- A corrupted entry (digest mismatch, missing sidecar, a file that is not a shared library) is
  rebuilt; `discard_entry` drops an entry whose library fails to load despite a matching digest
  (`kiln.runtime.module.build_module` then builds it once more).
- A compiler that exits 0 without writing a library is a `ToolchainError`; nothing is cached.
- Compiler failures raise `ToolchainError(cmd, stderr, src_path)` with `src_path` the kept `.c`.
- A cache that cannot be used raises `KilnError` naming the file and the fix: an entry path
  taken by a directory (or another non-file), or a directory where kiln cannot write a lock,
  source or library (a valid entry in a read-only cache is still used: hits need no lock).
"""

from __future__ import annotations

import fcntl
import functools
import hashlib
import os
import re
import shlex
import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import tvm_ffi.libinfo

from kiln import config
from kiln.errors import KilnError, ToolchainError
from kiln.runtime import disk_cache
from kiln.runtime.child_process import run_tool

# NOTE: -fno-trapping-math (clang's default) lets GCC vectorize float min/max followed by other
# arithmetic and floorf; without it `max(x, 0) * 2` over 1M floats ran 46x slower. Results are
# unchanged: kiln never enables floating-point traps. -fno-math-errno (clang's default on Linux)
# lets it turn sqrtf into the vector instruction: a libm call that may set errno "clobbers
# memory", and T5's RMS norm (x / sqrt(var + eps)) stayed a scalar loop, 173 -> 34 us for
# 128x512 on one Zen 3 core. Results are unchanged: kiln never reads errno.
DEFAULT_FLAGS: tuple[str, ...] = (
    "-O3",
    "-march=native",
    "-fno-trapping-math",
    "-fno-math-errno",
    "-fno-predictive-commoning",
    "-fopenmp",
    "-fPIC",
    "-shared",
)
"""Code-generation flags used when `compile_c` gets `flags=None` (the host CPU).
NOTE: ``-fno-predictive-commoning``: with it on, GCC carries the input values that the next
unrolled step of a register tile reads again in registers, and the tile's accumulators spill
to the stack (AVX2, `kiln.topi.x86.conv2d_nchwc.UNROLL_BLOCK_REGISTERS`: SqueezeNet 14 -> 44
ms). Off, measured (Zen 3, 1 thread, kiln A/B in one process): BERT, DeiT-tiny,
EfficientNet-B0 and MobileNetV2 within 1%."""


def default_flags(march: str = "native") -> tuple[str, ...]:
    """`DEFAULT_FLAGS` generating code for ``-march=<march>`` (a target's CPU)."""
    return tuple(f"-march={march}" if f.startswith("-march=") else f for f in DEFAULT_FLAGS)


_REQUIRED_FLAGS: tuple[str, ...] = ("-fPIC", "-shared")
_CANDIDATES: tuple[str, ...] = ("cc", "gcc", "clang")
_FIX_HINT = "Fix: install a C compiler (e.g. `apt-get install gcc`) or set KILN_CC to its path."


def find_compiler() -> list[str]:
    """The C compiler command: `KILN_CC` (may hold arguments, e.g. "ccache gcc"), else the first
    of cc, gcc, clang found on PATH. Raises `ToolchainError` explaining the fix when none exists."""
    configured = config.load().cc
    if configured is not None:
        argv = shlex.split(configured)
        exe = shutil.which(argv[0]) if argv else None
        if exe is None:
            msg = (
                f"no C compiler found: KILN_CC is set to {configured!r}, which is not an "
                f"executable. {_FIX_HINT} Or unset KILN_CC to search PATH for cc, gcc, clang."
            )
            raise ToolchainError(configured, msg)
        return [exe, *argv[1:]]
    for name in _CANDIDATES:
        exe = shutil.which(name)
        if exe is not None:
            return [exe]
    msg = f"no C compiler found: none of {', '.join(_CANDIDATES)} is on PATH. {_FIX_HINT}"
    raise ToolchainError(" | ".join(_CANDIDATES), msg)


@functools.lru_cache(maxsize=None)
def compiler_version(cc: tuple[str, ...]) -> str:
    """The output of `<cc> --version`, memoized per process (part of the cache key)."""
    return _ask_compiler([*cc, "--version"])


def _ask_compiler(cmd: list[str]) -> str:
    """The standard output of compiler command ``cmd``; `ToolchainError` when it fails."""
    try:
        proc = run_tool(cmd)
    except OSError as e:
        raise ToolchainError(cmd, f"cannot run the C compiler: {e}. {_FIX_HINT}") from e
    if proc.returncode != 0:
        raise ToolchainError(cmd, proc.stderr or proc.stdout)
    return proc.stdout


@functools.lru_cache(maxsize=None)
def _cpu_identity() -> str:
    """Model name and feature flags of this CPU, so `-march=native` builds never cross machines
    that share a cache directory."""
    # NOTE: /proc/cpuinfo is Linux-only; elsewhere the key just lacks this part.
    try:
        text = Path("/proc/cpuinfo").read_text(errors="replace")
    except OSError:
        return ""
    keep = ("model name", "flags", "Features", "CPU part")
    lines = [ln for ln in text.splitlines() if ln.split(":")[0].strip() in keep]
    return "\n".join(dict.fromkeys(lines))


@functools.lru_cache(maxsize=None)
def march_macros(cc: tuple[str, ...], march: str) -> frozenset[str]:
    """The macros `<cc> -march=<march>` predefines (``__AVX2__``, ``__AVX512F__``, ...): what
    code for that CPU may use. Memoized per process; `ToolchainError` when the compiler rejects
    the name."""
    out = _ask_compiler([*cc, f"-march={march}", "-dM", "-E", "-x", "c", os.devnull])
    return frozenset(ln.split()[1] for ln in out.splitlines() if ln.startswith("#define "))


@functools.lru_cache(maxsize=None)
def resolve_march(cc: tuple[str, ...], march: str) -> str:
    """The CPU name ``-march=<march>`` selects: ``native`` as GCC resolves it (``znver3``,
    ``skylake-avx512``; read from ``-Q --help=target``), else ``march`` itself (also when the
    compiler cannot say, as clang cannot)."""
    if march != "native":
        return march
    cmd = [*cc, "-march=native", "-Q", "--help=target"]
    try:
        out = run_tool(cmd).stdout
    except OSError:
        return march
    found = re.search(r"^\s*-march=\s+(\S+)\s*$", out, re.MULTILINE)
    return found.group(1) if found else march


def tvm_ffi_compile_flags() -> tuple[str, ...]:
    """Include flags for `<tvm/ffi/c_api.h>` and `<dlpack/dlpack.h>`."""
    incs = dict.fromkeys(
        [tvm_ffi.libinfo.find_include_path(), tvm_ffi.libinfo.find_dlpack_include_path()]
    )
    return tuple(f"-I{p}" for p in incs)


def tvm_ffi_link_flags() -> tuple[str, ...]:
    """Link against libtvm_ffi (reused when already loaded) and refuse undefined symbols."""
    # NOTE: the library is dlopen'ed RTLD_LAZY; an unresolved function symbol would abort the
    # process at its first call. `--no-undefined` turns that into a compile-time error instead.
    libdir = str(Path(tvm_ffi.libinfo.find_libtvm_ffi()).parent)
    return (f"-L{libdir}", "-ltvm_ffi", f"-Wl,-rpath,{libdir}", "-Wl,--no-undefined", "-lm")


def is_gcc(cc: tuple[str, ...]) -> bool:
    """True when the compiler is GCC (clang also answers to ``gcc`` on some systems)."""
    version = compiler_version(cc)
    return "Free Software Foundation" in version and "clang" not in version.lower()


def report_flags(cc: tuple[str, ...]) -> tuple[str, ...]:
    """Flags asking the compiler to say which loops it vectorized (or turned into ``memset``
    and the like) and which it did not
    (`KILN_DEBUG` >= 1, GCC only; the notes go to stderr, which `compile_c` keeps).

    NOTE: the "missed" notes alone cannot tell a loop GCC gave up on from one it vectorized
    while giving up on the loop around it: GCC places an outer loop's notes on the inner loop's
    lines once the inner loop is inlined and vectorized."""
    if config.load().debug >= 1 and is_gcc(cc):
        return ("-fopt-info-vec-loop-optimized-missed",)
    return ()


def compiler_output(lib: Path) -> str:
    """What the compiler printed when it built the cached library ``lib`` ("" when unknown)."""
    try:
        return lib.with_suffix(".log").read_text(errors="replace")
    except OSError:
        return ""


def resolve_flags(flags: tuple[str, ...] | None) -> tuple[str, ...]:
    if flags is None:
        return DEFAULT_FLAGS
    return tuple(flags) + tuple(f for f in _REQUIRED_FLAGS if f not in flags)


def cache_key(source: str, flags: tuple[str, ...], cc: tuple[str, ...]) -> str:
    """sha256 over the source, the full flag list, the compiler version and (for
    `-march=native`) the CPU identity."""
    h = hashlib.sha256()
    parts = [source, "\0".join(flags), "\0".join(cc), compiler_version(cc)]
    if any(f.startswith("-march=native") or f.startswith("-mcpu=native") for f in flags):
        parts.append(_cpu_identity())
    for part in parts:
        data = part.encode()
        h.update(len(data).to_bytes(8, "little"))
        h.update(data)
    return h.hexdigest()


def _sha256_file(path: Path) -> str:
    """sha256 of a file, read in 1 MiB pieces into one buffer (reading 100 MB at once made
    100 MB of fresh pages: slower than the hash)."""
    h = hashlib.sha256()
    buf = bytearray(1 << 20)
    view = memoryview(buf)
    with open(path, "rb") as f:
        while n := f.readinto(buf):
            h.update(view[:n])
    return h.hexdigest()


def _stat_line(path: Path) -> str:
    """Size, modification time and inode of ``path``: what the digest sidecar records of the
    file it was computed from."""
    st = path.stat()
    return f"{st.st_size} {st.st_mtime_ns} {st.st_ino}"


LIBRARY_MAGIC: tuple[bytes, ...] = (b"\x7fELF", b"\xcf\xfa\xed\xfe", b"\xca\xfe\xba\xbe", b"MZ")
"""How a shared library starts: ELF (Linux), Mach-O (macOS, thin or fat), PE (Windows)."""


def _is_library(data: bytes) -> bool:
    return data.startswith(LIBRARY_MAGIC)


def _is_valid_entry(lib: Path, digest: Path) -> bool:
    """Whether ``lib`` is a library whose bytes match the sidecar ``digest``. NOTE: the sidecar's
    second line records the file's `_stat_line` when it was published; a file with that size,
    modification time and inode still (a hit only sets the access time) is not hashed again:
    a 100 MB model's digest took 0.1-0.2 s of each cached load, and every write changes the
    modification time."""
    try:
        recorded = digest.read_text().split("\n")
        with open(lib, "rb") as f:
            head = f.read(4)
        if not recorded[0] or not _is_library(head):
            return False
        if len(recorded) > 1 and recorded[1] == _stat_line(lib):
            return True
        return _sha256_file(lib) == recorded[0].strip()
    except OSError:
        return False


def _cache_fault(path: Path, problem: str, cache_dir: Path) -> KilnError:
    return KilnError(
        f"kiln cache: {path} {problem}. Fix: remove it (or the whole cache directory "
        f"{cache_dir}), or set KILN_CACHE_DIR to another writable directory"
    )


def _check_entry_paths(paths: list[Path], cache_dir: Path) -> None:
    """Each path of a cache entry must be a regular file or absent."""
    for path in paths:
        if path.exists() and not path.is_file():
            kind = "a directory" if path.is_dir() else "not a regular file"
            raise _cache_fault(
                path, f"is {kind}, where kiln keeps a file of a cache entry", cache_dir
            )


def is_valid_entry(path: Path) -> bool:
    """Whether the cache file ``path`` is a library matching its ``.sha256`` sidecar."""
    return _is_valid_entry(path, path.with_name(path.name + ".sha256"))


def publish_entry(built: Path, dest: Path) -> None:
    """Move the library ``built`` (a file in ``dest``'s directory) into place as the cache
    entry ``dest``, then write its digest, under the entry's lock; readers see the old entry
    or the whole new one."""
    cache_dir = dest.parent
    _check_entry_paths([dest, dest.with_name(dest.name + ".sha256")], cache_dir)
    with _locked(dest.with_suffix(".lock"), cache_dir):
        try:
            try:
                _publish_file(built, dest, _sha256_file(built))
            finally:
                built.unlink(missing_ok=True)
        except OSError as e:
            raise _cache_fault(dest, f"cannot be written ({e.strerror})", cache_dir) from e
    disk_cache.stored(dest, dest.with_name(dest.name + ".sha256"))


def _publish_file(tmp: Path, out: Path, digest: str) -> None:
    """Publish the finished file ``tmp`` as the cache file ``out``, then its digest.
    NOTE: a library whose digest cannot be written (a full disk) is no entry: it is removed, so
    a failed publish leaves nothing half-made behind."""
    os.chmod(tmp, 0o755)
    os.replace(tmp, out)
    try:
        sidecar = f"{digest}\n{_stat_line(out)}\n"
        _atomic_write(out.with_name(out.name + ".sha256"), sidecar.encode())
    except BaseException:
        out.unlink(missing_ok=True)
        raise


def discard_entry(lib: Path) -> None:
    """Drop the cache entry of library ``lib`` (its library and digest) so that the next
    `compile_c` of its source builds it again."""
    with _locked(lib.with_suffix(".lock"), lib.parent):
        for path in (lib.with_name(lib.name + ".sha256"), lib):
            path.unlink(missing_ok=True)


def _atomic_write(path: Path, data: bytes) -> None:
    """Write `data` to `path` so that readers see either the old file or the whole new one
    (through a `disk_cache.temp_path`, removed when the write fails)."""
    tmp = disk_cache.temp_path(path)
    try:
        tmp.write_bytes(data)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


@contextmanager
def _locked(lock_path: Path, cache_dir: Path | None = None) -> Iterator[None]:
    # NOTE: flock needs no write access, so an existing lock file is opened read-only.
    try:
        fd = os.open(lock_path, os.O_CREAT | os.O_RDONLY, 0o644)
    except OSError as e:
        problem = f"cannot be opened as a lock file ({e.strerror})"
        raise _cache_fault(lock_path, problem, cache_dir or lock_path.parent) from e
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the lock


def _run_compiler(cc: list[str], flags: tuple[str, ...], src: Path, lib: Path) -> None:
    """Compile `src` into a temp file beside `lib`, then publish it and its digest."""
    inputs = [*cc, *flags, *tvm_ffi_compile_flags(), str(src)]
    run_and_publish(lambda out: [*inputs, "-o", str(out), *tvm_ffi_link_flags()], src, lib)


def run_and_publish(command: Callable[[Path], list[str]], src: Path, out: Path) -> None:
    """Run the compiler command ``command(tmp)`` writing a temp file beside ``out``, then
    publish that file as ``out`` with its compiler log and digest (see module docstring).
    The temp file is removed whatever happens (a compiler error, a full disk, an interrupt:
    `run_tool` kills the compiler first)."""
    tmp = disk_cache.temp_path(out)
    try:
        cmd = command(tmp)
        try:
            proc = run_tool(cmd)
        except OSError as e:
            raise ToolchainError(cmd, f"cannot run the C compiler: {e}", str(src)) from e
        if proc.returncode != 0:
            raise ToolchainError(cmd, proc.stderr or proc.stdout, str(src))
        _check_output(cmd, tmp, src, proc.stderr or proc.stdout)
        # NOTE: the log is published before the library, so a valid entry always has its log.
        _atomic_write(out.with_suffix(".log"), proc.stderr.encode())
        _publish_file(tmp, out, _sha256_file(tmp))
    finally:
        tmp.unlink(missing_ok=True)


def _check_output(cmd: list[str], out: Path, src: Path, printed: str) -> None:
    """The compiler exited 0: it must have written a shared library to ``out``."""
    with out.open("rb") as f:
        head = f.read(4)
    if _is_library(head):
        return
    what = "wrote nothing" if not head else "wrote a file that is not a shared library"
    raise ToolchainError(
        cmd,
        f"the C compiler exited with status 0 but {what} at {out}; nothing was cached. Check "
        f"that KILN_CC (or cc on PATH) is a C compiler that honours -shared and -o."
        + (f"\nIt printed:\n{printed}" if printed.strip() else ""),
        str(src),
    )


def _stem(name_hint: str, key: str) -> str:
    hint = re.sub(r"[^A-Za-z0-9_]+", "_", name_hint)[:48] or "kiln"
    return f"{hint}-{key[:32]}"


def compile_c(
    source: str, *, flags: tuple[str, ...] | None = None, name_hint: str = "kiln"
) -> Path:
    """Compile C `source` to a shared library and return its cached path (see module docstring).

    `flags` replaces `DEFAULT_FLAGS` (`-fPIC -shared` are kept); tvm-ffi include and link flags
    are always added.
    """
    cc = find_compiler()
    full_flags = resolve_flags(flags) + report_flags(tuple(cc))
    key = cache_key(source, full_flags, tuple(cc))
    return cached_build(
        key,
        name_hint,
        ".so",
        source,
        lambda src, out: _run_compiler(cc, full_flags, src, out),
    )


def cache_directory() -> Path:
    """The kiln cache directory, created (mode 0700) when missing and checked to be safe
    (`kiln.runtime.disk_cache.cache_root`)."""
    return disk_cache.cache_root()


def cached_build(
    key: str,
    name_hint: str,
    suffix: str,
    source: str,
    build: Callable[[Path, Path], None],
    source_suffix: str = ".c",
) -> Path:
    """The cache entry ``<name_hint>-<key>{suffix}``: returned when valid, else built under
    the entry's lock by ``build(source file, output)`` from ``source`` (kept beside it as
    ``<stem>{source_suffix}``), which must publish the output with `run_and_publish`."""
    cache_dir = cache_directory()
    stem = _stem(name_hint, key)
    lib = cache_dir / f"{stem}{suffix}"
    digest = cache_dir / f"{stem}{suffix}.sha256"
    if _is_valid_entry(lib, digest):
        return _hit(lib)
    src, lock = cache_dir / f"{stem}{source_suffix}", cache_dir / f"{stem}.lock"
    _check_entry_paths([lib, digest, src, lock, lib.with_suffix(".log")], cache_dir)
    with _locked(lock, cache_dir):
        if _is_valid_entry(lib, digest):  # another process built it while we waited
            return _hit(lib)
        try:
            _atomic_write(src, source.encode())
            build(src, lib)
        except OSError as e:  # the compiler's own failures are ToolchainErrors, not OSErrors
            where = Path(e.filename) if e.filename else cache_dir
            raise _cache_fault(where, f"cannot be written ({e.strerror})", cache_dir) from e
    disk_cache.stored(lib, digest, src, lib.with_suffix(".log"))
    return lib


def _hit(lib: Path) -> Path:
    """``lib``, a valid entry, marked used (for the size cap's LRU order)."""
    disk_cache.touch(lib)
    disk_cache.note_in_use(lib)
    return lib
