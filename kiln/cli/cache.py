"""``kiln cache info`` / ``kiln cache clear``: look at and empty kiln's on-disk cache.

    kiln cache info     # where it is, its size and cap, entries by kind, oldest/newest use
    kiln cache clear    # remove kiln's entries (and stale temp files); nothing else

``clear`` asks no question (as ``pip cache purge``): everything in the cache can be built again.
It removes only files named like kiln's entries (`kiln.runtime.disk_cache`), never a user's own
files or folders kept there, and it refuses a cache folder that fails kiln's safety check.
NOTE: a process compiling at the same moment may find an entry gone and build it again.
"""

from __future__ import annotations

import argparse
import time
from collections import Counter

from kiln import config
from kiln.runtime import disk_cache


def _size(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    raise AssertionError("unreachable")


def _when(seconds: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(seconds))


def cmd_cache(args: argparse.Namespace) -> int:
    root = disk_cache.cache_root(create=False)
    for name in disk_cache.SUBFOLDERS:
        disk_cache.cache_folder(root / name, create=False)
    entries, total = disk_cache.scan(root) if root.exists() else ([], 0)
    if args.action == "clear":
        for entry in entries:
            disk_cache.drop(entry)
        print(f"removed {len(entries)} entries ({_size(total)}) from {root}")
        return 0
    cap = config.load().cache_max_bytes
    print(f"location: {root}" + ("" if root.exists() else " (not created yet)"))
    limit = "no cap" if cap is None else f"cap {_size(cap)}, KILN_CACHE_MAX_BYTES"
    print(f"size:     {_size(total)} ({limit})")
    kinds = Counter(e.kind for e in entries)
    listed = ", ".join(f"{n} {k}" for k, n in sorted(kinds.items())) or "none"
    print(f"entries:  {len(entries)} ({listed})")
    if entries:
        oldest = min(entries, key=lambda e: e.last_used)
        newest = max(entries, key=lambda e: e.last_used)
        print(f"oldest:   {_when(oldest.last_used)} ({oldest.stem})")
        print(f"newest:   {_when(newest.last_used)} ({newest.stem})")
    return 0


COMMANDS = {"cache": cmd_cache}
