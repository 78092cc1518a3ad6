# Handle parameters: opaque, typed, scoped; size variables; views on raw pointers.
# kiln-test: map_free_vars (T.Buffer views are undeclared buffers: free binders)
from kiln.script import tir as T


@T.prim_func
def handles(
    raw: T.handle,
    fp: T.handle("float32"),
    smem: T.handle("float16", "shared.dyn"),
    n: T.int32(is_size_var=True),
    scale: T.float64,
):
    F = T.Buffer((n,), "float32", data=fp)
    S = T.decl_buffer((n,), "float16", data=smem)
    for i in range(n):
        F[i] = T.Cast("float32", S[i]) * T.Cast("float32", scale)
    T.call_packed("consume", raw)
