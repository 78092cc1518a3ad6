# seed 003 test_if_cond: if/else on a bool tensor, both branches binding w.
# ruff: noqa: E501, F821, F841 - script text: names are script variables
from kiln.script import ir as I
from kiln.script import relax as R


@I.ir_module
class Before:
    @R.function
    def ife(cond: R.Tensor((), "bool"), x: R.Tensor) -> R.Tensor:
        R.func_attr({"global_symbol": "ife"})
        if cond:
            w = R.call_packed("test.vm.add", x, x, sinfo_args=(R.Tensor))
        else:
            w = R.call_packed("test.vm.mul", x, x, sinfo_args=(R.Tensor))
        return w
