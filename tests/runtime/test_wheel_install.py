"""A normal (not editable) install ships every C source and header of kiln's runtime: the wheel
built from this checkout, installed into a fresh venv, runs a parallel kernel on 2 threads."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import tvm_ffi

REPO_ROOT = Path(__file__).resolve().parents[2]
RUNTIME = REPO_ROOT / "kiln" / "runtime"

CHILD = """
import json, os, sys, warnings
from pathlib import Path
import numpy as np
import kiln
from kiln import te, topi
from kiln.runtime import thread_pool
runtime = Path(kiln.__file__).parent / "runtime"
sources = sorted(str(p.relative_to(runtime)) for p in runtime.rglob("*")
                 if p.suffix in (".c", ".h"))
x = te.placeholder((512, 1024), "float32", name="x")
y = topi.nn.softmax(x, axis=-1)
f = kiln.build_op([y], [x, y])
xs = np.random.default_rng(0).random((512, 1024), dtype="float32")
ys = np.empty_like(xs)
tasks = len(os.listdir("/proc/self/task"))
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    f(xs, ys)
ref = np.exp(xs - xs.max(1, keepdims=True))
print(json.dumps({
    "kiln": kiln.__file__, "sources": sources, "threads": thread_pool.pool_threads(),
    "new_threads": len(os.listdir("/proc/self/task")) - tasks,
    "warnings": [str(w.message) for w in caught],
    "ok": bool(np.allclose(ys, ref / ref.sum(1, keepdims=True), atol=1e-6)),
}))
"""


def _run(cmd: list[str], **kwargs: object) -> subprocess.CompletedProcess:
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300, **kwargs)
    assert proc.returncode == 0, f"{' '.join(cmd)}:\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}"
    return proc


def _wheel(tmp_path: Path) -> Path:
    """The wheel of a copy of the checkout (building in place would leave build/ behind)."""
    src = tmp_path / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO_ROOT / name, src / name)
    shutil.copytree(
        REPO_ROOT / "kiln", src / "kiln", ignore=shutil.ignore_patterns("__pycache__", "*.so")
    )
    dist = tmp_path / "dist"
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check"]
    _run([*pip, "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(dist), str(src)])
    (wheel,) = dist.glob("kiln-*.whl")
    return wheel


@pytest.mark.slow
def test_installed_wheel_runs_a_parallel_kernel_on_two_threads(tmp_path: Path) -> None:
    wheel = _wheel(tmp_path)
    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", str(venv)])
    python = venv / "bin" / "python"
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "--python", str(python)]
    _run([*pip, "install", "-q", "--no-deps", "--no-index", str(wheel)])
    # NOTE: the dependencies come from this venv's site-packages, added as a plain path (its
    # .pth files, the editable install of the checkout among them, are not run).
    site = Path(_run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"])
                .stdout.strip())  # fmt: skip
    deps = {str(Path(m.__file__).parents[1]) for m in (np, tvm_ffi)}
    (site / "deps.pth").write_text("\n".join(sorted(deps)) + "\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["KILN_NUM_THREADS"] = "2"
    cwd = tmp_path / "elsewhere"
    cwd.mkdir()
    got = json.loads(_run([str(python), "-c", CHILD], env=env, cwd=cwd).stdout.splitlines()[-1])
    assert Path(got["kiln"]).is_relative_to(venv)  # the installed wheel, not the checkout
    shipped = sorted(
        str(p.relative_to(RUNTIME)) for p in RUNTIME.rglob("*") if p.suffix in (".c", ".h")
    )
    assert "thread_pool.c" in shipped
    assert got["sources"] == shipped
    assert got["ok"] and got["warnings"] == []
    assert got["threads"] == 2 and got["new_threads"] >= 1
