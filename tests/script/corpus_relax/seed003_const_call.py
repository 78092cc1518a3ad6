# seed 003 test_const_call: a constant passed to a packed function.
# ruff: noqa: E501, F821, F841 - script text: names are script variables
from kiln.script import ir as I
from kiln.script import relax as R


@I.ir_module
class Before:
    @R.function
    def main(x: R.Tensor):
        R.func_attr({"global_symbol": "main"})
        y = R.const([1, 2])
        z = R.call_packed("test.vm.add", x, y, sinfo_args=(R.Tensor))
        return z
