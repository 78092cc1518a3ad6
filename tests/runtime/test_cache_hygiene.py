"""Cache hygiene: safe folders, temp files cleaned, compilers that die with kiln, one copy of a
model, a size cap (issue 22, finding 7)."""

from __future__ import annotations

import errno
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from kiln.driver import model_cache
from kiln.errors import KilnError, ToolchainError
from kiln.runtime import compile_c, disk_cache, toolchain
from kiln.runtime.parallel_build import compile_units

NOOP_C = r"""
#include <tvm/ffi/c_api.h>
int __tvm_ffi_noop(void* s, const TVMFFIAny* a, int32_t n, TVMFFIAny* r) { return 0; }
"""

LINUX = sys.platform.startswith("linux")


@pytest.fixture
def umask_000() -> Iterator[None]:
    old = os.umask(0)
    yield
    os.umask(old)


def _mode(path: Path) -> int:
    return path.stat().st_mode & 0o777


def _leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.rglob("*") if p.name.endswith(".tmp"))


def test_folders_are_0700_whatever_the_umask(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, umask_000: None
) -> None:
    root = tmp_path / "home" / ".cache" / "kiln"  # two parents that do not exist yet
    monkeypatch.setenv("KILN_CACHE_DIR", str(root))
    lib = compile_c(NOOP_C)
    model_cache.store("ab" * 32, lambda p: shutil.copyfile(lib, p), None)
    for folder in (root, root / "models", root.parent, root.parent.parent):
        assert _mode(folder) == 0o700, (folder, oct(_mode(folder)))


