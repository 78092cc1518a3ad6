"""ThreadSync: barriers between shared-memory writes and reads, never in divergent branches."""

from __future__ import annotations

from kiln.ir import IRModule, assert_structural_equal
from kiln.script import ir as I
from kiln.script import tir as T
from kiln.tir.transform import ThreadSync


def _sync(mod: IRModule) -> IRModule:
    return ThreadSync("shared")(mod)


def test_barrier_between_write_and_read() -> None:
    @I.ir_module
    class Before:
        @T.prim_func
        def main(X: T.Buffer((128,), "float32")):
            tx = T.launch_thread("threadIdx.x", 128)
            sh = T.alloc_buffer((128,), "float32", scope="shared")
            sh[tx] = X[tx]
            X[tx] = sh[127 - tx]

    @I.ir_module
    class Expected:
        @T.prim_func
        def main(X: T.Buffer((128,), "float32")):
            tx = T.launch_thread("threadIdx.x", 128)
            sh = T.alloc_buffer((128,), "float32", scope="shared")
            sh[tx] = X[tx]
            T.tvm_storage_sync("shared")
            X[tx] = sh[127 - tx]

    assert_structural_equal(_sync(Before), Expected)


def test_loop_that_reads_and_writes_gets_a_barrier_at_the_top() -> None:
    @I.ir_module
    class Before:
        @T.prim_func
        def main(X: T.Buffer((512,), "float32"), Y: T.Buffer((128,), "float32")):
            for tx in T.thread_binding(128, thread="threadIdx.x"):
                Y[tx] = T.float32(0)
                for k in range(4):
                    sh = T.alloc_buffer((128,), "float32", scope="shared")
                    sh[tx] = X[k * 128 + tx]
                    for r in T.unroll(2):
                        Y[tx] = Y[tx] + sh[(128 - tx - r) % 128]

    @I.ir_module
    class Expected:
        @T.prim_func
        def main(X: T.Buffer((512,), "float32"), Y: T.Buffer((128,), "float32")):
            for tx in T.thread_binding(128, thread="threadIdx.x"):
                Y[tx] = T.float32(0)
                for k in range(4):
                    sh = T.alloc_buffer((128,), "float32", scope="shared")
                    T.tvm_storage_sync("shared")
                    sh[tx] = X[k * 128 + tx]
                    T.tvm_storage_sync("shared")
                    for r in T.unroll(2):
                        Y[tx] = Y[tx] + sh[(128 - tx - r) % 128]

    out = _sync(Before)
    assert_structural_equal(out, Expected)
    assert_structural_equal(_sync(out), Expected)  # running twice adds nothing


def test_no_barrier_inside_a_thread_dependent_branch() -> None:
    @I.ir_module
    class Before:
        @T.prim_func
        def main(X: T.Buffer((128,), "float32"), n: T.int32):
            tx = T.launch_thread("threadIdx.x", 128)
            sh = T.alloc_buffer((128,), "float32", scope="shared")
            if tx < 64:
                sh[tx] = X[tx]
                X[tx] = sh[tx + 1]
            if n > 0:
                sh[tx] = X[tx]
                X[tx] = sh[127 - tx]
            X[tx] = sh[0]

    @I.ir_module
    class Expected:
        @T.prim_func
        def main(X: T.Buffer((128,), "float32"), n: T.int32):
            tx = T.launch_thread("threadIdx.x", 128)
            sh = T.alloc_buffer((128,), "float32", scope="shared")
            if tx < 64:
                sh[tx] = X[tx]
                X[tx] = sh[tx + 1]
            T.tvm_storage_sync("shared")  # hoisted out of the divergent branch
            if n > 0:
                sh[tx] = X[tx]
                T.tvm_storage_sync("shared")  # a uniform branch: every thread gets here
                X[tx] = sh[127 - tx]
            T.tvm_storage_sync("shared")
            X[tx] = sh[0]

    assert_structural_equal(_sync(Before), Expected)


def test_host_code_and_local_buffers_are_unchanged() -> None:
    @I.ir_module
    class Before:
        @T.prim_func
        def host(X: T.Buffer((4,), "float32")):
            sh = T.alloc_buffer((4,), "float32", scope="shared")
            sh[0] = X[0]
            X[1] = sh[0]

        @T.prim_func
        def kernel(X: T.Buffer((128,), "float32")):
            tx = T.launch_thread("threadIdx.x", 128)
            loc = T.alloc_buffer((1,), "float32", scope="local")
            loc[0] = X[tx]
            X[tx] = loc[0]

    out = _sync(Before)
    assert out["host"] is Before["host"] and out["kernel"] is Before["kernel"]


def test_barrier_before_overwriting_what_others_read() -> None:
    @I.ir_module
    class Before:
        @T.prim_func
        def main(X: T.Buffer((128,), "float32")):
            tx = T.launch_thread("threadIdx.x", 128)
            sh = T.alloc_buffer((128,), "float32", scope="shared")
            sh[tx] = X[tx]
            T.tvm_storage_sync("shared")
            X[tx] = sh[127 - tx]
            sh[tx] = X[tx] * T.float32(2)

    @I.ir_module
    class Expected:
        @T.prim_func
        def main(X: T.Buffer((128,), "float32")):
            tx = T.launch_thread("threadIdx.x", 128)
            sh = T.alloc_buffer((128,), "float32", scope="shared")
            sh[tx] = X[tx]
            T.tvm_storage_sync("shared")
            X[tx] = sh[127 - tx]
            T.tvm_storage_sync("shared")
            sh[tx] = X[tx] * T.float32(2)

    assert_structural_equal(_sync(Before), Expected)
