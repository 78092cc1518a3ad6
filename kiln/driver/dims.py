"""Declared sizes of a model's symbolic dims: ``kiln.compile(model, dims={...})``.

    kiln.compile("bert.onnx", dims={"seq": [16, 32, 64, 128]})   # size buckets
    kiln.compile("bert.onnx", dims={"seq": (1, 512)})            # bounds
    kiln.compile("bert.onnx", dims={"batch": [1, 8], "seq": (1, 64)})

- A **list** of sizes declares buckets. Besides the symbolic model, kiln compiles the model once
  for every combination of the listed sizes, with those dims fixed (ahead of time: nothing is
  compiled on the call path). A call whose dims match a combination runs that model, at the
  speed of a model exported with fixed shapes; any other call runs the symbolic model.
- A **tuple** ``(lo, hi)`` declares bounds: a call whose dim is outside them raises a
  `FrontendError` (a ``ValueError``) naming the input, the dim and both values, before any kernel
  runs.

- An **int** is an axis, for a torch module only: that axis of every tensor input that has it
  becomes the symbolic dim of that name (``dims={"batch": 0, "seq": 1}``;
  `kiln.driver.torch_export`).

Names are the symbolic dims of the model's inputs (``model.inputs`` lists them). Buckets need a
model kiln can import again with fixed shapes (an ONNX model, through ``shape_dict``). A torch
program's own ranges (``torch.export.Dim("batch", min=2, max=64)``) are checked as bounds too.
An exported model (`CompiledModel.export`) is the symbolic model: it runs every size.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kiln.errors import FrontendError, KilnError
from kiln.runtime.vm_format import TensorSpec

Variant = Any
"""A `kiln.driver.model.CompiledModel` compiled with some dims fixed."""


@dataclass(frozen=True)
class DeclaredDims:
    """The parsed ``dims=``: bucket sizes, bounds and (torch) axes per dim name."""

    sizes: dict[str, tuple[int, ...]] = field(default_factory=dict)
    bounds: dict[str, tuple[int, int | None]] = field(default_factory=dict)
    """name -> (low, high); high None: unbounded (a torch range with no maximum)."""
    axes: dict[str, int] = field(default_factory=dict)
    """name -> the axis of every torch input that becomes that symbolic dim."""
    origin: dict[str, str] = field(default_factory=dict)
    """name -> where its bounds come from, for the error (default ``dims=``)."""

    @staticmethod
    def parse(dims: Mapping[str, Any]) -> DeclaredDims:
        if not isinstance(dims, Mapping):
            raise KilnError(f"dims= takes a dict of dim name -> sizes, got {type(dims).__name__}")
        out = DeclaredDims()
        for name, value in dims.items():
            if _is_size(value):
                out.axes[str(name)] = int(value)
            elif isinstance(value, list) and value and all(_is_size(v) for v in value):
                out.sizes[str(name)] = tuple(sorted({int(v) for v in value}))
            elif isinstance(value, tuple) and len(value) == 2 and all(_is_size(v) for v in value):
                lo, hi = int(value[0]), int(value[1])
                if lo > hi:
                    raise KilnError(f"dims={{{name!r}: {value}}}: the bounds are (low, high)")
                out.bounds[str(name)] = (lo, hi)
            else:
                raise KilnError(
                    f"dims={{{name!r}: {value!r}}}: give a list of sizes (buckets, e.g. "
                    "[16, 32, 64]), a (low, high) tuple (bounds, e.g. (1, 512)) or, for a "
                    "torch module, an axis (e.g. 0)"
                )
        return out

    def with_ranges(
        self, ranges: Mapping[str, tuple[int, int | None]], origin: str
    ) -> DeclaredDims:
        """These dims with ``ranges`` (from ``origin``) as bounds too; where both bound a dim,
        the intersection (the declared bounds keep their origin)."""
        bounds, where = dict(self.bounds), dict(self.origin)
        for name, (lo, hi) in ranges.items():
            if name in bounds:
                have_lo, have_hi = bounds[name]
                hi = have_hi if hi is None else hi if have_hi is None else min(hi, have_hi)
                bounds[name] = (max(lo, have_lo), hi)
            else:
                bounds[name], where[name] = (lo, hi), origin
        return DeclaredDims(dict(self.sizes), bounds, dict(self.axes), where)

    def check_names(self, specs: Sequence[TensorSpec] | None) -> None:
        """Every declared name is a symbolic dim of the model's inputs."""
        known = symbolic_dims(specs)
        for name in [*self.sizes, *self.bounds]:
            if name not in known:
                have = ", ".join(sorted(known)) or "none"
                raise KilnError(
                    f"dims= names {name!r}, which is not a symbolic dim of the model's inputs "
                    f"(its symbolic dims: {have})"
                )

    def combinations(self) -> list[dict[str, int]]:
        """Every combination of the bucket sizes, as ``{name: size}``."""
        names = sorted(self.sizes)
        return [dict(zip(names, c)) for c in itertools.product(*(self.sizes[n] for n in names))]


def _is_size(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


def symbolic_dims(specs: Sequence[TensorSpec] | None) -> set[str]:
    """The names of the symbolic dims of ``specs``."""
    return {d for s in specs or () for d in s.dims or () if isinstance(d, str) and d.isidentifier()}


def fixed_shapes(specs: Sequence[TensorSpec], sizes: Mapping[str, int]) -> dict[str, list[Any]]:
    """``shape_dict`` fixing the dims ``sizes`` names (the other dims keep their names)."""
    return {
        s.name: [sizes.get(d, d) if isinstance(d, str) else d for d in s.dims]
        for s in specs
        if s.dims is not None and any(isinstance(d, str) and d in sizes for d in s.dims)
    }


@dataclass
class SizeRouter:
    """Checks a call's dims against the bounds and picks the bucket model its dims match."""

    specs: Sequence[TensorSpec]
    declared: DeclaredDims
    variants: dict[tuple[int, ...], Variant]
    where: dict[str, tuple[int, int]] = field(init=False)

    def __post_init__(self) -> None:
        # each declared dim: the first input holding it, and the axis
        self.where = {}
        for i, spec in enumerate(self.specs):
            for k, d in enumerate(spec.dims or ()):
                if isinstance(d, str) and d not in self.where:
                    self.where[d] = (i, k)

    def pick(self, values: Sequence[Any]) -> Variant | None:
        """The bucket model to call with ``values`` (None: the symbolic one); bounds checked."""
        for name, (lo, hi) in self.declared.bounds.items():
            have = self._dim(values, name)
            if have is not None and not (lo <= have and (hi is None or have <= hi)):
                spec = self.specs[self.where[name][0]]
                origin = self.declared.origin.get(name, "dims=")
                raise FrontendError(
                    f"input {spec.name!r} has {name} = {have} (dim {self.where[name][1]}); the "
                    f"model was compiled for {name} in [{lo}, {'inf' if hi is None else hi}] "
                    f"({origin})"
                )
        if not self.variants:
            return None
        key = tuple(self._dim(values, n) for n in sorted(self.declared.sizes))
        return self.variants.get(key)  # type: ignore[arg-type]

    def _dim(self, values: Sequence[Any], name: str) -> int | None:
        i, k = self.where[name]
        shape = getattr(values[i], "shape", None)
        return None if shape is None or k >= len(shape) else int(shape[k])
