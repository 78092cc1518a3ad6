"""The kernel cache: a model sharing kernels with one compiled before compiles only what is new,
runs right, and shows its own kernel names; the key is structural and the same in every process."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import kiln
from kiln.driver import kernel_cache
from kiln.ir.structural import structural_digest
from kiln.runtime import disk_cache

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper  # noqa: E402

X = np.random.default_rng(5).standard_normal((4, 16)).astype("float32")


def mlp(seed: int, hidden: int = 32, out: int = 8) -> tuple[bytes, list[np.ndarray]]:
    """ONNX bytes of ``relu(x @ w1 + b1) @ w2 + b2`` and its weights."""
    rng = np.random.default_rng(seed)
    ws = [rng.standard_normal(s).astype("float32") for s in ((16, hidden), (hidden,))]
    ws += [rng.standard_normal(s).astype("float32") for s in ((hidden, out), (out,))]
    names = ["w1", "b1", "w2", "b2"]
    nodes = [
        helper.make_node("MatMul", ["x", "w1"], ["h"]),
        helper.make_node("Add", ["h", "b1"], ["z"]),
        helper.make_node("Relu", ["z"], ["a"]),
        helper.make_node("MatMul", ["a", "w2"], ["g"]),
        helper.make_node("Add", ["g", "b2"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes,
        "mlp",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, out])],
        initializer=[
            helper.make_tensor(n, TensorProto.FLOAT, list(w.shape), w.ravel())
            for n, w in zip(names, ws)
        ],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    return model.SerializeToString(), ws


def expected(ws: list[np.ndarray]) -> np.ndarray:
    return np.maximum(X @ ws[0] + ws[1], 0) @ ws[2] + ws[3]


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("KILN_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


def objects(cache: Path) -> set[str]:
    return {p.name for p in cache.glob("kiln_unit-*.o")}


def test_a_model_sharing_every_kernel_compiles_only_its_own_vm_code(cache: Path) -> None:
    data_a, ws_a = mlp(0)
    data_b, ws_b = mlp(1)  # the same layers, other weights: another model, the same kernels
    model_a = kiln.compile(data_a)
    np.testing.assert_allclose(model_a(X).numpy(), expected(ws_a), rtol=1e-4, atol=1e-4)
    first = objects(cache)
    assert list((cache / "kernels").glob("kiln_kernel-*.json"))
    assert "kernel" in {e.kind for e in disk_cache.scan(cache)[0]}  # kiln cache info lists them
    model_b = kiln.compile(data_b)
    np.testing.assert_allclose(model_b(X).numpy(), expected(ws_b), rtol=1e-4, atol=1e-4)
    new = objects(cache) - first
    # NOTE: the VM function's unit and the list of exposed functions: no kernel compiled again
    assert len(new) <= 2
    units = {json.loads(p.read_text())["unit"] for p in (cache / "kernels").glob("*.json")}
    assert units and {Path(u).with_suffix(".o").name for u in units} <= first
    assert model_a.executable.kernels == model_b.executable.kernels  # the model's own names
    report = str(model_b.profile(X))
    assert all(name in report for name in model_b.executable.kernels)


def test_a_model_sharing_some_kernels_compiles_the_others(cache: Path) -> None:
    data_a, _ = mlp(0)
    data_c, ws_c = mlp(2, out=12)  # the first layer is shared, the second is not
    kiln.compile(data_a)
    kept = {p.name for p in (cache / "kernels").glob("*.json")}
    model_c = kiln.compile(data_c)
    np.testing.assert_allclose(model_c(X).numpy(), expected(ws_c), rtol=1e-4, atol=1e-4)
    added = {p.name for p in (cache / "kernels").glob("*.json")} - kept
    assert added and len(added) < len(model_c.executable.kernels)


def test_a_kernel_whose_unit_is_gone_is_compiled_again(cache: Path) -> None:
    data_a, _ = mlp(0)
    data_b, ws_b = mlp(3)
    kiln.compile(data_a)
    for unit in cache.glob("kiln_unit-*.c"):
        unit.unlink()
    model_b = kiln.compile(data_b)
    np.testing.assert_allclose(model_b(X).numpy(), expected(ws_b), rtol=1e-4, atol=1e-4)


def test_kiln_debug_turns_the_cache_off(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KILN_DEBUG", "1")
    assert not kernel_cache.enabled()
    model = kiln.compile(mlp(0)[0])
    assert model(X).shape == (4, 8)
    assert not (cache / "kernels").exists() or not list((cache / "kernels").iterdir())


DIGEST = """
import sys
from tests.driver.test_kernel_cache import add_kernel
from kiln.ir.structural import structural_digest
print(structural_digest(add_kernel("a", 16)))
"""


def add_kernel(name: str, n: int):  # noqa: ANN201 - a PrimFunc
    from kiln import te

    x = te.placeholder((n,), "float32", name=f"{name}_x")
    y = te.compute((n,), lambda i: x[i] + 1.0, name=f"{name}_y")
    return te.create_prim_func([x, y]).with_attr("global_symbol", name)


def test_the_kernel_digest_ignores_names_and_is_the_same_in_every_process() -> None:
    a, b = add_kernel("a", 16), add_kernel("b", 16)
    assert structural_digest(a.without_attr("global_symbol")) == structural_digest(
        b.without_attr("global_symbol")
    )
    assert structural_digest(a) != structural_digest(add_kernel("a", 17))
    root = Path(__file__).resolve().parents[2]
    child = subprocess.run(
        [sys.executable, "-c", DIGEST], capture_output=True, text=True, check=True, cwd=root
    )
    assert child.stdout.strip() == structural_digest(a)


def test_a_reused_unit_brings_no_other_model_code(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """All kernels in one unit (the model's VM function apart): the second model links that
    unit and its own VM function, not the first model's."""
    monkeypatch.setattr(sys.modules["kiln.driver.relax_build"], "UNITS_PER_CPU", 0)
    data_a, ws_a = mlp(0)
    data_c, ws_c = mlp(4, out=12)
    np.testing.assert_allclose(
        kiln.compile(data_a)(X).numpy(), expected(ws_a), rtol=1e-4, atol=1e-4
    )
    model_c = kiln.compile(data_c)
    np.testing.assert_allclose(model_c(X).numpy(), expected(ws_c), rtol=1e-4, atol=1e-4)
