"""Operator benchmarks: kiln's default CPU schedules against numpy and PyTorch, in one run.

    python benchmarks/bench_ops.py [--threads 1,2] [--runs 30] [--cases matmul,conv2d,...]
                                   [--target "c -mcpu=haswell"] [--readme benchmarks/README.md]

Cases: matmul fp32 M x N x K = 64x256x512, 512^3, 1024^3 (BLAS order: A is M x K, B is K x N);
conv2d NCHW 1x64x56x56 with 64 3x3 filters, padding 1 (numpy: im2col + one matmul); and, when
`kiln.topi` provides them, relu(x * a + b) summed over 1M floats (fused in kiln, numpy's unfused
expression), softmax over 128x1024 and layer_norm over 128x768 (last axis, no affine). kiln
builds for ``--target`` (default ``c``, the host CPU; e.g. ``c -mcpu=haswell`` times AVX2 code on
an AVX-512 machine).

Processes and threads: every (library, thread count) pair is timed in a worker process of its
own, started with ``OMP_NUM_THREADS``, ``KILN_NUM_THREADS``, ``MKL_NUM_THREADS`` and
``NUMEXPR_NUM_THREADS`` set to the count before anything is imported, ``OPENBLAS_NUM_THREADS``
to the count in the numpy worker and 1 elsewhere; the torch worker also calls
``torch.set_num_threads`` (see `thread_env`). NOTE: one process per library, because on this
2-core machine one library's spin-waiting pool threads (OpenBLAS spins for a long time after a
call) steal a core from the next library's threads, and 2-thread calls then take whole
scheduler ticks.

Timing: each worker builds its cases (kiln's are checked against numpy), then per case makes
warm-up calls (at least 20 ms) and ``runs / 5`` timed calls. The parent runs 5 rounds of all
workers (kiln, numpy, torch, per thread count), so a change in machine load hits every library
alike, and reports per library the median of all ``runs`` calls and the ratio of the medians
(kiln's speed over the other's). The machine is shared: the parent compares the CPU time all
processes used (``/proc/stat``) with its worker's own, and repeats (up to twice) a worker during
which other processes used more than ``--max-others`` (default 5%) of the CPUs.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

LIBS = ("kiln", "numpy", "torch", "onnxruntime")
ROUNDS = 5
ALL_CASES = ("matmul", "conv2d", "fused", "softmax", "layer_norm")
MATMULS = ((64, 256, 512), (512, 512, 512), (1024, 1024, 1024))


@dataclass(frozen=True)
class Conv:
    """A square 2-D convolution of batch 1: ``c x h x h`` input, ``o`` ``k x k`` filters."""

    name: str
    c: int
    h: int
    o: int
    k: int
    stride: int = 1
    pad: int = 0
    groups: int = 1

    @property
    def flops(self) -> float:
        out = (self.h + 2 * self.pad - self.k) // self.stride + 1
        return 2.0 * self.o * (self.c // self.groups) * self.k * self.k * out * out


CONVS = (
    Conv("conv2d 1x64x56x56 k3x3x64 p1", 64, 56, 64, 3, pad=1),
    Conv("conv2d 1x256x56x56 k1x1x64", 256, 56, 64, 1),
    Conv("conv2d 1x128x28x28 k3x3x128 p1", 128, 28, 128, 3, pad=1),
    Conv("conv2d 1x64x56x56 k3x3x128 s2 p1", 64, 56, 128, 3, stride=2, pad=1),
    Conv("depthwise 1x128x56x56 k3x3 p1", 128, 56, 128, 3, pad=1, groups=128),
    Conv("depthwise 1x256x56x56 k3x3 s2 p1", 256, 56, 256, 3, stride=2, pad=1, groups=256),
    Conv("grouped 1x128x28x28 k3x3x128 g4 p1", 128, 28, 128, 3, pad=1, groups=4),
)
"""The convolutions of ``--cases conv2d``: ResNet's 3x3, 1x1 and strided 3x3, MobileNet's
depthwise 3x3 (stride 1 and 2), a grouped 3x3."""
Bench = tuple[str, float, Callable[[], Any]]
"""A benchmark in a worker: its name, FLOP count (0: report times only) and the timed call."""


# -- kiln ------------------------------------------------------------------------------------------
TARGET = "c"
"""The target kiln builds for (``--target``; set in the worker)."""


def kiln_call(sch: Any, inputs: list[Any], outs: list[Any], arrays: list[Any]) -> Any:
    """Build ``sch`` over ``inputs + outs``; returns (call on preallocated arrays, outputs)."""
    import numpy as np

    import kiln
    from kiln import te

    fn = kiln.build(te.lower(sch, [*inputs, *outs]), target=TARGET)["main"]
    results = [np.zeros([int(d.value) for d in t.shape], str(t.dtype)) for t in outs]
    args = [aligned(a) for a in [*arrays, *results]]
    return (lambda: fn(*args)), args[len(arrays) :]


def aligned(a: Any) -> Any:
    """A copy of numpy array ``a`` on kiln's tensor alignment, as a model's buffers are: numpy's
    own arrays may start 16 bytes into a cache line, and then half the vector loads of a
    channel-blocked kernel split across two lines (measured: ResNet-50's layer-4 convolutions
    47 or 59 GFLOP/s depending on where numpy put the arrays)."""
    import numpy as np

    from kiln.runtime.tensor import empty

    out = np.from_dlpack(empty(a.shape, a.dtype))
    out[...] = a
    return out


def kiln_matmul(a: Any, b: Any) -> Callable[[], Any]:
    """kiln's packed matmul of ``a @ b``, checked against numpy."""
    import numpy as np

    from kiln import te
    from kiln.topi import x86

    at, bt = te.placeholder(a.shape, name="A"), te.placeholder(b.shape, name="B")
    ct = x86.matmul(at, bt, target=TARGET)
    call, (out,) = kiln_call(x86.schedule_matmul(ct, TARGET), [at, bt], [ct], [a, b])
    call()
    np.testing.assert_allclose(out, a @ b, rtol=1e-3, atol=1e-3)
    return call


