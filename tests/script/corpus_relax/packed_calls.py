# Packed functions: call_packed (impure), call_pure_packed, call_dps_packed, an impure function.
# ruff: noqa: E501, F821, F841 - script text: names are script variables
from kiln.script import relax as R


@R.function(pure=False)
def f(x: R.Tensor((3,), "float32")) -> R.Tensor((3,), "float32"):
    R.call_packed("my.print", x, sinfo_args=(R.Tuple()))
    y = R.call_pure_packed("my.identity", x, sinfo_args=(R.Tensor((3,), "float32")))
    z = R.call_dps_packed("my.double", (y,), out_sinfo=R.Tensor((3,), "float32"))
    return z
