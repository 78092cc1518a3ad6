# Seed 004: two sibling kernels from env_thread + T.attr, over flat views of the parameters.
from kiln.script import ir as I
from kiln.script import tir as T


@I.ir_module
class Before:
    @T.prim_func
    def main(
        X: T.Buffer((128,), "float32"),
        Y: T.Buffer((128,), "float32"),
    ):
        X_flat = T.decl_buffer(128, data=X.data)
        Y_flat = T.decl_buffer(128, data=Y.data)

        # First kernel launch
        tx0 = T.env_thread("threadIdx.x")
        with T.attr(tx0, "thread_extent", 128):
            A_sh = T.alloc_buffer((128,), "float32", scope="shared.dyn")
            B_sh = T.alloc_buffer((128,), "float32", scope="shared.dyn")
            A_sh[tx0] = X_flat[tx0]
            B_sh[tx0] = A_sh[tx0]
            X_flat[tx0] = B_sh[tx0]

        # Second kernel launch
        tx1 = T.env_thread("threadIdx.x")
        with T.attr(tx1, "thread_extent", 128):
            C_sh = T.alloc_buffer((128,), "float32", scope="shared.dyn")
            D_sh = T.alloc_buffer((128,), "float32", scope="shared.dyn")
            C_sh[tx1] = Y_flat[tx1]
            D_sh[tx1] = C_sh[tx1]
            Y_flat[tx1] = D_sh[tx1]
