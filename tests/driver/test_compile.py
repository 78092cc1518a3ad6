"""kiln.compile / kiln.load: a model object called with arrays; export to one library, load it
back (here and in a fresh process that never imports the compiler); profile; the graph-level
pipeline is one visible list."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import kiln
from kiln.driver import default_relax_pipeline, default_tir_pipeline
from kiln.driver import pipeline as pipeline_module
from kiln.errors import KilnError
from kiln.ir import Target
from kiln.runtime import ProfileReport
from kiln.vm import EXEC_MODES
from tests.relax.transform.test_legalize_ops import MLP, _reference

ROOT = Path(__file__).resolve().parents[2]
RNG = np.random.default_rng(3)
ARGS = [RNG.standard_normal(s).astype("float32") for s in [(6, 16), (32, 16), (32,), (32, 4)]]

COMPILER = ("ir", "tir", "relax", "te", "topi", "script", "arith", "codegen", "driver", "vm")
CHILD = """
import json, sys
import numpy as np
from kiln.runtime import VirtualMachine, load_module
args = [np.load(p) for p in sys.argv[2:]]
vm = VirtualMachine(load_module(sys.argv[1]))
out = vm["main"](*args).numpy()
heavy = sorted(m for m in sys.modules if m.split(".")[:2] in [["kiln", c] for c in {compiler}])
print(json.dumps({{"out": out.tolist(), "mode": vm.exec_mode, "compiler": heavy}}))
"""


@pytest.mark.parametrize("mode", EXEC_MODES)
def test_compile_call_profile_export_load(mode: str, tmp_path: Path) -> None:
    model = kiln.compile(MLP, exec_mode=mode)
    want = _reference(*ARGS)
    np.testing.assert_allclose(model(*ARGS).numpy(), want, rtol=1e-4, atol=1e-6)
    assert model.exec_mode == mode and model.executable.exec_mode == mode
    report = model.profile(*ARGS)
    assert isinstance(report, ProfileReport) and "matmul" in str(report)
    path = model.export(tmp_path / f"mlp_{mode}.so")
    loaded = kiln.load(path)
    np.testing.assert_allclose(loaded(*ARGS).numpy(), want, rtol=1e-4, atol=1e-6)
    assert loaded.exec_mode == mode


def test_exported_model_runs_in_a_fresh_process_without_the_compiler(tmp_path: Path) -> None:
    path = kiln.compile(MLP).export(tmp_path / "mlp.so")
    files = []
    for i, a in enumerate(ARGS):
        files.append(str(tmp_path / f"a{i}.npy"))
        np.save(files[-1], a)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run(
        [sys.executable, "-c", CHILD.format(compiler=list(COMPILER)), str(path), *files],
        capture_output=True,
        text=True,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    np.testing.assert_allclose(result["out"], _reference(*ARGS), rtol=1e-4, atol=1e-6)
    assert result["mode"] == "compiled"
    assert result["compiler"] == []


def test_compile_refuses_what_it_cannot_compile() -> None:
    # anything that is not a model names what kiln.compile takes and what it got
    for obj, kind in ((np.zeros(3), "ndarray"), (3, "int"), ([MLP], "list")):
        with pytest.raises(KilnError, match=rf"takes an IRModule, an ONNX .*; got {kind}$"):
            kiln.compile(obj)
    with pytest.raises(KilnError, match=r"of an IRModule takes no option\(s\) \['shape_dict'\]"):
        kiln.compile(MLP, shape_dict={"x": (1, 2)})
    with pytest.raises(KilnError, match="exec_mode must be one of bytecode, compiled"):
        kiln.compile(MLP, exec_mode="jit")
    with pytest.raises(KilnError, match="no function 'forward'"):
        kiln.compile(MLP, entry="forward")


WEIGHTS = [
    "fold-constant",
    "simplify-inference",
    "simplify-identities",
    "alter-op-layout",
    "fold-constant",
]
"""Weights folded, inference-only operators and identities simplified, layouts chosen for the
target, the new weight layouts folded."""

VM_LOWERING = [
    "lambda-lift",
    "to-non-dataflow",
    "call-shape-functions",
    "call-tir-rewrite",
    "static-plan-block-memory",
    "vm-builtin-lower",
    "vm-shape-lower",
    "attach-global-symbol",
]


def _named(passes: list, name: str) -> list:
    """The passes called ``name``, in order."""
    return [p for p in passes if p.name == name]


def test_the_relax_pipeline_is_one_visible_list() -> None:
    passes = default_relax_pipeline(Target("c"))
    names = [p.name for p in passes]
    assert names == [
        "relax-normalize",
        *WEIGHTS,
        "hoist-dims-only",
        "fuse-attention",
        "fuse-ops",
        "lower-te",
        "legalize-ops",
        *VM_LOWERING,
    ]
    (lower_te,) = _named(passes, "lower-te")
    assert (lower_te.module_name, str(lower_te.target)) == ("default", "c")
    (alter,), (attention,) = _named(passes, "alter-op-layout"), _named(passes, "fuse-attention")
    assert str(alter.target) == str(attention.target) == "c"
    assert all(p.build is not None for p in _named(passes, "fold-constant"))
    with_dnnl = default_relax_pipeline(Target("c"), external_codegens=["dnnl"])
    dnnl_names = [p.name for p in with_dnnl]
    assert dnnl_names == [*names[:4], "partition-for-compiler", *names[4:]]
    (partition,) = _named(with_dnnl, "partition-for-compiler")
    assert partition.compiler == "dnnl"


def _docstring_steps(section: str) -> list[str]:
    """The class named first by each numbered step of a pipeline docstring section."""
    return re.findall(r"^\d+\. `(\w+)", section, flags=re.M)


def test_the_pipeline_docstring_lists_the_pipelines_in_order() -> None:
    doc = pipeline_module.__doc__
    relax_doc, tir_doc = doc.split("TIR, for a target with a device")
    relax = default_relax_pipeline(Target("c"), external_codegens=["dnnl"])
    assert _docstring_steps(relax_doc) == [type(p).__name__ for p in relax]
    tir_passes = default_tir_pipeline(Target("cuda", host="c"))
    assert _docstring_steps(tir_doc) == [type(p).__name__ for p in tir_passes]


def test_vm_form_prints_as_script_that_parses_back() -> None:
    from kiln.driver.relax_build import lower_to_vm
    from kiln.examples.models import MLP
    from kiln.ir.structural import assert_structural_equal
    from kiln.script import from_source
    from tests.vm.test_vm_build import Branches, Closures, DataDependent
    from tests.vm.test_vm_models import ConvBlock, Dynamic

    for mod in (Branches, Closures, DataDependent, MLP, ConvBlock, Dynamic):
        lowered = lower_to_vm(mod)
        assert_structural_equal(from_source(lowered.script()), lowered)
