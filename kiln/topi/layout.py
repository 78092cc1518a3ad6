"""Data layouts written as strings, and the transform between two layouts of the same tensor.

A layout names a tensor's axes outermost first. An upper-case letter is a *primal* axis
(``N``, ``C``, ``H``, ``W``; ``O``, ``I`` for filters; ``K``, ``N`` for a matrix); a number and
a lower-case letter is a *block* of the primal axis of that letter, split off as an inner axis:
``NCHW16c`` is NCHW with channels in blocks of 16 (``[n, c // 16, h, w, c % 16]``),
``OIHW16i32o`` a filter in blocks of 16 input and 32 output channels
(``[o // 32, i // 16, kh, kw, i % 16, o % 32]``), ``NK64n`` the column panels of a ``K x N``
matrix (``[j // 64, k, j % 64]``). Every primal axis appears once, a block at most once, after
its primal axis.

`layout_transform` maps a tensor between two layouts of the same primal axes: element
``x[..]`` moves, nothing is computed, so the numpy version `transform_array` gives exactly the
same values. A primal axis whose extent a new block does not divide is padded with zeros to
whole blocks; going back to a layout without the block keeps the padded extent. The extent of a
blocked primal axis must be constant; others (a batch) may be symbolic.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import numpy as np

from kiln import te
from kiln.errors import IRError, IRValueError
from kiln.te import Tensor
from kiln.tir.expr import PrimExpr, convert
from kiln.topi.tag import Pattern, attrs_for
from kiln.topi.utils import check_tensor, const_int, show_shape

LAYOUT_TRANSFORM = "layout_transform"
"""Tag of the transform's compute (injective)."""

_TOKEN = re.compile(r"([A-Z])|([0-9]+)([a-z])")


@dataclass(frozen=True)
class Layout:
    """A parsed layout: ``axes`` are ``(letter, block)`` outermost first, ``block`` 0 for a
    primal axis (``NCHW16c``: N/0, C/0, H/0, W/0, C/16)."""

    name: str
    axes: tuple[tuple[str, int], ...]

    @staticmethod
    def parse(name: str) -> Layout:
        """The layout ``name``; an `IRValueError` names what is wrong with it."""
        if not isinstance(name, str) or not name:
            raise IRValueError(f"layout must be a non-empty string, got {name!r}")
        axes: list[tuple[str, int]] = []
        pos = 0
        for m in _TOKEN.finditer(name):
            if m.start() != pos:
                break
            pos = m.end()
            if m.group(1):
                axes.append((m.group(1), 0))
            else:
                axes.append((m.group(3).upper(), int(m.group(2))))
        if pos != len(name):
            raise IRValueError(
                f"layout {name!r}: expected upper-case axes and blocks like '16c' (e.g. "
                f"'NCHW16c'), got {name[pos:]!r} at position {pos}"
            )
        _check(name, axes)
        return Layout(name, tuple(axes))

    @property
    def primal(self) -> tuple[str, ...]:
        """The primal axes, in order."""
        return tuple(a for a, b in self.axes if b == 0)

    def block(self, letter: str) -> int:
        """The block size of primal axis ``letter`` (0: not blocked)."""
        return next((b for a, b in self.axes if a == letter and b), 0)

    def index_of(self, letter: str, block: bool = False) -> int:
        """Position of primal axis ``letter`` (or of its block)."""
        return next(i for i, (a, b) in enumerate(self.axes) if a == letter and bool(b) == block)

    def __str__(self) -> str:
        return self.name


def _check(name: str, axes: list[tuple[str, int]]) -> None:
    seen: set[str] = set()
    blocked: set[str] = set()
    for letter, block in axes:
        if block == 0:
            if letter in seen:
                raise IRValueError(f"layout {name!r}: axis {letter!r} appears twice")
            seen.add(letter)
            continue
        if letter not in seen:
            raise IRValueError(
                f"layout {name!r}: block {block}{letter.lower()} comes before (or without) "
                f"its axis {letter!r}"
            )
        if letter in blocked or block < 1:
            raise IRValueError(f"layout {name!r}: axis {letter!r} has a bad or second block")
        blocked.add(letter)


def as_layout(value: Any) -> Layout:
    """``value`` (a `Layout` or a layout string) as a `Layout`."""
    return value if isinstance(value, Layout) else Layout.parse(value)


def _check_pair(src: Layout, dst: Layout) -> None:
    if sorted(src.primal) != sorted(dst.primal):
        raise IRValueError(
            f"layout_transform: layouts {src.name!r} and {dst.name!r} have different axes "
            f"({''.join(src.primal)} vs {''.join(dst.primal)})"
        )


