"""CodeGenCUDA: golden substrings of the generated CUDA, and every kernel compiles with NVRTC."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from kiln import tir
from kiln.codegen import CodegenError
from kiln.codegen.build import split_device_functions
from kiln.codegen.cuda import codegen_cuda, threads_per_block
from kiln.errors import ToolchainError
from kiln.ir import GlobalVar, IRModule, Target
from kiln.runtime.cuda_compile import compile_cuda
from kiln.tir.transform import LowerIntrin
from tests.codegen import cuda_kernels as K

pytestmark = pytest.mark.needs_nvrtc

CORPUS: dict[str, Callable[[], IRModule]] = {
    "vector_add": K.vector_add,
    "block_sum": K.block_sum,
    "tiled_matmul": K.tiled_matmul,
    "reverse_blocks": K.reverse_blocks,
    "helper_call": K.helper_call,
    "half": lambda: K.exp_scale("float16"),
    "bfloat16": lambda: K.exp_scale("bfloat16"),
    "float8": lambda: K.vector_add(dtype="float8_e4m3fn"),
    "vector_add_f64": lambda: K.vector_add(dtype="float64"),
}


def device_source(mod: IRModule, fast_math: bool = False) -> str:
    """CUDA source of the device functions, after LowerIntrin (math calls) for the target."""
    target = Target("cuda", {"fast_math": fast_math}, host="c")
    _, device = split_device_functions(LowerIntrin(target)(mod))
    return codegen_cuda(device)


@pytest.mark.parametrize("name", sorted(CORPUS))
def test_every_kernel_compiles_with_nvrtc(name: str) -> None:
    source = device_source(CORPUS[name]())
    cubin = compile_cuda(source, "sm_90", name_hint=name)
    assert cubin[:4] == b"\x7fELF"


def test_kernel_signature_and_launch_bounds() -> None:
    src = device_source(K.vector_add())
    assert 'extern "C" __global__ void __launch_bounds__(128) vadd_kernel(' in src
    assert "float* __restrict__ A" in src
    assert "((int32_t)blockIdx.x)" in src and "((int32_t)threadIdx.x)" in src
    assert src.count("vadd_kernel(") == 2, "declared, then defined"


def test_launch_bounds_multiply_thread_extents() -> None:
    assert "__launch_bounds__(256)" in device_source(K.tiled_matmul())
    assert threads_per_block(tir.Evaluate(0)) == 1


def test_shared_memory_and_barrier() -> None:
    src = device_source(K.block_sum())
    assert "__shared__ __align__(16) float partial[256];" in src
    assert src.count("__syncthreads();") == 9


def test_dynamic_shared_memory() -> None:
    src = device_source(K.reverse_blocks())
    assert "extern __shared__ __align__(16) unsigned char kiln_dyn_shmem[];" in src
    assert "float* stage = (float*)kiln_dyn_shmem;" in src


def test_local_allocation_is_a_register_array() -> None:
    src = device_source(K.tiled_matmul())
    assert "float acc[1];" in src
    assert "#pragma unroll" in src


def test_device_helpers_are_declared_then_defined() -> None:
    src = device_source(K.helper_call())
    assert src.count("__device__ float square(float v)") == 2
    assert src.count("__device__ void bump(float* p, int32_t i)") == 2
    assert src.index("__device__ void bump(float* p, int32_t i);") < src.index("{")
    assert "bump(x, ((int32_t)threadIdx.x));" in src


def test_half_and_bfloat16_are_native_types() -> None:
    half = device_source(K.exp_scale("float16"))
    assert "#include <cuda_fp16.h>" in half and "half* __restrict__ x" in half
    assert "__float2half_rn((float)(expf(((float)" in half
    bf16 = device_source(K.exp_scale("bfloat16"))
    assert "#include <cuda_bf16.h>" in bf16 and "__nv_bfloat16* __restrict__ y" in bf16
    assert "cuda_fp16.h" not in device_source(K.vector_add())


def test_fast_math_uses_intrinsics() -> None:
    mod = K.exp_scale("float32")
    assert "__expf(" in device_source(mod, fast_math=True)
    assert "__expf(" not in device_source(mod) and "expf(" in device_source(mod)


def test_thread_binding_loops_become_thread_indices() -> None:
    a = K.ptr("A", "float32")
    ab = K.buf(a, (64,), "float32")
    tx = tir.Var("tx", "int32")
    loop = tir.For(
        tx,
        0,
        64,
        tir.ForKind.THREAD_BINDING,
        tir.BufferStore(ab, tir.const(1.0, "float32"), (tx,)),
        thread_binding=tir.IterVar(None, tx, tir.IterKind.THREAD_INDEX, "threadIdx.x"),
    )
    k = K.kernel("fill", (a,), loop, ("threadIdx.x",))
    src = codegen_cuda(IRModule({GlobalVar("fill"): k}))
    assert "__launch_bounds__(64)" in src and "A[((int32_t)threadIdx.x)] = 1.0f;" in src
    compile_cuda(src, "sm_90")


def test_written_in_tvmscript() -> None:
    script = pytest.importorskip("kiln.script")
    T = script.tir  # noqa: N806

    @T.prim_func
    def scale(A: T.handle("float32"), n: T.int32):  # noqa: N803
        T.func_attr(
            {
                "calling_conv": 2,
                "global_symbol": "scale",
                "tir.kernel_launch_params": ["blockIdx.x", "threadIdx.x"],
            }
        )
        bx = T.launch_thread("blockIdx.x", (n + 63) // 64)
        tx = T.launch_thread("threadIdx.x", 64)
        A_1 = T.decl_buffer((n,), data=A)  # noqa: N806
        if bx * 64 + tx < n:
            A_1[bx * 64 + tx] = A_1[bx * 64 + tx] * T.float32(2)

    src = codegen_cuda(IRModule({GlobalVar("scale"): scale}))
    assert 'extern "C" __global__ void __launch_bounds__(64) scale(float* A, int32_t n)' in src
    compile_cuda(src, "sm_90")


def test_global_allocation_in_a_kernel_is_refused() -> None:
    a = K.ptr("A", "float32")
    tmp = K.ptr("tmp", "float32")
    body = K.thread("threadIdx.x", 32, lambda tx: K._alloc(tmp, "float32", 32, tir.Evaluate(0)))
    k = K.kernel("bad", (a,), body, ("threadIdx.x",))
    with pytest.raises(CodegenError, match="pass global arrays in as arguments"):
        codegen_cuda(IRModule({GlobalVar("bad"): k}))


def test_nvrtc_errors_keep_the_log_and_the_source(tmp_path: object) -> None:
    with pytest.raises(ToolchainError) as info:
        compile_cuda('extern "C" __global__ void k() { undefined_thing(); }', "sm_90")
    err = info.value
    assert "undefined_thing" in err.stderr and err.src_path and err.src_path.endswith(".cu")
    assert "-arch=sm_90" in str(err)


def test_cubins_are_cached() -> None:
    src = device_source(K.vector_add(n=77))
    assert compile_cuda(src, "sm_90") == compile_cuda(src, "sm_90")


def test_vectors_are_kiln_vec_and_compile() -> None:
    a, c = K.ptr("A", "float32"), K.ptr("C", "float32")
    ab, cb = K.buf(a, (512,), "float32"), K.buf(c, (512,), "float32")

    def inner(tx: tir.Var) -> tir.Stmt:
        dense, strided = tir.Ramp(tx * 4, 1, 4), tir.Ramp(tx, 128, 4)
        v = tir.BufferLoad(ab, (dense,))
        one = tir.Broadcast(tir.const(1.0, "float32"), 4)
        rounded = tir.Cast("float32x4", tir.Cast("int32x4", tir.Select(v > one, v + one, v)))
        return tir.SeqStmt(
            (
                tir.BufferStore(cb, rounded + tir.BufferLoad(ab, (strided,)), (dense,)),
                tir.BufferStore(cb, tir.exp(v), (strided,)),
            )
        )

    k = K.kernel("vec", (a, c), K.thread("threadIdx.x", 128, inner), ("threadIdx.x",))
    src = device_source(IRModule({GlobalVar("vec"): k}))
    assert "*(kiln_vec<float, 4>*)(C + (((int32_t)threadIdx.x) * 4)) = " in src
    assert "kiln_splat<float, 4>(1.0f)" in src and "kiln_vcast<int32_t>(" in src
    compile_cuda(src, "sm_90")
