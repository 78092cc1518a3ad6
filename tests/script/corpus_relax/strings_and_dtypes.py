# String and dtype values, an ExternFunc value, and R.Object annotations.
# ruff: noqa: E501, F821, F841 - script text: names are script variables
from kiln.script import relax as R


@R.function(pure=False)
def f(x: R.Object) -> R.Object:
    name = R.str("hello")
    dt = R.dtype("float16")
    fn = R.ExternFunc("my.callback")
    r = R.call_packed("my.run", x, name, dt, fn, sinfo_args=(R.Object))
    return r
