# Math intrinsics on float32 and float64.
from kiln.script import tir as T


@T.prim_func
def math_ops(
    X: T.Buffer((32,), "float32"), Y: T.Buffer((32,), "float64"), M: T.Buffer((4,), "bool")
):
    x = X[0]
    X[1] = T.exp(x) + T.exp2(x) + T.exp10(x) + T.log(x) + T.log2(x) + T.log10(x)
    X[2] = T.log1p(x) + T.expm1(x) + T.sqrt(x) + T.rsqrt(x) + T.cbrt(x)
    X[3] = T.sin(x) + T.cos(x) + T.tan(x) + T.asin(x) + T.acos(x) + T.atan(x)
    X[4] = T.sinh(x) + T.cosh(x) + T.tanh(x) + T.asinh(x) + T.acosh(x) + T.atanh(x)
    X[5] = T.erf(x) + T.sigmoid(x) + T.fabs(x) + T.floor(x) + T.ceil(x) + T.round(x)
    X[6] = T.nearbyint(x) + T.trunc(x) + T.pow(x, 2.0) + T.atan2(x, X[1]) + T.fmod(x, 3.0)
    X[7] = T.hypot(x, X[2]) + T.copysign(x, -1.0) + T.nextafter(x, X[3]) + T.ldexp(x, X[4])
    X[8] = x ** X[9]
    Y[0] = T.exp(Y[1]) * T.pow(Y[2], T.float64(0.5))
    M[0] = T.isnan(x)
    M[1] = T.isinf(Y[0]) or T.isfinite(x)
