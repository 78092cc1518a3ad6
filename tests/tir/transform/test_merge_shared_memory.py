"""MergeSharedMemoryAllocations: one buffer per kernel region, liveness reuse without races."""

from __future__ import annotations

from kiln import tir
from kiln.ir import IRModule, assert_structural_equal, structural_equal
from kiln.script import ir as I
from kiln.script import tir as T
from kiln.tir.transform import MergeSharedMemoryAllocations


def _merge(mod: IRModule, **kwargs: bool) -> IRModule:
    out = MergeSharedMemoryAllocations(**kwargs)(mod)
    tir.verify_well_formed(out)
    return out


def _merged_sizes(mod: IRModule) -> list[int]:
    """Extents of the merged allocations, in program order."""
    sizes: list[int] = []

    def visit(n: object) -> None:
        if isinstance(n, tir.Allocate) and n.buffer_var.name.startswith("buf_"):
            sizes.append(n.extents[0].value)

    tir.post_order_visit(mod["main"].body, visit)
    return sizes[::-1]


def test_sibling_kernels_each_get_their_own_merged_buffer() -> None:
    @I.ir_module
    class Before:
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
            with T.attr(tx1, "thread_extent", 128):
                C_sh = T.alloc_buffer((128,), "float32", scope="shared.dyn")
                D_sh = T.alloc_buffer((128,), "float32", scope="shared.dyn")
                C_sh[tx1] = Y[tx1]
                D_sh[tx1] = C_sh[tx1]
                Y[tx1] = D_sh[tx1]

    @I.ir_module
    class Expected:
        @T.prim_func
        def main(X: T.Buffer((128,), "float32"), Y: T.Buffer((128,), "float32")):
            tx0 = T.env_thread("threadIdx.x")
            with T.attr(tx0, "thread_extent", 128):
                buf0 = T.alloc_buffer((1024,), "uint8", scope="shared.dyn")
                A_sh = T.Buffer((128,), "float32", data=buf0.data, scope="shared.dyn")
                B_sh = T.Buffer((128,), "float32", data=buf0.data, scope="shared.dyn")
                A_sh[tx0] = X[tx0]
                B_sh[tx0 + 128] = A_sh[tx0]
                X[tx0] = B_sh[tx0 + 128]
            tx1 = T.env_thread("threadIdx.x")
            with T.attr(tx1, "thread_extent", 128):
                buf1 = T.alloc_buffer((1024,), "uint8", scope="shared.dyn")
                C_sh = T.Buffer((128,), "float32", data=buf1.data, scope="shared.dyn")
                D_sh = T.Buffer((128,), "float32", data=buf1.data, scope="shared.dyn")
                C_sh[tx1] = Y[tx1]
                D_sh[tx1 + 128] = C_sh[tx1]
                Y[tx1] = D_sh[tx1 + 128]

    assert_structural_equal(_merge(Before), Expected)


def _chain(with_barriers: bool) -> IRModule:
    """A -> B -> C through shared memory; A and C are never live together."""

    @I.ir_module
    class Module:
        @T.prim_func
        def main(X: T.Buffer((128,), "float32")):
            tx = T.launch_thread("threadIdx.x", 128)
            A_sh = T.alloc_buffer((128,), "float32", scope="shared.dyn")
            B_sh = T.alloc_buffer((128,), "float32", scope="shared.dyn")
            C_sh = T.alloc_buffer((128,), "float32", scope="shared.dyn")
            A_sh[tx] = X[tx]
            B_sh[tx] = A_sh[127 - tx]
            if with_barriers:
                T.tvm_storage_sync("shared")
            C_sh[tx] = B_sh[127 - tx]
            X[tx] = C_sh[tx]

    return Module


