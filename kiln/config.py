"""Every environment variable kiln reads is read here, and nowhere else.

- `KILN_DEBUG`: 0 off; 1 verify after every pass and report optimizations that did not happen
  (`remark`: an explicit-vector loop that fell back, a loop the C compiler did not vectorize);
  2 also print IR after each pass; 3 also print generated source. ``time`` (alone, or with a
  level: ``1,time``) prints where a compile's time went, per phase and per pass, to stderr
  (`kiln.driver.timing`); unlike the levels it keeps the model cache on. What 2 prints: after
  each graph-level pass, the functions it changed (a pass that changed nothing prints one line);
  the TIR passes of a model's compile units print at 3, or at 2 when `KILN_PRINT_AFTER` names
  them (a kernel built alone, ``kiln.build``, prints its TIR passes at 2).
  Constants above a few elements print as references into a metadata section (`kiln.script`).
- `KILN_PRINT_AFTER`: comma-separated pass names (``fuse-ops,lower-te``; `kiln opt --list` lists
  them): with `KILN_DEBUG` 2 or 3, print only after these passes, each time the whole module
  (the functions `KILN_PRINT_FUNCS` selects), changed or not.
- `KILN_PRINT_FUNCS`: comma-separated shell-style globs of function names (``main,*conv2d*``):
  with `KILN_DEBUG` 2 or 3, print only the functions they match.
- `KILN_CC`: the C compiler to use (default: `cc`, then `gcc`, then `clang`).
- `KILN_CACHE_DIR`: where compiled libraries are cached (default `~/.cache/kiln`).
- `KILN_CACHE_MAX_BYTES`: the cache's size cap: least recently used entries are evicted after a
  store that takes it over (default `CACHE_MAX_BYTES`; 0 turns the cap off).
- `KILN_NUM_THREADS`: threads for compiled CPU kernels, kiln's pool and OpenMP (default: unset:
  ``OMP_NUM_THREADS``, else the CPUs this process may run on).
- `KILN_POOL_SPIN_US`: how long an idle worker of kiln's thread pool (`kiln.runtime.thread_pool`)
  spins before it sleeps (default `POOL_SPIN_US`).

Most parallel loops run on kiln's own thread pool (`kiln.runtime.thread_pool`, sized by
`pool_threads`); the rest (bodies that may raise) are OpenMP regions.
`apply_openmp_defaults()` runs before the runtime first loads OpenMP (through tvm_ffi, or
torch's libgomp where the user imported torch first): it turns `KILN_NUM_THREADS` into
`OMP_NUM_THREADS` and, unless the user chose a policy, sets `OMP_WAIT_POLICY=passive`. NOTE:
with libgomp's default spin-waiting, an idle worker competes for the CPU with other processes;
on a small shared machine a parallel kernel then often loses a whole scheduler tick (measured:
8 ms instead of 0.19 ms for a 1M-element relu).
OpenMP reads these once, so importing torch before kiln leaves its settings in force.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Config:
    """A snapshot of kiln's environment configuration."""

    debug: int
    cc: str | None
    cache_dir: Path
    num_threads: int | None
    cache_max_bytes: int | None = None
    """None: no cap."""
    time_passes: bool = False
    """``KILN_DEBUG`` names ``time``: print a compile's time per phase and pass."""
    print_after: frozenset[str] | None = None
    """`KILN_PRINT_AFTER`: print only after these passes (None: after every pass)."""
    print_funcs: tuple[str, ...] | None = None
    """`KILN_PRINT_FUNCS`: print only functions matching these globs (None: all)."""


CACHE_MAX_BYTES = 4 * 1024**3
"""Default `KILN_CACHE_MAX_BYTES`: 4 GiB (a compiled ResNet-18 library is about 46 MB)."""


def _int_env(name: str, default: int | None) -> int | None:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        return int(raw)
    except ValueError as e:
        raise ValueError(f"environment variable {name} must be an integer, got {raw!r}") from e


def _debug_env() -> tuple[int, bool]:
    """(level, time) of ``KILN_DEBUG``: comma-separated items, an integer level and/or ``time``."""
    raw = os.environ.get("KILN_DEBUG", "").strip()
    items = [x.strip() for x in raw.split(",") if x.strip()]
    timed = "time" in items
    levels = [x for x in items if x != "time"]
    try:
        if len(levels) > 1:
            raise ValueError("two levels")
        return (int(levels[0]) if levels else 0), timed
    except ValueError as e:
        raise ValueError(
            f"environment variable KILN_DEBUG must be an integer, got {raw!r} "
            "(or 'time', alone or with a level: '1,time')"
        ) from e


