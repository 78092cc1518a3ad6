"""The C toolchain: cache hits, concurrent builders, corrupted entries, compiler errors."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from kiln.errors import KilnError, ToolchainError
from kiln.runtime import build_module, compile_c, load_module, toolchain

NOOP_C = r"""
#include <tvm/ffi/c_api.h>
int __tvm_ffi_noop(void* s, const TVMFFIAny* a, int32_t n, TVMFFIAny* r) { return 0; }
"""


def _entries(cache_dir: Path) -> list[Path]:
    return sorted(cache_dir.glob("*.so"))


def test_compile_keeps_source_and_digest(cache_dir: Path, kernels_source: str) -> None:
    lib = compile_c(kernels_source, name_hint="my kernels!")
    assert lib.parent == cache_dir and lib.name.startswith("my_kernels_-")
    assert lib.with_suffix(".c").read_text() == kernels_source
    digest, stat, end = lib.with_name(lib.name + ".sha256").read_text().split("\n")
    assert digest == hashlib.sha256(lib.read_bytes()).hexdigest() and end == ""
    st = lib.stat()
    assert stat == f"{st.st_size} {st.st_mtime_ns} {st.st_ino}"
    assert _entries(cache_dir) == [lib]
    assert not list(cache_dir.glob(".*tmp")), "temp files left behind"


def test_an_unchanged_entry_is_not_hashed_again_a_rewritten_one_is(
    cache_dir: Path, kernels_source: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    lib = compile_c(kernels_source)
    hashed: list[Path] = []
    real = toolchain._sha256_file
    monkeypatch.setattr(toolchain, "_sha256_file", lambda p: hashed.append(p) or real(p))
    assert toolchain.is_valid_entry(lib) and hashed == []
    data = lib.read_bytes()
    lib.write_bytes(data[:-1] + bytes([data[-1] ^ 1]))  # same size, new modification time
    os.utime(lib, ns=(lib.stat().st_atime_ns, lib.stat().st_mtime_ns + 1))
    assert not toolchain.is_valid_entry(lib) and hashed == [lib]


def test_cache_hit_does_not_rerun_compiler(
    counting_cc: Callable[[], int], cache_dir: Path, kernels_source: str
) -> None:
    first = compile_c(kernels_source)
    mtime = first.stat().st_mtime_ns
    assert counting_cc() == 1
    second = compile_c(kernels_source)
    assert second == first and second.stat().st_mtime_ns == mtime
    assert counting_cc() == 1
    other = compile_c(kernels_source, flags=("-O0",))
    assert other != first and counting_cc() == 2
    assert len(_entries(cache_dir)) == 2


_CHILD = """
import sys, time
from pathlib import Path
import numpy as np
from kiln.runtime import build_module
work, idx = Path(sys.argv[1]), sys.argv[2]
(work / f"ready-{idx}").touch()
while not (work / "go").exists():
    time.sleep(0.005)
