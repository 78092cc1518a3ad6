"""`NameSupply`: the one way kiln makes fresh names (functions, kernels, locals, printed vars).

``fresh(hint)`` returns the hint itself when it is free, else ``hint_1``, ``hint_2``... and marks
the result taken. Subclasses decide what a legal name is (`clean`) and which names are never
free (`is_free`): C identifiers in the code generator, script identifiers in the printer.
"""

from __future__ import annotations

from collections.abc import Iterable


class NameSupply:
    """Hands out unique names; `child()` makes a nested scope that sees every name taken here."""

    def __init__(self, used: Iterable[str] = ()) -> None:
        self._used: set[str] = set(used)
        self._next: dict[str, int] = {}

    def clean(self, hint: str) -> str:
        """``hint`` made into a legal name (here: itself, or ``v`` when empty)."""
        return hint or "v"

    def is_free(self, name: str) -> bool:
        return name not in self._used

    def reserve(self, name: str) -> None:
        """Mark ``name`` as taken (e.g. an exported symbol that must keep its exact spelling)."""
        self._used.add(name)

    def fresh(self, hint: str) -> str:
        """A new name based on ``hint``: the hint itself if free, else ``hint_1``, ``hint_2``..."""
        base = self.clean(hint)
        if self.is_free(base):
            self._used.add(base)
            return base
        k = self._next.get(base, 1)
        while not self.is_free(f"{base}_{k}"):
            k += 1
        self._next[base] = k + 1
        name = f"{base}_{k}"
        self._used.add(name)
        return name

    def child(self) -> NameSupply:
        """A supply for a nested scope: starts with every name taken here."""
        sub = type(self).__new__(type(self))
        NameSupply.__init__(sub, self._used)
        sub._next = dict(self._next)
        return sub

    def __contains__(self, name: object) -> bool:
        return name in self._used
