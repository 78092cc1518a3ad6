"""kiln.build: the default pipeline, debug levels, input checks, concurrent builders."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

import kiln
from kiln import tir
from kiln.driver import default_tir_pipeline, lower
from kiln.errors import KilnError, VerifyError
from kiln.ir import IRModule, Pass, PassContext
from kiln.ir.target import Target
from tests.tir.builders import matmul_relu, symbolic_add

REPO = Path(__file__).resolve().parents[2]


def test_default_pipeline_is_one_visible_list() -> None:
    names = [p.name for p in default_tir_pipeline(Target("c"))]
    assert names == [
        "flatten-buffer",
        "make-packed-api",
        "legalize-storage",
        "loop-partition",
        "simplify",
        "vectorize-loop",
        "lower-intrin",
        "outline-parallel-loops",
    ]


def test_build_a_primfunc_without_symbol_exposes_main() -> None:
    f = symbolic_add().without_attr("global_symbol")
    built = kiln.build(f)
    assert built.get_func_names() == ["main"]
    a = np.arange(3, dtype="float32")
    b = np.zeros(3, dtype="float32")
    built["main"](a, b)
    np.testing.assert_array_equal(b, a + 1)
    assert "__tvm_ffi_main" in built.inspect_source()


def test_build_matmul_matches_numpy() -> None:
    built = kiln.build(matmul_relu(), target="c")
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((2, 16, 16), dtype="float32")
    c = np.zeros((16, 16), dtype="float32")
    built["matmul_relu"](a, b, c)
    np.testing.assert_allclose(c, np.maximum(a @ b, 0), rtol=1e-5, atol=1e-5)


def test_malformed_input_is_a_verify_error_not_a_compiler_error() -> None:
    f = symbolic_add()
    bad = replace(f, body=tir.Evaluate(tir.Var("ghost") + 1))
    with pytest.raises(VerifyError, match="ghost"):
        kiln.build(bad)


class _Break(Pass):
    name = "break-it"

    def run(self, mod: IRModule, ctx: PassContext) -> IRModule:
        gv = mod.get_global_vars()[0]
        return mod.update(gv, replace(mod[gv], body=tir.Evaluate(tir.Var("ghost"))))


def test_debug_levels(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("KILN_DEBUG", "1")
    with pytest.raises(VerifyError, match="after pass 'break-it'"):
        lower(symbolic_add(), pipeline=[*default_tir_pipeline(Target("c")), _Break()])
    monkeypatch.setenv("KILN_DEBUG", "2")
    lower(symbolic_add())
    err = capsys.readouterr().err
    assert "# ---- after flatten-buffer ----" in err and "# ---- after make-packed-api ----" in err
    assert "generated source" not in err
    monkeypatch.setenv("KILN_DEBUG", "3")
    kiln.build(symbolic_add())
    err = capsys.readouterr().err
    assert "# ---- generated source for target c ----" in err and "__tvm_ffi_add_one" in err


def test_unknown_target_lists_known_kinds() -> None:
    with pytest.raises(KilnError, match="unknown target kind 'llvm'; known kinds: \\['c'\\]"):
        kiln.build(symbolic_add(), target="llvm")


def test_build_rejects_non_ir() -> None:
    with pytest.raises(KilnError, match="expects an IRModule or a PrimFunc"):
        kiln.build("not ir")  # type: ignore[arg-type]


CHILD = """
import numpy as np, kiln
from tests.tir.builders import matmul_relu
built = kiln.build(matmul_relu())
a = np.full((16, 16), 0.5, dtype="float32")
c = np.zeros((16, 16), dtype="float32")
built["matmul_relu"](a, a, c)
assert np.allclose(c, 4.0), c
print("OK", built.path)
"""


def test_eight_processes_build_the_same_module(tmp_path: Path) -> None:
    env = dict(os.environ, KILN_CACHE_DIR=str(tmp_path / "cache"), PYTHONPATH=str(REPO))
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", CHILD],
            env=env,
            cwd=REPO,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(8)
    ]
    results = [p.communicate(timeout=120) for p in procs]
    for p, (out, err) in zip(procs, results):
        assert p.returncode == 0, err
        assert out.startswith("OK ")
    paths = {out.split()[1] for out, _ in results}
    assert len(paths) == 1
    assert len(list((tmp_path / "cache").glob("*.so"))) == 1


def test_demo_runs_checks_and_reports(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    from kiln.examples import demo, kernels

    assert demo.main(["--repeat", "1", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    for row in ("kiln bytecode", "kiln compiled", "numpy", "profile of main (compiled mode)"):
        assert row in out
    assert "default_fused_matmul_add_relu " in out  # one fused kernel per layer
    for ex in kernels.EXAMPLES:
        assert f"{ex.name} " in out
    # + the model in each mode, + the ONNX CNN at two batch sizes (checked against onnxruntime)
    onnx_rows = 2 if "kiln.compile('cnn.onnx')" in out else 0
    assert onnx_rows == 2 or "ONNX step skipped" in out
    assert out.count("  ok") == len(kernels.EXAMPLES) + 2 + onnx_rows
    assert out.count(".c\n") == len(kernels.EXAMPLES)
    assert f"exported library (kernels, VM code and all): {tmp_path / 'mlp.so'}" in out
    assert (tmp_path / "mlp.so").is_file()
