# Seed 003: plain Python ints as any-list indices (int32).
from kiln.script import ir as I
from kiln.script import tir as T


@I.ir_module
class Expected:
    @T.prim_func
    def __vmtir__main(ctx_ptr: T.handle, r: T.handle, c: T.handle, f: T.handle):
        # function attr dict
        T.func_attr({"global_symbol": "__vmtir__main"})
        # body
        T.anylist_setitem_call_packed(
            r,
            2,
            "test.vm.add",
            T.anylist_getitem(r, 0),
            T.anylist_getitem(c, 0),
        )
        T.anylist_setitem_call_packed(r, 1, "vm.builtin.copy", T.anylist_getitem(r, 2))
        T.anylist_resetitem(r, 2)
        T.anylist_setitem_call_cpacked(r, 3, "shape_func", T.anylist_getitem(f, 1))
