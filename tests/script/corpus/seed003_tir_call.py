# Seed 003: a kernel called by name through call_cpacked, with a null handle argument.
from kiln.script import ir as I
from kiln.script import tir as T


@I.ir_module
class Expected:
    @T.prim_func
    def shape_func(H: T.Buffer(T.int64(4), "int64")):
        T.func_attr({"global_symbol": "shape_func"})
        # generated compute function
        H[T.int64(0)] = H[T.int64(0)] + T.int64(1)

    @T.prim_func
    def __vmtir__foo(ctx_ptr: T.handle, r: T.handle, c: T.handle, f: T.handle):
        T.func_attr({"global_symbol": "__vmtir__foo"})
        T.call_cpacked(
            "shape_func", T.anylist_getitem(r, T.int32(0)), T.reinterpret("handle", T.uint64(0))
        )
        T.anylist_setitem_call_packed(
            r, T.int32(1), "vm.builtin.copy", T.anylist_getitem(r, T.int32(0))
        )
