# Function attributes beside the global symbol, module attributes, a private function.
# ruff: noqa: E501, F821, F841 - script text: names are script variables
from kiln.script import ir as I
from kiln.script import relax as R


@I.ir_module
class Module:
    I.module_attrs({"system_lib_prefix": "kiln_", "version": 2})

    @R.function
    def main(x: R.Tensor((2,), "float32")) -> R.Tensor((2,), "float32"):
        R.func_attr({"num_input": 1, "opt": "yes"})
        y = R.abs(x)
        return y

    @R.function(private=True)
    def hidden(x: R.Tensor((2,), "float32")) -> R.Tensor((2,), "float32"):
        R.func_attr({"Primitive": 1})
        return x
