"""`LibraryFunction`: an exposed function of a loaded library, and the failures it explains.

A call goes straight to the tvm-ffi function; its C entry checks every argument (see
`kiln.codegen.c_host`). Some arguments never reach the entry: tvm-ffi converts a numpy array
through DLPack 0.x, and numpy refuses to export read-only arrays and ml_dtypes storage floats
(bfloat16, float8) that way, raising a `BufferError` that names no argument; tvm-ffi passes an
int beyond 64 bits as an opaque object. Only when a call fails does Python step in, with the
function's arguments as its library lists them (`ArgInfo`, written by the code generator):

- a read-only array bound to an argument the function writes (an *output*: one the function
  may store into, see `kiln.tir.analysis.writes`) is a `ValueError` naming the argument;
- read-only inputs and storage-float arrays are passed zero-copy (`array_tensor`) and the call
  is made again (the entry never ran: the failure was in converting the arguments);
- an int that does not fit its integer parameter is a `ValueError` such as
  ``main: argument x = 2**100 does not fit int8``;
- any other conversion failure is re-raised with the function and the argument named.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import tvm_ffi

from kiln.runtime.metadata import ArgInfo
from kiln.runtime.tensor import STORAGE_DTYPES, array_tensor, name_unconvertible

_CONVERSION_ERRORS = (BufferError, TypeError, ValueError, OverflowError)


class LibraryFunction:
    """An exposed function: call it like the tvm-ffi function ``ffi_function`` it wraps.

    Invariant: a call that succeeds runs ``ffi_function`` once with the caller's arguments and
    nothing else; passed to tvm-ffi it converts to ``ffi_function`` (`__tvm_ffi_object__`)."""

    __slots__ = ("ffi_function", "name", "_args")

    def __init__(self, ffi_function: tvm_ffi.Function, name: str, args: Any) -> None:
        self.ffi_function = ffi_function
        self.name = name
        self._args = args  # () -> tuple[ArgInfo, ...] | None, asked only when a call fails

    def __call__(self, *args: Any) -> Any:
        try:
            return self.ffi_function(*args)
        except _CONVERSION_ERRORS as e:
            return self._explain(args, e)

    def __tvm_ffi_object__(self) -> tvm_ffi.Function:
        return self.ffi_function

    def __repr__(self) -> str:
        return f"<kiln function {self.name}>"

    def _explain(self, args: tuple[Any, ...], error: BaseException) -> Any:
        infos = self._args()
        fixed = _bridge_arrays(self.name, args, infos)
        if fixed is not None:
            # NOTE: calling again is safe: tvm-ffi refuses every array bridged here while it
            # converts the arguments, so the first call never reached the C entry.
            args = tuple(fixed)  # what is still wrong is wrong in these
            try:
                return self.ffi_function(*args)
            except _CONVERSION_ERRORS as e:
                error = e
        _check_ints(self.name, args, infos)
        if not str(error).startswith(f"{self.name}: "):
            for i, a in enumerate(args):
                name_unconvertible(self.name, _label(infos, i), a, error)
        raise error


def _label(infos: tuple[ArgInfo, ...] | None, i: int) -> str:
    if infos is not None and i < len(infos):
        return f"argument {infos[i].name}"
    return f"argument {i} (counting from 0)"


def _bridge_arrays(
    fn: str, args: tuple[Any, ...], infos: tuple[ArgInfo, ...] | None
) -> list[Any] | None:
    """``args`` with the arrays tvm-ffi cannot convert replaced by tensors on the same memory,
    or None when there are none; a read-only array bound to a written argument raises."""
    fixed = list(args)
    changed = False
    for i, a in enumerate(args):
        if not isinstance(a, np.ndarray):
            continue
        if not a.flags.writeable:
            info = infos[i] if infos is not None and i < len(infos) else None
            if info is None or info.written:
                why = "writes it" if info is not None else "may write it (its library does not say)"
                raise ValueError(
                    f"{fn}: {_label(infos, i)} is a read-only array, but {fn} {why}; pass a "
                    "writable array (e.g. a copy: numpy.array(x))"
                )
        elif a.dtype.name not in STORAGE_DTYPES:
            continue
        fixed[i] = array_tensor(a)
        changed = True
    return fixed if changed else None


def _check_ints(fn: str, args: tuple[Any, ...], infos: tuple[ArgInfo, ...] | None) -> None:
    """Raise a `ValueError` for the first int argument outside its integer parameter's type."""
    for a, info in zip(args, infos or ()):
        kind = re.fullmatch(r"(u?)int(\d+)", info.dtype)
        if info.tensor or kind is None:
            continue
        if isinstance(a, (bool, np.bool_)) or not isinstance(a, (int, np.integer)):
            continue
        bits, signed = int(kind.group(2)), not kind.group(1)
        lo, hi = (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1) if signed else (0, 2**bits - 1)
        if not lo <= int(a) <= hi:
            raise ValueError(
                f"{fn}: argument {info.name} = {_int_text(int(a))} does not fit {info.dtype} "
                f"({lo} to {hi})"
            ) from None


def _int_text(v: int) -> str:
    """``v`` in decimal, or as ``2**k`` / ``-2**k`` when it is a large power of two."""
    m = abs(v)
    if m >= 2**16 and m & (m - 1) == 0:
        return f"{'-' if v < 0 else ''}2**{m.bit_length() - 1}"
    return str(v)
