"""LowerDeviceKernelLaunch's four call shapes, kernel attributes, and the device pipeline."""

from __future__ import annotations

import numpy as np
import pytest

import kiln
from kiln import tir
from kiln.driver import default_tir_pipeline, lower
from kiln.errors import KilnError
from kiln.ir import IRModule, assert_structural_equal, structural_equal
from kiln.ir.target import TARGET_KINDS, Target, TargetKind
from kiln.script import ir as I
from kiln.script import tir as T
from kiln.tir.transform import (
    AnnotateDeviceRegions,
    BindTarget,
    FlattenBuffer,
    LowerDeviceKernelLaunch,
    MakePackedAPI,
    MergeSharedMemoryAllocations,
    SplitHostDevice,
)

CUDA = Target("cuda")
HOST = Target("c")
CUDA_HOST = Target("cuda", host="c")
SPLIT_ATTRS = {"target": CUDA, "tir.noalias": True, "tir.is_global_func": True}


def _lower(mod: IRModule) -> IRModule:
    out = LowerDeviceKernelLaunch()(mod)
    tir.verify_well_formed(out)
    return out


def _kernel_attrs(symbol: str, *tags: str) -> dict[str, object]:
    return {
        **SPLIT_ATTRS,
        "calling_conv": 2,
        "global_symbol": symbol,
        "tir.kernel_launch_params": tags,
    }


@pytest.fixture
def cpu2(monkeypatch: pytest.MonkeyPatch) -> Target:
    """A second host kind on the CPU, so two host targets can differ."""
    kinds = dict(TARGET_KINDS)
    kinds["cpu2"] = TargetKind("cpu2", "cpu", {})
    monkeypatch.setattr("kiln.ir.target.TARGET_KINDS", kinds)
    return Target("cpu2")


def test_host_call_of_a_split_kernel_becomes_a_launch() -> None:
    @I.ir_module
    class Before:
        @T.prim_func
        def main(A: T.Buffer((64, 128), "float32"), n: T.int32):
            T.func_attr({"global_symbol": "main", "target": CUDA_HOST})
            Before.main_kernel(A.data, n * 2)

        @T.prim_func(private=True)
        def main_kernel(A_data: T.handle("float32"), m: T.int32):
            T.func_attr(SPLIT_ATTRS)
            A = T.Buffer((64, 128), "float32", data=A_data)
            for bx in T.thread_binding(m, "blockIdx.x"):
                for tx in T.thread_binding(128, "threadIdx.x"):
                    A[bx, tx] = T.float32(0)

    @I.ir_module
    class Expected:
        @T.prim_func
        def main(A: T.Buffer((64, 128), "float32"), n: T.int32):
            T.func_attr({"global_symbol": "main", "target": HOST})
            T.launch_kernel("main_kernel", A.data, n * 2, n * 2, 128)

        @T.prim_func
        def main_kernel(A_data: T.handle("float32"), m: T.int32):
            T.func_attr(_kernel_attrs("main_kernel", "blockIdx.x", "threadIdx.x"))
            A = T.Buffer((64, 128), "float32", data=A_data)
            for bx in T.thread_binding(m, "blockIdx.x"):
                for tx in T.thread_binding(128, "threadIdx.x"):
                    A[bx, tx] = T.float32(0)

    assert_structural_equal(_lower(Before), Expected)


def test_host_call_of_a_device_kernel_launches_even_when_stripped_targets_match() -> None:
    # seed 004: "cuda -host=c" without its host equals "cuda", yet this is a launch
    @I.ir_module
    class Before:
        @T.prim_func(private=True)
        def kern(A: T.Buffer((64,), "float32")):
            T.func_attr({"target": CUDA})
            tx = T.launch_thread("threadIdx.x", 64)
            A[tx] = A[tx] * T.float32(2)

        @T.prim_func
        def main(A: T.Buffer((64,), "float32")):
            T.func_attr({"target": CUDA_HOST})
            Before.kern(A.data)

    @I.ir_module
    class Expected:
        @T.prim_func
        def kern(A_data: T.handle("float32")):
            T.func_attr(
                {
                    "target": CUDA,
                    "calling_conv": 2,
                    "global_symbol": "kern",
                    "tir.kernel_launch_params": ("threadIdx.x",),
                    "tir.is_global_func": True,
                }
            )
            A = T.Buffer((64,), "float32", data=A_data)
            tx = T.launch_thread("threadIdx.x", 64)
            A[tx] = A[tx] * T.float32(2)

        @T.prim_func
        def main(A: T.Buffer((64,), "float32")):
            T.func_attr({"target": HOST})
            T.launch_kernel("kern", A.data, 64)

    assert_structural_equal(_lower(Before), Expected)


