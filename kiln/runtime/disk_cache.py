"""kiln's cache directory on disk: safe folders, temp files, entries, the size cap.

Folders. `cache_root()` (``KILN_CACHE_DIR``, default ``~/.cache/kiln``) and `cache_folder()`
(its subfolders, e.g. ``models/``) create missing folders with mode 0700 whatever the umask, and
refuse an existing one that another user owns (root excepted) or that group or others may write,
with a `KilnError` naming the folder, its owner and mode, and the fix (as ssh does for its keys).
NOTE: kiln loads the libraries it finds there, and loading a library runs its code: whoever can
write a cache folder can run code as every user of it. Only kiln's own folders are checked, not
their parents (``~/.cache``, ``/tmp``).

Temp files. Everything is written to a temp file in its destination folder and published with
``os.replace``. `temp_path` names one ``.<name>.<pid>.<random>.tmp``; writers remove theirs on
failure, and the first use of a folder in a process removes stale ones: a temp file whose writer
is dead, or any older than `STALE_TEMP_S` (a writer killed with SIGKILL cannot clean up).
NOTE: a writer in another PID namespace (a container sharing the cache) looks dead.

Entries. A cache entry is the group of files ``<name>-<hex key>.<suffix>`` of one stem in the
root or a subfolder (library and digest, source, log, lock, ...); `scan` lists them with their
kind, size and last use. Hits `touch` an entry (its access time), so `evict` can drop the least
recently used entries until the cache fits `config.Config.cache_max_bytes`
(``KILN_CACHE_MAX_BYTES``). It never drops an entry this process has used (`note_in_use`), one
whose lock is held, nor one used in the last `EVICT_GRACE_S` seconds (another process may be
between compiling an object and linking it), so the cap is soft. Files that are not entries
(a user's own, ``demo/``) are never touched.
"""

from __future__ import annotations

import fcntl
import os
import pwd
import re
import shutil
import stat
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from kiln import config
from kiln.errors import KilnError

SUBFOLDERS: tuple[str, ...] = ("models", "kernels")
"""Subfolders of the root that hold entries (`kiln.driver.model_cache` uses ``models``,
`kiln.driver.kernel_cache` ``kernels``)."""

STALE_TEMP_S = 6 * 3600.0
"""A temp file older than this is stale whoever wrote it: no kiln write lasts hours."""

EVICT_GRACE_S = 600.0
"""Entries used more recently than this are never evicted."""

_ENTRY = re.compile(r"^(?P<stem>[A-Za-z0-9_]+-[0-9a-f]{32,64})(?P<suffix>\.[A-Za-z0-9_.]+)$")
_TEMP = re.compile(r"^\..*\.(?P<pid>[0-9]+)\.[A-Za-z0-9_]+\.tmp$")
_KINDS: tuple[tuple[str, str], ...] = (
    (".so", "library"), (".o", "object"), (".cubin", "cubin"), (".bin", "blob"),
)  # fmt: skip
"""An entry's kind, by the first of these artifacts it holds ("other" when none: a failed
build's source, a lock)."""

_swept: set[Path] = set()
_in_use: set[tuple[Path, str]] = set()
_lock = threading.Lock()


def _user(uid: int) -> str:
    try:
        return f"{pwd.getpwuid(uid).pw_name} (uid {uid})"
    except KeyError:
        return f"uid {uid}"


def check_folder(path: Path) -> None:
    """Raise `KilnError` unless ``path`` is a directory that only its owner (this user, or
    root) may write."""
    try:
        st = os.stat(path)
    except OSError as e:
        raise KilnError(f"kiln cache: cannot read {path} ({e.strerror})") from e
    if not stat.S_ISDIR(st.st_mode):
        raise KilnError(
            f"kiln cache: {path} is not a directory. Fix: remove it, or set KILN_CACHE_DIR to "
            "another directory"
        )
    me, mode = os.geteuid(), stat.S_IMODE(st.st_mode)
    why = "another user could put a library there, and kiln runs the libraries it loads"
    if st.st_uid not in (me, 0):
        raise KilnError(
            f"kiln cache: refusing to use {path}: it is owned by {_user(st.st_uid)}, not by "
            f"you ({_user(me)}); {why}. Fix: set KILN_CACHE_DIR to a directory of your own, "
            "or remove this one"
        )
    if mode & 0o022:
        who = " and ".join(w for w, bit in (("group", 0o020), ("others", 0o002)) if mode & bit)
        raise KilnError(
            f"kiln cache: refusing to use {path}: it is writable by {who} (mode {mode:04o}, "
            f"owner {_user(st.st_uid)}); {why}. Fix: `chmod 700 {path}` (and check what it "
            "holds), or set KILN_CACHE_DIR to a directory only you can write"
        )