def test_liveness_reuse_shrinks_the_total() -> None:
    @I.ir_module
    class Expected:
        @T.prim_func
        def main(X: T.Buffer((128,), "float32")):
            tx = T.launch_thread("threadIdx.x", 128)
            buf = T.alloc_buffer((1024,), "uint8", scope="shared.dyn")
            A_sh = T.Buffer((128,), "float32", data=buf.data, scope="shared.dyn")
            B_sh = T.Buffer((128,), "float32", data=buf.data, scope="shared.dyn")
            C_sh = T.Buffer((128,), "float32", data=buf.data, scope="shared.dyn")
            A_sh[tx] = X[tx]
            B_sh[tx + 128] = A_sh[127 - tx]
            T.tvm_storage_sync("shared")
            C_sh[tx] = B_sh[255 - tx]  # C reuses A's bytes; B sits at byte 512
            X[tx] = C_sh[tx]

    assert_structural_equal(_merge(_chain(with_barriers=True)), Expected)


def test_no_reuse_without_a_barrier_between_last_use_and_reuse() -> None:
    # TVM 0.27 would put C over A here: a slow thread may still read A while C is written
    assert _merged_sizes(_merge(_chain(with_barriers=False))) == [1536]


def test_no_reuse_when_read_and_written_in_one_statement() -> None:
    @I.ir_module
    class Module:
        @T.prim_func
        def main(X: T.Buffer((128,), "float32")):
            tx = T.launch_thread("threadIdx.x", 128)
            A_sh = T.alloc_buffer((128,), "float32", scope="shared.dyn")
            B_sh = T.alloc_buffer((128,), "float32", scope="shared.dyn")
            A_sh[tx] = X[tx]
            T.tvm_storage_sync("shared")
            B_sh[tx] = A_sh[127 - tx]  # last read of A, first write of B: one statement
            T.tvm_storage_sync("shared")
            X[tx] = B_sh[tx]

    assert _merged_sizes(_merge(Module)) == [1024]


def test_a_conditional_barrier_does_not_count() -> None:
    @I.ir_module
    class Module:
        @T.prim_func
        def main(X: T.Buffer((128,), "float32"), flag: T.int32):
            tx = T.launch_thread("threadIdx.x", 128)
            A_sh = T.alloc_buffer((128,), "float32", scope="shared.dyn")
            B_sh = T.alloc_buffer((128,), "float32", scope="shared.dyn")
            A_sh[tx] = X[tx]
            X[tx] = A_sh[127 - tx]
            if flag > 0:
                T.tvm_storage_sync("shared")
            B_sh[tx] = X[tx]
            X[127 - tx] = B_sh[tx]

    assert _merged_sizes(_merge(Module)) == [1024]


def test_a_buffer_used_in_a_loop_is_live_for_the_whole_loop() -> None:
    @I.ir_module
    class Module:
        @T.prim_func
        def main(X: T.Buffer((128,), "float32")):
            T.launch_thread("blockIdx.x", 1)
            for tx in T.thread_binding(128, "threadIdx.x"):
                A_sh = T.alloc_buffer((128,), "float32", scope="shared.dyn")
                B_sh = T.alloc_buffer((128,), "float32", scope="shared.dyn")
                C_sh = T.alloc_buffer((128,), "float32", scope="shared.dyn")
                for _k in range(4):
                    A_sh[tx] = X[tx]
                    T.tvm_storage_sync("shared")
                    X[tx] = A_sh[127 - tx]
                    B_sh[tx] = X[tx]  # B: the next iteration's A write races it
                    T.tvm_storage_sync("shared")
                T.tvm_storage_sync("shared")
                C_sh[tx] = X[tx]  # after the loop and a barrier: may reuse A and B
                X[tx] = C_sh[127 - tx]

    out = _merge(Module)
    assert _merged_sizes(out) == [1024]
    # the merged buffer sits at the top of the outermost thread scope
    assert out["main"].body.body.buffer_var.name == "buf_dyn_shmem_data"


def test_regions_with_one_allocation_and_host_code_are_left_alone() -> None:
    @I.ir_module
    class Module:
        @T.prim_func
        def main(X: T.Buffer((128,), "float32")):
            tx = T.launch_thread("threadIdx.x", 128)
            A_sh = T.alloc_buffer((128,), "float32", scope="shared.dyn")
            S_sh = T.alloc_buffer((128,), "float32", scope="shared")
            T_sh = T.alloc_buffer((128,), "float32", scope="shared")
            A_sh[tx] = X[tx]
            S_sh[tx] = A_sh[tx]
            T_sh[tx] = S_sh[tx]
            X[tx] = T_sh[tx]

    assert _merge(Module)["main"] is Module["main"]


