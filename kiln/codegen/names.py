"""C-safe, unique identifiers for generated code.

`CNameSupply` hands out names that are valid C identifiers, are not C keywords, and do not collide
with anything the generated file or its headers define (libc and libm functions, header macros,
tvm-ffi and DLPack names, kiln's own ``kiln_`` helpers, vector typedefs such as ``float32x8``),
nor with any name it handed out before. A function body gets a child supply, so a local never
shadows a module-level function (a private function ``A`` called from a function whose
parameter is also ``A`` still compiles: the parameter becomes ``A_1``).
"""

from __future__ import annotations

import re

from kiln.codegen.c_reserved import LIBC_NAMES
from kiln.ir.names import NameSupply

C_KEYWORDS = frozenset(
    """auto break case char const continue default do double else enum extern float for goto if
    inline int long register restrict return short signed sizeof static struct switch typedef
    union unsigned void volatile while _Alignas _Alignof _Atomic _Bool _Complex _Generic
    _Imaginary _Noreturn _Static_assert _Thread_local alignas alignof bool true false nullptr
    static_assert thread_local typeof typeof_unqual constexpr asm _Decimal32 _Decimal64
    _Decimal128 _BitInt""".split()
)
"""C11/C23 keywords (and GNU ``asm``)."""

C_HEADER_NAMES = LIBC_NAMES | frozenset(
    """main errno assert offsetof linux unix i386 omp_get_thread_num omp_get_num_threads DLTensor
    DLDataType DLDevice DLManagedTensor DLManagedTensorVersioned DLDeviceType DLDataTypeCode
    DLPackVersion""".split()
)
"""Identifiers the generated file's headers (libc, libm, tvm-ffi, DLPack, OpenMP) or the GNU C
dialect define, as functions, types or macros."""

_RESERVED_PREFIX = re.compile(r"^(_|kiln|KILN|TVMFFI|kTVMFFI|TVM_FFI|kDL|DLPACK|DL[A-Z]|FP_|M_)")
"""Prefixes of the implementation, of kiln's helpers, of tvm-ffi, DLPack and header macros."""

_RESERVED_PATTERNS = (
    _RESERVED_PREFIX,
    re.compile(r"^(PRI|SCN)[a-zA-Z](\d+|MAX|PTR|LEAST\d+|FAST\d+)$"),  # <inttypes.h> format macros
    re.compile(r"^u?int\d+_t$|^(U?INT|INTPTR|UINTPTR|SIZE|PTRDIFF|WCHAR|SIG_ATOMIC)\w*_(MAX|MIN)$"),
    re.compile(r"^(u?int|float|bfloat|bool|float8_e\w+)\d*x\d+$"),  # vector typedefs
    re.compile(r"^[EW][A-Z0-9]+$"),  # errno / wide-char macros
)


def is_reserved(name: str) -> bool:
    """True if ``name`` must not be used for a generated function or variable."""
    if name in C_KEYWORDS or name in C_HEADER_NAMES:
        return True
    return any(p.match(name) for p in _RESERVED_PATTERNS)


def sanitize(hint: str) -> str:
    """``hint`` turned into a C identifier (invalid characters become ``_``)."""
    name = re.sub(r"[^A-Za-z0-9_]", "_", hint) or "v"
    if name[0].isdigit():
        name = "v" + name
    return name


class CNameSupply(NameSupply):
    """Hands out unique C-safe names (see module docstring); `child()` makes a nested scope."""

    def clean(self, hint: str) -> str:
        base = sanitize(hint)
        return "v_" + base.lstrip("_") if _RESERVED_PREFIX.match(base) else base

    def is_free(self, name: str) -> bool:
        return super().is_free(name) and not is_reserved(name)