def _make_folders(path: Path) -> None:
    """Create ``path`` and its missing parents with mode 0700 (umask or not)."""
    missing: list[Path] = []
    p = path
    while not p.exists() and p != p.parent:
        missing.append(p)
        p = p.parent
    for d in reversed(missing):
        try:
            os.mkdir(d, 0o700)
        except FileExistsError:
            continue  # another process made it: checked like any existing folder
        os.chmod(d, 0o700)  # NOTE: mkdir's mode is masked by the umask, chmod's is not


def cache_folder(path: Path, *, create: bool = True) -> Path:
    """``path``, a folder of kiln's cache, created when missing (unless not ``create``),
    checked (`check_folder`) and, on its first use in this process, swept of stale temp files.
    A missing folder that is not created is returned unchecked."""
    if create:
        try:
            _make_folders(path)
        except OSError as e:
            raise KilnError(
                f"kiln cache: cannot create the directory {path} ({e.strerror}). Fix: set "
                "KILN_CACHE_DIR to a directory you can write"
            ) from e
    elif not path.exists():
        return path
    check_folder(path)
    if path not in _swept:
        _swept.add(path)
        sweep_stale_temps(path)
    return path


def cache_root(*, create: bool = True) -> Path:
    """The cache directory (`config.Config.cache_dir`), as `cache_folder` makes it."""
    return cache_folder(config.load().cache_dir, create=create)


def subfolder(name: str, *, create: bool = True) -> Path:
    """The checked subfolder ``name`` (one of `SUBFOLDERS`) of the checked root."""
    return cache_folder(cache_root(create=create) / name, create=create)


def temp_path(dest: Path, *, folder: bool = False) -> Path:
    """A new, empty temp file (or folder) beside ``dest`` whose name holds this process's pid."""
    prefix, suffix = f".{dest.name}.{os.getpid()}.", ".tmp"
    if folder:
        return Path(tempfile.mkdtemp(dir=dest.parent, prefix=prefix, suffix=suffix))
    fd, name = tempfile.mkstemp(dir=dest.parent, prefix=prefix, suffix=suffix)
    os.close(fd)
    return Path(name)


def remove(path: Path) -> None:
    """Remove the file or folder ``path`` if it is there."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # NOTE: EPERM: it exists, run by someone else
        return True
    return True


def is_stale_temp(name: str, mtime: float, now: float) -> bool:
    """Whether ``name`` is a kiln temp file whose writer is gone (see the module docstring)."""
    if not (name.startswith(".") and name.endswith(".tmp")):
        return False
    found = _TEMP.match(name)
    if found is not None and int(found["pid"]) > 0 and not _alive(int(found["pid"])):
        return True
    return now - mtime > STALE_TEMP_S


def sweep_stale_temps(folder: Path) -> int:
    """Remove the stale temp files of ``folder``; the count removed (0 where it is
    read-only)."""
    now, removed = time.time(), 0
    try:
        items = list(os.scandir(folder))
    except OSError:
        return 0
    for item in items:
        try:
            if is_stale_temp(item.name, item.stat(follow_symlinks=False).st_mtime, now):
                remove(Path(item.path))
                removed += 1
        except OSError:
            continue
    return removed


def touch(path: Path) -> None:
    """Record a use of the cache file ``path`` (its access time; errors are ignored: a
    read-only cache still serves hits)."""
    try:
        os.utime(path, ns=(time.time_ns(), os.stat(path).st_mtime_ns))
    except OSError:
        pass


def entry_of(path: Path) -> tuple[Path, str] | None:
    """(folder, stem) of the entry the cache file ``path`` belongs to; None for other names."""
    found = _ENTRY.match(path.name)
    return None if found is None else (path.parent, found["stem"])


def note_in_use(path: Path) -> None:
    """Mark the entry of ``path`` as used by this process: `evict` leaves it alone."""
    key = entry_of(path)
    if key is not None:
        with _lock:
            _in_use.add(key)


@dataclass(frozen=True)
class Entry:
    """One cache entry: its files, kind, size (bytes of its files) and last use (seconds)."""

    folder: Path
    stem: str
    files: tuple[Path, ...]
    kind: str
    size: int
    last_used: float


def _kind(in_root: bool, suffixes: set[str]) -> str:
    if not in_root and ".so" in suffixes:
        return "model"
    if not in_root and suffixes == {".json"}:
        return "kernel"  # NOTE: kiln.driver.kernel_cache's entries
    return next((kind for suf, kind in _KINDS if suf in suffixes), "other")


def _scan_folder(folder: Path, in_root: bool, inodes: dict[tuple[int, int], int]) -> list[Entry]:
    groups: dict[str, list[tuple[Path, os.stat_result]]] = {}
    try:
        items = list(os.scandir(folder))
    except OSError:
        return []
    for item in items:
        found = _ENTRY.match(item.name)
        if found is None or not item.is_file(follow_symlinks=False):
            continue
        try:
            st = item.stat(follow_symlinks=False)
        except OSError:
            continue
        groups.setdefault(found["stem"], []).append((Path(item.path), st))
        inodes[(st.st_dev, st.st_ino)] = st.st_size
    entries = []
    for stem, files in groups.items():
        suffixes = {p.name[len(stem) :] for p, _ in files}
        entries.append(Entry(
            folder, stem, tuple(p for p, _ in files), _kind(in_root, suffixes),
            sum(st.st_size for _, st in files),
            max(max(st.st_atime, st.st_mtime) for _, st in files),
        ))  # fmt: skip
    return entries


def scan(root: Path) -> tuple[list[Entry], int]:
    """(the entries of the cache at ``root``, its size in bytes: each file once, however
    many names it has)."""
    inodes: dict[tuple[int, int], int] = {}
    entries = _scan_folder(root, True, inodes)
    for name in SUBFOLDERS:
        entries += _scan_folder(root / name, False, inodes)
    return entries, sum(inodes.values())


def drop(entry: Entry) -> None:
    """Remove ``entry``'s files, its digests first (a reader then sees a miss)."""
    for path in sorted(entry.files, key=lambda p: not p.name.endswith(".sha256")):
        try:
            path.unlink(missing_ok=True)
        except OSError:
            continue