def kiln_conv(x: Any, w: Any, conv: Conv) -> Callable[[], Any]:
    """kiln's channel-blocked conv2d (`kiln.topi.x86.conv2d_nchwc`, the kernel a model runs
    between the layout transforms at its boundary) on blocked data with a filter packed
    beforehand (a model's weights are packed at compile time), checked against numpy."""
    import numpy as np

    from kiln import te
    from kiln.ir import Target
    from kiln.relax.transform.alter_op_layout import channel_block
    from kiln.topi import x86
    from kiln.topi.layout import transform_array

    target = Target(TARGET)
    cg, og = conv.c // conv.groups, conv.o // conv.groups
    if cg == og == 1:
        cb = ob = channel_block(conv.c, target, x.dtype)
        ki = 1
    else:
        cb = ki = channel_block(cg, target, x.dtype)
        ob = channel_block(og, target, x.dtype)
    xb = transform_array(x, "NCHW", f"NCHW{cb}c")
    wb = transform_array(w, "OIHW", f"OIHW{ki}i{ob}o")
    xt, wt = te.placeholder(xb.shape, name="x"), te.placeholder(wb.shape, name="w")
    yt = x86.conv2d_nchwc(xt, wt, conv.stride, conv.pad, 1, conv.groups, target=TARGET)
    sch = x86.schedule_conv2d_nchwc(yt, TARGET)
    call, (out,) = kiln_call(sch, [xt, wt], [yt], [xb, wb])
    call()
    want = transform_array(numpy_conv(x, w, conv)(), "NCHW", f"NCHW{ob}c")
    np.testing.assert_allclose(out, want, rtol=2e-3, atol=2e-3)
    return call


def kiln_topi(case: str, x: Any, ref: Callable[[], Any]) -> Callable[[], Any]:
    """A `kiln.topi` case built with `topi.schedule_for`, checked against ``ref``."""
    import numpy as np

    from kiln import te, topi

    xt = te.placeholder(x.shape, name="x")
    if case == "fused":
        yt = topi.sum(topi.relu(topi.add(topi.multiply(xt, 1.5), -0.25)))
    elif case == "softmax":
        yt = topi.nn.softmax(xt)
    else:
        yt = topi.nn.layer_norm(xt)
    call, (out,) = kiln_call(topi.schedule_for(yt, TARGET), [xt], [yt], [x])
    call()
    np.testing.assert_allclose(out, ref(), rtol=1e-3, atol=1e-4)
    return call


# -- numpy and torch -------------------------------------------------------------------------------
def im2col_conv(x: Any, w: Any) -> Callable[[], Any]:
    """numpy's best effort at a 3x3 / padding 1 convolution: im2col, then one matmul."""
    import numpy as np

    _, c, h, wd = x.shape
    xp = np.zeros((c, h + 2, wd + 2), "float32")
    cols = np.empty((c, 3, 3, h, wd), "float32")
    wm = w.reshape(w.shape[0], -1)
    out = np.empty((w.shape[0], h * wd), "float32")

    def run() -> Any:
        xp[:, 1:-1, 1:-1] = x[0]
        for i in range(3):
            for j in range(3):
                cols[:, i, j] = xp[:, i : i + h, j : j + wd]
        return np.matmul(wm, cols.reshape(c * 9, h * wd), out=out)

    return run