m = build_module((work / "kernels.c").read_text(), name_hint="race")
x = np.arange(5, dtype="float32")
y = np.zeros_like(x)
m["add_one"](x, y)
assert (y == x + 1).all(), y
print("ok", m.path)
"""


def test_concurrent_builders_make_one_entry(
    tmp_path: Path,
    cache_dir: Path,
    kernels_source: str,
    make_counting_cc: Callable[[Path, float], tuple[Path, Path]],
    child_env: dict[str, str],
) -> None:
    script, log = make_counting_cc(tmp_path, 0.5)  # a slow compile widens the race window
    (tmp_path / "kernels.c").write_text(kernels_source)
    env = {**child_env, "KILN_CC": str(script)}
    n = 8
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _CHILD, str(tmp_path), str(i)],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i in range(n)
    ]
    deadline = time.monotonic() + 60
    while len(list(tmp_path.glob("ready-*"))) < n and time.monotonic() < deadline:
        time.sleep(0.01)
    (tmp_path / "go").touch()  # release all builders at once
    outs = [p.communicate(timeout=60) for p in procs]
    for p, (out, err) in zip(procs, outs):
        assert p.returncode == 0, err
        assert out.startswith("ok")
    assert len({out.split()[1] for out, _ in outs}) == 1
    assert len(_entries(cache_dir)) == 1
    assert log.read_text().splitlines() == ["compile"]
    assert not list(cache_dir.glob(".*tmp"))


@pytest.mark.parametrize("damage", ["garbage", "truncated", "missing digest"])
def test_corrupted_entry_is_rebuilt(
    damage: str, counting_cc: Callable[[], int], cache_dir: Path, kernels_source: str
) -> None:
    # NOTE: never damage a library this process has loaded: it is mmapped.
    lib = compile_c(kernels_source)
    good = lib.read_bytes()
    if damage == "garbage":
        lib.write_bytes(b"\x7fELF this is not a shared library" * 10)
    elif damage == "truncated":
        lib.write_bytes(good[: len(good) // 2])
    else:
        lib.with_name(lib.name + ".sha256").unlink()
    again = compile_c(kernels_source)
    assert again == lib and counting_cc() == 2
    assert again.read_bytes() == good
    x = np.ones(3, dtype="float32")
    y = np.zeros_like(x)
    load_module(again)["add_one"](x, y)
    assert (y == 2).all()


def test_missing_compiler_says_how_to_fix(cache_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KILN_CC", "/nonexistent/cc")
    with pytest.raises(ToolchainError) as info:
        compile_c(NOOP_C)
    msg = str(info.value)
    assert "no C compiler found" in msg and "/nonexistent/cc" in msg
    assert "install" in msg and "KILN_CC" in msg


def test_no_compiler_on_path(
    cache_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    with pytest.raises(ToolchainError, match="none of cc, gcc, clang is on PATH"):
        compile_c(NOOP_C)


def test_syntax_error_reports_stderr_and_keeps_source(cache_dir: Path) -> None:
    bad = NOOP_C + "\nint broken( { return 0; }\n"
    with pytest.raises(ToolchainError) as info:
        compile_c(bad, name_hint="broken")
    err = info.value
    assert isinstance(err, KilnError)
    assert "error" in err.stderr
    assert err.src_path is not None and Path(err.src_path).read_text() == bad
    assert err.src_path in str(err) and err.src_path in err.stderr  # gcc names the kept file
    assert _entries(cache_dir) == [] and not list(cache_dir.glob(".*tmp"))


def test_undefined_symbol_fails_at_compile_time(cache_dir: Path) -> None:
    src = NOOP_C + "void kiln_no_such_function(void);\nvoid use(void) { kiln_no_such_function(); }"
    with pytest.raises(ToolchainError, match="kiln_no_such_function"):
        compile_c(src)


# -- cache faults: each entry is rebuilt or refused with a KilnError naming the file ------------
def _stem_paths(lib: Path) -> dict[str, Path]:
    return {
        ".so": lib,
        ".c": lib.with_suffix(".c"),
        ".lock": lib.with_suffix(".lock"),
        ".so.sha256": lib.with_name(lib.name + ".sha256"),
        ".log": lib.with_suffix(".log"),
    }


@pytest.mark.parametrize("suffix", [".so", ".c", ".lock", ".so.sha256", ".log"])
def test_entry_path_taken_by_a_directory_is_reported(
    suffix: str, cache_dir: Path, kernels_source: str
) -> None:
    lib = compile_c(kernels_source)
    for path in _stem_paths(lib).values():
        path.unlink(missing_ok=True)
    taken = _stem_paths(lib)[suffix]
    (taken / "inside").mkdir(parents=True)
    with pytest.raises(KilnError) as info:
        compile_c(kernels_source)
    msg = str(info.value)
    assert f"{taken} is a directory" in msg and "Fix: remove it" in msg, msg
    assert not isinstance(info.value, IsADirectoryError)


@pytest.mark.parametrize("garbage", [b"not a library at all" * 8, b"\x7fELF but truncated" * 8])
def test_garbage_library_with_a_matching_digest_is_rebuilt(
    garbage: bytes, counting_cc: Callable[[], int], cache_dir: Path, kernels_source: str
) -> None:
    lib = compile_c(kernels_source)  # NOTE: not loaded by this process, so it may be damaged
    lib.write_bytes(garbage)
    lib.with_name(lib.name + ".sha256").write_text(hashlib.sha256(garbage).hexdigest() + "\n")
    m = build_module(kernels_source)  # not ELF: compile_c rebuilds; ELF: loading fails first
    x = np.ones(3, dtype="float32")
    y = np.zeros_like(x)
    m["add_one"](x, y)
    assert (y == 2).all() and lib.read_bytes()[:4] == b"\x7fELF"
    assert counting_cc() == 2


_NO_WRITE_CHILD = """
import sys
from kiln.errors import KilnError
from kiln.runtime import build_module
source = open(sys.argv[1]).read()
m = build_module(source)  # a valid entry: a hit needs no lock and no write
try:
    build_module(source + "\\n/* another entry */\\n")
