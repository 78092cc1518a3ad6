# Seed 003: a branch on a packed call's result cast to bool.
from kiln.script import ir as I
from kiln.script import tir as T


@I.ir_module
class Expected:
    @T.prim_func
    def __vmtir__ife(ctx_ptr: T.handle, r: T.handle, c: T.handle, f: T.handle):
        T.func_attr({"global_symbol": "__vmtir__ife"})
        if T.cast(
            T.tvm_call_packed("vm.builtin.read_if_cond", T.anylist_getitem(r, T.int32(0))),
            "bool",
        ):
            T.anylist_setitem_call_packed(
                r,
                T.int32(4),
                "test.vm.add",
                T.anylist_getitem(r, T.int32(1)),
                T.anylist_getitem(r, T.int32(1)),
            )
            T.anylist_setitem_call_packed(
                r, T.int32(3), "vm.builtin.copy", T.anylist_getitem(r, T.int32(4))
            )
        else:
            T.anylist_setitem_call_packed(
                r,
                T.int32(5),
                "test.vm.mul",
                T.anylist_getitem(r, T.int32(1)),
                T.anylist_getitem(r, T.int32(1)),
            )
            T.anylist_setitem_call_packed(
                r, T.int32(3), "vm.builtin.copy", T.anylist_getitem(r, T.int32(5))
            )
        T.anylist_setitem_call_packed(
            r, T.int32(2), "vm.builtin.copy", T.anylist_getitem(r, T.int32(3))
        )
