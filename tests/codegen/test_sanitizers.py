"""The golden-C corpus under AddressSanitizer + UBSan: every kernel built with
``-fsanitize=address,undefined -fno-sanitize-recover=all`` (through ``KILN_CC``) and run on
random inputs in a child process with the ASan runtime preloaded reports nothing; a kernel that
reads out of bounds is reported (so the instrumentation is live)."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from kiln.runtime import find_compiler
from kiln.runtime.toolchain import march_macros
from tests.codegen.golden_corpus import kernels

REPO_ROOT = Path(__file__).resolve().parents[2]
SANITIZE = ("-fsanitize=address,undefined", "-fno-sanitize-recover=all", "-fno-omit-frame-pointer")


def _asan_runtime(cc: list[str]) -> str:
    """The path of the compiler's ASan runtime; skips the test where there is none."""
    proc = subprocess.run([*cc, "-print-file-name=libasan.so"], capture_output=True, text=True)
    path = proc.stdout.strip()
    if proc.returncode != 0 or not os.path.isabs(path) or not os.path.exists(path):
        pytest.skip(f"the C compiler {cc[0]} has no AddressSanitizer runtime (libasan.so)")
    return path


def _run(args: list[str], cache: Path) -> subprocess.CompletedProcess:
    cc = find_compiler()
    asan = _asan_runtime(cc)
    if "__AVX2__" not in march_macros(tuple(cc), "native"):
        pytest.skip("the corpus is compiled for an AVX2 CPU (haswell); this one lacks AVX2")
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO_ROOT),
        "KILN_CC": shlex.join([*cc, *SANITIZE]),
        "KILN_CACHE_DIR": str(cache),
        "LD_PRELOAD": asan,
        "ASAN_OPTIONS": "detect_leaks=0:halt_on_error=1",
        "UBSAN_OPTIONS": "print_stacktrace=1:halt_on_error=1",
    }
    cmd = [sys.executable, "-m", "tests.codegen.sanitized_corpus", *args]
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)


def test_golden_corpus_runs_clean_under_asan_and_ubsan(tmp_path: Path) -> None:
    proc = _run([], tmp_path / "cache")
    reports = [ln for ln in proc.stderr.splitlines() if "runtime error" in ln or "Sanitizer" in ln]
    assert proc.returncode == 0 and not reports, proc.stderr[-6000:]
    ran = [ln.split()[1] for ln in proc.stdout.splitlines() if ln.startswith("ran ")]
    assert ran == list(kernels()), proc.stdout


def test_out_of_bounds_read_is_reported(tmp_path: Path) -> None:
    proc = _run(["--control"], tmp_path / "cache")
    assert proc.returncode != 0, proc.stdout + proc.stderr
    assert "AddressSanitizer: heap-buffer-overflow" in proc.stderr, proc.stderr[-4000:]
