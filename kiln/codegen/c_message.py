"""Run-time error messages of generated C and CUDA: the exception kind an assert raises, and
``tir.format`` messages (a template with ``{}`` holes and the integers that fill them) as
printf formats."""

from __future__ import annotations

from kiln.codegen.c_expr import is_op
from kiln.ir.dtype import DataType
from kiln.tir import expr as E

ERROR_KINDS = (
    "ValueError",
    "TypeError",
    "IndexError",
    "RuntimeError",
    "MemoryError",
    "KernelIndexError",  # kiln.errors.KernelIndexError, registered with tvm-ffi by kiln.runtime
)


def assert_message(message: E.PrimExpr) -> tuple[str, str]:
    """(Python exception kind, text) of an assert message; ``"TypeError: ..."`` picks the kind.
    For a ``tir.format`` message the text is its template (`message_values` fills it)."""
    if is_op(message, "format") and message.args and isinstance(message.args[0], E.StringImm):
        message = message.args[0]  # type: ignore[union-attr]
    text = message.value if isinstance(message, E.StringImm) else str(message)
    for kind in ERROR_KINDS:
        if text.startswith(kind + ": "):
            return kind, text[len(kind) + 2 :]
    return "RuntimeError", text


def message_values(message: E.PrimExpr) -> tuple[E.PrimExpr, ...]:
    """The integers a ``tir.format`` message puts in place of its ``{}``s (none otherwise)."""
    return tuple(message.args[1:]) if is_op(message, "format") else ()  # type: ignore[union-attr]


def printf_format(text: str, values: tuple[E.PrimExpr, ...]) -> str:
    """A message template as a printf format: ``%`` escaped, each ``{}`` a ``%lld`` (``%llu``
    for an unsigned value; pass each through `printf_cast`)."""
    parts = text.replace("%", "%%").split("{}")
    out = parts[0]
    for k, part in enumerate(parts[1:]):
        unsigned = k < len(values) and values[k].dtype.is_uint
        out += ("%llu" if unsigned else "%lld") + part
    return out


def printf_cast(value: str, dtype: DataType) -> str:
    """``value`` (C text) as the argument `printf_format` expects for a value of ``dtype``."""
    return f"(unsigned long long)({value})" if dtype.is_uint else f"(long long)({value})"
