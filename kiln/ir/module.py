"""`IRModule`: an ordered collection of functions keyed by `GlobalVar`, plus module attributes.

An IRModule is immutable: `update`, `remove` and `with_attr` return new modules, so passes map a
module to a module and a module a caller still holds never changes under it. Function names
(``GlobalVar.name_hint``) are unique within a module.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from kiln.errors import IRError, IRValueError
from kiln.ir.function import BaseFunc, GlobalVar
from kiln.ir.node import EMPTY_ATTRS, Attrs, Node, as_attrs


class IRModule:
    """Ordered functions of one compilation unit."""

    __slots__ = ("_funcs", "_by_name", "attrs")

    def __init__(
        self,
        functions: Mapping[GlobalVar | str, BaseFunc] | None = None,
        attrs: Mapping[str, Any] | None = None,
    ) -> None:
        funcs: dict[GlobalVar, BaseFunc] = {}
        by_name: dict[str, GlobalVar] = {}
        for key, func in (functions or {}).items():
            gv = GlobalVar(key) if isinstance(key, str) else key
            if not isinstance(gv, GlobalVar):
                raise IRError(f"IRModule keys must be GlobalVar or str, got {key!r}")
            if not isinstance(func, BaseFunc):
                raise IRError(
                    f"IRModule value for {gv.name_hint!r} must be a function, got {func!r}"
                )
            if gv.name_hint in by_name:
                raise IRValueError(f"IRModule already has a function named {gv.name_hint!r}")
            funcs[gv] = func
            by_name[gv.name_hint] = gv
        self._funcs = funcs
        self._by_name = by_name
        self.attrs: Attrs = as_attrs(attrs) if attrs else EMPTY_ATTRS

    @staticmethod
    def from_expr(func: BaseFunc, name: str | None = None) -> IRModule:
        """A module holding one function, named by ``name``, its global symbol, or ``main``."""
        name = name or func.global_symbol or "main"
        return IRModule({GlobalVar(name): func})

    # -- lookup -------------------------------------------------------------------------------
    def get_global_var(self, name: str) -> GlobalVar:
        gv = self._by_name.get(name)
        if gv is None:
            raise KeyError(f"IRModule has no function {name!r}; it has {list(self._by_name)}")
        return gv

    def get_global_vars(self) -> list[GlobalVar]:
        return list(self._funcs)

    def __getitem__(self, key: GlobalVar | str) -> BaseFunc:
        gv = self.get_global_var(key) if isinstance(key, str) else key
        try:
            return self._funcs[gv]
        except KeyError:
            raise KeyError(
                f"IRModule has no function {gv!r}; it has {list(self._by_name)}"
            ) from None

    def __contains__(self, key: object) -> bool:
        if isinstance(key, str):
            return key in self._by_name
        return key in self._funcs

    def __iter__(self) -> Iterator[GlobalVar]:
        return iter(self._funcs)

    def __len__(self) -> int:
        return len(self._funcs)

    def items(self) -> Iterator[tuple[GlobalVar, BaseFunc]]:
        return iter(self._funcs.items())

    @property
    def functions(self) -> dict[GlobalVar, BaseFunc]:
        """A copy of the function table."""
        return dict(self._funcs)

    # -- edits (each returns a new module) -----------------------------------------------------
    def update(self, key: GlobalVar | str, func: BaseFunc) -> IRModule:
        """A module with ``func`` stored under ``key`` (replacing one of the same name)."""
        if isinstance(key, str):
            key = self._by_name.get(key) or GlobalVar(key)
        funcs = dict(self._funcs)
        old = self._by_name.get(key.name_hint)
        if old is not None and old is not key:
            funcs = {(key if g is old else g): f for g, f in funcs.items()}
        funcs[key] = func
        return IRModule(funcs, self.attrs)

    def update_all(self, funcs: Mapping[GlobalVar, BaseFunc]) -> IRModule:
        """A module with every function of ``funcs`` stored (order of this module kept first)."""
        mod: IRModule = self
        for gv, f in funcs.items():
            mod = mod.update(gv, f)
        return mod

    def remove(self, key: GlobalVar | str) -> IRModule:
        gv = self.get_global_var(key) if isinstance(key, str) else key
        if gv not in self._funcs:
            raise KeyError(f"IRModule has no function {gv!r}")
        return IRModule({g: f for g, f in self._funcs.items() if g is not gv}, self.attrs)

    def with_attr(self, key: str, value: Any) -> IRModule:
        return IRModule(self._funcs, self.attrs.with_item(key, value))

    def get_attr(self, key: str, default: Any = None) -> Any:
        return self.attrs.get(key, default)

    def script(self, **kwargs: Any) -> str:
        return Node.script(self, **kwargs)  # type: ignore[arg-type]

    def __str__(self) -> str:
        try:
            return self.script()
        except Exception:  # printing must never hide the object
            return self.__repr__()

    def __repr__(self) -> str:
        return f"IRModule({list(self._by_name)})"
