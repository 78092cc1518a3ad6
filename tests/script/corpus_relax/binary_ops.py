# Broadcasting binary operators, comparisons, logic, where, and Python operators on values.
# ruff: noqa: E501, F821, F841 - script text: names are script variables
from kiln.script import relax as R


@R.function
def f(x: R.Tensor((2, 3), "float32"), y: R.Tensor((3,), "float32"), i: R.Tensor((3,), "int32")):
    with R.dataflow():
        a = R.add(x, y)
        b = R.subtract(a, y)
        c = R.multiply(b, y)
        d = R.divide(c, y)
        e = R.power(R.maximum(d, y), R.minimum(d, y))
        fl = R.floor_divide(i, i)
        lt = R.less(x, y)
        le = R.less_equal(x, y)
        gt = R.greater(x, y)
        ge = R.greater_equal(x, y)
        eq = R.equal(i, fl)
        ne = R.not_equal(i, fl)
        both = R.logical_and(lt, R.logical_or(le, gt))
        w = R.where(both, x, e)
        ops = x + y * x - y / x
        mm = x @ R.permute_dims(x)
        out = (w, ge, eq, ne, ops, mm)
        R.output(out)
    return out
