"""``kiln cache info`` / ``kiln cache clear`` (issue 22, finding 7)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kiln.cli.main import main
from kiln.driver import model_cache
from kiln.runtime import compile_c

NOOP_C = r"""
#include <tvm/ffi/c_api.h>
int __tvm_ffi_noop(void* s, const TVMFFIAny* a, int32_t n, TVMFFIAny* r) { return 0; }
"""


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A cache with a library, a model and a file of the user's own."""
    root = tmp_path / "cache"
    monkeypatch.setenv("KILN_CACHE_DIR", str(root))
    monkeypatch.setenv("KILN_CACHE_MAX_BYTES", str(3 * 1024**3))
    lib = compile_c(NOOP_C, name_hint="noop")
    model_cache.store("ab" * 32, lambda p: shutil.copyfile(lib, p), None)
    (root / "my-notes.txt").write_text("kept")
    return root


def test_info_lists_location_size_and_entries_by_kind(
    cache: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["cache", "info"]) == 0
    out = capsys.readouterr().out
    assert f"location: {cache}\n" in out
    assert "cap 3.0 GiB, KILN_CACHE_MAX_BYTES" in out
    assert "entries:  2 (1 library, 1 model)" in out
    assert "oldest:   " in out and "newest:   " in out and "noop-" in out


def test_clear_removes_kiln_entries_only(cache: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["cache", "clear"]) == 0
    assert "removed 2 entries" in capsys.readouterr().out
    left = sorted(str(p.relative_to(cache)) for p in cache.rglob("*"))
    assert left == ["models", "my-notes.txt"]
    assert main(["cache", "info"]) == 0
    assert "entries:  0 (none)" in capsys.readouterr().out
    assert model_cache.lookup("ab" * 32) is None


def test_info_on_a_cache_not_made_yet(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("KILN_CACHE_DIR", str(tmp_path / "none"))
    assert main(["cache", "info"]) == 0
    assert "(not created yet)" in capsys.readouterr().out
    assert not (tmp_path / "none").exists()


def test_an_unsafe_cache_is_refused_by_the_command_line(cache: Path) -> None:
    cache.chmod(0o777)
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "kiln", "cache", "clear"], capture_output=True, text=True,
            env=dict(os.environ), timeout=120,
        )  # fmt: skip
    finally:
        cache.chmod(0o700)
    assert proc.returncode == 1
    assert proc.stderr.startswith(f"kiln cache: error: kiln cache: refusing to use {cache}")
    assert (cache / "my-notes.txt").exists() and list(cache.glob("noop-*.so"))
