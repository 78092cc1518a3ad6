"""`Target`: what to generate code for — a kind, its attributes, and the host that drives it.

A target is a value: equal targets compare and hash equal, whatever spelling made them.

Spellings (all accepted by ``Target(...)`` and `Target.from_any`):

- a string ``"kind -key=value -flag ..."``: ``"cuda"``, ``"cuda -arch=sm_80"``; a host may be
  named inside it with ``-host=c`` (quote a host with attributes: ``-host='c'``);
- a dict ``{"kind": "cuda", "arch": "sm_80", "host": "c"}``;
- a kind plus keywords: ``Target("cuda", host="c")``, ``Target("cuda -arch=sm_80", host="c")``,
  or ``Target("cuda", {"arch": "sm_80"})``.

Kinds live in `TARGET_KINDS` with the attributes they accept and their defaults; an unknown kind
or attribute is an error that lists what exists. ``c`` is a host kind (it runs host code and is its
own host); ``cuda`` is a device kind whose host defaults to ``c``.

The CPU of a ``c`` target is its ``mcpu`` attribute, passed to the C compiler as ``-march=``:
``native`` (the default) is the machine that compiles, ``c -mcpu=haswell`` (or ``x86-64-v3``) is
AVX2 code, ``c -mcpu=skylake-avx512`` (or ``x86-64-v4``) AVX-512 code. `Target.cpu` asks the
compiler once per process what that CPU may use (`CpuInfo`: the resolved name, the ISA level, the
vector width and register count), and `Target.vector_bytes` and every topi schedule take their
vector widths from it.

Canonical form (the invariant `str`, equality and hashing rely on): attributes are coerced to the
type of their default (``-max_threads_per_block=512`` is the int 512), attributes equal to their
default are dropped, the rest are sorted by name. So ``Target("cuda -arch=sm_90")`` equals
``Target("cuda")`` (sm_90 is the default) and both print as ``cuda``; ``str`` of a target with a
host ends in ``-host=<host>``: ``cuda -arch=sm_80 -host=c``. Two targets are equal exactly when
their strings are equal, and ``Target(str(t)) == t``.

The host is never spelled out: ``Target("c")`` prints as ``c`` on every machine and equals
``Target("c -mcpu=native")``. It does not equal ``Target("c -mcpu=znver3")`` even on a host GCC
calls znver3: the two compile with different ``-march`` flags (on Zen 4, GCC 12's
``-march=native`` enables AVX-512 and ``-march=znver3`` does not), so they are different targets.
The resolved host is ``Target("c").cpu`` (read, never part of the value); compiled libraries are
cached under a key that includes the host CPU whenever ``-march=native`` is used
(`kiln.runtime.toolchain.cache_key`), so a changed ISA never reuses a stale library.
"""

from __future__ import annotations

import functools
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kiln.errors import KilnError, ToolchainError

DLPACK_DEVICE_TYPES: dict[str, int] = {"cpu": 1, "cuda": 2}
"""DLPack ``DLDeviceType`` of each device name."""


@dataclass(frozen=True)
class TargetKind:
    """A family of targets: its name, the device it runs on, and its attributes' defaults."""

    name: str
    device: str
    defaults: Mapping[str, Any] = field(default_factory=dict)
    is_host: bool = True
    patterns: Mapping[str, str] = field(default_factory=dict)
    """attribute -> regular expression its (string) value must match in full."""

    @property
    def device_type(self) -> int:
        """The DLPack device type of the kind's device (cpu 1, cuda 2)."""
        code = DLPACK_DEVICE_TYPES.get(self.device)
        if code is None:
            raise KilnError(
                f"target kind {self.name!r} runs on {self.device!r}, which has no DLPack device "
                f"type; known devices: {sorted(DLPACK_DEVICE_TYPES)}"
            )
        return code


