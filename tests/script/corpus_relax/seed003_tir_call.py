# seed 003 test_tir_call: a PrimFunc called directly by name, its arguments passed as they are.
# ruff: noqa: E501, F821, F841 - script text: names are script variables
from kiln.script import ir as I
from kiln.script import relax as R
from kiln.script import tir as T


@I.ir_module
class Before:
    @T.prim_func
    def shape_func(H: T.Buffer(T.int64(4), "int64")):
        T.func_attr({"global_symbol": "shape_func"})
        # generated compute function
        H[T.int64(0)] = H[T.int64(0)] + T.int64(1)

    @R.function
    def foo(x: R.Tensor):
        R.func_attr({"global_symbol": "foo"})
        _ = shape_func(x)
        return x
