# Seed 003: a VM function lowered to TIR over any-lists.
from kiln.script import ir as I
from kiln.script import tir as T


@I.ir_module
class Expected:
    @T.prim_func
    def __vmtir__foo(ctx_ptr: T.handle, r: T.handle, c: T.handle, f: T.handle):
        T.func_attr({"global_symbol": "__vmtir__foo"})
        T.anylist_setitem_call_packed(
            r,
            T.int32(2),
            "test.vm.add",
            T.anylist_getitem(r, T.int32(0)),
            T.anylist_getitem(r, T.int32(0)),
        )
        T.anylist_setitem_call_packed(
            r, T.int32(1), "vm.builtin.copy", T.anylist_getitem(r, T.int32(2))
        )