TARGET_KINDS: dict[str, TargetKind] = {
    "c": TargetKind("c", "cpu", {"mcpu": "native"}, patterns={"mcpu": r"[A-Za-z0-9][\w.+-]*"}),
    "cuda": TargetKind(
        "cuda",
        "cuda",
        {
            "arch": "sm_90",
            "max_threads_per_block": 1024,
            "max_shared_memory_per_block": 49152,
            "thread_warp_size": 32,
            "fast_math": False,
        },
        is_host=False,
    ),
}
"""Registered target kinds by name."""


@dataclass(frozen=True, init=False)
class Target:
    """A code generation target (see module docstring for spellings and the canonical form)."""

    kind: str
    attrs: tuple[tuple[str, Any], ...]
    host: Target | None

    def __init__(
        self,
        kind: str | Target | Mapping[str, Any],
        attrs: Mapping[str, Any] | tuple[tuple[str, Any], ...] = (),
        host: str | Target | Mapping[str, Any] | None = None,
    ) -> None:
        name, parsed, parsed_host = _split_spec(kind)
        extra = dict(attrs.items() if isinstance(attrs, Mapping) else attrs)
        info = _kind(name)
        values = _canonical(info, {**parsed, **extra})
        host = host if host is not None else parsed_host
        object.__setattr__(self, "kind", name)
        object.__setattr__(self, "attrs", values)
        object.__setattr__(self, "host", None if host is None else Target.from_any(host))

    @staticmethod
    def from_any(value: str | Target | Mapping[str, Any], host: Any = None) -> Target:
        """A target from a Target, a string or a dict (see module docstring)."""
        if isinstance(value, Target) and host is None:
            return value
        return Target(value, host=host)

    # -- queries ------------------------------------------------------------------------------
    @property
    def kind_info(self) -> TargetKind:
        return TARGET_KINDS[self.kind]

    @property
    def device(self) -> str:
        """The device the generated code runs on ("cpu", "cuda", ...)."""
        return self.kind_info.device

    @property
    def device_type(self) -> int:
        """The DLPack device type of the code this target generates (cpu 1, cuda 2)."""
        return self.kind_info.device_type

    @property
    def is_host_kind(self) -> bool:
        """True for kinds that run host code themselves (``c``)."""
        return self.kind_info.is_host

    @property
    def cpu(self) -> CpuInfo:
        """What code for this CPU target may use (``mcpu`` resolved by the C compiler, memoized
        per process); a device target's host code runs on ``host_target().cpu``."""
        if self.device != "cpu":
            raise KilnError(
                f"target {str(self)!r} runs on {self.device!r}, not a CPU; its host code's CPU "
                "is target.host_target().cpu"
            )
        mcpu = str(self.get("mcpu", "native"))
        try:
            return cpu_info(mcpu)
        except ToolchainError as e:
            raise KilnError(
                f"target {str(self)!r}: the C compiler rejects -march={mcpu}: {e}"
            ) from e

    @property
    def vector_bytes(self) -> int:
        """Bytes in one SIMD register of the code this target generates (CPU kinds: from
        `cpu`, 64 with AVX-512F, 32 with AVX, else 16; CUDA: 16)."""
        if self.device != "cpu":
            return 16
        return self.cpu.vector_bytes

    def get(self, key: str, default: Any = None) -> Any:
        """An attribute, else the kind's default, else ``default``."""
        value = dict(self.attrs).get(key, self.kind_info.defaults.get(key))
        return default if value is None else value

    def __getattr__(self, key: str) -> Any:
        # NOTE: only reached for names that are not fields: ``Target("cuda").arch``.
        kind = TARGET_KINDS.get(object.__getattribute__(self, "kind"))
        if kind is not None and key in kind.defaults:
            return self.get(key)
        raise AttributeError(f"target has no attribute {key!r}")

    # -- derived targets ----------------------------------------------------------------------
    def with_host(self, host: str | Target | Mapping[str, Any]) -> Target:
        """This target with ``host`` as its host."""
        return Target(self.kind, self.attrs, Target.from_any(host))

    def without_host(self) -> Target:
        """This target with no host (itself when it has none)."""
        return self if self.host is None else Target(self.kind, self.attrs)

    def host_target(self) -> Target:
        """The target of host code: ``host`` if given, this target if it is a host kind, else c."""
        if self.host is not None:
            return self.host
        return self if self.kind_info.is_host else Target("c")

    # -- printing -----------------------------------------------------------------------------
    def __str__(self) -> str:
        opts = [f"-{k}" if v is True else f"-{k}={_show(v)}" for k, v in self.attrs]
        if self.host is not None:
            host = str(self.host)
            opts.append(f"-host={shlex.quote(host) if ' ' in host else host}")
        return " ".join([self.kind, *opts])

    def __repr__(self) -> str:
        base = Target(self.kind, self.attrs)
        host = f", host={str(self.host)!r}" if self.host is not None else ""
        return f"Target({str(base)!r}{host})"


