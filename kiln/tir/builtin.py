"""The builtin operator table of TIR: every `Op` a TIR `Call` may name.

Each op is registered with its call effect; math ops also carry their C symbol for float32 and
float64 (``c_symbol``: a dict from dtype string to name). Codegen and passes look ops up with
``Op.get("tir.<name>")``. Importing this module registers the table.
"""

from __future__ import annotations

from kiln.ir.op import CallEffect, Op

_P, _R, _U, _O = CallEffect.PURE, CallEffect.READ_STATE, CallEffect.UPDATE_STATE, CallEffect.OPAQUE

# name: (effect, num_args) -- num_args -1 is variadic
_TABLE: dict[str, tuple[CallEffect, int]] = {
    "call_extern": (_O, -1),
    "call_pure_extern": (_P, -1),
    "call_packed": (_O, -1),
    "call_cpacked": (_O, -1),
    "call_packed_lowered": (_O, -1),
    "call_cpacked_lowered": (_O, -1),
    "tvm_call_packed": (_O, -1),
    "tvm_access_ptr": (_O, 5),
    "address_of": (_P, 1),
    "reinterpret": (_P, 1),
    "isnullptr": (_P, 1),
    "if_then_else": (_P, 3),
    "likely": (_P, 1),
    "ret": (CallEffect.CONTROL_JUMP, 1),
    "tvm_storage_sync": (_O, -1),
    "tvm_thread_allreduce": (_O, -1),
    "type_annotation": (_P, 0),
    "handle_add_byte_offset": (_P, 2),
    "tvm_struct_get": (_R, 3),
    "tvm_struct_set": (_U, 4),
    "tvm_stack_alloca": (_O, 2),
    "tvm_stack_make_shape": (_O, -1),
    "tvm_throw_last_error": (_O, 0),
    "lookup_param": (_R, 1),
    "bitwise_and": (_P, 2),
    "bitwise_or": (_P, 2),
    "bitwise_xor": (_P, 2),
    "bitwise_not": (_P, 1),
    "shift_left": (_P, 2),
    "shift_right": (_P, 2),
    "popcount": (_P, 1),
    "anylist_getitem": (_R, 2),
    "anylist_resetitem": (_U, 2),
    "anylist_setitem_call_packed": (_O, -1),
    "anylist_setitem_call_cpacked": (_O, -1),
    "vm_call_packed": (_O, -1),
    "launch_kernel": (_O, -1),
}

# unary / binary math: name -> (float32 C symbol, float64 C symbol)
MATH_OPS: dict[str, tuple[str, str]] = {
    "exp": ("expf", "exp"),
    "exp2": ("exp2f", "exp2"),
    "exp10": ("exp10f", "exp10"),
    "log": ("logf", "log"),
    "log2": ("log2f", "log2"),
    "log10": ("log10f", "log10"),
    "log1p": ("log1pf", "log1p"),
    "expm1": ("expm1f", "expm1"),
    "sqrt": ("sqrtf", "sqrt"),
    "rsqrt": ("", ""),
    "cbrt": ("cbrtf", "cbrt"),
    "sin": ("sinf", "sin"),
    "cos": ("cosf", "cos"),
    "tan": ("tanf", "tan"),
    "asin": ("asinf", "asin"),
    "acos": ("acosf", "acos"),
    "atan": ("atanf", "atan"),
    "sinh": ("sinhf", "sinh"),
    "cosh": ("coshf", "cosh"),
    "tanh": ("tanhf", "tanh"),
    "asinh": ("asinhf", "asinh"),
    "acosh": ("acoshf", "acosh"),
    "atanh": ("atanhf", "atanh"),
    "erf": ("erff", "erf"),
    "sigmoid": ("", ""),
    "fabs": ("fabsf", "fabs"),
    "floor": ("floorf", "floor"),
    "ceil": ("ceilf", "ceil"),
    "round": ("rintf", "rint"),
    "nearbyint": ("nearbyintf", "nearbyint"),
    "trunc": ("truncf", "trunc"),
    "isnan": ("isnan", "isnan"),
    "isinf": ("isinf", "isinf"),
    "isfinite": ("isfinite", "isfinite"),
    "pow": ("powf", "pow"),
    "atan2": ("atan2f", "atan2"),
    "fmod": ("fmodf", "fmod"),
    "hypot": ("hypotf", "hypot"),
    "copysign": ("copysignf", "copysign"),
    "nextafter": ("nextafterf", "nextafter"),
    "ldexp": ("ldexpf", "ldexp"),
}
BINARY_MATH = frozenset({"pow", "atan2", "fmod", "hypot", "copysign", "nextafter", "ldexp"})


def _register() -> None:
    for name, (effect, nargs) in _TABLE.items():
        Op.register(f"tir.{name}", effect=effect, num_args=nargs)
    for name, (f32, f64) in MATH_OPS.items():
        Op.register(
            f"tir.{name}",
            effect=_P,
            num_args=2 if name in BINARY_MATH else 1,
            c_symbol={"float32": f32, "float64": f64},
            math=True,
        )


_register()


def op(name: str) -> Op:
    """The TIR builtin ``name`` (without the ``tir.`` prefix)."""
    return Op.get(f"tir.{name}")