def test_host_to_host_same_target_is_a_direct_call() -> None:
    @I.ir_module
    class Before:
        @T.prim_func(private=True)
        def helper(a: T.int32) -> T.int32:
            T.func_attr({"target": HOST})
            return a + 1

        @T.prim_func
        def other(A: T.Buffer((4,), "int32")):
            T.func_attr({"target": CUDA_HOST})
            A[0] = 7

        @T.prim_func
        def main(A: T.Buffer((4,), "int32")):
            T.func_attr({"target": CUDA_HOST})
            A[1] = Before.helper(1)
            Before.other(A.data)  # an exposed callee that also carries a host target

    out = _lower(Before)
    assert out["main"].body.seq[0].value.op.name_hint == "helper"
    assert out["main"].body.seq[1].value.op.name_hint == "other"
    assert {gv.name_hint: f.get_attr("target") for gv, f in out.items()} == {
        "helper": HOST,
        "other": HOST,
        "main": HOST,
    }
    assert out["helper"].get_attr("calling_conv") is None


def test_host_to_host_other_target_same_device_is_call_extern(cpu2: Target) -> None:
    @I.ir_module
    class Before:
        @T.prim_func(private=True)
        def helper(a: T.int32) -> T.int32:
            T.func_attr({"target": cpu2})
            return a + 1

        @T.prim_func
        def main(A: T.Buffer((4,), "int32")):
            T.func_attr({"target": CUDA_HOST})
            A[0] = Before.helper(1)

    @I.ir_module
    class Expected:
        @T.prim_func
        def helper(a: T.int32) -> T.int32:
            T.func_attr({"target": cpu2, "global_symbol": "helper"})
            return a + 1

        @T.prim_func
        def main(A: T.Buffer((4,), "int32")):
            T.func_attr({"target": HOST})
            A[0] = T.call_extern("int32", "helper", 1)

    assert_structural_equal(_lower(Before), Expected)


def test_device_to_device_helper_is_a_direct_call() -> None:
    @I.ir_module
    class Before:
        @T.prim_func(private=True)
        def add(a: T.int32, b: T.int32) -> T.int32:
            T.func_attr({"target": CUDA})
            return a + b

        @T.prim_func(private=True)
        def main_kernel(A_data: T.handle("int32")):
            T.func_attr(SPLIT_ATTRS)
            A = T.Buffer((32,), "int32", data=A_data)
            for tx in T.thread_binding(32, "threadIdx.x"):
                A[tx] = Before.add(A[tx], 1)

    out = _lower(Before)
    assert out["add"].get_attr("calling_conv") == 0 and out["add"].get_attr("target") == CUDA
    assert out["add"].global_symbol is None
    call = out["main_kernel"].body.body.value
    assert call.op.name_hint == "add"  # unchanged: a __device__ function call
    assert out["main_kernel"].get_attr("tir.kernel_launch_params") == ("threadIdx.x",)


def test_dynamic_shared_memory_size_is_the_last_launch_value() -> None:
    @I.ir_module
    class Before:
        @T.prim_func
        def main(A: T.Buffer((256,), "float32"), n: T.int32):
            T.func_attr({"target": CUDA_HOST})
            Before.main_kernel(A.data, n)

        @T.prim_func(private=True)
        def main_kernel(A_data: T.handle("float32"), k: T.int32):
            T.func_attr(SPLIT_ATTRS)
            A = T.Buffer((256,), "float32", data=A_data)
            bx = T.launch_thread("blockIdx.x", 2)
            tx = T.launch_thread("threadIdx.x", k)
            buf = T.allocate([k], "float32", "shared.dyn")
            sh = T.Buffer((k,), "float32", data=buf, scope="shared.dyn")
            sh[tx] = A[bx * k + tx]
            A[bx * k + tx] = sh[k - 1 - tx]

    out = _lower(Before)
    params = ("blockIdx.x", "threadIdx.x", "tir.use_dyn_shared_memory")
    assert out["main_kernel"].get_attr("tir.kernel_launch_params") == params
    n = out["main"].params[1]
    call = out["main"].body.value
    assert call.op.name == "tir.launch_kernel" and call.dtype == "int32"
    name, data, arg, bx, tx, smem = call.args
    assert name.value == "main_kernel" and arg is n and bx.value == 2 and tx is n
    assert structural_equal(smem, n * tir.IntImm("int32", 4))


def test_host_call_of_a_plain_device_function_is_a_one_thread_launch() -> None:
    @I.ir_module
    class Before:
        @T.prim_func(private=True)
        def fill(A: T.Buffer((4,), "float32")):
            T.func_attr({"target": CUDA})
            A[0] = T.float32(1)

        @T.prim_func
        def main(A: T.Buffer((4,), "float32")):
            T.func_attr({"target": CUDA_HOST})
            Before.fill(A.data)

    out = _lower(Before)
    assert out["main"].body.value.op.name == "tir.launch_kernel"
    assert len(out["main"].body.value.args) == 2  # name, A: no thread extents
    assert out["fill"].get_attr("calling_conv") == 2
    assert out["fill"].get_attr("tir.kernel_launch_params") == ()