# -- CPUs -------------------------------------------------------------------------------------
ISA_LEVELS: tuple[tuple[str, frozenset[str]], ...] = (
    ("avx512", frozenset({"avx512f", "avx512bw", "avx512dq", "avx512vl", "avx2", "fma"})),
    ("avx2", frozenset({"avx2", "fma"})),
    ("avx", frozenset({"avx"})),
    ("neon", frozenset({"neon"})),
    ("sse2", frozenset({"sse2"})),
)
"""ISA levels, best first, and the features each needs (``avx512`` is x86-64-v4's set)."""


@dataclass(frozen=True)
class CpuInfo:
    """What code compiled with ``-march=<march>`` may use.

    ``name`` is the CPU the compiler resolved ``march`` to (``native`` -> ``znver3``; else
    ``march``); ``features`` are lower-case ISA extensions (``avx2``, ``fma``, ``avx512f``, ...).
    """

    march: str
    name: str
    features: frozenset[str]

    @property
    def isa(self) -> str:
        """The best level of `ISA_LEVELS` the features cover (``"scalar"`` when none)."""
        return next((lvl for lvl, need in ISA_LEVELS if need <= self.features), "scalar")

    @property
    def vector_bytes(self) -> int:
        """Bytes in the widest SIMD register: 64 with AVX-512F, 32 with AVX, else 16."""
        if "avx512f" in self.features:
            return 64
        return 32 if "avx" in self.features else 16

    @property
    def vector_registers(self) -> int:
        """SIMD registers the compiler may allocate: 32 with AVX-512F or on AArch64, else 16."""
        return 32 if {"avx512f", "aarch64"} & self.features else 16


_FEATURE_MACRO = re.compile(r"__((?:SSE|AVX|FMA)[0-9A-Z]*(?:_[0-9])?)__|__(aarch64)__|__ARM_(NEON)")
"""Predefined macros naming ISA features: ``__AVX512F__``, ``__SSE4_2__``, ``__ARM_NEON``."""


def cpu_info(march: str) -> CpuInfo:
    """`CpuInfo` of ``-march=<march>`` as the C compiler sees it (memoized per compiler and
    name); raises `ToolchainError` when the compiler rejects ``march``. NOTE: without a C
    compiler, ``native`` falls back to the flags in ``/proc/cpuinfo`` (nothing can be built
    then, but schedules can still be made and printed)."""
    # NOTE: must stay a function-level import: the toolchain lives in kiln.runtime (a lower
    # layer), and importing it loads tvm_ffi, which a plain `from kiln.ir import Target` should not.
    from kiln.runtime import toolchain

    try:
        cc = tuple(toolchain.find_compiler())
    except ToolchainError:
        if march != "native":
            raise
        return CpuInfo(march, march, _proc_cpu_flags())
    # both are memoized per (compiler, name) by the toolchain
    macros = toolchain.march_macros(cc, march)
    return _cpu_info_of(march, toolchain.resolve_march(cc, march), macros)


