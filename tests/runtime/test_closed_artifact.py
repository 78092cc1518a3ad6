"""An exported model is closed (docs/architecture.md, "the artifact is closed"): it carries
kiln's runtime (VM builtins, interpreter, thread pool), so it loads and runs where there is no
C compiler and no writable cache; every library carrying a copy agrees with the one the process
uses, or is refused."""

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

from kiln.errors import KilnError
from kiln.runtime import VirtualMachine, load_module, thread_pool, vm_export, vm_runtime
from tests.runtime.test_vm_modes import kernel_chain

REPO_ROOT = Path(__file__).resolve().parents[2]
COMPILERS = ("cc", "gcc", "clang", "c99", "tcc")

CHILD = """
import json, os, sys
import numpy as np
path, how, feed = sys.argv[1:4]
x = np.load(feed)
tasks = len(os.listdir("/proc/self/task"))
sig = None
if how == "runtime":
    from kiln.runtime import VirtualMachine, load_module
    call = VirtualMachine(load_module(path))["main"]
else:
    import kiln
    call = kiln.load(path)
    sig = [t.describe() for t in (*call.inputs, *call.outputs)]
outs = [call(x).numpy() for _ in range(3)]
from kiln.runtime import thread_pool, vm_runtime
print(json.dumps({
    "out": outs[-1].tolist(),
    "same": all(np.array_equal(o, outs[0]) for o in outs),
    "threads": thread_pool.pool_threads(),
    "new_threads": len(os.listdir("/proc/self/task")) - tasks,
    "runtime": str(vm_runtime.load_vm_runtime().path),
    "signature": sig,
    "compiler": sorted(m for m in sys.modules if m.startswith(("kiln.tir", "kiln.relax"))),
}))
"""