except KilnError as e:
    print("KilnError:", e)
"""


def _read_only_run(
    cache: Path, argv: list[str], env: dict[str, str]
) -> subprocess.CompletedProcess:
    """Run ``argv`` with ``cache`` read-only: mode 0555, and for root (whom modes do not stop)
    a read-only bind mount in a private mount namespace; skips where neither is possible."""
    cache.chmod(0o555)
    if os.geteuid() == 0:
        if shutil.which("unshare") is None:
            pytest.skip("running as root without unshare(1): cannot make a read-only directory")
        script = 'mount --bind -o ro "$0" "$0" && exec "$@"'
        argv = ["unshare", "-m", "sh", "-c", script, str(cache), *argv]
    proc = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120)
    if proc.returncode != 0 and ("unshare:" in proc.stderr or "mount:" in proc.stderr):
        pytest.skip(f"cannot make a read-only bind mount here: {proc.stderr.strip()}")
    return proc


def test_unwritable_cache_directory_is_reported_and_hits_still_work(
    cache_dir: Path, kernels_source: str, child_env: dict[str, str], tmp_path: Path
) -> None:
    """A lock in a directory kiln cannot write is a KilnError saying what to do; a valid entry
    there still loads (a hit takes no lock)."""
    compile_c(kernels_source)
    src = tmp_path / "kernels.c"
    src.write_text(kernels_source)
    try:
        proc = _read_only_run(
            cache_dir, [sys.executable, "-c", _NO_WRITE_CHILD, str(src)], child_env
        )
    finally:
        cache_dir.chmod(0o755)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert out.startswith("KilnError: kiln cache: ") and str(cache_dir) in out, out
    assert "cannot be opened as a lock file" in out and "KILN_CACHE_DIR" in out, out


@pytest.mark.parametrize(
    ("script", "says"),
    [
        ("exit 0", "exited with status 0 but wrote nothing"),
        (
            'for a; do [ "$prev" = -o ] && echo hello > "$a"; prev=$a; done; exit 0',
            "wrote a file that is not a shared library",
        ),
    ],
)
def test_compiler_that_writes_no_library_caches_nothing(
    script: str, says: str, cache_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = tmp_path / "fake-cc"
    fake.write_text(f"#!/bin/sh\n{script}\n")
    fake.chmod(0o755)
    monkeypatch.setenv("KILN_CC", str(fake))
    with pytest.raises(ToolchainError, match=says) as info:
        compile_c(NOOP_C)
    assert "KILN_CC" in str(info.value)
    assert _entries(cache_dir) == [] and not list(cache_dir.glob("*.sha256"))