@functools.lru_cache(maxsize=None)
def _cpu_info_of(march: str, resolved: str, macros: frozenset[str]) -> CpuInfo:
    features = set()
    for macro in macros:
        found = _FEATURE_MACRO.fullmatch(macro)
        if found:
            features.add(next(g for g in found.groups() if g).lower().replace("_", "."))
    return CpuInfo(march, resolved, frozenset(features))


@functools.lru_cache(maxsize=None)
def _proc_cpu_flags() -> frozenset[str]:
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return frozenset()
    for line in text.splitlines():
        if line.startswith("flags"):
            return frozenset(line.partition(":")[2].split())
    return frozenset()


def _split_spec(spec: Any) -> tuple[str, dict[str, Any], Any]:
    """(kind, attributes, host or None) of a Target, string or dict."""
    if isinstance(spec, Target):
        return spec.kind, dict(spec.attrs), spec.host
    if isinstance(spec, Mapping):
        if "kind" not in spec:
            raise KilnError(f"a target dict needs a 'kind' key, got {dict(spec)!r}")
        rest = {k: v for k, v in spec.items() if k not in ("kind", "host")}
        return str(spec["kind"]), rest, spec.get("host")
    if not isinstance(spec, str) or not spec.split():
        raise KilnError(f"expected a target such as 'c' or 'cuda -arch=sm_80', got {spec!r}")
    kind, *opts = shlex.split(spec)
    attrs: dict[str, Any] = {}
    for opt in opts:
        if not opt.startswith("-"):
            raise KilnError(f"target {spec!r}: expected '-key=value', got {opt!r}")
        key, eq, val = opt.lstrip("-").partition("=")
        attrs[key] = val if eq else True
    host = attrs.pop("host", None)
    return kind, attrs, host


def _kind(name: str) -> TargetKind:
    kind = TARGET_KINDS.get(name)
    if kind is None:
        host = sorted(k for k, v in TARGET_KINDS.items() if v.is_host)
        device = sorted(k for k, v in TARGET_KINDS.items() if not v.is_host)
        raise KilnError(
            f"unknown target kind {name!r}; known kinds: {host} (host), {device} (device)"
        )
    return kind


def _canonical(kind: TargetKind, attrs: dict[str, Any]) -> tuple[tuple[str, Any], ...]:
    unknown = sorted(set(attrs) - set(kind.defaults))
    if unknown:
        raise KilnError(
            f"target {kind.name!r} has no attribute(s) {unknown}; it accepts "
            f"{sorted(kind.defaults)}"
        )
    out = []
    for key in sorted(attrs):
        value = _coerce(kind, key, attrs[key])
        if value != kind.defaults[key] or type(value) is not type(kind.defaults[key]):
            out.append((key, value))
    return tuple(out)


def _coerce(kind: TargetKind, key: str, value: Any) -> Any:
    """``value`` converted to the type of the attribute's default (strings come from parsing)."""
    default = kind.defaults[key]
    pattern = kind.patterns.get(key)
    if pattern is not None and not (isinstance(value, str) and re.fullmatch(pattern, value)):
        raise KilnError(
            f"target {kind.name!r}: attribute {key!r} expects a value matching {pattern!r} "
            f"(such as {default!r}), got {value!r}"
        )
    try:
        if isinstance(default, bool):
            if isinstance(value, str):
                if value.lower() not in ("true", "false", "1", "0"):
                    raise ValueError(value)
                return value.lower() in ("true", "1")
            return bool(value)
        if isinstance(default, int):
            return int(value)
    except (TypeError, ValueError):
        raise KilnError(
            f"target {kind.name!r}: attribute {key!r} expects {type(default).__name__}, "
            f"got {value!r}"
        ) from None
    return value


def _show(value: Any) -> str:
    if value is False:
        return "false"
    text = str(value)
    return shlex.quote(text) if (" " in text or not text) else text
