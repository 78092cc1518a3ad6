"""AnnotateDeviceRegions: each outermost thread scope of a host function is marked for splitting."""

from __future__ import annotations

from kiln import tir
from kiln.ir import IRModule, assert_structural_equal
from kiln.ir.target import Target
from kiln.script import ir as I
from kiln.script import tir as T
from kiln.tir.transform import AnnotateDeviceRegions

CUDA = Target("cuda")
HOST = Target("c")
CUDA_HOST = Target("cuda", host="c")


def _run(pass_: object, mod: IRModule) -> IRModule:
    out = pass_(mod)  # type: ignore[operator]
    tir.verify_well_formed(out)
    return out


def test_annotate_wraps_outermost_thread_scopes_of_host_functions() -> None:
    @I.ir_module
    class Before:
        @T.prim_func
        def main(A: T.Buffer((128,), "float32"), B: T.Buffer((4, 32), "float32")):
            T.func_attr({"target": CUDA_HOST})
            for tx in T.thread_binding(128, "threadIdx.x"):
                A[tx] = T.float32(0)
            bx = T.launch_thread("blockIdx.x", 4)
            ty = T.launch_thread("threadIdx.x", 32)
            B[bx, ty] = T.float32(1)

        @T.prim_func(private=True)
        def device_only(A: T.Buffer((128,), "float32")):
            T.func_attr({"target": CUDA})
            for tx in T.thread_binding(128, "threadIdx.x"):
                A[tx] = T.float32(0)

    @I.ir_module
    class Expected:
        @T.prim_func
        def main(A: T.Buffer((128,), "float32"), B: T.Buffer((4, 32), "float32")):
            T.func_attr({"target": CUDA_HOST})
            with T.attr(CUDA, "target", 0):
                for tx in T.thread_binding(128, "threadIdx.x"):
                    A[tx] = T.float32(0)
            with T.attr(CUDA, "target", 0):
                bx = T.launch_thread("blockIdx.x", 4)
                ty = T.launch_thread("threadIdx.x", 32)
                B[bx, ty] = T.float32(1)

        @T.prim_func(private=True)
        def device_only(A: T.Buffer((128,), "float32")):
            T.func_attr({"target": CUDA})
            for tx in T.thread_binding(128, "threadIdx.x"):
                A[tx] = T.float32(0)

    once = _run(AnnotateDeviceRegions(), Before)
    assert_structural_equal(once, Expected)
    assert_structural_equal(_run(AnnotateDeviceRegions(), once), Expected)  # idempotent


def test_annotate_leaves_host_kind_functions_alone() -> None:
    @I.ir_module
    class Before:
        @T.prim_func
        def main(A: T.Buffer((128,), "float32")):
            T.func_attr({"target": HOST})
            for tx in T.thread_binding(128, "threadIdx.x"):
                A[tx] = T.float32(0)

    out = AnnotateDeviceRegions()(Before)
    assert out["main"] is Before["main"]
