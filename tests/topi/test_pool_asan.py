"""The pooling kernels of `tests.topi.asan_pools` (windows past the input's edges: ``ceil_mode``,
padding, dilation) run clean under AddressSanitizer: built with ``-fsanitize=address`` through
``KILN_CC`` and run in a child process with the ASan runtime preloaded."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

from kiln.runtime import find_compiler
from tests.codegen.test_sanitizers import SANITIZE, _asan_runtime
from tests.topi.asan_pools import KERNELS

REPO_ROOT = Path(__file__).resolve().parents[2]


def test_pool_kernels_read_only_their_input(tmp_path: Path) -> None:
    cc = find_compiler()
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO_ROOT),
        "KILN_CC": shlex.join([*cc, *SANITIZE]),
        "KILN_CACHE_DIR": str(tmp_path / "cache"),
        "LD_PRELOAD": _asan_runtime(cc),
        "ASAN_OPTIONS": "detect_leaks=0:halt_on_error=1",
        "UBSAN_OPTIONS": "print_stacktrace=1:halt_on_error=1",
    }
    cmd = [sys.executable, "-m", "tests.topi.asan_pools"]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0 and "Sanitizer" not in proc.stderr, proc.stderr[-6000:]
    ran = [ln.split()[1] for ln in proc.stdout.splitlines() if ln.startswith("ran ")]
    assert ran == list(KERNELS), proc.stdout
