"""`VirtualMachine.profile`: a per-kernel table in both modes."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import tvm_ffi

from kiln.runtime import ProfileReport, VirtualMachine
from tests.runtime.test_vm_modes import kernel_chain
from tests.runtime.vm_programs import MODES, ProgramBuilder, R


@tvm_ffi.register_global_func("test.profile.square", override=True)
def _square(a: Any) -> Any:
    return tvm_ffi.from_dlpack(np.from_dlpack(a) ** 2)


def chain_then_python() -> ProgramBuilder:
    prog = kernel_chain()
    main = prog.functions[0]
    out = main.body.pop()  # the return; square its value in Python first
    main.ret(main.call("test.profile.square", R(out.reg)))
    return prog


@pytest.mark.parametrize("mode", MODES)
def test_profile_lists_kernels_and_packed_functions_not_builtins(mode: str) -> None:
    vm = VirtualMachine(chain_then_python().build(mode))
    x = np.arange(5, dtype="float32")
    report = vm.profile("main", x)
    assert isinstance(report, ProfileReport)
    assert report.exec_mode == mode
    assert sorted((r.kernel, r.calls) for r in report.rows) == [
        ("add_one", 1),
        ("mul_two", 1),
        ("test.profile.square", 1),
    ]
    for row in report.rows:
        assert row.total_us > 0 and row.mean_us == pytest.approx(row.total_us / row.calls)
        assert 0 < row.share < 1
    assert report.kernel_us <= report.total_us
    assert [r.total_us for r in report.rows] == sorted(
        (r.total_us for r in report.rows), reverse=True
    )
    text = str(report)
    assert text.splitlines()[0].startswith(f"profile of main ({mode} mode):")
    assert "kernel" in text and "calls" in text and "share" in text and "add_one" in text
    assert "(VM and call overhead)" in text


def test_profiling_stops_after_the_call() -> None:
    vm = VirtualMachine(chain_then_python().build("bytecode"))
    x = np.arange(5, dtype="float32")
    vm.profile("main", x)
    vm["main"](x)
    assert [r.calls for r in vm.profile("main", x).rows] == [1, 1, 1]


def test_profile_of_a_failing_call_raises_and_stops_profiling() -> None:
    vm = VirtualMachine(chain_then_python().build("compiled"))
    with pytest.raises(TypeError, match="takes 1 argument"):
        vm.profile("main")
    assert len(vm.profile("main", np.zeros(2, dtype="float32")).rows) == 3
