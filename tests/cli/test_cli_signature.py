"""`kiln run/bench/profile model.so` read the exported library's signature: random inputs of the
right shape (``--dim`` for symbolic dims), inputs and outputs named."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("onnx")

from kiln.cli.main import main  # noqa: E402
from tests.cli.test_cli import model_file, reference  # noqa: E402,F401  (fixture)


@pytest.fixture(scope="module")
def library(model_file: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:  # noqa: F811
    lib = tmp_path_factory.mktemp("cli-so") / "mlp.so"
    assert main(["compile", str(model_file), "-o", str(lib), "-q"]) == 0
    return lib


def test_profile_of_a_library_makes_its_inputs(library: Path, capsys) -> None:
    assert main(["profile", str(library), "--dim", "batch=5"]) == 0
    out = capsys.readouterr().out
    assert "profile of main" in out and "kernel" in out


def test_bench_of_a_library_makes_its_inputs(library: Path, capsys) -> None:
    assert main(["bench", str(library), "--runs", "2", "--dim", "batch=3"]) == 0
    rows = [line.split() for line in capsys.readouterr().out.splitlines()]
    assert rows[0] == ["inputs:", "x:", "float32[3,8]"]
    assert rows[3][:2] == ["kiln", "1"] and float(rows[3][2]) > 0


def test_bench_of_a_library_against_onnxruntime_asks_for_the_onnx(library: Path, capsys) -> None:
    assert main(["bench", str(library), "--against", "onnxruntime"]) == 1
    assert "--against onnxruntime needs the .onnx model" in capsys.readouterr().err


def test_run_of_a_library_names_inputs_and_outputs(
    library: Path,
    model_file: Path,  # noqa: F811
    tmp_path: Path,
    capsys,
) -> None:
    assert main(["run", str(library), "-o", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert "takes 1 input(s), x: float32[batch, 8]; got 0" in err
    x = np.random.default_rng(2).standard_normal((3, 8)).astype("float32")
    np.save(tmp_path / "x.npy", x)
    assert main(["run", str(library), "--input", str(tmp_path / "x.npy"), "-o", str(tmp_path)]) == 0
    assert "y.npy: float32[3, 4]" in capsys.readouterr().out
    got = np.load(tmp_path / "y.npy")
    np.testing.assert_allclose(got, reference(model_file, x), rtol=1e-5, atol=1e-5)
