"""The C toolchain: cache hits, concurrent builders, corrupted entries, compiler errors."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from kiln.errors import KilnError, ToolchainError
from kiln.runtime import compile_c, load_module

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
    assert len(lib.with_name(lib.name + ".sha256").read_text().strip()) == 64
    assert _entries(cache_dir) == [lib]
    assert not list(cache_dir.glob(".*tmp")), "temp files left behind"


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
