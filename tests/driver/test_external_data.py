"""ONNX external data: weights read from the model file's folder (never the working directory),
never from outside it, and part of the model cache's key (issue 22, findings 2 and 3).

Every answer is compared with onnxruntime's on the same files.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import kiln
from kiln.driver import model as model_module
from kiln.driver import model_cache
from kiln.errors import FrontendError
from kiln.ir import Target

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from kiln.relax.frontend.onnx import from_onnx  # noqa: E402

X = np.random.default_rng(7).standard_normal((2, 4)).astype("float32")


def weights(seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((4, 3)).astype("float32"), rng.standard_normal(3).astype("float32"))


def save(folder: Path, seed: int = 0, location: str = "weights.bin") -> Path:
    """``y = x @ w + b`` as ``folder/model.onnx``, its weights in ``folder/<location>``."""
    w, b = weights(seed)
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["h"]), helper.make_node("Add", ["h", "b"], ["y"])],
        "affine",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])],
        initializer=[numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    folder.mkdir(parents=True, exist_ok=True)
    (folder / location).unlink(missing_ok=True)  # NOTE: onnx refuses to overwrite it
    path = folder / "model.onnx"
    onnx.save_model(model, str(path), save_as_external_data=True, all_tensors_to_one_file=True,
                    location=location, size_threshold=0)  # fmt: skip
    return path


def relocate(path: Path, location: str) -> None:
    """Rewrite ``path`` so that every external tensor names ``location``."""
    proto = onnx.load(str(path), load_external_data=False)
    for t in proto.graph.initializer:
        for entry in t.external_data:
            if entry.key == "location":
                entry.value = location
    path.write_bytes(proto.SerializeToString())


def reference(path: Path) -> np.ndarray:
    return ort.InferenceSession(str(path)).run(None, {"x": X})[0]


def result(model: kiln.CompiledModel) -> np.ndarray:
    return model(X).numpy()


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("KILN_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


@pytest.fixture
def builds(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    calls: list[int] = []
    real = model_module.build
    monkeypatch.setattr(model_module, "build", lambda *a, **k: calls.append(1) or real(*a, **k))
    return calls


def test_changed_weights_compile_again(
    cache: Path, builds: list[int], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = save(tmp_path / "m", seed=0)
    monkeypatch.chdir(path.parent)  # NOTE: where kiln once looked for the weights
    old = reference(path)
    np.testing.assert_allclose(result(kiln.compile(str(path))), old, rtol=1e-5)
    before = path.read_bytes()
    save(tmp_path / "m", seed=1)  # new weights.bin bytes
    assert path.read_bytes() == before
    new = reference(path)
    assert not np.allclose(new, old)
    np.testing.assert_allclose(result(kiln.compile(str(path))), new, rtol=1e-5)
    assert len(builds) == 2
    kiln.compile(str(path))  # unchanged since: a cache hit
    assert len(builds) == 2


def test_the_key_covers_subgraph_weights(tmp_path: Path) -> None:
    def branch(name: str, value: float) -> onnx.GraphProto:
        init = numpy_helper.from_array(np.full(3, value, "float32"), f"{name}_c")
        out = helper.make_tensor_value_info(f"{name}_y", TensorProto.FLOAT, [3])
        node = helper.make_node("Identity", [f"{name}_c"], [f"{name}_y"])
        return helper.make_graph([node], name, [], [out], initializer=[init])

    def model_file(value: float) -> Path:
        node = helper.make_node("If", ["cond"], ["y"], then_branch=branch("then", value),
                                else_branch=branch("else", 0.0))  # fmt: skip
        graph = helper.make_graph(
            [node], "g", [helper.make_tensor_value_info("cond", TensorProto.BOOL, [])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3])],
        )  # fmt: skip
        path = tmp_path / "model.onnx"
        (tmp_path / "weights.bin").unlink(missing_ok=True)
        onnx.save_model(helper.make_model(graph), str(path), save_as_external_data=True,
                        location="weights.bin", size_threshold=0)  # fmt: skip
        return path

    key = lambda p: model_cache.model_key(str(p), Target("c"), "compiled", "main", (), {})  # noqa: E731
    first = key(model_file(1.0))
    onnx_bytes = (tmp_path / "model.onnx").read_bytes()
    assert first == key(model_file(1.0))
    assert first != key(model_file(2.0))
    assert (tmp_path / "model.onnx").read_bytes() == onnx_bytes  # only weights.bin differs
    bare = onnx.load(str(tmp_path / "model.onnx"), load_external_data=False)
    then = next(a.g for a in bare.graph.node[0].attribute if a.name == "then_branch")
    assert then.initializer[0].data_location == TensorProto.EXTERNAL


def test_compile_from_another_folder(
    cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = save(tmp_path / "m")
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    np.testing.assert_allclose(result(kiln.compile(str(path))), reference(path), rtol=1e-5)
    relative = Path("..") / "m" / "model.onnx"  # the model's own path may well be relative
    np.testing.assert_allclose(result(kiln.compile(str(relative))), reference(path), rtol=1e-5)


@pytest.mark.parametrize("how", ["dotdot", "absolute", "symlink"])
def test_a_location_outside_the_folder_is_refused(
    cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    path = save(tmp_path / "m")
    secret = tmp_path / "secret.bin"
    secret.write_bytes((path.parent / "weights.bin").read_bytes())  # readable, valid bytes
    location = {"dotdot": "../secret.bin", "absolute": str(secret), "symlink": "link.bin"}[how]
    if how == "symlink":
        (path.parent / "link.bin").symlink_to(secret)
    relocate(path, location)
    with pytest.raises(Exception) as ort_error:
        reference(path)
    assert "w" in str(ort_error.value)  # onnxruntime refuses it too
    monkeypatch.chdir(path.parent)
    for compile_it in (lambda: kiln.compile(str(path)), lambda: from_onnx(str(path))):
        with pytest.raises(FrontendError) as info:
            compile_it()
        message = str(info.value)
        assert "'w'" in message and location in message, message
        assert str(path.parent.resolve()) in message and "outside" in message, message
        assert "Traceback" not in message


def test_a_symlink_inside_the_folder_is_read(cache: Path, tmp_path: Path) -> None:
    path = save(tmp_path / "m")
    (path.parent / "data").mkdir()
    (path.parent / "weights.bin").rename(path.parent / "data" / "w.bin")
    (path.parent / "link.bin").symlink_to(Path("data") / "w.bin")
    relocate(path, "link.bin")
    np.testing.assert_allclose(result(kiln.compile(str(path))), reference(path), rtol=1e-5)


def test_the_callers_file_is_never_read(
    cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = save(tmp_path / "m", location="private.bin")
    caller = tmp_path / "caller"
    caller.mkdir()
    (path.parent / "private.bin").rename(caller / "private.bin")
    monkeypatch.chdir(caller)
    with pytest.raises(Exception, match="does not exist"):
        reference(path)
    with pytest.raises(FrontendError) as info:
        kiln.compile(str(path))
    message = str(info.value)
    assert "'w'" in message and str(path.parent.resolve() / "private.bin") in message, message


def test_a_truncated_weights_file_names_the_tensor(cache: Path, tmp_path: Path) -> None:
    path = save(tmp_path / "m")
    weights_file = path.parent / "weights.bin"
    weights_file.write_bytes(weights_file.read_bytes()[:40])  # w needs 48 bytes, b 12 more
    with pytest.raises(FrontendError) as info:
        kiln.compile(str(path))
    message = str(info.value)
    assert "'w'" in message and str(weights_file.resolve()) in message, message


def test_a_model_in_memory_needs_its_data_loaded(
    cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = save(tmp_path / "m")
    monkeypatch.chdir(path.parent)  # NOTE: the working directory holds weights.bin: still refused
    bare = onnx.load(str(path), load_external_data=False)
    for given in (bare, bare.SerializeToString()):
        with pytest.raises(FrontendError) as info:
            kiln.compile(given)
        assert "'w'" in str(info.value) and "weights.bin" in str(info.value)
        assert "path" in str(info.value)  # says what to do instead
    loaded = onnx.load(str(path))  # onnx reads the data from the model's folder
    np.testing.assert_allclose(result(kiln.compile(loaded)), reference(path), rtol=1e-5)


def test_the_command_line_runs_a_model_with_external_data_from_another_folder(
    tmp_path: Path,
) -> None:
    path = save(tmp_path / "m", seed=3)
    work = tmp_path / "work"
    work.mkdir()
    np.save(work / "x.npy", X)
    env = {**os.environ, "KILN_CACHE_DIR": str(tmp_path / "cache")}
    out = subprocess.run(
        [sys.executable, "-m", "kiln", "run", str(path), "--input", "x=x.npy", "-o", "out"],
        capture_output=True, text=True, cwd=work, env=env, timeout=300,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    (written,) = (work / "out").glob("*.npy")  # named after the model's output
    np.testing.assert_allclose(np.load(written), reference(path), rtol=1e-5)