@pytest.mark.parametrize("mode", [0o777, 0o770, 0o702])
def test_a_cache_folder_others_may_write_is_refused(
    mode: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "cache"
    root.mkdir()
    root.chmod(mode)
    monkeypatch.setenv("KILN_CACHE_DIR", str(root))
    with pytest.raises(KilnError, match="refusing to use") as info:
        compile_c(NOOP_C)
    text = str(info.value)
    assert str(root) in text and f"mode {mode:04o}" in text and f"chmod 700 {root}" in text
    assert not list(root.iterdir()), "nothing may be written into a refused folder"


def test_a_models_folder_others_may_write_is_refused_before_loading(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "cache"
    monkeypatch.setenv("KILN_CACHE_DIR", str(root))
    lib = compile_c(NOOP_C)
    model_cache.store("cd" * 32, lambda p: shutil.copyfile(lib, p), None)
    assert model_cache.lookup("cd" * 32) is not None
    (root / "models").chmod(0o777)
    with pytest.raises(KilnError, match=f"refusing to use {root / 'models'}: .*writable"):
        model_cache.lookup("cd" * 32)


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="needs root")
def test_a_cache_folder_owned_by_another_user_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "cache"
    root.mkdir(mode=0o700)
    os.chown(root, 65534, 65534)
    monkeypatch.setenv("KILN_CACHE_DIR", str(root))
    with pytest.raises(KilnError, match="refusing to use") as info:
        compile_c(NOOP_C)
    text = str(info.value)
    assert str(root) in text and "uid 65534" in text and "KILN_CACHE_DIR" in text


def _dead_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def test_stale_temp_files_are_removed_on_the_next_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "cache"
    (root / "models").mkdir(parents=True, mode=0o700)
    root.chmod(0o700)
    dead, hours = _dead_pid(), time.time() - 7 * 3600
    stale = [
        root / f".kiln-{'0' * 32}.so.{dead}.k3j_x9.tmp",  # its writer is dead
        root / ".kiln-old.so.x1y2.tmp",  # no pid (an older kiln) and hours old
        root / "models" / f".kiln_model-{'1' * 40}.so.{dead}.ab12.tmp",
    ]
    kept = [
        root / f".kiln-{'2' * 32}.so.1.live12.tmp",  # pid 1 is alive: still being written
        root / ".kiln-new.so.x1y2.tmp",  # no pid, but fresh
        root / "notes.tmp",  # not a kiln temp name
    ]
    for path in stale + kept:
        path.write_bytes(b"partial")
    os.utime(stale[1], (hours, hours))
    monkeypatch.setenv("KILN_CACHE_DIR", str(root))
    compile_c(NOOP_C)
    model_cache.lookup("ef" * 32)  # a miss, but the models folder is used
    assert [p.exists() for p in stale] == [False] * 3
    assert [p.exists() for p in kept] == [True] * 3


def test_a_failing_compile_leaves_no_partial_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "cache"
    monkeypatch.setenv("KILN_CACHE_DIR", str(root))
    bad = NOOP_C + "\nint broken( {\n"
    with pytest.raises(ToolchainError):
        compile_c(bad, name_hint="bad")
    kept = sorted(p.name for p in root.iterdir())
    assert [n.rsplit(".", 1)[1] for n in kept] == ["c", "lock"], kept  # the source, for the error
    assert (root / kept[0]).read_text() == bad


def _full_disk_at(suffix: str, real: object) -> object:
    def write(path: Path, data: bytes) -> None:
        if path.name.endswith(suffix):
            raise OSError(errno.ENOSPC, "No space left on device", str(path))
        real(path, data)  # type: ignore[operator]

    return write


def test_a_full_disk_while_publishing_leaves_no_half_entry(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "cache"
    monkeypatch.setenv("KILN_CACHE_DIR", str(root))
    monkeypatch.setattr(
        toolchain, "_atomic_write", _full_disk_at(".sha256", toolchain._atomic_write)
    )
    with pytest.raises(KilnError, match="No space left on device"):
        compile_c(NOOP_C)
    assert not list(root.glob("*.so")) and _leftovers(root) == []


def test_a_full_disk_while_storing_a_model_leaves_no_temp_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "cache"
    monkeypatch.setenv("KILN_CACHE_DIR", str(root))
    lib = compile_c(NOOP_C)

    class FullDiskJson:
        @staticmethod
        def dump(*args: object, **kw: object) -> None:
            raise OSError(errno.ENOSPC, "No space left on device")

        dumps = dump

    monkeypatch.setattr(model_cache, "json", FullDiskJson)
    with pytest.raises(OSError, match="No space left"):
        model_cache.store("12" * 32, lambda p: shutil.copyfile(lib, p), None)
    assert _leftovers(root) == []


BIG_C = "\n".join(
    f"void f{i}(float* a, int n) {{ for (int j = 0; j < n; ++j) a[j] = a[j] * {i}.5f"
    f" + a[(j * {i}) % n]; }}"
    for i in range(6000)
)
"""C that takes GCC many seconds at -O3 (6000 vectorizable loops)."""

_BIG_COMPILE = """
import sys, time
from kiln.runtime import compile_c
try:
    compile_c(open(sys.argv[1]).read(), name_hint="big")
except KeyboardInterrupt:
    print("interrupted", flush=True)
    time.sleep(60)
"""


def _stat(pid: int) -> tuple[str, int, int]:
    """(comm, ppid, pgid) of ``pid``."""
    text = Path(f"/proc/{pid}/stat").read_text()
    comm = text[text.index("(") + 1 : text.rindex(")")]
    _, ppid, pgid = text.rsplit(")", 1)[1].split()[:3]
    return comm, int(ppid), int(pgid)


def _processes() -> dict[int, tuple[str, int, int]]:
    out = {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                out[int(d.name)] = _stat(int(d.name))
            except (OSError, ValueError):
                continue
    return out


def _compiler_tree(parent: int) -> list[int]:
    """The C compiler driver started by ``parent`` and the driver's children, once ``cc1`` (or
    another child) runs; [] while there are none yet."""
    procs = _processes()
    drivers = [p for p, (comm, ppid, _) in procs.items() if ppid == parent and "python" not in comm]
    kids = [p for p, (_, ppid, _) in procs.items() if ppid in drivers]
    return [*drivers, *kids] if kids else []


def _live(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.skipif(not LINUX, reason="reads /proc")
@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGINT], ids=["SIGKILL", "SIGINT"])
def test_a_compile_killed_midway_leaves_no_compiler_running_and_no_temp_file(
    sig: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, child_env: dict[str, str]
) -> None:
    """SIGKILL: nothing in kiln runs, yet the compiler (driver, cc1, ...) must die too, and the
    next run removes the temp file. SIGINT: KeyboardInterrupt kills them and removes it."""
    root = tmp_path / "cache"
    env = {**child_env, "KILN_CACHE_DIR": str(root)}
    source = tmp_path / "big.c"
    source.write_text(BIG_C)
    proc = subprocess.Popen(
        [sys.executable, "-c", _BIG_COMPILE, str(source)], env=env, start_new_session=True,
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    tree: list[int] = []
    try:
        deadline = time.monotonic() + 60
        while not tree and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
            tree = _compiler_tree(proc.pid)
        assert tree, "the compiler never started"
        proc.send_signal(sig)
        if sig == signal.SIGINT:
            assert proc.stdout is not None and proc.stdout.readline() == "interrupted\n"
        deadline = time.monotonic() + 5
        while any(_live(p) for p in tree) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert [p for p in tree if _live(p)] == [], "compiler processes outlived the compile"
        if sig == signal.SIGINT:
            assert _leftovers(root) == []
    finally:
        proc.kill()
        proc.wait()
        for p in tree:
            if _live(p):
                os.kill(p, signal.SIGKILL)
    if sig == signal.SIGKILL:
        assert _leftovers(root), "expected the killed build's temp file"
        monkeypatch.setenv("KILN_CACHE_DIR", str(root))
        disk_cache.cache_root()  # the next run's first use of the folder
        assert _leftovers(root) == []


def test_a_failing_unit_stops_the_other_compilers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "cache"
    monkeypatch.setenv("KILN_CACHE_DIR", str(root))
    with pytest.raises(ToolchainError, match="broken"):
        compile_units([BIG_C, "int broken( {"], jobs=2)
    assert not list(root.glob("kiln_unit-*.o")), "the big unit was compiled to the end"
    assert _leftovers(root) == []


def _fake_entry(root: Path, stem: str, size: int, age_s: float) -> Path:
    obj = root / f"{stem}.o"
    obj.write_bytes(b"\x7fELF" + b"\0" * (size - 4))
    (root / f"{stem}.o.sha256").write_text("0" * 64 + "\n")
    when = time.time() - age_s
    for p in (obj, root / f"{stem}.o.sha256"):
        os.utime(p, (when, when))
    return obj


def test_the_size_cap_evicts_the_least_recently_used_entry(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "cache"
    root.mkdir(mode=0o700)
    oldest = _fake_entry(root, "kiln_unit-" + "a" * 32, 150_000, 2 * 86400)
    newer = _fake_entry(root, "kiln_unit-" + "b" * 32, 150_000, 86400)
    (root / "notes.txt").write_bytes(b"x" * 400_000)  # not kiln's: never counted nor removed
    monkeypatch.setenv("KILN_CACHE_DIR", str(root))
    monkeypatch.setenv("KILN_CACHE_MAX_BYTES", "250000")
    lib = compile_c(NOOP_C)
    assert not oldest.exists() and not oldest.with_name(oldest.name + ".sha256").exists()
    assert newer.exists() and lib.exists() and (root / "notes.txt").exists()
    entries, total = disk_cache.scan(root)
    assert total <= 250_000 and len(entries) == 2
