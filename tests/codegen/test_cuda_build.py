"""Building CUDA modules: host C with the CUBIN embedded, launches, and behaviour without a GPU.

The launch path is checked end to end against a fake ``libcuda.so.1`` (`fake_driver`), in a
child process whose library path finds it: arguments, grid, block and dynamic shared memory
must reach cuLaunchKernel as the kernel expects, and memory must round-trip.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import kiln
from kiln.codegen import CodegenError, codegen_c
from kiln.codegen.build import codegen, cuda_arch, split_device_functions
from kiln.errors import ToolchainError
from kiln.ir.target import Target
from kiln.runtime import cuda as cuda_device
from kiln.runtime import cuda_runtime
from kiln.tir.transform import MakePackedAPI
from tests.codegen import cuda_kernels as K
from tests.codegen.fake_driver import build_fake_libcuda

pytestmark = pytest.mark.needs_nvrtc
REPO = Path(__file__).resolve().parents[2]


def build(mod: kiln.ir.IRModule) -> kiln.runtime.Module:
    """Build hand-split IR (no splitting passes needed): only MakePackedAPI runs."""
    return kiln.build(mod, K.CUDA, pipeline=[MakePackedAPI()])


def test_host_source_embeds_the_cubin_and_launches() -> None:
    src = build(K.vector_add()).inspect_source()
    assert "static const unsigned char kiln_cuda_image[" in src
    assert 'kiln_cuda_names[1] = {"vadd_kernel"}' in src
    assert "kiln_cuda_launch(&kiln_cuda_kernels, 0, (int64_t)(8), 1, 1, (int64_t)(128)" in src
    assert "#include <cuda" not in src.split("// ---- CUDA device source")[0]
    assert '// extern "C" __global__ void __launch_bounds__(128) vadd_kernel(' in src


def test_entry_checks_the_driver_then_cuda_tensors() -> None:
    src = build(K.vector_add()).inspect_source()
    entry = src[src.index("__tvm_ffi_vadd(") :]
    check = entry.index("kiln_check_tensors(args, num_args, ")  # kiln.codegen.c_entry_table
    assert entry.index("kiln_cuda_init()") < check
    assert entry[check:].startswith('kiln_check_tensors(args, num_args, "vadd", kiln_vadd_args, 3')
    assert ", NULL, 2, kiln_t, kiln_v)" in entry, "tensor arguments must be on kDLCUDA (2)"
    assert "kiln_cuda_device_id = kiln_t[0]->device.device_id;" in entry


def test_launch_parameters_map_to_grid_block_and_shared_memory() -> None:
    src = build(K.tiled_matmul()).inspect_source()
    assert "(int64_t)(3), (int64_t)(4), 1, (int64_t)(16), (int64_t)(16), 1, 0" in src
    src = build(K.reverse_blocks()).inspect_source()
    assert "(int64_t)(8), 1, 1, (int64_t)(128), 1, 1, (int64_t)(512)" in src


def test_calling_without_a_gpu_raises_a_clear_error(gpu_reason: str | None) -> None:
    if gpu_reason is None:
        pytest.skip("an NVIDIA GPU and driver are present")
    f = build(K.vector_add())["vadd"]
    a = np.zeros(1000, "float32")
    with pytest.raises(RuntimeError, match="CUDA driver not available .* needs an NVIDIA GPU"):
        f(a, a, a)
    with pytest.raises(RuntimeError, match="CUDA driver not available"):
        f(a, a, a)  # the reason is remembered, the call still fails cleanly
    assert not cuda_runtime.is_available()


def test_split_keeps_host_functions_and_device_helpers_apart() -> None:
    host, device = split_device_functions(K.helper_call())
    assert sorted(gv.name_hint for gv in host.functions) == ["sq1"]
    assert sorted(gv.name_hint for gv in device.functions) == ["bump", "square", "square_plus_one"]


def test_cuda_arch_spellings() -> None:
    assert cuda_arch(Target("cuda")) == "sm_90"
    assert cuda_arch(Target("cuda -arch=sm_80")) == "sm_80"


def test_the_c_target_refuses_kernel_launches() -> None:
    host, _ = split_device_functions(K.vector_add())
    with pytest.raises(CodegenError, match="device target"):
        codegen_c(MakePackedAPI()(host))


def test_bad_kernel_code_is_a_toolchain_error() -> None:
    mod = K.vector_add()
    mod = MakePackedAPI()(mod)
    with pytest.raises(ToolchainError, match="nvrtc -arch=sm_1"):
        codegen(mod, Target("cuda -arch=sm_1"))


def test_end_to_end_build_through_the_default_pipeline() -> None:
    """kiln.build with Target("cuda", host="c") on unsplit IR, when the splitting passes exist."""
    transform = pytest.importorskip("kiln.tir.transform")
    if not hasattr(transform, "SplitHostDevice"):
        pytest.skip("the host/device splitting passes are not available yet")
    script = pytest.importorskip("kiln.script")
    T = script.tir  # noqa: N806

    @T.prim_func
    def add_one(A: T.Buffer((256,), "float32"), B: T.Buffer((256,), "float32")):  # noqa: N803
        for bx in T.thread_binding(2, "blockIdx.x"):
            for tx in T.thread_binding(128, "threadIdx.x"):
                B[bx * 128 + tx] = A[bx * 128 + tx] + T.float32(1)

    built = kiln.build(add_one, target=Target("cuda", host="c"))
    assert built.get_func_names() == ["add_one"]
    src = built.inspect_source()
    assert "kiln_cuda_launch(" in src and "__global__" in src


# -- the launch path against a fake driver --------------------------------------------------
CHILD = """
import numpy as np
import kiln
from kiln.runtime import cuda, empty, tensor, to_numpy
from kiln.tir.transform import MakePackedAPI
from tests.codegen import cuda_kernels as K

