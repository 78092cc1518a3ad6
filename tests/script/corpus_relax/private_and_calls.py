# Relax functions calling each other (cls.f): a private helper with symbolic parameters.
# ruff: noqa: E501, F821, F841 - script text: names are script variables
from kiln.script import ir as I
from kiln.script import relax as R
from kiln.script import tir as T


@I.ir_module
class Module:
    @R.function(private=True)
    def helper(a: R.Tensor(("k",), "float32")) -> R.Tensor(("k",), "float32"):
        k = T.int64()
        b: R.Tensor((k,), "float32") = R.nn.relu(a)
        return b

    @R.function
    def main(x: R.Tensor((5,), "float32")) -> R.Tensor((5,), "float32"):
        cls = Module
        y: R.Tensor((5,), "float32") = cls.helper(x)
        z = Module.helper(y)
        return z
