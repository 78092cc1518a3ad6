"""Each profiled kernel names the model nodes it computes: LowerTE records them at every call site
of the kernel (``kiln.nodes``), the executable keeps them (through export and ``kiln.load``), and
they stay out of the kernel cache's key."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import kiln
from kiln.cli.inspect import inspect_library
from kiln.runtime.profile import ProfileReport, ProfileRow

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper  # noqa: E402

X = np.random.default_rng(7).standard_normal((4, 16)).astype("float32")
RNG = np.random.default_rng(8)
WEIGHTS = {
    "w1": RNG.standard_normal((16, 16)).astype("float32"),
    "b1": RNG.standard_normal(16).astype("float32"),
    "w2": RNG.standard_normal((16, 16)).astype("float32"),
    "b2": RNG.standard_normal(16).astype("float32"),
    "w3": RNG.standard_normal((16, 8)).astype("float32"),
    "b3": RNG.standard_normal(8).astype("float32"),
}


def layers(prefix: str) -> bytes:
    """Two equal MatMul-Add-Relu layers (one kernel between them) and a MatMul-Add head, every
    node named ``<prefix><layer>/<op>``."""
    spec = [("fc1", "x", "w1", "b1", True), ("fc2", "a1", "w2", "b2", True)]
    spec.append(("head", "a2", "w3", "b3", False))
    nodes = []
    for k, (layer, x, w, b, relu) in enumerate(spec, 1):
        name = f"{prefix}{layer}"
        out = f"a{k}" if relu else "y"
        nodes.append(helper.make_node("MatMul", [x, w], [f"h{k}"], name=f"{name}/MatMul"))
        nodes.append(helper.make_node("Add", [f"h{k}", b], [f"z{k}" if relu else out],
                                      name=f"{name}/Add"))  # fmt: skip
        if relu:
            nodes.append(helper.make_node("Relu", [f"z{k}"], [out], name=f"{name}/Relu"))
    graph = helper.make_graph(
        nodes,
        "layers",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 8])],
        initializer=[
            helper.make_tensor(n, TensorProto.FLOAT, list(w.shape), w.ravel())
            for n, w in WEIGHTS.items()
        ],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    return model.SerializeToString()


def expected() -> np.ndarray:
    w = WEIGHTS
    a1 = np.maximum(X @ w["w1"] + w["b1"], 0)
    a2 = np.maximum(a1 @ w["w2"] + w["b2"], 0)
    return a2 @ w["w3"] + w["b3"]


def names(prefix: str, layer: str, relu: bool = True) -> tuple[str, ...]:
    ops = ("MatMul", "Add", "Relu") if relu else ("MatMul", "Add")
    return tuple(f"{prefix}{layer}/{op}" for op in ops)


def check_rows(report: ProfileReport, prefix: str) -> None:
    """The shared layer kernel lists both layers' nodes in call order, the head's its own."""
    by_first = {r.nodes[0]: r for r in report.rows if r.nodes}
    shared = by_first[f"{prefix}fc1/MatMul"]
    assert shared.nodes == names(prefix, "fc1") + names(prefix, "fc2")
    assert shared.calls == 2 and "matmul" in shared.kernel
    head = by_first[f"{prefix}head/MatMul"]
    assert head.nodes == names(prefix, "head", relu=False) and head.calls == 1
    assert head.kernel != shared.kernel


def test_each_kernel_row_lists_the_nodes_fused_into_it(tmp_path: Path) -> None:
    model = kiln.compile(layers(""))
    np.testing.assert_allclose(model(X).numpy(), expected(), rtol=1e-4, atol=1e-4)
    report = model.profile(X, repeat=2, warmup=1)
    check_rows(report, "")
    text = str(report)
    assert "fc1/MatMul, fc1/Add +4 more" in text and "head/MatMul, head/Add" in text
    rows = {r["kernel"]: r["nodes"] for r in report.to_json()["rows"]}
    assert sorted(n for ns in rows.values() for n in ns) == sorted(
        names("", "fc1") + names("", "fc2") + names("", "head", relu=False)
    )
    # exported and loaded without the compiler: the library keeps them
    lib = model.export(tmp_path / "layers.so")
    loaded = kiln.load(lib)
    assert loaded.executable.nodes == model.executable.nodes
    np.testing.assert_allclose(loaded(X).numpy(), expected(), rtol=1e-4, atol=1e-4)
    check_rows(loaded.profile(X, repeat=2, warmup=1), "")
    listing = inspect_library(str(lib))
    shared = next(r for r in report.rows if r.nodes[:1] == ("fc1/MatMul",))
    line = next(ln for ln in listing.splitlines() if ln.startswith(f"  {shared.kernel} "))
    assert line.endswith("fc1/MatMul, fc1/Add +4 more")


def test_other_node_names_still_hit_the_kernel_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The node names are the model's, not the kernel's: a model that differs only in them
    compiles no kernel again, and its profile names its own nodes."""
    cache = tmp_path / "cache"
    monkeypatch.setenv("KILN_CACHE_DIR", str(cache))
    first = kiln.compile(layers(""))
    entries = set((cache / "kernels").glob("kiln_kernel-*.json"))
    assert len(entries) >= 2
    second = kiln.compile(layers("block0/"))
    assert set((cache / "kernels").glob("kiln_kernel-*.json")) == entries
    np.testing.assert_allclose(second(X).numpy(), expected(), rtol=1e-4, atol=1e-4)
    assert second.executable.kernels == first.executable.kernels
    report = second.profile(X, repeat=2, warmup=1)
    check_rows(report, "block0/")
    assert all(n.startswith("block0/") for r in report.rows for n in r.nodes)


