# Function attributes: private with attrs, an exposed name differing from the def name.
from kiln.script import ir as I
from kiln.script import tir as T


@I.ir_module
class Module:
    @T.prim_func(private=True)
    def helper(A: T.Buffer((4,), "float32")):
        T.func_attr({"tir.noalias": True, "calling_conv": 2, "tags": ["a", "b"], "ratio": 0.5})
        A[0] = T.float32(0)

    @T.prim_func
    def renamed(A: T.Buffer((4,), "float32")):
        T.func_attr({"target_kind": "c", "global_symbol": "exported_name", "opt": None})
        Module.helper(A.data)

    @T.prim_func
    def main(A: T.Buffer((4,), "float32")):
        T.func_attr({"tir.is_entry_func": True, "nested": {"k": [1, 2, (3, 4)]}})
        Module.renamed(A.data)