vadd = kiln.build(K.vector_add(1000), K.CUDA, pipeline=[MakePackedAPI()])["vadd"]
a, b = np.arange(1000, dtype="float32"), np.full(1000, 0.5, "float32")
A, B = tensor(a, device=cuda()), tensor(b, device=cuda())
C = empty((1000,), "float32", device=cuda())
vadd(A, B, C)
vadd(A, B, C)
np.testing.assert_array_equal(to_numpy(C), a + b)
try:
    vadd(a, b, a)
except ValueError as e:
    print("ERROR", e)
rev = kiln.build(K.reverse_blocks(), K.CUDA, pipeline=[MakePackedAPI()])["reverse"]
x = np.arange(1024, dtype="float32")
Y = empty((1024,), "float32", device=cuda())
rev(tensor(x, device=cuda()), Y)
np.testing.assert_array_equal(to_numpy(Y), x.reshape(8, 128)[:, ::-1].ravel())
print("OK")
"""


def run_child(tmp_path: Path, code: str, **env: str) -> subprocess.CompletedProcess[str]:
    fake = build_fake_libcuda(tmp_path / "fake")
    child_env = dict(os.environ, LD_LIBRARY_PATH=str(fake), PYTHONPATH=str(REPO), **env)
    cmd = [sys.executable, "-c", textwrap.dedent(code)]
    return subprocess.run(cmd, env=child_env, capture_output=True, text=True, timeout=300)


def test_launch_path_with_a_fake_driver(tmp_path: Path, gpu_reason: str | None) -> None:
    if gpu_reason is None:
        pytest.skip("a real GPU is present; the gpu tests cover the launch path")
    build(K.vector_add(1000))  # NOTE: NVRTC crashes beside the fake driver; the child hits the
    build(K.reverse_blocks())  # cache these builds fill
    log = tmp_path / "launches.log"
    proc = run_child(tmp_path, CHILD, KILN_FAKE_CUDA_LOG=str(log))
    assert proc.returncode == 0, proc.stderr
    assert "OK" in proc.stdout
    assert "vadd: argument A.device expected cuda, got device type 1" in proc.stdout
    lines = log.read_text().splitlines()
    assert lines.count("launch vadd_kernel grid=8,1,1 block=128,1,1 smem=0") == 2
    assert "launch reverse_kernel grid=8,1,1 block=128,1,1 smem=512" in lines


def test_driver_without_a_device(tmp_path: Path, gpu_reason: str | None) -> None:
    if gpu_reason is None:
        pytest.skip("a real GPU is present")
    code = """
    from kiln.runtime import cuda_runtime
    print(cuda_runtime.unavailable_reason())
    """
    proc = run_child(tmp_path, code, KILN_FAKE_CUDA_NO_DEVICE="1")
    assert proc.returncode == 0, proc.stderr
    assert "CUDA driver found but unusable: CUDA_ERROR_NO_DEVICE" in proc.stdout


def test_device_helper_exports() -> None:
    assert cuda_device(1).dlpack_device_type() == 2
