"""The session-like model object: ``inputs`` / ``outputs`` metadata, onnxruntime's
``run(output_names, feeds)``, results written into caller-provided arrays (``out=``), inputs
that need a copy (lists, strided arrays and tensors) or are refused naming the input, and
``run_async``, per-model thread counts. Every number is compared with numpy."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import numpy as np
import pytest

import kiln
from kiln.driver.model import CompiledModel
from kiln.errors import FrontendError, KilnError
from kiln.runtime.thread_pool import call_threads_function, pool_threads
from kiln.script import ir as I
from kiln.script import relax as R

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper  # noqa: E402


def _two_output_model() -> bytes:
    """image: float32[batch, 8] -> probs = relu(image), doubled = image + image."""
    image = helper.make_tensor_value_info("image", TensorProto.FLOAT, ["batch", 8])
    probs = helper.make_tensor_value_info("probs", TensorProto.FLOAT, ["batch", 8])
    doubled = helper.make_tensor_value_info("doubled", TensorProto.FLOAT, ["batch", 8])
    nodes = [
        helper.make_node("Relu", ["image"], ["probs"]),
        helper.make_node("Add", ["image", "image"], ["doubled"]),
    ]
    graph = helper.make_graph(nodes, "two", [image], [probs, doubled])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    return model.SerializeToString()


def _want(x: np.ndarray) -> list[np.ndarray]:
    x = np.asarray(x, dtype=np.float32)
    return [np.maximum(x, 0), x + x]


@pytest.fixture(scope="module")
def onnx_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("model_api") / "two.onnx"
    path.write_bytes(_two_output_model())
    return path


@pytest.fixture(scope="module")
def model(onnx_path: Path) -> CompiledModel:
    return kiln.compile(str(onnx_path))


@pytest.fixture(scope="module")
def loaded(model: CompiledModel, tmp_path_factory: pytest.TempPathFactory) -> CompiledModel:
    path = model.export(tmp_path_factory.mktemp("model_api_lib") / "two.so")
    return kiln.load(path)


def _x(rows: int = 3, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((rows, 8)).astype(np.float32)


@pytest.mark.parametrize("which", ["compiled", "loaded"])
def test_inputs_and_outputs_name_dtype_and_symbolic_dims(
    which: str, model: CompiledModel, loaded: CompiledModel
) -> None:
    m = model if which == "compiled" else loaded
    assert [(s.name, s.dtype, s.dims) for s in m.inputs] == [("image", "float32", ("batch", 8))]
    assert [(s.name, s.dtype, s.dims) for s in m.outputs] == [
        ("probs", "float32", ("batch", 8)),
        ("doubled", "float32", ("batch", 8)),
    ]


@pytest.mark.parametrize("which", ["compiled", "loaded"])
def test_run_returns_the_named_outputs_as_arrays(
    which: str, model: CompiledModel, loaded: CompiledModel
) -> None:
    m = model if which == "compiled" else loaded
    x = _x(5)
    probs, doubled = _want(x)
    got = m.run(None, {"image": x})
    assert len(got) == 2 and all(type(a) is np.ndarray for a in got)
    np.testing.assert_allclose(got[0], probs, rtol=1e-6)
    np.testing.assert_allclose(got[1], doubled, rtol=1e-6)
    (only,) = m.run(["doubled"], {"image": x})
    np.testing.assert_allclose(only, doubled, rtol=1e-6)
    swapped = m.run(["doubled", "probs"], {"image": x})
    np.testing.assert_allclose(swapped[0], doubled, rtol=1e-6)
    np.testing.assert_allclose(swapped[1], probs, rtol=1e-6)


def test_run_refuses_unknown_outputs_and_inputs(model: CompiledModel) -> None:
    with pytest.raises(FrontendError, match=r"no output 'logits'; its outputs are probs, doubled"):
        model.run(["logits"], {"image": _x()})
    with pytest.raises(FrontendError, match=r"no input 'img'"):
        model.run(None, {"img": _x()})
    with pytest.raises(FrontendError, match=r"dict \{name: array\}, got list"):
        model.run(None, [_x()])  # type: ignore[arg-type]


def test_out_writes_into_the_callers_arrays(model: CompiledModel) -> None:
    x = _x(4)
    bufs = [np.empty((4, 8), np.float32), np.empty((4, 8), np.float32)]
    got = model.run(None, {"image": x}, out=bufs)
    assert got[0] is bufs[0] and got[1] is bufs[1]
    for have, want in zip(got, _want(x)):
        np.testing.assert_allclose(have, want, rtol=1e-6)
    (d,) = model.run(["doubled"], {"image": -x}, out=[bufs[1]])
    assert d is bufs[1]
    np.testing.assert_allclose(d, -2 * x, rtol=1e-6)
    p, d = model(image=x * 3, out=bufs)
    assert p is bufs[0] and d is bufs[1]
    np.testing.assert_allclose(p, np.maximum(3 * x, 0), rtol=1e-6)
    np.testing.assert_allclose(d, 6 * x, rtol=1e-6)


def _rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096


def test_out_calls_do_not_grow_the_process(model: CompiledModel) -> None:
    x = _x(2)
    bufs = [np.empty((2, 8), np.float32), np.empty((2, 8), np.float32)]
    feeds = {"image": x}
    for _ in range(500):  # warm: caches, the allocator's arenas
        model.run(None, feeds, out=bufs)
    before = _rss_bytes()
    same = True
    for _ in range(10_000):
        got = model.run(None, feeds, out=bufs)
        same = same and got[0] is bufs[0] and got[1] is bufs[1]
    grown = _rss_bytes() - before
    assert same
    assert grown < 1 << 20, f"RSS grew by {grown} bytes over 10,000 calls"
    for have, want in zip(bufs, _want(x)):
        np.testing.assert_allclose(have, want, rtol=1e-6)


@pytest.mark.parametrize(
    "bad, what",
    [
        (np.empty((4, 8), np.float64), "float64 array of shape \\(4, 8\\)"),
        (np.empty((3, 8), np.float32), "float32 array of shape \\(3, 8\\)"),
        (np.empty((8, 4), np.float32).T, "non-contiguous"),
        (np.empty((4, 8), np.int32), "int32 array"),
    ],
)
def test_a_wrong_out_array_names_the_output(
    model: CompiledModel, bad: np.ndarray, what: str
) -> None:
    good = np.empty((4, 8), np.float32)
    with pytest.raises(FrontendError, match=rf"out\[1\] for output 'doubled' must be .*{what}"):
        model.run(None, {"image": _x(4)}, out=[good, bad])


def test_out_needs_one_array_per_output(model: CompiledModel) -> None:
    with pytest.raises(FrontendError, match=r"one per output \(probs, doubled\); got a list of 1"):
        model.run(None, {"image": _x(4)}, out=[np.empty((4, 8), np.float32)])
    read_only = np.empty((4, 8), np.float32)
    read_only.flags.writeable = False
    with pytest.raises(FrontendError, match=r"out\[0\] for output 'probs'.*read-only"):
        model.run(["probs"], {"image": _x(4)}, out=[read_only])


def test_strided_and_list_inputs_are_copied_once(model: CompiledModel) -> None:
    wide = _x(4).repeat(2, axis=1)[:, ::2]  # strided view, (4, 8)
    assert not wide.flags.c_contiguous
    for _ in range(2):  # the second call takes the checked-shape path
        np.testing.assert_allclose(model(wide)[1].numpy(), 2 * wide, rtol=1e-6)
    np.testing.assert_allclose(model.run(["probs"], {"image": wide})[0], np.maximum(wide, 0))
    rows = [[float(i - j) for j in range(8)] for i in range(3)]
    np.testing.assert_allclose(model(image=rows)[0].numpy(), _want(rows)[0])
    as_tuple = tuple(tuple(r) for r in rows)
    np.testing.assert_allclose(model.run(None, {"image": as_tuple})[1], _want(rows)[1])
    ints = [list(range(8))] * 2
    np.testing.assert_allclose(model(ints)[1].numpy(), _want(ints)[1])


def test_non_contiguous_torch_tensor_is_copied() -> None:
    torch = pytest.importorskip("torch")
    model = kiln.compile(_two_output_model())
    t = torch.arange(32, dtype=torch.float32).reshape(8, 4).T - 10  # (4, 8), strided
    assert not t.is_contiguous()
    got = model(image=t)
    np.testing.assert_allclose(got[0].numpy(), _want(t.contiguous().numpy())[0])


def test_inputs_that_cannot_be_converted_name_the_input(model: CompiledModel) -> None:
    for bad, why in [
        ([[1.0, 2.0], [3.0]], "not a rectangular array"),
        ([["a"] * 8], "do not convert to float32"),
        ([[1 + 2j] * 8], "do not convert to float32"),
    ]:
        with pytest.raises(FrontendError, match=rf"input 'image' .*{why}") as info:
            model(bad)
        assert "tuple" not in str(info.value) and "fused" not in str(info.value)
    with pytest.raises(FrontendError, match=r"input 'image' must have 2 dims, got shape \(8,\)"):
        model([1.0] * 8)


def test_run_async_returns_futures_in_order(model: CompiledModel) -> None:
    done: list[int] = []
    lock = threading.Lock()

    def note(future: object) -> None:
        with lock:
            done.append(id(future))

    xs = [_x(2 + k, seed=k) for k in range(6)]
    futures = [model.run_async({"image": x}, note) for x in xs]
    for future, x in zip(futures, xs):
        got = future.result(timeout=60)
        for have, want in zip(got, _want(x)):
            np.testing.assert_allclose(have, want, rtol=1e-6)
    assert sorted(done) == sorted(id(f) for f in futures)
    buf = np.empty((2, 8), np.float32)
    (d,) = model.run_async({"image": xs[0]}, output_names=["doubled"], out=[buf]).result(60)
    assert d is buf
    np.testing.assert_allclose(buf, 2 * xs[0], rtol=1e-6)


def test_run_async_future_raises_the_calls_error(model: CompiledModel) -> None:
    future = model.run_async({"image": np.zeros((2, 7), np.float32)})
    with pytest.raises(KilnError, match=r"input 'image' has shape \(2, 7\): dim 1 must be 8"):
        future.result(timeout=60)


@I.ir_module
class Wide:
    @R.function
    def main(x: R.Tensor((512, 2048), "float32")):
        with R.dataflow():
            y = R.exp(R.tanh(R.sigmoid(x)))
            R.output(y)
        return y


def _others_cpu(model: CompiledModel, x: np.ndarray, calls: int = 20) -> tuple[float, float]:
    """(CPU seconds of the process's other threads, of this thread) over ``calls`` calls, after
    the pool's workers have gone to sleep. NOTE: CPU time, not wall time, shows who worked:
    this machine's other load makes a parallel loop's wall time say little."""
    time.sleep(0.2)
    proc, mine = time.process_time(), time.thread_time()
    for _ in range(calls):
        model(x)
    mine = time.thread_time() - mine
    return time.process_time() - proc - mine, mine


def test_num_threads_caps_each_models_parallel_loops(tmp_path: Path) -> None:
    if pool_threads() < 2:
        pytest.skip("the process's pool has one thread (KILN_NUM_THREADS=1 or one CPU)")
    one = kiln.compile(Wide, num_threads=1)
    two = kiln.load(one.export(tmp_path / "wide.so"), num_threads=2)
    assert (one.num_threads, two.num_threads) == (1, 2)
    x = np.random.default_rng(1).random((512, 2048), dtype=np.float32)
    want = np.exp(np.tanh(1 / (1 + np.exp(-x))))
    for m in (one, two):
        np.testing.assert_allclose(m(x).numpy(), want, rtol=1e-5)
    for _ in range(2):  # interleaved: each model keeps its own setting
        others, mine = _others_cpu(one, x)
        assert others < 0.05 * mine, (others, mine)
        shares = [_others_cpu(two, x) for _ in range(3)]
        assert max(o / (o + m) for o, m in shares) > 0.15, shares
    cap = call_threads_function()
    assert cap is not None and cap(0) == 0  # restored after each call
    one.set_num_threads(None)
    assert one.num_threads is None


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "2"])
def test_num_threads_must_be_a_positive_int(model: CompiledModel, bad: object) -> None:
    with pytest.raises(
        KilnError, match=rf"num_threads must be a positive int or None, got {bad!r}"
    ):
        model.set_num_threads(bad)  # type: ignore[arg-type]