def test_a_row_shows_its_first_two_nodes_and_counts_the_rest() -> None:
    nodes = tuple(f"/blocks.{k}/mlp/fc/MatMul" for k in range(5))
    rows = (ProfileRow("k_many", 1, 3.0, 3.0, 0.3, nodes=nodes),
            ProfileRow("k_two", 1, 2.0, 2.0, 0.2, nodes=nodes[:2]),
            ProfileRow("k_none", 1, 1.0, 1.0, 0.1))  # fmt: skip
    report = ProfileReport("main", "compiled", 10.0, rows)
    lines = {ln.split()[0]: ln for ln in str(report).splitlines()[2:5]}
    assert lines["k_many"].endswith(f"  {nodes[0]}, {nodes[1]} +3 more")
    assert lines["k_two"].endswith(f"  {nodes[0]}, {nodes[1]}")
    assert lines["k_none"].endswith("10.0%")
    assert report.to_json()["rows"][0]["nodes"] == list(nodes)


def test_a_batch_norm_folded_by_a_rewrite_rule_keeps_its_node_name(tmp_path: Path) -> None:
    """SimplifyInference rewrites BatchNormalization into a multiply and an add (rewrite rules):
    they keep the node's span, so the conv kernel they fuse into still names it."""
    rng = np.random.default_rng(3)
    w = rng.standard_normal((4, 3, 3, 3)).astype("float32")
    stats = {n: rng.uniform(0.5, 1.5, 4).astype("float32") for n in ("g", "b", "m", "v")}
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], name="stem/conv", pads=[1, 1, 1, 1]),
        helper.make_node("BatchNormalization", ["c", "g", "b", "m", "v"], ["n"], name="stem/bn"),
        helper.make_node("Relu", ["n"], ["y"], name="stem/relu"),
    ]
    inits = {"w": w, **stats}
    graph = helper.make_graph(
        nodes,
        "cbr",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 8, 8])],
        initializer=[
            helper.make_tensor(n, TensorProto.FLOAT, list(a.shape), a.ravel())
            for n, a in inits.items()
        ],
    )
    path = tmp_path / "cbr.onnx"
    path.write_bytes(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
                     .SerializeToString())  # fmt: skip
    model = kiln.compile(str(path))
    x = np.random.default_rng(4).standard_normal((1, 3, 8, 8)).astype("float32")
    ort = pytest.importorskip("onnxruntime")
    want = ort.InferenceSession(str(path)).run(None, {"x": x})[0]
    np.testing.assert_allclose(model(x).numpy(), want, rtol=1e-4, atol=1e-4)
    named = [row.nodes for row in model.profile(x).rows if "conv2d" in row.kernel]
    assert named and "stem/bn" in named[0], named
