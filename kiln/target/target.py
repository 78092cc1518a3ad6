"""`Target`: what to generate code for — a kind (``"c"``), its attributes, and a host target.

A target is a value: ``Target("c")`` equals ``Target.from_any("c")``. The string form is the
kind followed by ``-key=value`` attributes (``"c -opt=3"``), and ``Target(device, host=...)``
names the target that runs the host side of a device target (the CUDA issue adds the ``cuda``
kind; a host target defaults to ``c``). Kinds are registered in `TARGET_KINDS` with the
attributes they accept and their defaults; an unknown kind or attribute is an error that lists
what exists.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kiln.errors import KilnError


@dataclass(frozen=True)
class TargetKind:
    """A family of targets: its name, the device it runs on, and its attributes' defaults."""

    name: str
    device: str
    defaults: Mapping[str, Any] = field(default_factory=dict)
    is_host: bool = True


TARGET_KINDS: dict[str, TargetKind] = {
    "c": TargetKind("c", "cpu", {}),
}
"""Registered target kinds by name."""


@dataclass(frozen=True)
class Target:
    """A code generation target (see module docstring)."""

    kind: str
    attrs: tuple[tuple[str, Any], ...] = ()
    host: Target | None = None

    def __post_init__(self) -> None:
        kind = TARGET_KINDS.get(self.kind)
        if kind is None:
            raise KilnError(
                f"unknown target kind {self.kind!r}; known kinds: {sorted(TARGET_KINDS)}"
            )
        attrs = dict(self.attrs.items() if isinstance(self.attrs, Mapping) else self.attrs)
        unknown = sorted(set(attrs) - set(kind.defaults))
        if unknown:
            raise KilnError(
                f"target {self.kind!r} has no attribute(s) {unknown}; it accepts "
                f"{sorted(kind.defaults)}"
            )
        object.__setattr__(self, "attrs", tuple(sorted(attrs.items())))
        if self.host is not None and not isinstance(self.host, Target):
            object.__setattr__(self, "host", Target.from_any(self.host))

    @staticmethod
    def from_any(value: str | Target | Mapping[str, Any]) -> Target:
        """A target from a Target, a string ``"kind -key=value ..."`` or a dict with ``kind``."""
        if isinstance(value, Target):
            return value
        if isinstance(value, Mapping):
            rest = {k: v for k, v in value.items() if k not in ("kind", "host")}
            return Target(value["kind"], tuple(rest.items()), value.get("host"))
        if not isinstance(value, str) or not value.split():
            raise KilnError(f"expected a target such as 'c', got {value!r}")
        kind, *opts = value.split()
        attrs = {}
        for opt in opts:
            key, _, val = opt.lstrip("-").partition("=")
            attrs[key] = val if val else True
        return Target(kind, tuple(attrs.items()))

    @property
    def kind_info(self) -> TargetKind:
        return TARGET_KINDS[self.kind]

    @property
    def device(self) -> str:
        """The device the generated code runs on ("cpu", "cuda", ...)."""
        return self.kind_info.device

    def get(self, key: str, default: Any = None) -> Any:
        """An attribute, else the kind's default, else ``default``."""
        value = dict(self.attrs).get(key, self.kind_info.defaults.get(key))
        return default if value is None else value

    def with_host(self, host: str | Target) -> Target:
        return Target(self.kind, self.attrs, Target.from_any(host))

    def host_target(self) -> Target:
        """The target of host code: ``host`` if given, this target if it is a host kind, else c."""
        if self.host is not None:
            return self.host
        return self if self.kind_info.is_host else Target("c")

    def __str__(self) -> str:
        opts = " ".join(f"-{k}={v}" if v is not True else f"-{k}" for k, v in self.attrs)
        return f"{self.kind} {opts}".strip()