def test_device_code_cannot_launch_or_call_the_host() -> None:
    @I.ir_module
    class Launches:
        @T.prim_func(private=True)
        def inner(A_data: T.handle("float32")):
            T.func_attr({"target": CUDA})
            A = T.Buffer((4,), "float32", data=A_data)
            for tx in T.thread_binding(4, "threadIdx.x"):
                A[tx] = T.float32(0)

        @T.prim_func(private=True)
        def outer(A_data: T.handle("float32")):
            T.func_attr({"target": CUDA})
            Launches.inner(A_data)

    with pytest.raises(KilnError, match="device function 'outer' calls kernel 'inner'"):
        _lower(Launches)

    @I.ir_module
    class CallsHost:
        @T.prim_func(private=True)
        def helper(a: T.int32) -> T.int32:
            T.func_attr({"target": HOST})
            return a

        @T.prim_func(private=True)
        def dev(A_data: T.handle("int32")):
            T.func_attr({"target": CUDA})
            A = T.Buffer((4,), "int32", data=A_data)
            for tx in T.thread_binding(4, "threadIdx.x"):
                A[tx] = CallsHost.helper(tx)

    with pytest.raises(KilnError, match="device code can only call functions of its own device"):
        _lower(CallsHost)


def test_bad_kernels_are_reported() -> None:
    @I.ir_module
    class TwoDyn:
        @T.prim_func(private=True)
        def k(A_data: T.handle("float32")):
            T.func_attr({"target": CUDA})
            T.launch_thread("threadIdx.x", 4)
            a = T.allocate([4], "float32", "shared.dyn")
            b = T.allocate([4], "float32", "shared.dyn")
            T.evaluate(T.call_extern("int32", "use", a, b))

    with pytest.raises(KilnError, match="2 shared.dyn allocations.*MergeSharedMemoryAllocations"):
        _lower(TwoDyn)

    @I.ir_module
    class InnerExtent:
        @T.prim_func(private=True)
        def k(A_data: T.handle("float32")):
            T.func_attr({"target": CUDA})
            bx = T.launch_thread("blockIdx.x", 4)
            tx = T.launch_thread("threadIdx.x", bx + 1)
            T.evaluate(T.call_extern("int32", "use", tx))

    with pytest.raises(KilnError, match="threadIdx.x depends on bx"):
        _lower(InnerExtent)


# -- the device pipeline ----------------------------------------------------------------------


def test_default_pipelines() -> None:
    names = [p.name for p in default_tir_pipeline(CUDA_HOST)]
    assert names == [
        "bind-target",
        "flatten-buffer",
        "thread-sync",
        "merge-shared-memory-allocations",
        "annotate-device-regions",
        "split-host-device",
        "lower-device-kernel-launch",
        "make-packed-api",
        "legalize-storage",
        "loop-partition",
        "simplify",
        "vectorize-loop",
        "lower-intrin",
        "outline-parallel-loops",
    ]
    host = [p.name for p in default_tir_pipeline(HOST)]
    assert host == [
        "flatten-buffer",
        "make-packed-api",
        "legalize-storage",
        "loop-partition",
        "simplify",
        "vectorize-loop",
        "lower-intrin",
        "outline-parallel-loops",
    ]


def _seed_002() -> IRModule:
    @I.ir_module
    class Module:
        @T.prim_func(private=True)
        def add(a: T.int32, b: T.int32) -> T.int32:
            return a + b

        @T.prim_func
        def main(
            A: T.Buffer((128, 128), "int32"),
            B: T.Buffer((128, 128), "int32"),
            C: T.Buffer((128, 128), "int32"),
        ):
            T.func_attr({"global_symbol": "main"})
            length: T.int32 = Module.add(64, 64)
            for bx in T.thread_binding(length, "blockIdx.x"):
                for tx in T.thread_binding(length, "threadIdx.x"):
                    C[bx, tx] = Module.add(A[bx, tx], B[bx, tx])

    return Module


