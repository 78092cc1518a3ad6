"""One shared library from several C translation units, compiled in parallel and cached per unit.

    lib, objects, units = compile_units([unit_a, unit_b, ...], flags=flags, name_hint="kiln_vm")

Each unit is compiled to an object file (``-c``) by a pool of threads, one compiler process
each (``jobs``, default the CPU count), then the objects are linked into one library with the
flags' link-only items (``-l``, ``-L``, ``-Wl,``, and input files such as the ``.s`` of an
exported executable) and the tvm-ffi link flags.

A unit that fails, or an interrupt (Ctrl-C) while they compile, stops the build at once: the
units not started are dropped and the compilers running are killed (`ToolGroup`).

Caching (`kiln.runtime.toolchain.cached_build`, the same protocol as `compile_c`): an object is
keyed on its unit's text and the compile flags, so an identical unit (the same kernel in another
model, or the same model compiled again) is compiled once; the library is keyed on its objects'
digests and the link flags. A unit's functions that other units call must be exported symbols
(kiln's tvm-ffi entries are); everything else in a unit is ``static``.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import FIRST_EXCEPTION, Future, ThreadPoolExecutor, wait
from pathlib import Path

from kiln.runtime.child_process import ToolGroup
from kiln.runtime.toolchain import (
    cache_key,
    cached_build,
    find_compiler,
    report_flags,
    resolve_flags,
    run_and_publish,
    tvm_ffi_compile_flags,
    tvm_ffi_link_flags,
)

OBJECT_NAME = "kiln_unit"
"""The name of every cached object file (``kiln_unit-<key>.o``)."""

_LINK_ONLY_PREFIXES = ("-l", "-L", "-Wl,")
_INPUT_SUFFIXES = (".s", ".S", ".o", ".a", ".so", ".c")


def is_link_only(flag: str) -> bool:
    """Whether ``flag`` matters only when linking: a library, a library directory, a linker
    option, an input file, or ``-shared``."""
    return (
        flag == "-shared" or flag.startswith(_LINK_ONLY_PREFIXES) or flag.endswith(_INPUT_SUFFIXES)
    )


def compile_object(source: str, *, flags: Sequence[str] | None = None, name_hint: str) -> Path:
    """The cached object file of C ``source`` (``flags`` as for `compile_c`; link-only items
    are dropped)."""
    cc = find_compiler()
    full = tuple(f for f in resolve_flags(None if flags is None else tuple(flags))
                 if not is_link_only(f))  # fmt: skip
    full = (*full, "-c", *report_flags(tuple(cc)))
    key = cache_key(source, full, tuple(cc))

    def build(src: Path, out: Path) -> None:
        run_and_publish(
            lambda tmp: [*cc, *full, *tvm_ffi_compile_flags(), str(src), "-o", str(tmp)], src, out
        )

    return cached_build(key, name_hint, ".o", source, build)


def link_objects(
    objects: Sequence[Path], *, flags: Sequence[str] | None = None, name_hint: str
) -> Path:
    """The cached shared library linked from ``objects`` (and the flags' input files)."""
    cc = find_compiler()
    full = resolve_flags(None if flags is None else tuple(flags))
    listing = "\n".join(f"{o} {hashlib.sha256(o.read_bytes()).hexdigest()}" for o in objects)
    inputs = [f for f in full if f.endswith(_INPUT_SUFFIXES)]
    for path in inputs:  # an input file's content is part of what is linked
        listing += f"\n{path} {hashlib.sha256(Path(path).read_bytes()).hexdigest()}"
    key = cache_key(listing, full, tuple(cc))

    def build(src: Path, out: Path) -> None:
        run_and_publish(
            lambda tmp: [*cc, *full, *map(str, objects), "-o", str(tmp), *tvm_ffi_link_flags()],
            src,
            out,
        )

    return cached_build(key, name_hint, ".so", listing, build, source_suffix=".link")


def compile_units(
    units: Iterable[str],
    *,
    flags: Sequence[str] | None = None,
    name_hint: str = "kiln",
    jobs: int | None = None,
    report: Callable[[str, float], None] | None = None,
) -> tuple[Path, list[Path], tuple[str, ...]]:
    """(the library, its objects, the units) built from ``units`` (see the module docstring).
    Each unit starts compiling as soon as the iterable yields it, so a generator may produce
    the next unit while the compiler works on the ones before. ``report(what, seconds)``, when
    given, hears the wall time of each unit's compile (``"cc unit <k>"``, from a worker thread;
    a cached object takes next to nothing) and of the link (``"link"``)."""
    workers = max(1, jobs or os.cpu_count() or 1)
    tools = ToolGroup()

    def one(k: int, unit: str) -> Path:
        start = time.perf_counter()
        with tools.owning():
            # NOTE: one name for every object, so equal units share one entry whoever builds them.
            obj = compile_object(unit, flags=flags, name_hint=OBJECT_NAME)
        if report is not None:
            report(f"cc unit {k}", time.perf_counter() - start)
        return obj

    # NOTE: threads suffice: each waits on its compiler process, and the GIL is free meanwhile.
    with ThreadPoolExecutor(max_workers=workers) as pool:
        texts: list[str] = []
        futures = []
        try:
            for unit in units:
                texts.append(unit)
                futures.append(pool.submit(one, len(texts) - 1, unit))
                _raise_first_failure(futures)
            wait(futures, return_when=FIRST_EXCEPTION)
            _raise_first_failure(futures)
            objects = [f.result() for f in futures]
        except BaseException:
            pool.shutdown(wait=False, cancel_futures=True)
            tools.cancel()
            raise
    if not objects:
        raise ValueError("compile_units needs at least one translation unit")
    start = time.perf_counter()
    lib = link_objects(objects, flags=flags, name_hint=name_hint)
    if report is not None:
        report("link", time.perf_counter() - start)
    return lib, objects, tuple(texts)


def _raise_first_failure(futures: Sequence[Future[Path]]) -> None:
    """Raise the error of the first unit (in order) that failed, if one has."""
    for f in futures:
        if f.done() and not f.cancelled() and f.exception() is not None:
            f.result()