def test_static_shared_memory_is_merged_when_asked() -> None:
    @I.ir_module
    class Before:
        @T.prim_func
        def main(X: T.Buffer((128,), "float32")):
            tx = T.launch_thread("threadIdx.x", 128)
            S_sh = T.alloc_buffer((128,), "float32", scope="shared")
            T_sh = T.alloc_buffer((64,), "float16", scope="shared")
            S_sh[tx] = X[tx]
            T_sh[tx // 2] = T.Cast("float16", S_sh[tx])
            X[tx] = T.Cast("float32", T_sh[tx // 2])

    @I.ir_module
    class Expected:
        @T.prim_func
        def main(X: T.Buffer((128,), "float32")):
            tx = T.launch_thread("threadIdx.x", 128)
            buf = T.alloc_buffer((640,), "uint8", scope="shared")
            S_sh = T.Buffer((128,), "float32", data=buf.data, scope="shared")
            T_sh = T.Buffer((64,), "float16", data=buf.data, scope="shared")
            S_sh[tx] = X[tx]
            T_sh[tx // 2 + 256] = T.Cast("float16", S_sh[tx])
            X[tx] = T.Cast("float32", T_sh[tx // 2 + 256])

    assert_structural_equal(_merge(Before, merge_static_smem=True), Expected)


def test_volatile_marks_alignment_and_pointer_uses() -> None:
    @I.ir_module
    class Before:
        @T.prim_func
        def main(X: T.Buffer((4,), "float32")):
            tx = T.launch_thread("threadIdx.x", 4)
            a = T.allocate([3], "uint8", "shared.dyn", annotations={"tir.volatile": True})
            b = T.allocate([4], "float32", "shared.dyn")
            A = T.Buffer((3,), "uint8", data=a, scope="shared.dyn")
            B = T.Buffer((4,), "float32", data=b, scope="shared.dyn")
            B[tx] = T.Cast("float32", A[0])
            access = T.tvm_access_ptr(T.type_annotation("float32"), b, 1, 2, 1)
            T.evaluate(T.call_extern("int32", "use", access))
            T.evaluate(T.call_extern("int32", "use", a))

    @I.ir_module
    class Expected:
        @T.prim_func
        def main(X: T.Buffer((4,), "float32")):
            tx = T.launch_thread("threadIdx.x", 4)
            buf = T.allocate([20], "uint8", "shared.dyn", annotations={"tir.volatile": True})
            T.decl_buffer((20,), "uint8", data=buf)
            A = T.Buffer((3,), "uint8", data=buf)
            B = T.Buffer((4,), "float32", data=buf)
            B[tx + 1] = T.Cast("float32", A[0])  # b aligned to 4 bytes, after a's 3
            access = T.tvm_access_ptr(T.type_annotation("float32"), buf, 2, 2, 1)
            T.evaluate(T.call_extern("int32", "use", access))
            a_view = T.Buffer((1,), "uint8", data=buf)
            T.evaluate(T.call_extern("int32", "use", T.address_of(a_view[0])))

    assert_structural_equal(_merge(Before), Expected)


def test_symbolic_sizes_are_placed_after_constant_ones() -> None:
    @I.ir_module
    class Module:
        @T.prim_func
        def main(X: T.Buffer((128,), "float32"), n: T.int32):
            tx = T.launch_thread("threadIdx.x", 128)
            A_sh = T.alloc_buffer((n,), "float32", scope="shared.dyn")
            B_sh = T.alloc_buffer((16,), "float32", scope="shared.dyn")
            A_sh[tx] = X[tx]
            B_sh[tx % 16] = A_sh[tx]
            X[tx] = B_sh[tx % 16]

    out = _merge(Module)
    alloc = out["main"].body.body
    n = Module["main"].params[1]
    # B at 0 (64 bytes); A after it at 64 (a multiple of its 64-byte alignment): 64 + 4 * n
    assert structural_equal(alloc.extents[0], n * tir.IntImm("int32", 4) + tir.IntImm("int32", 64))
    a_store = alloc.body.body.seq[0]
    assert structural_equal(a_store.indices[0], a_store.indices[0].a + 16)
