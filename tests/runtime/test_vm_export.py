"""One-file deployment: export an executable with its kernels and constants, load it back."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from kiln.errors import KilnError
from kiln.runtime import VirtualMachine, build_module, load_module, vm_export, vm_format
from kiln.runtime.vm_format import Executable, FuncKind, Ret, VMFunction
from tests.runtime.test_vm_modes import kernel_chain
from tests.runtime.vm_programs import MODES, ProgramBuilder, R

COMPILER_MODULES = (
    *("kiln.ir", "kiln.tir", "kiln.relax", "kiln.te", "kiln.topi", "kiln.script"),
    *("kiln.arith", "kiln.codegen", "kiln.driver", "kiln.vm"),
)
"""What a process that only loads and runs an exported model must never import."""

CHILD = """
import json, sys
import numpy as np
from kiln.runtime import VirtualMachine, load_module
vm = VirtualMachine(load_module(sys.argv[1]))
out = vm["main"](np.arange(7, dtype="float32"))
loaded = sorted(m for m in sys.modules if m.split(".")[:2] in {m2} )
print(json.dumps({{"out": out.numpy().tolist(), "mode": vm.exec_mode, "compiler": loaded}}))
"""


@pytest.mark.parametrize("mode", MODES)
def test_exported_library_runs_in_a_fresh_process_without_the_compiler(
    mode: str, tmp_path: Path, child_env: dict[str, str]
) -> None:
    path = kernel_chain().build(mode).export_library(tmp_path / f"model_{mode}.so")
    script = CHILD.format(m2=[m.split(".") for m in COMPILER_MODULES])
    proc = subprocess.run(
        [sys.executable, "-c", script, str(path)], capture_output=True, text=True, env=child_env
    )
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["out"] == ((np.arange(7) + 1) * 2).tolist()
    assert result["mode"] == mode
    assert result["compiler"] == []


def test_constants_and_python_functions_survive_export(tmp_path: Path) -> None:
    import tvm_ffi

    @tvm_ffi.register_global_func("test.export.add", override=True)
    def _add(a: object, b: object) -> object:
        return tvm_ffi.from_dlpack(np.from_dlpack(a) + np.from_dlpack(b))

    prog = ProgramBuilder()
    f = prog.func("main", ("x",))
    w = prog.const(np.linspace(0, 1, 5, dtype="float64"))
    f.ret(f.call("vm.builtin.make_tuple", R(f.call("test.export.add", R(0), w)), w))
    x = np.ones(5)
    for mode in MODES:
        path = prog.build(mode).export_library(tmp_path / f"m_{mode}.so")
        vm = VirtualMachine(load_module(path))
        total, weights = vm["main"](x)
        np.testing.assert_array_equal(total.numpy(), x + np.linspace(0, 1, 5))
        np.testing.assert_array_equal(weights.numpy(), np.linspace(0, 1, 5))
        np.asarray(weights)[0] = 7.0  # a view of the library's data: writable, never a crash
        again = VirtualMachine(load_module(path))["main"](x)[1]
        assert again.numpy()[0] == 0.0  # the process's copy changed, never the file


def test_a_library_that_is_not_a_vm_executable_is_refused(
    tmp_path: Path, kernels_source: str
) -> None:
    lib = build_module(kernels_source)
    with pytest.raises(
        KilnError, match="is not a kiln VM executable: no executable follows its library"
    ):
        VirtualMachine(lib)


def _trailer(path: Path) -> tuple[bytes, int, int, int]:
    return vm_export.TRAILER.unpack(path.read_bytes()[-vm_export.TRAILER.size :])


def test_the_executable_follows_the_library_page_aligned(tmp_path: Path) -> None:
    path = kernel_chain().build("compiled").export_library(tmp_path / "m.so")
    magic, offset, size, version = _trailer(path)
    assert (magic, version) == (vm_export.TRAILER_MAGIC, vm_export.TRAILER_VERSION)
    assert offset % vm_export.PAGE == 0
    assert offset + size + vm_export.TRAILER.size == path.stat().st_size
    assert path.read_bytes()[offset : offset + 8] == vm_format.MAGIC


def test_a_truncated_or_newer_export_is_refused_by_name(tmp_path: Path) -> None:
    path = kernel_chain().build("bytecode").export_library(tmp_path / "m.so")
    magic, offset, size, version = _trailer(path)
    data = path.read_bytes()[: -vm_export.TRAILER.size]
    cut = tmp_path / "cut.so"
    cut.write_bytes(data[:-64] + vm_export.TRAILER.pack(magic, offset, size, version))
    with pytest.raises(KilnError, match="cut.so is truncated"):
        VirtualMachine(load_module(cut))
    newer = tmp_path / "newer.so"
    newer.write_bytes(data + vm_export.TRAILER.pack(magic, offset, size, version + 1))
    with pytest.raises(
        KilnError, match=f"newer.so was exported with kiln library format {version + 1}"
    ):
        VirtualMachine(load_module(newer))


def test_a_file_that_is_not_a_library_is_refused(tmp_path: Path) -> None:
    bogus = tmp_path / "model.so"
    bogus.write_bytes(b"KILNVMX\0 but not a shared library")
    with pytest.raises(KilnError, match="cannot load"):
        VirtualMachine(load_module(bogus))


def test_a_library_of_another_format_version_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    exe = Executable((VMFunction("main", FuncKind.BYTECODE, ("x",), 1, 0, 1),), (Ret(0),))
    monkeypatch.setattr(vm_format, "VM_FORMAT_VERSION", 99)
    path = exe.export_library(tmp_path / "old.so")
    monkeypatch.undo()
    with pytest.raises(KilnError, match="old.so was written for kiln VM format version 99"):
        VirtualMachine(load_module(path))
    assert VirtualMachine(load_module(exe.export_library(tmp_path / "new.so")))["main"](3) == 3


def test_a_45mb_weight_blob_exports_and_loads(tmp_path: Path) -> None:
    weights = np.random.default_rng(0).standard_normal(45 * 2**20 // 4, dtype="float32")
    exe = Executable(
        (
            VMFunction("main", FuncKind.BYTECODE, (), 2, 0, 2),
            VMFunction("vm.builtin.copy", FuncKind.PACKED),
        ),
        (vm_format.Call(0, 1, (vm_format.Arg.const(0),)), Ret(0)),
        (weights,),
    )
    path = exe.export_library(tmp_path / "big.so")  # benchmarks/bench_lowering.py times it
    assert path.stat().st_size >= weights.nbytes
    out = VirtualMachine(load_module(path))["main"]()
    assert out.shape == weights.shape
    np.testing.assert_array_equal(np.asarray(out)[:: 2**16], weights[:: 2**16])
    assert float(np.asarray(out, dtype="float64").sum()) == pytest.approx(
        float(weights.astype("float64").sum())
    )


def test_prebuilt_runtime_objects_leave_the_export_only_its_own_unit_and_link(
    counting_cc, tmp_path: Path
) -> None:
    """`prebuild_runtime` compiles what an export links besides the executable's own C
    (kiln's two runtime units) ahead of time: the export then compiles only its own unit and
    links (without it: two compiles more)."""
    from kiln.runtime.vm_export import export_library, prebuild_runtime

    exe = kernel_chain().build("compiled")
    futures = prebuild_runtime(None)
    assert futures and all(f.result(timeout=300) is not None for f in futures)
    before = counting_cc()
    export_library(exe, tmp_path / "model.so")
    assert counting_cc() - before == 2
