"""External code generators (BYOC): the registry `LowerTE` consults for ``Compiler`` functions.

``@register_codegen("name")`` registers a function ``relax.Function -> C source | None`` (TVM's
``relax.ext.<name>``). `LowerTE` calls it once per ``Compiler="name"`` primitive function, with
the function's ``global_symbol`` set to the C symbol to define. What it returns:

- ``None``: nothing to link (the symbol is defined elsewhere, e.g. by a library already
  loaded, or a test);
- a ``str`` of C source, or a `CSource` (source plus the compiler / linker flags it needs):
  the source must define the tvm-ffi entry ``__tvm_ffi_<symbol>`` (`TVMFFISafeCallType`),
  called in destination-passing style: the inputs, then the output tensors, all DLTensors.

The sources are carried on the module as attribute ``external_mods`` (a tuple of
`ExternalSource`); a build compiles them into the same library as the module's PrimFuncs
(`linked_source`). NOTE: every source of one library becomes one C translation unit, so an
external source keeps its file-scope names ``static`` and prefixed by its codegen's name (shared
helpers behind an ``#ifndef`` guard); only ``__tvm_ffi_<symbol>`` is exported.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from kiln.errors import KilnError

EXTERNAL_MODS = "external_mods"
"""Module attribute: the `ExternalSource`s a build must compile into the library."""

SYMBOL_PREFIX = "__tvm_ffi_"
"""The C symbol of an exposed function ``f`` is ``__tvm_ffi_f`` (kiln.runtime.module)."""


@dataclass(frozen=True)
class CSource:
    """C source an external codegen returns, with the flags it needs to compile and link."""

    source: str
    flags: tuple[str, ...] = ()


@dataclass(frozen=True)
class ExternalSource:
    """The C of one external function: its symbol, the codegen that made it, source, flags."""

    symbol: str
    compiler: str
    source: str
    flags: tuple[str, ...] = ()

    def __repr__(self) -> str:
        return f"ExternalSource({self.symbol!r}, {self.compiler!r}, <{len(self.source)} chars>)"


Codegen = Callable[[Any], "str | CSource | None"]

_CODEGENS: dict[str, Codegen] = {}
_PATTERNS: dict[str, Callable[[], list[Any]]] = {}


def register_codegen(name: str, fn: Codegen | None = None, override: bool = False) -> Any:
    """Register ``fn`` as the external codegen ``name`` (usable as a decorator)."""

    def deco(f: Codegen) -> Codegen:
        if not isinstance(name, str) or not name:
            raise KilnError(f"register_codegen: the name must be a non-empty string, got {name!r}")
        if name in _CODEGENS and not override:
            raise KilnError(
                f"register_codegen: an external codegen {name!r} is already registered "
                "(pass override=True to replace it)"
            )
        _CODEGENS[name] = f
        return f

    return deco(fn) if fn is not None else deco


def unregister_codegen(name: str) -> None:
    """Remove codegen ``name`` (tests)."""
    _CODEGENS.pop(name, None)
    _PATTERNS.pop(name, None)


def register_patterns(name: str, patterns: Callable[[], list[Any]]) -> None:
    """Register the function giving backend ``name``'s partition patterns (`ChainPattern`s);
    it raises a `KilnError` naming what to install when the backend's library is missing."""
    _PATTERNS[name] = patterns


def backend_patterns(name: str) -> list[Any] | None:
    """The partition patterns of backend ``name`` (None when it registers none)."""
    provider = _PATTERNS.get(name)
    return provider() if provider is not None else None


def get_codegen(name: str) -> Codegen | None:
    """The codegen registered as ``name``, or None."""
    return _CODEGENS.get(name)


def list_codegens() -> list[str]:
    return sorted(_CODEGENS)


def linked_source(main: str, externals: Sequence[ExternalSource]) -> tuple[str, tuple[str, ...]]:
    """One translation unit of a module's generated C and its external sources, and the union
    of their flags (in order, without repeats)."""
    parts = [main]
    flags: dict[str, None] = {}
    for ext in externals:
        parts.append(f"/* ---- external function {ext.symbol} ({ext.compiler}) ---- */")
        parts.append(ext.source)
        flags.update(dict.fromkeys(ext.flags))
    return "\n".join(parts), tuple(flags)