def test_lower_for_cuda_meets_the_kernel_contract() -> None:
    out = lower(_seed_002(), "cuda")  # host defaults to c
    assert sorted(gv.name_hint for gv in out) == ["add", "add_host", "main", "main_kernel"]
    kernel = out["main_kernel"]
    assert kernel.get_attr("target") == CUDA and kernel.get_attr("calling_conv") == 2
    assert kernel.global_symbol == "main_kernel" and kernel.get_attr("tir.is_global_func")
    assert kernel.get_attr("tir.kernel_launch_params") == ("blockIdx.x", "threadIdx.x")
    assert [p.name for p in kernel.params] == ["A_data", "B_data", "C_data", "length"]
    assert out["add"].get_attr("target") == CUDA and out["add"].get_attr("calling_conv") == 0
    assert out["add_host"].get_attr("target") == HOST
    main = out["main"]
    assert main.get_attr("target") == HOST and main.get_attr("kiln.packed_api") is not None
    length = main.body.var
    assert main.body.value.op.name_hint == "add_host"
    launch = main.body.body.value
    assert launch.op.name == "tir.launch_kernel"
    assert [getattr(a, "name", None) for a in launch.args[1:4]] == ["A_data", "B_data", "C_data"]
    assert launch.args[4:] == (length, length, length)


def test_a_kernel_callee_carrying_a_host_target_lowers() -> None:
    # TVM 0.27 fails to build this: the callee's target also has a host attached
    @I.ir_module
    class Module:
        @T.prim_func(private=True)
        def scale(A: T.Buffer((64,), "float32")):
            T.func_attr({"target": CUDA_HOST})
            for tx in T.thread_binding(64, "threadIdx.x"):
                A[tx] = A[tx] * T.float32(2)

        @T.prim_func
        def main(A: T.Buffer((64,), "float32")):
            Module.scale(A.data)

    out = lower(Module, CUDA_HOST)
    assert out["main"].body.value.op.name_hint == "scale"  # host to host: direct
    assert out["scale"].get_attr("target") == HOST
    assert out["scale"].body.value.op.name == "tir.launch_kernel"
    assert out["scale"].body.value.args[0].value == "scale_kernel"
    assert out["scale_kernel"].get_attr("calling_conv") == 2


def _host_pipeline(target: Target | str) -> list[object]:
    return [
        BindTarget(target),
        FlattenBuffer(),
        MergeSharedMemoryAllocations(),
        AnnotateDeviceRegions(),
        SplitHostDevice(),
        LowerDeviceKernelLaunch(),
        MakePackedAPI(),
    ]


def test_host_to_host_calls_build_and_run_on_c(cpu2: Target) -> None:
    @I.ir_module
    class Module:
        @T.prim_func(private=True)
        def inc(a: T.int32) -> T.int32:
            return a + 1

        @T.prim_func(private=True)
        def twice(a: T.int32) -> T.int32:
            T.func_attr({"target": cpu2})
            return a * 2

        @T.prim_func
        def main(A: T.Buffer((4,), "int32")):
            for i in range(4):
                A[i] = Module.twice(Module.inc(A[i]))

    lowered = lower(Module, "c", pipeline=_host_pipeline("c"))  # type: ignore[arg-type]
    call = lowered["main"].body.body.value
    assert call.op.name == "tir.call_extern" and call.args[1].op.name_hint == "inc"
    built = kiln.build(Module, "c", pipeline=_host_pipeline("c"))  # type: ignore[arg-type]
    a = np.arange(4, dtype="int32")
    built["main"](a)
    np.testing.assert_array_equal(a, (np.arange(4) + 1) * 2)


def test_sibling_kernels_each_launch_with_their_own_dynamic_shared_memory() -> None:
    @I.ir_module
    class Module:
        @T.prim_func
        def main(X: T.Buffer((128,), "float32"), Y: T.Buffer((128,), "float32")):
            tx0 = T.env_thread("threadIdx.x")
            with T.attr(tx0, "thread_extent", 128):
                A_sh = T.alloc_buffer((128,), "float32", scope="shared.dyn")
                B_sh = T.alloc_buffer((128,), "float32", scope="shared.dyn")
                A_sh[tx0] = X[tx0]
                B_sh[tx0] = A_sh[tx0]
                X[tx0] = B_sh[tx0]
            tx1 = T.env_thread("threadIdx.x")
            with T.attr(tx1, "thread_extent", 64):
                C_sh = T.alloc_buffer((64,), "float32", scope="shared.dyn")
                D_sh = T.alloc_buffer((64,), "float32", scope="shared.dyn")
                C_sh[tx1] = Y[tx1]
                D_sh[tx1] = C_sh[tx1]
                Y[tx1] = D_sh[tx1]

    out = lower(Module, CUDA_HOST)
    launches = [s.value for s in out["main"].body.seq]
    assert [c.args[0].value for c in launches] == ["main_kernel", "main_kernel_1"]
    assert [tuple(a.value for a in c.args[2:]) for c in launches] == [(128, 1024), (64, 512)]
    for name in ("main_kernel", "main_kernel_1"):
        kernel = out[name]
        assert kernel.get_attr("tir.kernel_launch_params") == (
            "threadIdx.x",
            "tir.use_dyn_shared_memory",
        )
        merged = kernel.body.body
        assert isinstance(merged, tir.Allocate) and merged.dtype == "uint8"
