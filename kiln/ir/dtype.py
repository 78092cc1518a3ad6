"""Scalar and vector data types, written and parsed as strings such as ``"float32x8"``.

A `DataType` is a value: two equal types compare equal (also against their string form) and hash
alike. Kinds: ``int``/``uint`` (1-64 bits), ``float`` (16/32/64), ``bfloat`` (16), the fp8 kinds
``float8_e4m3fn`` and ``float8_e5m2``, ``bool`` and ``handle`` (an opaque pointer, 64 bits).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from kiln.errors import IRError

_FIXED = {
    "bool": ("bool", 1),
    "handle": ("handle", 64),
    "bfloat16": ("bfloat", 16),
    "float8_e4m3fn": ("float8_e4m3fn", 8),
    "float8_e5m2": ("float8_e5m2", 8),
    "void": ("handle", 0),
}
_BITS = {"int": (1, 8, 16, 32, 64), "uint": (1, 8, 16, 32, 64), "float": (16, 32, 64)}
_PATTERN = re.compile(r"^(int|uint|float)(\d+)$")
_CACHE: dict[str, DataType] = {}


@dataclass(frozen=True, slots=True)
class DataType:
    """A scalar or vector element type; ``lanes > 1`` is a vector."""

    kind: str
    bits: int
    lanes: int = 1

    @staticmethod
    def parse(text: str | DataType) -> DataType:
        """Parse ``"float32"``, ``"int8x16"``, ``"bool"``...; a DataType passes through."""
        if isinstance(text, DataType):
            return text
        if not isinstance(text, str):
            raise IRError(f"expected a dtype string such as 'float32', got {text!r}")
        hit = _CACHE.get(text)
        if hit is not None:
            return hit
        base, lanes = text, 1
        m = re.match(r"^(.*?)x(\d+)$", text)
        if m and m.group(1) and not text.startswith("float8_e"):
            base, lanes = m.group(1), int(m.group(2))
        elif m and text.startswith("float8_e") and m.group(1) in _FIXED:
            base, lanes = m.group(1), int(m.group(2))
        dt = _parse_scalar(base, text).with_lanes(lanes)
        _CACHE[text] = dt
        return dt

    def with_lanes(self, lanes: int) -> DataType:
        return self if lanes == self.lanes else DataType(self.kind, self.bits, lanes)

    def element_of(self) -> DataType:
        return self.with_lanes(1)

    @property
    def is_scalar(self) -> bool:
        return self.lanes == 1

    @property
    def is_int(self) -> bool:
        return self.kind == "int"

    @property
    def is_uint(self) -> bool:
        return self.kind == "uint"

    @property
    def is_integer(self) -> bool:
        """int or uint (bool excluded)."""
        return self.kind in ("int", "uint")

    @property
    def is_float(self) -> bool:
        """Any floating kind: float16/32/64, bfloat16 and fp8."""
        return self.kind in ("float", "bfloat", "float8_e4m3fn", "float8_e5m2")

    @property
    def is_bool(self) -> bool:
        return self.kind == "bool"

    @property
    def is_handle(self) -> bool:
        return self.kind == "handle" and self.bits != 0

    @property
    def is_void(self) -> bool:
        return self.kind == "handle" and self.bits == 0

    @property
    def is_bfloat16(self) -> bool:
        return self.kind == "bfloat"

    @property
    def is_float8(self) -> bool:
        return self.kind.startswith("float8")

    @property
    def itemsize(self) -> int:
        """Bytes one element of all lanes occupies in memory (bool is stored as one byte)."""
        return max(1, (self.bits + 7) // 8) * self.lanes

    def __str__(self) -> str:
        if self.kind in ("bool", "float8_e4m3fn", "float8_e5m2"):
            base = self.kind
        elif self.kind == "handle":
            base = "handle" if self.bits else "void"
        elif self.kind == "bfloat":
            base = "bfloat16"
        else:
            base = f"{self.kind}{self.bits}"
        return base if self.lanes == 1 else f"{base}x{self.lanes}"

    def __repr__(self) -> str:
        return f"DataType({str(self)!r})"

    def __eq__(self, other: object) -> bool:
        if isinstance(other, str):
            try:
                other = DataType.parse(other)
            except IRError:
                return False
        if not isinstance(other, DataType):
            return NotImplemented
        return (self.kind, self.bits, self.lanes) == (other.kind, other.bits, other.lanes)

    def __hash__(self) -> int:
        return hash((self.kind, self.bits, self.lanes))


def _parse_scalar(base: str, whole: str) -> DataType:
    if base in _FIXED:
        kind, bits = _FIXED[base]
        return DataType(kind, bits)
    m = _PATTERN.match(base)
    if m and int(m.group(2)) in _BITS[m.group(1)]:
        return DataType(m.group(1), int(m.group(2)))
    raise IRError(
        f"unknown dtype {whole!r}: expected int/uint 1-64 bits, float16/32/64, bfloat16, "
        "float8_e4m3fn, float8_e5m2, bool or handle, optionally with lanes such as 'float32x8'"
    )


def dtype(x: str | DataType) -> DataType:
    """Shorthand for `DataType.parse`."""
    return DataType.parse(x)


int32 = DataType("int", 32)
int64 = DataType("int", 64)
float32 = DataType("float", 32)
bool_ = DataType("bool", 1)
handle = DataType("handle", 64)
void = DataType("handle", 0)
