"""SplitHostDevice: marked thread scopes of host functions become kernels."""

from __future__ import annotations

from kiln import tir
from kiln.ir import IRModule, assert_structural_equal
from kiln.ir.target import Target
from kiln.script import ir as I
from kiln.script import tir as T
from kiln.tir.transform import AnnotateDeviceRegions, SplitHostDevice

CUDA = Target("cuda")
HOST = Target("c")
CUDA_HOST = Target("cuda", host="c")
KERNEL_ATTRS = {"target": CUDA, "tir.noalias": True, "tir.is_global_func": True}


def _run(pass_: object, mod: IRModule) -> IRModule:
    out = pass_(mod)  # type: ignore[operator]
    tir.verify_well_formed(out)
    return out


def test_split_thread_binding_loops() -> None:
    @I.ir_module
    class Before:
        @T.prim_func
        def main(A: T.Buffer((128, 128), "float32"), n: T.int32):
            T.func_attr({"global_symbol": "main", "target": CUDA_HOST})
            m: T.int32 = n * 2
            with T.attr(CUDA, "target", 0):
                for bx in T.thread_binding(m, "blockIdx.x"):
                    for tx in T.thread_binding(128, "threadIdx.x"):
                        A[bx, tx] = A[bx, tx] + T.Cast("float32", n)

    @I.ir_module
    class Expected:
        @T.prim_func
        def main(A: T.Buffer((128, 128), "float32"), n: T.int32):
            T.func_attr({"global_symbol": "main", "target": CUDA_HOST})
            m: T.int32 = n * 2
            Expected.main_kernel(A.data, m, n)

        @T.prim_func(private=True)
        def main_kernel(A_data: T.handle("float32"), m: T.int32, n: T.int32):
            T.func_attr(KERNEL_ATTRS)
            A = T.Buffer((128, 128), "float32", data=A_data)
            for bx in T.thread_binding(m, "blockIdx.x"):
                for tx in T.thread_binding(128, "threadIdx.x"):
                    A[bx, tx] = A[bx, tx] + T.Cast("float32", n)

    assert_structural_equal(_run(SplitHostDevice(), Before), Expected)


def test_split_launch_thread_regions_into_sibling_kernels() -> None:
    @I.ir_module
    class Before:
        @T.prim_func
        def main(X: T.Buffer((128,), "float32"), Y: T.Buffer((128,), "float32")):
            T.func_attr({"target": CUDA_HOST})
            with T.attr(CUDA, "target", 0):
                tx = T.launch_thread("threadIdx.x", 128)
                X[tx] = Y[tx]
            with T.attr(CUDA, "target", 0):
                bx = T.launch_thread("blockIdx.x", 2)
                ty = T.launch_thread("threadIdx.x", 64)
                Y[bx * 64 + ty] = T.float32(0)

        @T.prim_func(private=True)
        def main_kernel(a: T.int32) -> T.int32:  # a name the split must not reuse
            return a

    @I.ir_module
    class Expected:
        @T.prim_func
        def main(X: T.Buffer((128,), "float32"), Y: T.Buffer((128,), "float32")):
            T.func_attr({"target": CUDA_HOST})
            Expected.main_kernel_1(X.data, Y.data)
            Expected.main_kernel_2(Y.data)

        @T.prim_func(private=True)
        def main_kernel(a: T.int32) -> T.int32:
            return a

        @T.prim_func(private=True)
        def main_kernel_1(X_data: T.handle("float32"), Y_data: T.handle("float32")):
            T.func_attr(KERNEL_ATTRS)
            X = T.Buffer((128,), "float32", data=X_data)
            Y = T.Buffer((128,), "float32", data=Y_data)
            tx = T.launch_thread("threadIdx.x", 128)
            X[tx] = Y[tx]

        @T.prim_func(private=True)
        def main_kernel_2(Y_data: T.handle("float32")):
            T.func_attr(KERNEL_ATTRS)
            Y = T.Buffer((128,), "float32", data=Y_data)
            bx = T.launch_thread("blockIdx.x", 2)
            ty = T.launch_thread("threadIdx.x", 64)
            Y[bx * 64 + ty] = T.float32(0)

    assert_structural_equal(_run(SplitHostDevice(), Before), Expected)


def test_kernel_params_handles_first_then_scalars_by_name() -> None:
    @I.ir_module
    class Before:
        @T.prim_func
        def f(Z: T.Buffer((8,), "float32"), b: T.int32, A: T.Buffer((8,), "float32"), a: T.int32):
            T.func_attr({"global_symbol": "entry", "target": CUDA_HOST})
            with T.attr(CUDA, "target", 0):
                for tx in T.thread_binding(8, "threadIdx.x"):
                    Z[tx] = A[tx] + T.Cast("float32", a + b)

    out = _run(SplitHostDevice(), Before)
    kernel = out["entry_kernel"]  # named after the global symbol
    assert [p.name for p in kernel.params] == ["A_data", "Z_data", "a", "b"]
    call = out["f"].body.value
    assert call.op.name_hint == "entry_kernel"
    assert [a.name for a in call.args] == ["A_data", "Z_data", "a", "b"]
    host_vars = set(out["f"].params) | {b.data for b in out["f"].buffer_map.values()}
    assert not host_vars & set(kernel.params)  # fresh variables: nothing shared


def test_annotate_then_split_the_seed_002_host_let() -> None:
    @I.ir_module
    class Before:
        @T.prim_func(private=True)
        def add(a: T.float32, b: T.float32) -> T.float32:
            T.func_attr({"target": CUDA})
            return a + b

        @T.prim_func
        def main(A: T.Buffer((16, 16), "float32"), C: T.Buffer((16, 16), "float32")):
            T.func_attr({"target": CUDA_HOST})
            temp: T.float32 = T.float32(3)
            for bx in T.thread_binding(16, "blockIdx.x"):
                for tx in T.thread_binding(16, "threadIdx.x"):
                    C[bx, tx] = Before.add(A[bx, tx], temp)

    out = _run(SplitHostDevice(), _run(AnnotateDeviceRegions(), Before))
    kernel = out["main_kernel"]
    assert [p.name for p in kernel.params] == ["A_data", "C_data", "temp"]
    assert kernel.params[2].dtype == "float32"
    assert kernel.get_attr("target") == CUDA
