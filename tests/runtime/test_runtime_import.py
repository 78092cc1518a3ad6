"""Loading kiln's runtime does not import torch (tvm_ffi would: 2.8 s of every process), and
torch still works beside it, imported before or after."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

AFTER = """
import sys
import numpy as np, kiln
from tests.tir.builders import matmul_relu
built = kiln.build(matmul_relu())
a = np.full((16, 16), 0.5, dtype="float32"); c = np.zeros((16, 16), dtype="float32")
built["matmul_relu"](a, a, c)
assert np.allclose(c, 4.0)
print("torch after the runtime:", "torch" in sys.modules)
import torch
t = torch.full((16, 16), 0.5)
out = torch.zeros(16, 16)
built["matmul_relu"](t, t, out)  # torch tensors convert through __dlpack__
assert torch.allclose(out, torch.full((16, 16), 4.0))
assert torch.allclose(t @ t, torch.full((16, 16), 4.0))
print("OK")
"""

BEFORE = """
import sys
import torch
import kiln.runtime
assert sys.modules["torch"] is torch
print("OK")
"""


def _run(code: str) -> str:
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout


def test_the_runtime_does_not_import_torch_and_torch_works_after_it() -> None:
    pytest.importorskip("torch")
    out = _run(AFTER)
    assert "torch after the runtime: False" in out and out.strip().endswith("OK")


def test_torch_imported_first_is_left_alone() -> None:
    pytest.importorskip("torch")
    assert _run(BEFORE).strip() == "OK"