def sealed_env(tmp_path: Path, threads: int = 2) -> dict[str, str]:
    """A process environment with no C compiler on PATH and a HOME and KILN_CACHE_DIR where
    nothing can be written, even by root (they lie under a regular file)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "python").symlink_to(sys.executable)
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("")
    for name in ("home", "cache"):
        with pytest.raises(OSError):
            (blocker / name).mkdir(parents=True)
    assert all(shutil.which(c, path=str(bin_dir)) is None for c in COMPILERS)
    return {
        "PATH": str(bin_dir),
        "HOME": str(blocker / "home"),
        "KILN_CACHE_DIR": str(blocker / "cache"),
        "KILN_NUM_THREADS": str(threads),
        "PYTHONPATH": str(REPO_ROOT),
    }


def run_sealed(env: dict[str, str], *args: str, script: str = CHILD) -> dict:
    proc = subprocess.run(
        [sys.executable, "-c", script, *args], capture_output=True, text=True, env=env
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def cnn(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, np.ndarray]:
    """(the bundled ONNX CNN, its kiln export, onnxruntime's output for a batch of 2)."""
    onnx = pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    import kiln
    from kiln.examples.models.cnn_onnx import cnn_onnx_model

    folder = tmp_path_factory.mktemp("cnn")
    src = folder / "cnn.onnx"
    onnx.save(cnn_onnx_model(), src)
    lib = kiln.compile(str(src)).export(folder / "cnn.so")
    image = np.random.default_rng(0).standard_normal((2, 3, 32, 32)).astype("float32")
    np.save(folder / "image.npy", image)
    want = ort.InferenceSession(str(src), providers=["CPUExecutionProvider"]).run(
        None, {"image": image}
    )[0]
    return lib, folder / "image.npy", want


@pytest.mark.parametrize("how", ["runtime", "kiln.load"])
def test_exported_model_runs_without_compiler_or_writable_cache(
    how: str, cnn: tuple[Path, Path, np.ndarray], tmp_path: Path
) -> None:
    lib, feed, want = cnn
    got = run_sealed(sealed_env(tmp_path), str(lib), how, str(feed))
    np.testing.assert_allclose(np.array(got["out"]), want, rtol=2e-3, atol=2e-4)
    assert got["same"]
    assert got["runtime"] == str(lib.resolve())  # the model's own runtime, nothing compiled
    assert got["threads"] == 2 and got["new_threads"] >= 1  # the pool's worker started
    if how == "runtime":
        assert got["compiler"] == []
    else:
        assert got["signature"] == ["image: float32[batch, 3, 32, 32]", "probs: float32[batch, 10]"]


def test_exported_library_carries_the_runtime_and_pool(tmp_path: Path) -> None:
    lib = load_module(kernel_chain().build("bytecode").export_library(tmp_path / "m.so"))
    assert vm_runtime.carries_runtime(lib.ffi_module)
    assert lib.get_func_names() == ["add_one", "mul_two"]  # the runtime's exports stay hidden


def test_one_runtime_and_one_pool_for_many_libraries(tmp_path: Path) -> None:
    """Libraries carrying copies of the runtime in a process that compiles too: one set of
    globals, one pool, every model right."""
    first = vm_runtime.load_vm_runtime()
    pool = tvm_ffi.get_global_func(thread_pool.GLOBAL_NAME)()
    x = np.arange(9, dtype="float32")
    for mode in ("bytecode", "compiled"):
        path = kernel_chain().build(mode).export_library(tmp_path / f"{mode}.so")
        out = VirtualMachine(load_module(path))["main"](x)
        np.testing.assert_array_equal(out.numpy(), (x + 1) * 2)
    assert vm_runtime.load_vm_runtime() is first
    assert tvm_ffi.get_global_func(thread_pool.GLOBAL_NAME)() == pool


TWO_MODELS = """
import json, sys
import numpy as np
from kiln.runtime import VirtualMachine, load_module, vm_runtime
x = np.arange(5, dtype="float32")
outs = [VirtualMachine(load_module(p))["main"](x).numpy().tolist() for p in sys.argv[1:3]]
pools = {vm_runtime.load_vm_runtime().pool.run_address}
print(json.dumps({"outs": outs, "runtime": str(vm_runtime.load_vm_runtime().path),
                  "pools": len(pools)}))
"""


def test_the_first_library_loaded_provides_the_runtime(tmp_path: Path) -> None:
    paths = [
        str(kernel_chain().build(m).export_library(tmp_path / f"{m}.so").resolve())
        for m in ("compiled", "bytecode")
    ]
    got = run_sealed(sealed_env(tmp_path, threads=1), *paths, script=TWO_MODELS)
    assert got["outs"] == [((np.arange(5) + 1) * 2).tolist()] * 2
    assert got["runtime"] == paths[0]


def _export_with_runtime(tmp_path: Path, name: str, units: tuple[str, str]) -> Path:
    patch = pytest.MonkeyPatch()
    patch.setattr(vm_export, "runtime_units", lambda: units)
    try:
        return kernel_chain().build("bytecode").export_library(tmp_path / name)
    finally:
        patch.undo()


def test_a_library_carrying_another_runtime_version_is_refused(tmp_path: Path) -> None:
    vm_c, pool_c = vm_runtime.runtime_units()
    old = "#define KILN_POOL_ABI_VERSION 1"
    assert old in pool_c
    path = _export_with_runtime(tmp_path, "other.so", (vm_c, pool_c.replace(old, old[:-1] + "9")))
    vm_runtime.load_vm_runtime()
    versions = r"other\.so has VM format/ABI/pool versions \(\d+, \d+, 9\)"
    with pytest.raises(KilnError, match=versions):
        VirtualMachine(load_module(path))


def test_a_library_without_runtime_says_so_where_nothing_compiles(tmp_path: Path) -> None:
    path = _export_with_runtime(tmp_path, "old.so", ("", ""))
    assert not vm_runtime.carries_runtime(load_module(path).ffi_module)
    script = "import sys\nfrom kiln.runtime import *\nVirtualMachine(load_module(sys.argv[1]))"
    env = sealed_env(tmp_path, threads=1)
    proc = subprocess.run([sys.executable, "-c", script, str(path)], capture_output=True,
                          text=True, env=env)  # fmt: skip
    assert proc.returncode == 1
    assert "old.so carries no kiln runtime" in proc.stderr
    assert "Re-export it with this kiln" in proc.stderr


MISSING_POOL = """
import json, sys, warnings
import numpy as np
from pathlib import Path
from kiln.runtime import vm_runtime
vm_runtime.POOL_SOURCE = Path(sys.argv[1])  # as if the install had dropped thread_pool.c
import kiln
from kiln import te, topi
x = te.placeholder((512, 1024), "float32", name="x")
y = topi.nn.softmax(x, axis=-1)
f = kiln.build_op([y], [x, y])
xs = np.random.default_rng(0).random((512, 1024), dtype="float32")
ys = np.empty_like(xs)
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    f(xs, ys)
ref = np.exp(xs - xs.max(1, keepdims=True))
try:
    vm_runtime.load_vm_runtime()
    error = ""
except Exception as e:
    error = str(e)
print(json.dumps({"ok": bool(np.allclose(ys, ref / ref.sum(1, keepdims=True), atol=1e-6)),
                  "warnings": [str(w.message) for w in caught], "error": error}))
"""


def test_a_missing_pool_source_is_loud_not_a_silent_single_thread(tmp_path: Path) -> None:
    env = {**os.environ, "KILN_NUM_THREADS": "2", "PYTHONPATH": str(REPO_ROOT)}
    missing = tmp_path / "thread_pool.c"
    got = run_sealed(env, str(missing), script=MISSING_POOL)
    assert got["ok"]
    assert len(got["warnings"]) == 1
    assert "thread pool is unavailable, so parallel loops run on one thread" in got["warnings"][0]
    assert f"{missing} cannot be read" in got["error"]
    assert "reinstall kiln" in got["error"]