def numpy_conv(x: Any, w: Any, conv: Conv) -> Callable[[], Any]:
    """Any convolution of `CONVS` in numpy (sliding windows and one einsum per call); only
    the 3x3 case is timed with it (`im2col_conv` is numpy's faster way there)."""
    import numpy as np
    from numpy.lib.stride_tricks import sliding_window_view

    k, s, p, g = conv.k, conv.stride, conv.pad, conv.groups
    wg = w.reshape(g, conv.o // g, conv.c // g, k, k)

    def run() -> Any:
        xp = np.pad(x, ((0, 0), (0, 0), (p, p), (p, p)))
        win = sliding_window_view(xp, (k, k), axis=(2, 3))[:, :, ::s, ::s]
        n, _, oh, ow = win.shape[:4]
        win = win.reshape(n, g, conv.c // g, oh, ow, k, k)
        y = np.einsum("ngchwyx,gocyx->ngohw", win, wg, optimize=True)
        return y.reshape(n, conv.o, oh, ow)

    return run


def numpy_row_op(case: str, x: Any) -> Callable[[], Any]:
    """numpy's fused-case expression, softmax or layer_norm over the last axis."""
    import numpy as np

    if case == "fused":
        return lambda: np.maximum(x * np.float32(1.5) - np.float32(0.25), 0).sum()
    if case == "softmax":

        def softmax() -> Any:
            e = np.exp(x - x.max(axis=1, keepdims=True))
            return e / e.sum(axis=1, keepdims=True)

        return softmax

    def layer_norm() -> Any:
        mu = x.mean(axis=1, keepdims=True)
        return (x - mu) / np.sqrt(x.var(axis=1, keepdims=True) + np.float32(1e-5))

    return layer_norm


def torch_call(case: str, arrays: list[Any], conv: Conv | None = None) -> Callable[[], Any]:
    """PyTorch's call for ``case`` on ``arrays`` (``conv``: the convolution's parameters)."""
    import torch

    c = conv or CONVS[0]

    t = [torch.from_numpy(a) for a in arrays]
    f = torch.nn.functional
    if case == "matmul":
        out = torch.empty(arrays[0].shape[0], arrays[1].shape[1])
        return lambda: torch.mm(t[0], t[1], out=out)
    calls: dict[str, Callable[[], Any]] = {
        "conv2d": lambda: f.conv2d(t[0], t[1], stride=c.stride, padding=c.pad, groups=c.groups),
        "fused": lambda: torch.relu(t[0] * 1.5 - 0.25).sum(),
        "softmax": lambda: torch.softmax(t[0], 1),
        "layer_norm": lambda: f.layer_norm(t[0], (arrays[0].shape[1],)),
    }
    return calls[case]


def ort_model(case: str, arrays: list[Any], conv: Conv | None = None) -> Any:
    """A one-operator ONNX model (opset 17) computing ``case`` on inputs shaped like
    ``arrays`` (the weights of matmul are inputs, as in kiln's kernel; a convolution's filter
    is an initializer, so onnxruntime prepacks it for its NCHWc kernels, as kiln packs it at
    compile time; its time includes the NCHW <-> NCHWc reorders around the one Conv)."""
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper

    f32 = TensorProto.FLOAT
    names = [f"x{i}" for i in range(len(arrays))]
    inputs = [helper.make_tensor_value_info(n, f32, a.shape) for n, a in zip(names, arrays)]
    inits: list[Any] = []
    if case == "matmul":
        nodes = [helper.make_node("MatMul", names, ["y"])]
    elif case == "conv2d":
        c = conv or CONVS[0]
        inputs, inits = inputs[:1], [numpy_helper.from_array(arrays[1], "x1")]
        pads = [c.pad] * 4
        attrs = {"strides": [c.stride] * 2, "pads": pads, "group": c.groups}
        nodes = [helper.make_node("Conv", names, ["y"], **attrs)]
    elif case == "softmax":
        nodes = [helper.make_node("Softmax", names, ["y"], axis=1)]
    elif case == "layer_norm":
        n = arrays[0].shape[1]
        inits = [numpy_helper.from_array(np.ones(n, "float32"), "g")]
        inits.append(numpy_helper.from_array(np.zeros(n, "float32"), "b"))
        nodes = [helper.make_node("LayerNormalization", ["x0", "g", "b"], ["y"], axis=-1)]
    else:
        inits = [numpy_helper.from_array(np.array(v, "float32"), k) for k, v in FUSED_CONSTS]
        nodes = [
            helper.make_node("Mul", ["x0", "a"], ["t0"]),
            helper.make_node("Add", ["t0", "b"], ["t1"]),
            helper.make_node("Relu", ["t1"], ["t2"]),
            helper.make_node("ReduceSum", ["t2"], ["y"], keepdims=0),
        ]
    out = helper.make_tensor_value_info("y", f32, None)
    graph = helper.make_graph(nodes, case, inputs, [out], initializer=inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


FUSED_CONSTS = (("a", 1.5), ("b", -0.25))


def ort_call(
    case: str, arrays: list[Any], threads: int, conv: Conv | None = None
) -> Callable[[], Any]:
    """onnxruntime's session for ``case`` on ``threads`` intra-op threads (its defaults
    otherwise: spinning pool threads), run through an I/O binding (inputs bound once)."""
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    model = ort_model(case, arrays, conv).SerializeToString()
    sess = ort.InferenceSession(model, opts, providers=["CPUExecutionProvider"])
    binding = sess.io_binding()
    for i, a in enumerate(arrays[:1] if case == "conv2d" else arrays):
        binding.bind_cpu_input(f"x{i}", a)
    binding.bind_output("y", "cpu")
    return lambda: sess.run_with_iobinding(binding)


# -- cases -----------------------------------------------------------------------------------------
def numpy_matmul(a: Any, b: Any) -> Callable[[], Any]:
    """numpy's ``a @ b`` into a preallocated output."""
    import numpy as np

    c = np.empty((a.shape[0], b.shape[1]), "float32")
    return lambda: np.matmul(a, b, out=c)


def _call(
    lib: str, case: str, arrays: list[Any], ref: Callable[[], Any] | None, conv: Conv | None = None
) -> Any:
    if lib == "onnxruntime":
        return ort_call(case, arrays, int(os.environ["OMP_NUM_THREADS"]), conv)
    if lib == "torch":
        return torch_call(case, arrays, conv)
    if case == "matmul":
        return (kiln_matmul if lib == "kiln" else numpy_matmul)(*arrays)
    if case == "conv2d":
        assert conv is not None
        if lib == "kiln":
            return kiln_conv(*arrays, conv)
        return im2col_conv(*arrays) if conv == CONVS[0] else None
    assert ref is not None
    return kiln_topi(case, arrays[0], ref) if lib == "kiln" else ref


ROW_CASES = {
    "fused": ("relu(x*a+b).sum() 1M", (1 << 20,)),
    "softmax": ("softmax 128x1024", (128, 1024)),
    "layer_norm": ("layer_norm 128x768", (128, 768)),
}


def benches(lib: str, cases: list[str]) -> list[Bench]:
    """The benchmarks of ``cases`` for library ``lib``, built (and for kiln, checked)."""
    import numpy as np

    rng = np.random.default_rng(0)
    out: list[Bench] = []
    if "matmul" in cases:
        for m, n, k in MATMULS:
            a = rng.standard_normal((m, k), dtype="float32")
            b = rng.standard_normal((k, n), dtype="float32")
            out.append((f"matmul {m}x{n}x{k}", 2.0 * m * n * k, _call(lib, "matmul", [a, b], None)))
    for conv in CONVS if "conv2d" in cases else ():
        x = rng.standard_normal((1, conv.c, conv.h, conv.h), dtype="float32")
        w = rng.standard_normal((conv.o, conv.c // conv.groups, conv.k, conv.k), dtype="float32")
        w /= np.float32(np.sqrt(w[0].size))
        call = _call(lib, "conv2d", [x, w], None, conv)
        if call is not None:
            out.append((conv.name, conv.flops, call))
    for case, (name, shape) in ROW_CASES.items():
        if case not in cases:
            continue
        x = rng.standard_normal(shape, dtype="float32")
        try:
            out.append((name, 0.0, _call(lib, case, [x], numpy_row_op(case, x))))
        except (ImportError, AttributeError) as e:
            print(f"# skipping {case}: kiln.topi does not provide it ({e})", file=sys.stderr)
    return out


# -- worker and parent -----------------------------------------------------------------------------
def worker(lib: str, threads: int, cases: list[str], runs: int, warmup: int) -> None:
    """Time ``lib`` on ``threads`` threads: one JSON line per case with its samples (seconds)."""
    if lib == "torch":
        import torch

        torch.set_num_threads(threads)
    for name, flops, call in benches(lib, cases):
        start = time.perf_counter()
        for _ in range(warmup):
            call()
        while time.perf_counter() - start < 0.02:
            call()
        samples = []
        for _ in range(runs):
            t0 = time.perf_counter_ns()
            call()
            samples.append((time.perf_counter_ns() - t0) * 1e-9)
        row = {"case": name, "lib": lib, "threads": threads, "flops": flops, "samples": samples}
        print(json.dumps(row), flush=True)


def thread_env(lib: str, threads: int) -> dict[str, str]:
    """The environment of a worker: every thread-count variable set to ``threads``, except
    OpenBLAS outside the numpy worker (1 thread: numpy there only checks results, and an idle
    OpenBLAS thread spins for a long time, stealing a core).

    NOTE: ``MKL_NUM_THREADS`` matters to kiln too where torch is imported before kiln: torch's
    bundled ``libgomp.so.1`` is then the one every kiln kernel binds to (same soname), and torch
    sets that runtime's thread count from ``MKL_NUM_THREADS`` / ``OMP_NUM_THREADS`` (kiln's
    runtime no longer lets tvm-ffi import torch itself, `kiln.runtime._import_tvm_ffi`).
    """
    env = dict(os.environ)
    for var in ("OMP_NUM_THREADS", "KILN_NUM_THREADS", "MKL_NUM_THREADS", "NUMEXPR_NUM_THREADS"):
        env[var] = str(threads)
    env["OPENBLAS_NUM_THREADS"] = str(threads if lib == "numpy" else 1)
    return env


def busy_jiffies() -> int:
    """CPU time (in clock ticks) all processes have used since boot (``/proc/stat``)."""
    try:
        fields = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
    except OSError:
        return 0
    idle = int(fields[3]) + int(fields[4])
    return sum(int(f) for f in fields[:8]) - idle


def others_share(before: int, wall: float, child_cpu: float) -> float:
    """The fraction of the machine other processes used while a worker ran ``wall`` seconds
    using ``child_cpu`` seconds of CPU."""
    ticks = os.sysconf("SC_CLK_TCK")
    others = (busy_jiffies() - before) / ticks - child_cpu
    return max(0.0, others) / (wall * (os.cpu_count() or 1))


def run_worker(lib: str, threads: int, args: argparse.Namespace) -> list[dict[str, Any]]:
    """One worker process; returns its rows (empty when ``lib`` is not installed). A run during
    which other processes used more than ``--max-others`` of the CPUs is repeated (3 tries)."""
    cmd = [sys.executable, __file__, "--worker", lib, "--threads", str(threads)]
    cmd += ["--runs", str(-(-args.runs // ROUNDS)), "--warmup", str(args.warmup)]
    cmd += ["--cases", args.cases, "--target", args.target]
    for attempt in range(3):
        before, cpu0, t0 = busy_jiffies(), _children_cpu(), time.perf_counter()
        proc = subprocess.run(cmd, env=thread_env(lib, threads), capture_output=True, text=True)
        share = others_share(before, time.perf_counter() - t0, _children_cpu() - cpu0)
        if proc.returncode != 0:
            if lib in ("torch", "onnxruntime") and "No module named" in proc.stderr:
                return []
            sys.stderr.write(proc.stderr)
            raise SystemExit(f"the {lib} worker ({threads} threads) failed ({proc.returncode})")
        if share <= args.max_others or attempt == 2:
            break
        print(f"# {lib} x{threads}: other processes used {share:.0%}; again", file=sys.stderr)
    sys.stderr.write(proc.stderr)
    return [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]


def _children_cpu() -> float:
    import resource

    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def collect(args: argparse.Namespace) -> list[dict[str, Any]]:
    """Rows ``{case, threads, flops, times: {lib: median seconds}}`` over all rounds."""
    samples: dict[tuple[str, int], dict[str, list[float]]] = {}
    flops: dict[str, float] = {}
    for _ in range(ROUNDS):
        for threads in (int(t) for t in args.threads.split(",")):
            for lib in args.libs.split(","):
                for r in run_worker(lib, threads, args):
                    flops[r["case"]] = r["flops"]
                    key = (r["case"], threads)
                    samples.setdefault(key, {}).setdefault(lib, []).extend(r["samples"])
    order = {case: i for i, case in enumerate(flops)}
    rows = []
    for (case, threads), libs in sorted(
        samples.items(), key=lambda kv: (order[kv[0][0]], kv[0][1])
    ):
        times = {lib: statistics.median(v) for lib, v in libs.items()}
        rows.append({"case": case, "threads": threads, "flops": flops[case], "times": times})
    return rows


# -- report ----------------------------------------------------------------------------------------
def _cell(row: dict[str, Any], lib: str) -> str:
    t = row["times"].get(lib)
    if t is None:
        return "-"
    if row["flops"]:
        return f"{row['flops'] / t / 1e9:.1f} GFLOP/s"
    return f"{t * 1e6:.1f} us"


def _ratio(row: dict[str, Any], lib: str) -> str:
    t, k = row["times"].get(lib), row["times"].get("kiln")
    return "-" if t is None or k is None else f"{t / k:.2f}x"


def table(rows: list[dict[str, Any]]) -> str:
    """A markdown table: throughput (or time) per library and kiln's speed relative to each
    (libraries without a single row are left out)."""
    libs = [lib for lib in LIBS if any(lib in r["times"] for r in rows)]
    others = [lib for lib in libs if lib != "kiln"]
    head = ["case", "threads", *libs, *(f"kiln vs {lib}" for lib in others)]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        cells = [r["case"], str(r["threads"]), *(_cell(r, lib) for lib in libs)]
        cells += [_ratio(r, lib) for lib in others]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def machine(target: str = "c") -> str:
    """One line describing the CPU (with the ISA of kiln's host target, and of ``target`` when
    it names another CPU), compiler and library versions."""
    from kiln.ir import Target

    model = platform.machine()
    try:
        info = Path("/proc/cpuinfo").read_text().splitlines()
        model = next(ln.split(":", 1)[1].strip() for ln in info if ln.startswith("model name"))
    except (OSError, StopIteration):
        pass
    cpu = Target("c").cpu
    simd = f"{cpu.isa} (gcc -march=native: {cpu.name})"
    if Target(target) != Target("c"):
        simd += f"; kiln target {target!r}: {Target(target).cpu.isa}"
    cc = subprocess.run(["cc", "--version"], capture_output=True, text=True).stdout.splitlines()
    import numpy

    versions = [f"numpy {numpy.__version__}"]
    try:
        import torch

        versions.append(f"torch {torch.__version__}")
    except ImportError:
        pass
    head = f"{model}, {os.cpu_count()} cores, {simd}"
    return f"{head}; {cc[0] if cc else 'cc ?'}; {', '.join(versions)}"


def update_readme(path: Path, text: str, section: str = "bench_ops") -> None:
    """Replace the generated section of ``path`` (between the ``section`` markers) with
    ``text``."""
    begin, end = f"<!-- {section}:begin -->", f"<!-- {section}:end -->"
    old = path.read_text() if path.exists() else ""
    block = f"{begin}\n{text}\n{end}"
    if begin in old and end in old:
        new = old[: old.index(begin)] + block + old[old.index(end) + len(end) :]
    else:
        new = (old.rstrip() + "\n\n" if old else "") + block + "\n"
    path.write_text(new)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--threads", default="1,2", help="comma-separated thread counts")
    p.add_argument("--runs", type=int, default=30, help="timed calls per library and case")
    p.add_argument("--warmup", type=int, default=5, help="untimed calls first (per round)")
    p.add_argument("--cases", default=",".join(ALL_CASES), help=",".join(ALL_CASES))
    p.add_argument("--libs", default=",".join(LIBS), help=",".join(LIBS))
    p.add_argument("--readme", type=Path, help="write the table into this markdown file")
    p.add_argument("--target", default="c", help="kiln's target (default c: the host CPU)")
    p.add_argument(
        "--max-others",
        type=float,
        default=0.05,
        help="repeat a worker when other processes used more than this share of the CPUs",
    )
    p.add_argument("--worker", choices=LIBS, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.worker:
        global TARGET
        TARGET = args.target
        worker(args.worker, int(args.threads), args.cases.split(","), args.runs, args.warmup)
        return
    text = table(collect(args))
    print(text)
    if args.readme is not None:
        today = datetime.date.today().isoformat()
        cmd = "python benchmarks/bench_ops.py " + " ".join(sys.argv[1:])
        update_readme(args.readme, f"{today}, {machine(args.target)}\n\n`{cmd}`\n\n{text}")


if __name__ == "__main__":
    main()
