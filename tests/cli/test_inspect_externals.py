"""``kiln inspect model.so`` says which external codegen made which function: a model compiled with
``external_codegens=["dnnl"]``, exported and listed through ``python -m kiln inspect``, names each
dnnl function with its codegen and model nodes; a model without external codegens lists none."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import kiln
from kiln.relax.backend import dnnl

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper  # noqa: E402

needs_onednn = pytest.mark.skipif(dnnl.paths() is None, reason="needs kiln[dnnl] (oneDNN)")

RNG = np.random.default_rng(11)
W = RNG.standard_normal((4, 3, 3, 3)).astype("float32")
M = RNG.standard_normal((64, 5)).astype("float32")
X = RNG.standard_normal((2, 3, 4, 4)).astype("float32")


def conv_matmul() -> bytes:
    """Conv -> Relu -> Reshape -> MatMul, every node named: dnnl takes the conv (with its relu)
    and the matmul; the reshape stays a kiln kernel."""
    inits = {"w": W, "m": M, "shape": np.array([2, 64], dtype=np.int64)}
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], name="stem/conv", pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c"], ["r"], name="stem/relu"),
        helper.make_node("Reshape", ["r", "shape"], ["f"], name="flatten"),
        helper.make_node("MatMul", ["f", "m"], ["y"], name="head/matmul"),
    ]
    graph = helper.make_graph(
        nodes,
        "conv_matmul",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(X.shape))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 5])],
        initializer=[onnx.numpy_helper.from_array(a, n) for n, a in inits.items()],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()


def reference(model: bytes) -> np.ndarray:
    ort = pytest.importorskip("onnxruntime")
    return ort.InferenceSession(model).run(None, {"x": X})[0]


def inspect_cli(lib: Path, cache: Path) -> str:
    env = {**os.environ, "KILN_CACHE_DIR": str(cache)}
    env.pop("KILN_DEBUG", None)
    out = subprocess.run([sys.executable, "-m", "kiln", "inspect", str(lib)],
                         capture_output=True, text=True, env=env, timeout=300)  # fmt: skip
    assert out.returncode == 0, out.stderr
    return out.stdout


def external_rows(listing: str) -> list[list[str]]:
    """The rows under the ``external functions (...)`` heading, split on their two-space gaps."""
    lines = listing.splitlines()
    start = next(k for k, ln in enumerate(lines) if ln.startswith("external functions ("))
    return [[c.strip() for c in ln.split("  ") if c.strip()] for ln in lines[start + 1 :]]


@needs_onednn
def test_inspect_names_each_dnnl_function_its_codegen_and_nodes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KILN_CACHE_DIR", str(tmp_path / "cache"))
    onnx_model = conv_matmul()
    model = kiln.compile(onnx_model, external_codegens=["dnnl"])
    want = reference(onnx_model)
    np.testing.assert_allclose(model(X).numpy(), want, rtol=1e-4, atol=1e-4)
    externals = dict(model.executable.externals or ())
    assert externals and set(externals.values()) == {"dnnl"}
    assert set(externals) <= set(model.executable.kernels)
    loaded = kiln.load(model.export(tmp_path / "conv_matmul.so"))
    np.testing.assert_allclose(loaded(X).numpy(), want, rtol=1e-4, atol=1e-4)
    assert loaded.executable.externals == model.executable.externals
    listing = inspect_cli(tmp_path / "conv_matmul.so", tmp_path / "cache")
    assert f"external functions ({len(externals)}; codegen and model nodes):" in listing
    rows = {row[0]: row[1:] for row in external_rows(listing)}
    assert set(rows) == set(externals)
    nodes = [row[1] for row in rows.values()]
    assert all(row[0] == "dnnl" for row in rows.values())
    # the conv (fused with its relu) and the matmul went to dnnl, the reshape did not
    assert "stem/conv, stem/relu" in nodes and "head/matmul" in nodes
    assert "flatten" not in " ".join(nodes)
    # a kiln kernel computes the reshape, and it is no external function
    flatten = [k for k, ns in model.executable.nodes if "flatten" in ns]
    assert flatten and not set(flatten) & set(externals)


def test_a_model_without_external_codegens_lists_none(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KILN_CACHE_DIR", str(tmp_path / "cache"))
    onnx_model = conv_matmul()
    model = kiln.compile(onnx_model)
    np.testing.assert_allclose(model(X).numpy(), reference(onnx_model), rtol=1e-4, atol=1e-4)
    assert model.executable.externals == ()
    listing = inspect_cli(model.export(tmp_path / "plain.so"), tmp_path / "cache")
    assert listing.rstrip().endswith("\nexternal functions: none")
    assert "dnnl" not in listing