def primal_extents(shape: Any, src: Layout, what: str = "tensor") -> dict[str, Any]:
    """The extent of each primal axis of a ``shape`` in layout ``src`` (a blocked axis counts
    its blocks times the block)."""
    if len(shape) != len(src.axes):
        raise IRValueError(
            f"layout_transform: {what} has rank {len(shape)}, layout {src.name!r} has "
            f"{len(src.axes)} axes"
        )
    out: dict[str, Any] = {}
    for (letter, block), ext in zip(src.axes, shape):
        if block:
            if const_int(ext) != block:
                raise IRValueError(
                    f"layout_transform: {what} axis {len(out)} of layout {src.name!r} must "
                    f"have extent {block}, got {ext}"
                )
            continue
        out[letter] = ext
    for letter in src.primal:
        block = src.block(letter)
        if block:
            outer = const_int(out[letter])
            if outer is None:
                raise IRValueError(
                    f"layout_transform: blocked axis {letter!r} of {what} needs a constant "
                    f"extent, got {out[letter]}"
                )
            out[letter] = outer * block
    return out


def transformed_shape(extents: dict[str, Any], dst: Layout) -> list[Any]:
    """The shape in layout ``dst`` of a tensor whose primal axes have ``extents``."""
    shape: list[Any] = []
    for letter, block in dst.axes:
        if block:
            shape.append(block)
            continue
        ext, b = extents[letter], dst.block(letter)
        if b:
            n = const_int(ext)
            if n is None:
                raise IRValueError(
                    f"layout_transform: axis {letter!r} is split into blocks of {b}, so its "
                    f"extent must be constant, got {ext}"
                )
            ext = -(-n // b)
        shape.append(ext)
    return shape


def layout_transform(x: Any, src: Any, dst: Any, name: str = "T_layout_transform") -> Tensor:
    """``x`` (in layout ``src``) in layout ``dst`` (see the module docstring)."""
    x = check_tensor(LAYOUT_TRANSFORM, x, "data")
    s, d = as_layout(src), as_layout(dst)
    _check_pair(s, d)
    extents = primal_extents(x.shape, s, repr(x.name))
    shape = transformed_shape(extents, d)
    padded = [
        letter
        for letter in d.primal
        if d.block(letter) and const_int(extents[letter]) % d.block(letter)
    ]
    zero = convert(0.0, x.dtype) if x.dtype.is_float else convert(0, x.dtype)

    def body(*idx: Any) -> Any:
        coord: dict[str, Any] = {}
        for (letter, block), i in zip(d.axes, idx):
            if block == 0:
                b = d.block(letter)
                coord[letter] = i * b if b else i
        for (letter, block), i in zip(d.axes, idx):
            if block:
                coord[letter] = coord[letter] + i
        src_idx = []
        for letter, block in s.axes:
            b = s.block(letter)
            if block:
                src_idx.append(coord[letter] % block)
            else:
                src_idx.append(coord[letter] // b if b else coord[letter])
        value = x[tuple(src_idx)]
        if not padded:
            return value
        inside = [coord[p] < extents[p] for p in padded]
        cond: PrimExpr = inside[0]
        for c in inside[1:]:
            cond = cond & c
        return te.if_then_else(cond, value, zero)

    attrs = attrs_for(LAYOUT_TRANSFORM, Pattern.INJECTIVE, src_layout=s.name, dst_layout=d.name)
    return te.compute(tuple(shape), body, name=name, tag=LAYOUT_TRANSFORM, attrs=attrs)


def transform_array(x: np.ndarray, src: Any, dst: Any) -> np.ndarray:
    """`layout_transform` of a numpy array (the same values, computed by numpy)."""
    s, d = as_layout(src), as_layout(dst)
    _check_pair(s, d)
    extents = primal_extents(x.shape, s, f"array {x.shape}")
    # 1. to the primal axes in src's order (merge each block into its axis)
    order = [i for i, (_, b) in enumerate(s.axes) if b == 0]
    for letter in s.primal:
        if s.block(letter):
            pos = order.index(s.index_of(letter))
            order.insert(pos + 1, s.index_of(letter, block=True))
    flat = x.transpose(order).reshape([extents[a] for a in s.primal])
    # 2. pad to whole blocks of dst
    pads = [(0, (-extents[a]) % d.block(a)) if d.block(a) else (0, 0) for a in s.primal]
    if any(p for _, p in pads):
        flat = np.pad(flat, pads)
    # 3. split dst's blocks off, then put the axes in dst's order
    split: list[int] = []
    names: list[tuple[str, bool]] = []
    for a, n in zip(s.primal, flat.shape):
        b = d.block(a)
        split += [n // b, b] if b else [n]
        names += [(a, False), (a, True)] if b else [(a, False)]
    pieces = flat.reshape(split)
    perm = [names.index((a, bool(b))) for a, b in d.axes]
    return np.ascontiguousarray(pieces.transpose(perm))


def check_layout_shape(op: str, t: Tensor, layout: Layout) -> None:
    """An `IRValueError` unless ``t``'s rank and block extents fit ``layout``."""
    if t.ndim != len(layout.axes):
        raise IRValueError(
            f"{op}: tensor {t.name!r} {show_shape(t)} does not have the rank of layout "
            f"{layout.name!r}"
        )
    for pos, (_, block) in enumerate(layout.axes):
        if block and const_int(t.shape[pos]) != block:
            raise IRError(
                f"{op}: tensor {t.name!r} {show_shape(t)} axis {pos} must be {block} (layout "
                f"{layout.name!r})"
            )