def _list_env(name: str) -> tuple[str, ...] | None:
    """A comma-separated variable's non-empty items (None when unset or empty)."""
    items = tuple(x.strip() for x in os.environ.get(name, "").split(",") if x.strip())
    return items or None


def load() -> Config:
    """Read the environment now (tests may change it between calls)."""
    cache = os.environ.get("KILN_CACHE_DIR") or str(Path.home() / ".cache" / "kiln")
    cap = _int_env("KILN_CACHE_MAX_BYTES", CACHE_MAX_BYTES)
    if cap is not None and cap < 0:
        raise ValueError(f"KILN_CACHE_MAX_BYTES must not be negative, got {cap}")
    level, timed = _debug_env()
    return Config(
        debug=level,
        cc=os.environ.get("KILN_CC") or None,
        cache_dir=Path(cache).expanduser(),
        num_threads=_int_env("KILN_NUM_THREADS", None),
        cache_max_bytes=cap or None,
        time_passes=timed,
        print_after=frozenset(after) if (after := _list_env("KILN_PRINT_AFTER")) else None,
        print_funcs=_list_env("KILN_PRINT_FUNCS"),
    )


def apply_openmp_defaults() -> None:
    """Set OpenMP's environment for compiled kernels (see module docstring); idempotent."""
    threads = _int_env("KILN_NUM_THREADS", None)
    if threads is not None:
        if threads < 1:
            raise ValueError(f"KILN_NUM_THREADS must be at least 1, got {threads}")
        os.environ["OMP_NUM_THREADS"] = str(threads)
    os.environ.setdefault("OMP_WAIT_POLICY", "passive")


POOL_SPIN_US = 1000.0
"""Default `KILN_POOL_SPIN_US`. NOTE: the kernels of one model call follow each other within
microseconds, so any spin keeps the worker awake inside a call; the spin decides what happens
between calls. Measured on the shared 2-core VM (load average 4-5), the small CNN model called
back to back (one parallel kernel per 0.35 ms call), 2 threads, medians of 400 calls, two
interleaved runs: spin 0 / 30 / 100 / 300 / 1000 / 3000 us gave 0.37-0.39 / 0.43-0.64 /
0.44-0.47 / 0.38-0.45 / 0.33-0.37 / 0.37-0.51 ms (1 thread: 0.32-0.40 ms). A spin shorter than
the gap between calls is the worst choice: the worker, having burnt its share of the CPU
spinning, is woken by the next call, joins, and is preempted while it holds a chunk, so the
caller waits for it. 1000 us keeps it awake across back-to-back calls of models up to about a
millisecond and costs at most 1 ms of one core after the last parallel kernel."""


def pool_threads() -> int:
    """Threads of kiln's pool, the caller included: `KILN_NUM_THREADS`, else
    ``OMP_NUM_THREADS`` (its first value), else the CPUs this process may run on."""
    threads = _int_env("KILN_NUM_THREADS", None)
    if threads is None:
        first = os.environ.get("OMP_NUM_THREADS", "").split(",")[0].strip()
        threads = int(first) if first.isdigit() else len(os.sched_getaffinity(0))
    return max(1, threads)


def pool_spin_us() -> float:
    """`KILN_POOL_SPIN_US`: an idle pool worker's spin before it sleeps, in microseconds."""
    raw = os.environ.get("KILN_POOL_SPIN_US", "").strip()
    try:
        value = float(raw) if raw else POOL_SPIN_US
    except ValueError as e:
        raise ValueError(f"KILN_POOL_SPIN_US must be a number of microseconds, got {raw!r}") from e
    if value < 0:
        raise ValueError(f"KILN_POOL_SPIN_US must not be negative, got {raw!r}")
    return value


def child_env(**overrides: str) -> dict[str, str]:
    """The environment for a child process: this one's, with ``overrides`` set."""
    return {**os.environ, **overrides}


def debug_level() -> int:
    """The current `KILN_DEBUG` level."""
    return load().debug


def remark(message: str) -> None:
    """Print ``kiln: <message>`` to stderr when `KILN_DEBUG` is 1 or more: one line saying that
    an optimization kiln was asked for did not happen, and why."""
    if debug_level() >= 1:
        print(f"kiln: {message}", file=sys.stderr)
