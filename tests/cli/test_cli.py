"""The command line end to end: ``python -m kiln`` (and the ``kiln`` console script)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper  # noqa: E402

from kiln.cli.main import main  # noqa: E402

VERBS = ["compile", "run", "bench", "profile"]


def kiln_cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "kiln", *args], capture_output=True, text=True, cwd=cwd,
        env=dict(os.environ), timeout=300,
    )  # fmt: skip


@pytest.fixture(scope="module")
def model_file(tmp_path_factory) -> Path:
    """``y = relu(x @ w + b)`` with a dynamic batch."""
    rng = np.random.default_rng(0)
    w = helper.make_tensor("w", TensorProto.FLOAT, [8, 4], rng.standard_normal(32))
    b = helper.make_tensor("b", TensorProto.FLOAT, [4], rng.standard_normal(4))
    nodes = [
        helper.make_node("MatMul", ["x", "w"], ["h"], name="fc"),
        helper.make_node("Add", ["h", "b"], ["z"], name="bias"),
        helper.make_node("Relu", ["z"], ["y"], name="act"),
    ]
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 4])
    graph = helper.make_graph(nodes, "mlp", [x], [y], initializer=[w, b])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    path = tmp_path_factory.mktemp("cli") / "mlp.onnx"
    onnx.save(model, str(path))
    return path


def reference(path: Path, x: np.ndarray) -> np.ndarray:
    model = onnx.load(str(path))
    w, b = (onnx.numpy_helper.to_array(t) for t in model.graph.initializer)
    return np.maximum(x @ w + b, 0)


@pytest.mark.parametrize("verb", VERBS)
def test_help_of_each_verb(verb: str, capsys) -> None:
    with pytest.raises(SystemExit) as info:
        main([verb, "--help"])
    assert info.value.code == 0
    assert f"usage: kiln {verb}" in capsys.readouterr().out


def test_top_level_help() -> None:
    out = kiln_cli("--help")
    assert out.returncode == 0
    assert all(v in out.stdout for v in VERBS)


def test_compile_then_run(model_file: Path, tmp_path: Path) -> None:
    lib = tmp_path / "mlp.so"
    out = kiln_cli("compile", str(model_file), "-o", str(lib))
    assert out.returncode == 0, out.stderr
    assert lib.is_file() and "wrote" in out.stdout
    x = np.random.default_rng(1).standard_normal((3, 8)).astype("float32")
    np.save(tmp_path / "x.npy", x)
    out = kiln_cli("run", str(lib), "--input", f"x={tmp_path / 'x.npy'}", "-o", str(tmp_path))
    assert out.returncode == 0, out.stderr
    got = np.load(tmp_path / "y.npy")  # named after the model's output
    np.testing.assert_allclose(got, reference(model_file, x), rtol=1e-5, atol=1e-5)


def test_run_reports_a_wrong_input_by_name(model_file: Path, tmp_path: Path) -> None:
    np.save(tmp_path / "bad.npy", np.zeros((3, 5), "float32"))
    out = kiln_cli("run", str(model_file), "--input", f"x={tmp_path / 'bad.npy'}")
    assert out.returncode == 1
    assert "error" in out.stderr and "'x'" in out.stderr and "Traceback" not in out.stderr


def test_bench_against_onnxruntime(model_file: Path) -> None:
    pytest.importorskip("onnxruntime")
    out = kiln_cli("bench", str(model_file), "--threads", "1", "--against", "onnxruntime",
                   "--runs", "3", "--dim", "batch=4")  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert "outputs agree with onnxruntime" in out.stdout
    assert "kiln" in out.stdout and "onnxruntime" in out.stdout


def test_profile(model_file: Path, capsys) -> None:
    assert main(["profile", str(model_file), "--dim", "batch=2"]) == 0
    out = capsys.readouterr().out
    assert "profile of main" in out and "layout transforms:" in out
    assert main(["profile", str(model_file), "--dim", "batch=2", "--repeat", "3"]) == 0
    assert "profile of main" in capsys.readouterr().out
    assert main(["profile", str(model_file), "--dim", "batch=2", "--repeat", "0"]) == 1
    assert "--repeat must be at least 1, got 0" in capsys.readouterr().err


def test_a_bad_model_is_one_message(tmp_path: Path, capsys) -> None:
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"\x00\x01 definitely not protobuf")
    assert main(["compile", str(bad), "-o", str(tmp_path / "x.so")]) == 1
    assert "kiln compile: error:" in capsys.readouterr().err
