"""kiln.compile's model cache: a model compiled before loads from the cache without compiling
(also in a fresh process); a changed model, option or kiln misses; a corrupt entry is rebuilt."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import kiln
from kiln.driver import model as model_module
from kiln.driver import model_cache

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper  # noqa: E402


def mlp(seed: int) -> tuple[bytes, np.ndarray, np.ndarray]:
    """ONNX bytes of ``relu(x @ w + b)`` and its weights."""
    rng = np.random.default_rng(seed)
    w = rng.standard_normal((8, 4)).astype("float32")
    b = rng.standard_normal(4).astype("float32")
    nodes = [
        helper.make_node("MatMul", ["x", "w"], ["h"], name="fc"),
        helper.make_node("Add", ["h", "b"], ["z"], name="bias"),
        helper.make_node("Relu", ["z"], ["y"], name="act"),
    ]
    graph = helper.make_graph(
        nodes,
        "mlp",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 4])],
        initializer=[
            helper.make_tensor("w", TensorProto.FLOAT, [8, 4], w.ravel()),
            helper.make_tensor("b", TensorProto.FLOAT, [4], b),
        ],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    return model.SerializeToString(), w, b


X = np.random.default_rng(9).standard_normal((3, 8)).astype("float32")


def check(model: kiln.CompiledModel, w: np.ndarray, b: np.ndarray) -> None:
    np.testing.assert_allclose(model(X).numpy(), np.maximum(X @ w + b, 0), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(model(x=X).numpy(), np.maximum(X @ w + b, 0), rtol=1e-5, atol=1e-5)


@pytest.fixture
def builds(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the compilations `kiln.compile` runs (one entry per call of the build)."""
    calls: list[int] = []
    real = model_module.build

    def counting(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(model_module, "build", counting)
    return calls


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("KILN_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


def test_a_second_compile_loads_from_the_cache(cache: Path, builds: list[int]) -> None:
    data, w, b = mlp(0)
    first = kiln.compile(data)
    second = kiln.compile(data)
    assert len(builds) == 1
    assert second.path is not None and second.path.parent == cache / "models"
    check(first, w, b)
    check(second, w, b)
    assert second.inputs == first.inputs  # input names and shapes survive the cache


def test_a_file_and_a_model_proto_with_the_same_bytes_share_the_entry(
    cache: Path, tmp_path: Path, builds: list[int]
) -> None:
    data, w, b = mlp(1)
    path = tmp_path / "m.onnx"
    path.write_bytes(data)
    kiln.compile(str(path))
    check(kiln.compile(onnx.load_from_string(data)), w, b)
    assert len(builds) == 1


def test_a_changed_model_option_or_kiln_misses(
    cache: Path, builds: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    data, w, b = mlp(2)
    other, w2, b2 = mlp(3)
    kiln.compile(data)
    check(kiln.compile(other), w2, b2)
    assert len(builds) == 2
    kiln.compile(data, exec_mode="bytecode")
    assert len(builds) == 3
    monkeypatch.setattr(model_cache, "source_fingerprint", lambda: "another kiln")
    check(kiln.compile(data), w, b)
    assert len(builds) == 4


COMPILE_IN_CHILD = "import sys, kiln; kiln.compile(open(sys.argv[1], 'rb').read())"


@pytest.fixture(scope="module")
def written_by_a_child(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A cache holding ``mlp(4)``'s entry, written by a child process; each corrupt-entry test
    damages a copy of it (one child compile for all of them)."""
    root = tmp_path_factory.mktemp("model-cache-template")
    (root / "m.onnx").write_bytes(mlp(4)[0])
    cmd = [sys.executable, "-c", COMPILE_IN_CHILD, str(root / "m.onnx")]
    subprocess.run(cmd, check=True, env={**os.environ, "KILN_CACHE_DIR": str(root / "cache")})
    return root / "cache"


@pytest.mark.parametrize("damage", ["garbage", "truncated", "no digest", "no json"])
def test_a_corrupt_entry_is_compiled_again(
    cache: Path, written_by_a_child: Path, builds: list[int], damage: str
) -> None:
    data, w, b = mlp(4)
    # NOTE: another process writes the entry: a process that loaded a library has it mapped,
    # and damaging a mapped file in place would crash that process, not test the cache.
    shutil.copytree(written_by_a_child, cache)
    (entry,) = (cache / "models").glob("*.so")
    if damage == "garbage":
        entry.write_bytes(b"\x7fELF not really a library")
    elif damage == "truncated":
        entry.write_bytes(entry.read_bytes()[:4096])
    elif damage == "no digest":
        entry.with_name(entry.name + ".sha256").unlink()
    else:
        entry.with_suffix(".json").write_text("{not json")
    model = kiln.compile(data)
    assert len(builds) == 1
    check(model, w, b)
    assert model_cache.lookup(model_cache_key(data)) is not None  # the entry is whole again
    check(kiln.compile(data), w, b)
    assert len(builds) == 1


def model_cache_key(data: bytes) -> str:
    from kiln.ir import Target

    key = model_cache.model_key(data, Target("c"), "compiled", "main", (), {})
    assert key is not None
    return key


def test_a_fresh_process_loads_from_the_cache(cache: Path, tmp_path: Path) -> None:
    data, w, b = mlp(5)
    path = tmp_path / "m.onnx"
    path.write_bytes(data)
    kiln.compile(str(path))
    code = (
        "import sys, kiln\n"
        "from kiln.driver import model\n"
        "model.build = None  # a compile would fail\n"
        "m = kiln.compile(sys.argv[1])\n"
        "print(m.path)\n"
    )
    env = {**os.environ, "KILN_CACHE_DIR": str(cache)}
    out = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True,
                         env=env, timeout=300)  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert str(cache / "models") in out.stdout


def test_debugging_compiles_every_time(
    cache: Path, builds: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    data, w, b = mlp(7)
    kiln.compile(data)
    monkeypatch.setenv("KILN_DEBUG", "1")
    check(kiln.compile(data), w, b)
    assert len(builds) == 2


def test_models_it_cannot_key_compile_as_before(cache: Path, builds: list[int]) -> None:
    from kiln.relax.frontend.onnx import from_onnx

    mod = from_onnx(onnx.load_from_string(mlp(6)[0]))
    kiln.compile(mod)
    kiln.compile(mod)
    assert len(builds) == 2
    assert not (cache / "models").exists()


def test_the_command_line_and_kiln_compile_share_the_cache(
    cache: Path, tmp_path: Path, builds: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    from kiln.cli import compile as cli_compile

    cli_builds: list[int] = []
    real = cli_compile.build
    monkeypatch.setattr(cli_compile, "build", lambda *a, **k: cli_builds.append(1) or real(*a, **k))
    data, w, b = mlp(5)
    path = tmp_path / "m.onnx"
    path.write_bytes(data)
    first = cli_compile.compile_model(str(path), quiet=True)
    second = cli_compile.compile_model(str(path), quiet=True)
    check(first, w, b)
    check(second, w, b)
    assert cli_builds == [1] and second.path is not None
    check(kiln.compile(str(path)), w, b)  # the same entry: kiln.compile does not build either
    assert builds == []


def test_a_model_file_is_hashed_once_while_it_is_unchanged(
    cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data, _, _ = mlp(7)
    path = tmp_path / "m.onnx"
    path.write_bytes(data)
    first = model_cache_key_of(path)
    reads: list[str] = []
    real_open = open
    monkeypatch.setattr(
        "builtins.open", lambda f, *a, **k: reads.append(str(f)) or real_open(f, *a, **k)
    )
    assert model_cache_key_of(path) == first and str(path) not in reads  # from the memo
    monkeypatch.undo()
    other, _, _ = mlp(8)
    path.write_bytes(other)  # a write changes the file's change time: hashed again
    assert model_cache_key_of(path) not in (first, None)


def test_the_external_data_mark_is_found_across_read_pieces(cache: Path, tmp_path: Path) -> None:
    for start in (0, (1 << 20) - 4, (1 << 20) + 3):
        path = tmp_path / f"m{start}.bin"
        path.write_bytes(b"\0" * start + model_cache.EXTERNAL_MARK + b"\0" * 9)
        assert model_cache._file_digest(path)[1], start
    plain = tmp_path / "plain.bin"
    plain.write_bytes(b"\0" * (3 << 20))
    assert not model_cache._file_digest(plain)[1]


def model_cache_key_of(path: Path) -> str | None:
    from kiln.ir import Target

    return model_cache.model_key(str(path), Target("c"), "compiled", "main", (), {})
