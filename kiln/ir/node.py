"""The base of every IR node, immutable attribute maps, and the printer hook.

Nodes are ``@dataclass(frozen=True, slots=True, eq=False)``: identity is object identity, children
are nodes or tuples of nodes, and edits go through ``dataclasses.replace``. Structural comparison
lives in `kiln.ir.structural`. A node class may declare:

- ``_binder = True``: instances are *defined* somewhere (variables, buffers) and compared by the
  position of their definition, never by name.
- ``_def_fields``: the fields of this node that define binders (``LetStmt.var``, ``For.loop_var``).
- ``_ignore_fields``: fields that structural comparison skips (names of binders, spans).
- ``_defined_through``: a binder field (a buffer's ``data``); a binder met at a use site whose
  field binder is already bound is taken as defined there.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping
from typing import Any, Callable, ClassVar

from kiln.errors import IRError

_FIELDS: dict[type, tuple[str, ...]] = {}
_PRINTER: list[Callable[[Any], str]] = []


class Node:
    """Base class of IR nodes (both levels)."""

    __slots__ = ()
    _binder: ClassVar[bool] = False
    _def_fields: ClassVar[tuple[str, ...]] = ()
    _ignore_fields: ClassVar[tuple[str, ...]] = ("span",)
    _defined_through: ClassVar[str | None] = None

    @classmethod
    def field_names(cls) -> tuple[str, ...]:
        """Names of the dataclass fields, in declaration order (cached per class)."""
        names = _FIELDS.get(cls)
        if names is None:
            names = tuple(f.name for f in dataclasses.fields(cls))  # type: ignore[arg-type]
            _FIELDS[cls] = names
        return names

    def children(self) -> Iterator[tuple[str, Any]]:
        """(field, value) for each field holding a node or a tuple (spans excluded)."""
        for name in self.field_names():
            if name == "span":
                continue
            value = getattr(self, name)
            if isinstance(value, (Node, tuple)):
                yield name, value

    def script(self, **kwargs: Any) -> str:
        """This node printed as TVMScript (needs `kiln.script` to be importable)."""
        if not _PRINTER:
            import importlib

            importlib.import_module("kiln.script")  # registers the printer; see register_printer
        return _PRINTER[-1](self, **kwargs)

    def __str__(self) -> str:
        try:
            return self.script()
        except Exception:  # printing must never hide the object; fall back to the raw form
            return self.__repr__()


def register_printer(fn: Callable[..., str]) -> None:
    """Install the function `Node.script` uses (the script layer calls this once on import)."""
    _PRINTER.append(fn)


def repr_short(node: Any) -> str:
    """A one-line description of a node for error messages: its kind, the name it carries or
    defines (a loop's variable, a store's buffer), and its source location when known."""
    name = getattr(node, "name", None) or getattr(node, "name_hint", None)
    for field in ("loop_var", "var", "buffer", "buffer_var"):
        if name is None and hasattr(node, field):
            name = getattr(getattr(node, field), "name", None)
    kind = type(node).__name__
    span = getattr(node, "span", None)
    where = f" at {span}" if span is not None else ""
    return f"{kind} {name!r}{where}" if isinstance(name, str) else f"{kind}{where}"


class FrozenMap(Mapping[Any, Any]):
    """An immutable, ordered map (e.g. a PrimFunc's buffer map, keyed by parameter `Var`)."""

    __slots__ = ("_items",)

    def __init__(self, items: Mapping[Any, Any] | None = None, **kwargs: Any) -> None:
        data = dict(items or {})
        data.update(kwargs)
        self._items = data

    def __getitem__(self, key: str) -> Any:
        return self._items[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def with_item(self, key: Any, value: Any) -> Any:
        data = dict(self._items)
        data[key] = value
        return type(self)(data)

    def without(self, key: Any) -> Any:
        return type(self)({k: v for k, v in self._items.items() if k != key})

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._items!r})"

    def __hash__(self) -> int:
        return hash(tuple(self._items))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Mapping):
            return dict(self._items) == dict(other)
        return NotImplemented


class Attrs(FrozenMap):
    """An immutable, ordered string-keyed map used for function, loop and call attributes.

    Keys read as attributes too (``call.attrs.axis``), as in TVM.
    """

    __slots__ = ()

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        try:
            return self._items[name]
        except KeyError:
            raise AttributeError(
                f"attributes have no {name!r}; they have {list(self._items)}"
            ) from None

    def __init__(self, items: Mapping[str, Any] | None = None, **kwargs: Any) -> None:
        super().__init__(items, **kwargs)
        for key in self._items:
            if not isinstance(key, str):
                raise IRError(f"attribute keys must be strings, got {key!r}")


EMPTY_ATTRS = Attrs()


def as_attrs(value: Mapping[str, Any] | None) -> Attrs:
    """Turn None or a mapping into `Attrs` (an `Attrs` passes through)."""
    if isinstance(value, Attrs):
        return value
    return EMPTY_ATTRS if not value else Attrs(value)