def _busy(entry: Entry) -> bool:
    """Whether another process holds ``entry``'s lock (it is building or publishing it)."""
    lock = entry.folder / f"{entry.stem}.lock"
    try:
        fd = os.open(lock, os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(fd)
    return False


def evict(root: Path, cap: int, keep: Path | None = None) -> int:
    """Drop least recently used entries of the cache at ``root`` until it holds at most
    ``cap`` bytes (see the module docstring); returns the size it holds after."""
    entries, total = scan(root)
    if total <= cap:
        return total
    spare = entry_of(keep) if keep is not None else None
    names: dict[tuple[int, int], int] = {}
    stats: dict[Path, os.stat_result] = {}
    for e in entries:
        for p in e.files:
            try:
                st = stats[p] = os.stat(p)
            except OSError:
                continue
            names[(st.st_dev, st.st_ino)] = names.get((st.st_dev, st.st_ino), 0) + 1
    recent = time.time() - EVICT_GRACE_S
    for e in sorted(entries, key=lambda e: e.last_used):
        if total <= cap:
            break
        key = (e.folder, e.stem)
        if key == spare or key in _in_use or e.last_used > recent or _busy(e):
            continue
        drop(e)
        for p in e.files:  # NOTE: a file also linked from another entry frees nothing yet
            st = stats.get(p)
            if st is None:
                continue
            ino = (st.st_dev, st.st_ino)
            names[ino] -= 1
            total -= st.st_size if names[ino] == 0 else 0
    return total


_added: dict[Path, tuple[int, int]] = {}
"""Per cache root: (its size at this process's last scan, bytes this process stored since)."""


def stored(path: Path, *others: Path) -> None:
    """Account for the new cache file ``path`` (and the other files of its entry, ``others``)
    and, when the cache may now be over ``KILN_CACHE_MAX_BYTES``, evict (never ``path``'s own
    entry).

    NOTE: the cache is scanned at a process's first store and again only once the bytes it
    stored since would take it over the cap, so a store costs a stat, not a directory listing."""
    cap = config.load().cache_max_bytes
    note_in_use(path)
    if cap is None:
        return
    root = config.load().cache_dir
    if path.parent not in (root, *(root / name for name in SUBFOLDERS)):
        return
    size = 0
    for p in (path, *others):
        try:
            size += p.stat().st_size
        except OSError:
            continue
    with _lock:
        last, since = _added.get(root, (-1, 0))
        if last >= 0 and last + since + size <= cap:
            _added[root] = (last, since + size)
            return
        _added[root] = (evict(root, cap, keep=path), 0)
