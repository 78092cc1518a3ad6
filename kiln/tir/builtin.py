"""The builtin operator table of TIR: every `Op` a TIR `Call` may name.

Each op is registered with its call effect; math ops also carry their `MathOp` record (attribute
``math``) and their C symbol for float32 and float64 (``c_symbol``: a dict from dtype string to
name). Codegen and passes look ops up with ``Op.get("tir.<name>")``. Importing this module
registers the table.
"""

from __future__ import annotations

from dataclasses import dataclass

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
    "vector_all": (_P, 1),
    # ``assert_in_range(v, lo, hi, what)`` is ``v``, which must lie in ``[lo, hi)``: LowerIntrin
    # places the run-time check before the statement (`kiln.tir.analysis.zero_division`)
    "assert_in_range": (_P, 4),
    # ``format("text {} more {}", a, b)``: an assert message with integer values filled in
    "format": (_P, -1),
    # a hint to fetch the cache line of an element: ``prefetch(buf[i])``; the element may lie past
    # the buffer's end (a prefetch never faults and is never dereferenced)
    "prefetch": (_R, 1),  # every lane of a bool vector is true (LowerIntrin's lane guards)
    "anylist_getitem": (_R, 2),
    # ``anylist_heap_load(anylist_getitem(l, i), slot)``: int64 ``slot`` of the shape heap there
    "anylist_heap_load": (_R, 2),
    "anylist_resetitem": (_U, 2),
    "anylist_setitem_call_packed": (_O, -1),
    "anylist_setitem_call_cpacked": (_O, -1),
    "vm_call_packed": (_O, -1),
    "launch_kernel": (_O, -1),
}


@dataclass(frozen=True)
class MathOp:
    """A math builtin: the C function computing it for float32 and for float64 (empty when
    `LowerIntrin` writes it with other operations, as ``rsqrt`` and ``sigmoid``), how many
    arguments it takes, the CUDA hardware intrinsic used for float32 under fast math
    (``cuda_fast``), and CUDA's own float32 function where libm has none (``cuda_f32``)."""

    f32: str
    f64: str
    nargs: int = 1
    cuda_fast: str = ""
    cuda_f32: str = ""

    def symbol(self, bits: int) -> str:
        """The C function for float arguments of ``bits`` bits (float64: ``f64``, else ``f32``)."""
        return self.f64 if bits == 64 else self.f32


MATH_OPS: dict[str, MathOp] = {
    "exp": MathOp("expf", "exp", cuda_fast="__expf"),
    "exp2": MathOp("exp2f", "exp2"),
    "exp10": MathOp("exp10f", "exp10", cuda_fast="__exp10f"),
    "log": MathOp("logf", "log", cuda_fast="__logf"),
    "log2": MathOp("log2f", "log2", cuda_fast="__log2f"),
    "log10": MathOp("log10f", "log10", cuda_fast="__log10f"),
    "log1p": MathOp("log1pf", "log1p"),
    "expm1": MathOp("expm1f", "expm1"),
    "sqrt": MathOp("sqrtf", "sqrt"),
    "rsqrt": MathOp("", "", cuda_f32="rsqrtf"),
    "cbrt": MathOp("cbrtf", "cbrt"),
    "sin": MathOp("sinf", "sin", cuda_fast="__sinf"),
    "cos": MathOp("cosf", "cos", cuda_fast="__cosf"),
    "tan": MathOp("tanf", "tan", cuda_fast="__tanf"),
    "asin": MathOp("asinf", "asin"),
    "acos": MathOp("acosf", "acos"),
    "atan": MathOp("atanf", "atan"),
    "sinh": MathOp("sinhf", "sinh"),
    "cosh": MathOp("coshf", "cosh"),
    "tanh": MathOp("tanhf", "tanh"),
    "asinh": MathOp("asinhf", "asinh"),
    "acosh": MathOp("acoshf", "acosh"),
    "atanh": MathOp("atanhf", "atanh"),
    "erf": MathOp("erff", "erf"),
    "sigmoid": MathOp("", ""),
    "fabs": MathOp("fabsf", "fabs"),
    "floor": MathOp("floorf", "floor"),
    "ceil": MathOp("ceilf", "ceil"),
    "round": MathOp("rintf", "rint"),
    "nearbyint": MathOp("nearbyintf", "nearbyint"),
    "trunc": MathOp("truncf", "trunc"),
    "isnan": MathOp("isnan", "isnan"),
    "isinf": MathOp("isinf", "isinf"),
    "isfinite": MathOp("isfinite", "isfinite"),
    "pow": MathOp("powf", "pow", 2, cuda_fast="__powf"),
    "atan2": MathOp("atan2f", "atan2", 2),
    "fmod": MathOp("fmodf", "fmod", 2),
    "hypot": MathOp("hypotf", "hypot", 2),
    "copysign": MathOp("copysignf", "copysign", 2),
    "nextafter": MathOp("nextafterf", "nextafter", 2),
    "ldexp": MathOp("ldexpf", "ldexp", 2),
}
"""The math builtins ``tir.<name>`` (the one table of them: `LowerIntrin` picks the C function
from it, the C emitter knows from it which names ``<math.h>`` declares)."""

MATH_SYMBOLS = frozenset(s for m in MATH_OPS.values() for s in (m.f32, m.f64, m.cuda_f32) if s)
"""Functions `<math.h>` declares (a ``call_extern`` of one needs no declaration of its own)."""


def _register() -> None:
    for name, (effect, nargs) in _TABLE.items():
        Op.register(f"tir.{name}", effect=effect, num_args=nargs)
    for name, m in MATH_OPS.items():
        Op.register(
            f"tir.{name}",
            effect=_P,
            num_args=m.nargs,
            c_symbol={"float32": m.f32, "float64": m.f64},
            math=m,
        )


_register()


def op(name: str) -> Op:
    """The TIR builtin ``name`` (without the ``tir.`` prefix)."""
    return Op.get(f"tir.{name}")
