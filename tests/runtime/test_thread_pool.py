"""kiln's thread pool (kiln/runtime/thread_pool.{c,py}): one per process, every iteration of a
parallel loop exactly once, serial below the grain, nested and concurrent jobs, after fork."""

import ctypes
import os
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest
import tvm_ffi

import kiln
from kiln import te
from kiln.runtime import thread_pool

ROOT = Path(__file__).resolve().parents[2]
RANGE_FN = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64)


def _run(n: int, grain: int = 0) -> list[tuple[int, int, int]]:
    """Run a job of ``n`` iterations; the ranges it was cut into, with the thread of each."""
    seen: list[tuple[int, int, int]] = []
    lock = threading.Lock()

    def body(_ctx, begin, end):
        with lock:
            seen.append((begin, end, threading.get_ident()))

    fn = RANGE_FN(body)
    thread_pool.process_pool().run(n, grain, fn)
    return seen


def test_global_gives_the_one_pool():
    f = tvm_ffi.get_global_func(thread_pool.GLOBAL_NAME)
    assert f() == f() != 0
    assert thread_pool.pool_threads() >= 1


@pytest.mark.parametrize("n", [1, 2, 3, 7, 8, 9, 64, 1000])
def test_every_iteration_runs_once(n):
    for _ in range(20):
        covered = np.zeros(n, dtype=np.int64)
        for begin, end, _ in _run(n):
            assert 0 <= begin < end <= n
            covered[begin:end] += 1
        assert (covered == 1).all()


@pytest.mark.parametrize("n", [2, 11, 64, 1000])
def test_chunks_stay_inside_each_threads_share(n):
    threads = thread_pool.pool_threads()
    bounds = {n * k // threads for k in range(threads + 1)}
    for _ in range(20):
        for begin, end, _ in _run(n):
            assert not any(begin < b < end for b in bounds), (begin, end, sorted(bounds))


def test_below_the_grain_the_caller_runs_it_in_one_piece():
    assert _run(10, grain=11) == [(0, 10, threading.get_ident())]
    assert _run(0) == []


def test_concurrent_callers_are_all_served():
    errors: list[str] = []

    def caller():
        for _ in range(50):
            got = sorted((b, e) for b, e, _ in _run(100))
            if sum(e - b for b, e in got) != 100:
                errors.append(str(got))

    threads = [threading.Thread(target=caller) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


def _parallel_add(n: int):
    A, B = te.placeholder((n,), name="A"), te.placeholder((n,), name="B")
    C = te.compute((n,), lambda i: A[i] * 2.0 + B[i], name="C")
    s = te.create_schedule(C)
    outer, inner = s[C].split(C.op.axis[0], factor=64)
    s[C].parallel(outer)
    s[C].vectorize(inner)
    return kiln.build(te.lower(s, [A, B, C]))


def test_parallel_kernel_runs_on_the_pool_and_matches_numpy():
    mod = _parallel_add(64 * 97 + 5)
    src = mod.inspect_source()
    assert "kiln_pool_launch((" in src and "#pragma omp parallel" not in src
    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal(64 * 97 + 5).astype("float32") for _ in range(2))
    c = np.zeros_like(a)
    for _ in range(50):
        c[:] = 0
        mod["main"](a, b, c)
        np.testing.assert_allclose(c, a * 2 + b, rtol=1e-6)


def test_forked_child_runs_parallel_kernels():
    mod = _parallel_add(4096)
    a = np.arange(4096, dtype="float32")
    c = np.zeros_like(a)
    mod["main"](a, a, c)  # the parent's workers are started
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child reports through its exit status
        ok = True
        for _ in range(20):
            c[:] = 0
            mod["main"](a, a, c)
            ok = ok and bool(np.array_equal(c, a * 3))
        os._exit(0 if ok else 1)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0


def test_a_library_without_the_pool_runs_serially(tmp_path):
    """A kernel library loaded where kiln.runtime.thread_pool is not registered still works."""
    mod = _parallel_add(1000)
    path = tmp_path / "add.so"
    mod.export_library(str(path)) if hasattr(mod, "export_library") else pytest.skip("no export")
    code = (
        # torch blocked as kiln.runtime blocks it: tvm_ffi would import it (2.4 s), needlessly
        "import sys; sys.modules['torch'] = None; "
        "import numpy as np, tvm_ffi; m = tvm_ffi.load_module(%r); "
        "a = np.arange(1000, dtype='float32'); c = np.zeros_like(a); "
        "m['main'](tvm_ffi.from_dlpack(a), tvm_ffi.from_dlpack(a), tvm_ffi.from_dlpack(c)); "
        "assert np.array_equal(c, a * 3), c[:4]; print('ok')"
    ) % str(path)
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert out.returncode == 0 and "ok" in out.stdout, out.stderr[-2000:]
