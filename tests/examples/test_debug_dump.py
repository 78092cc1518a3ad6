"""``KILN_DEBUG=2`` on the demo's CNN: a dump a person can read (under 100 KB: changed functions
only, constants in a metadata section) whose every printed module parses back."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from kiln.config import child_env
from kiln.script import from_source

onnx = pytest.importorskip("onnx")

SCRIPT = """
import onnx, sys, kiln
from kiln.examples.models.cnn_onnx import cnn_onnx_model
onnx.save(cnn_onnx_model(), sys.argv[1])
kiln.compile(sys.argv[1])
"""


MLP_SCRIPT = """
import kiln
from kiln.examples.models import MLP
kiln.compile(MLP)
"""


def _dump(tmp_path: Path, script: str = SCRIPT, **env: str) -> str:
    model = tmp_path / "cnn.onnx"
    run = subprocess.run(
        [sys.executable, "-c", script, str(model)],
        env=child_env(KILN_CACHE_DIR=str(tmp_path / "cache"), **env),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    return run.stderr


def _printed_modules(dump: str) -> dict[str, str]:
    """Pass name -> the script printed after it (remarks dropped; unchanged passes left out)."""
    found = {}
    for chunk in dump.split("# ---- after ")[1:]:
        name, body = chunk.split(" ----\n", 1)
        text = "\n".join(x for x in body.splitlines() if not x.startswith("kiln: "))
        if not text.startswith("# unchanged"):
            found[name] = text
    return found


def test_debug_2_dump_is_small_and_every_module_parses_back(tmp_path: Path) -> None:
    dump = _dump(tmp_path, KILN_DEBUG="2")
    assert len(dump.encode()) < 100_000
    printed = _printed_modules(dump)
    assert {"fuse-ops", "lower-te", "vm-shape-lower"} <= set(printed)
    assert 'metadata["relax.Constant"]' in printed["fuse-ops"]
    for name, text in printed.items():
        mod = from_source(text, metadata="placeholder", partial=True)
        assert len(mod.functions) >= 1, name
    assert "def default_fused_softmax(" in printed["lower-te"]


def test_print_after_and_funcs_select_what_is_printed(tmp_path: Path) -> None:
    dump = _dump(tmp_path, MLP_SCRIPT, KILN_DEBUG="2", KILN_PRINT_AFTER="lower-te,simplify",
                 KILN_PRINT_FUNCS="*softmax*")  # fmt: skip
    printed = _printed_modules(dump)
    assert set(printed) == {"lower-te", "simplify"}
    for text in printed.values():
        defs = [line for line in text.splitlines() if " def " in line]
        names = [line.split("def ")[1].split("(")[0] for line in defs]
        assert names and all("softmax" in n for n in names), names
