# An empty function and evaluate statements.
from kiln.script import ir as I
from kiln.script import tir as T


@I.ir_module
class Module:
    @T.prim_func
    def empty():
        T.evaluate(0)

    @T.prim_func
    def passes(n: T.int32):
        """A docstring is ignored."""
        pass

    @T.prim_func
    def evals(n: T.int32):
        T.evaluate(n + 1)
        T.evaluate(T.call_extern("int32", "tick"))
        T.evaluate(T.float32(1.5))
