# seed 003 test_add: a packed call with sinfo_args and an explicit global symbol.
# ruff: noqa: E501, F821, F841 - script text: names are script variables
from kiln.script import ir as I
from kiln.script import relax as R


@I.ir_module
class Before:
    @R.function
    def foo(x: R.Tensor):
        R.func_attr({"global_symbol": "foo"})
        z = R.call_packed("test.vm.add", x, x, sinfo_args=(R.Tensor))
        return z
