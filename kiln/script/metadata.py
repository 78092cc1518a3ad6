"""The metadata section: constants too large to print inline, kept beside the script text.

Printing (`kiln.script.script`, ``mod.script()``, ``str(mod)``) writes a relax `Constant` of
more than `INLINE_MAX_ELEMENTS` elements as a reference, its dtype and shape inline:
``R.const(metadata["relax.Constant"][3], "float32", shape=(64, 3, 3, 3))``. Index ``i`` is the
``i``-th distinct Constant object of this print (one object printed twice gets one index), and
a printed module or function ends with a comment saying how many constants were elided.
``show_meta=True`` prints every constant inline instead. A dict passed as ``metadata=`` is
filled with the section (``"relax.Constant"`` -> the arrays in index order); `save_metadata`
writes it beside the script file and `load_metadata` reads it back.

Parsing (``from_source(text, metadata=...)``) resolves each reference from that dict and checks
it against the printed dtype and shape. ``metadata="placeholder"`` reads a dump whose section is
lost: each elided constant becomes a zero-filled array of the printed shape and dtype, so the
structure is exact and the values are not (for reading or transforming a dump, not running it).

TIR has no array-valued node (no ``AllocateConst``): its printer never writes array data, so
only relax constants have a section.
"""

from __future__ import annotations

import os
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from kiln.errors import IRError, IRValueError
from kiln.ir.dtype import DataType
from kiln.relax.expr import Constant

INLINE_MAX_ELEMENTS = 16
"""A constant with more elements than this prints as a metadata reference (unless show_meta)."""

RELAX_CONSTANT = "relax.Constant"
PLACEHOLDER = "placeholder"
NAME = "metadata"
"""The name references use in script text (the relax printer keeps it free)."""


def dtype_name(data: np.ndarray) -> str:
    """The script dtype of an array (``bool`` rather than numpy's ``bool_``)."""
    return "bool" if data.dtype == np.bool_ else str(data.dtype)


def ref_text(key: str, index: Any) -> str:
    """How a reference reads in script text: ``metadata["relax.Constant"][3]``."""
    return f'{NAME}["{key}"][{index!r}]'


class MetadataWriter:
    """Collects the constants one print elides, numbering distinct objects in order."""

    def __init__(self) -> None:
        self.sections: dict[str, list[np.ndarray]] = {}
        self.index: dict[int, int] = {}
        self.keep: list[Any] = []
        """The referenced nodes, kept alive so that their ids stay unique during the print."""

    @staticmethod
    def elides(data: np.ndarray) -> bool:
        return data.size > INLINE_MAX_ELEMENTS

    def ref(self, key: str, node: Any, data: np.ndarray) -> str:
        """The reference text of ``node`` (whose array is ``data``), numbered on first sight."""
        index = self.index.get(id(node))
        if index is None:
            section = self.sections.setdefault(key, [])
            index = self.index[id(node)] = len(section)
            section.append(data)
            self.keep.append(node)
        return ref_text(key, index)

    @property
    def count(self) -> int:
        return sum(len(arrays) for arrays in self.sections.values())

    def footer(self) -> str:
        """The closing comment of a printed module or function that elided constants."""
        parts = [f'{NAME}["{key}"][0..{len(a) - 1}]' for key, a in self.sections.items()]
        many = "constant was" if self.count == 1 else "constants were"
        return (
            f"# {self.count} {many} elided into the metadata section ({', '.join(parts)}); "
            "script(..., metadata={}) collects them, show_meta=True prints them inline"
        )

    def fill(self, metadata: dict) -> None:
        """Put the collected sections into the caller's ``metadata`` dict."""
        for key, arrays in self.sections.items():
            metadata[key] = list(arrays)


# -- parsing ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class MetadataRef:
    """``metadata["relax.Constant"][i]`` in parsed text: the array, or None for a placeholder.

    ``made`` holds the constants already built from this section by index: every reference to
    index ``i`` is one `Constant`, as one object printed twice was.
    """

    key: str
    index: int
    array: np.ndarray | None
    made: dict[int, Constant] = field(default_factory=dict, compare=False, repr=False)

    @property
    def text(self) -> str:
        return ref_text(self.key, self.index)

    def constant(self, dtype: str | DataType | None, shape: Any) -> Constant:
        """The `Constant` of this index (built on first use), checked against ``dtype`` and
        ``shape``."""
        made = self.made.get(self.index)
        if made is not None:
            replace(self, array=made.data).resolve(dtype, shape)
            return made
        out = self.made[self.index] = Constant(self.resolve(dtype, shape))
        return out

    def resolve(self, dtype: str | DataType | None, shape: Any) -> np.ndarray:
        """The array, checked against the dtype and shape the script gives (a zero-filled one
        of that dtype and shape for a placeholder)."""
        want_shape = _shape(shape, self.text) if shape is not None else None
        want_dtype = str(DataType.parse(dtype)) if dtype is not None else None
        data = self.array
        if data is None:
            if want_shape is None or want_dtype is None:
                raise IRValueError(
                    f"{self.text}: a placeholder constant needs its dtype and shape=, as in "
                    f'R.const({self.text}, "float32", shape=(4, 4))'
                )
            return np.zeros(want_shape, dtype=want_dtype)
        have = f"{self.text} holds {dtype_name(data)} data of shape {tuple(data.shape)}"
        if want_dtype is not None and want_dtype != dtype_name(data):
            raise IRValueError(f"{have}; the script expects dtype {want_dtype}")
        if want_shape is not None and want_shape != tuple(data.shape):
            raise IRValueError(f"{have}; the script expects shape {want_shape}")
        return data


def _shape(shape: Any, what: str) -> tuple[int, ...]:
    items = tuple(shape) if isinstance(shape, (tuple, list)) else (shape,)
    if not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in items):
        raise IRError(f"{what}: shape= takes a tuple of non-negative ints, got {shape!r}")
    return items


class MetadataTable:
    """What the name ``metadata`` is in parsed text: the caller's section dict (or none, or the
    placeholder mode), indexed by section key."""

    def __init__(self, given: Mapping[str, Any] | str | None) -> None:
        if isinstance(given, str) and given != PLACEHOLDER:
            raise IRValueError(
                f"from_source: metadata= takes a dict of sections or {PLACEHOLDER!r}, got {given!r}"
            )
        self.given = given
        self.made: dict[str, dict[int, Constant]] = {}

    def __getitem__(self, key: Any) -> MetadataSection:
        if not isinstance(key, str):
            raise IRError(f"{NAME}[...] takes a section name such as {RELAX_CONSTANT!r}: {key!r}")
        return MetadataSection(key, self.given, self.made.setdefault(key, {}))


@dataclass(frozen=True)
class MetadataSection:
    """``metadata["relax.Constant"]`` in parsed text; indexing it gives a `MetadataRef`."""

    key: str
    given: Mapping[str, Any] | str | None
    made: dict[int, Constant]

    def __getitem__(self, index: Any) -> MetadataRef:
        text = ref_text(self.key, index)
        if isinstance(index, bool) or not isinstance(index, int):
            raise IRError(f"{text}: a metadata index is an int")
        if self.given == PLACEHOLDER:
            return MetadataRef(self.key, index, None, self.made)
        if self.given is None:
            raise IRValueError(
                f"{text}: the script refers to its metadata section but none was given; pass "
                f"metadata=load_metadata(path) (or metadata={PLACEHOLDER!r} for zero-filled "
                "constants)"
            )
        assert not isinstance(self.given, str)
        arrays = self.given.get(self.key)
        if arrays is None:
            have = ", ".join(repr(k) for k in self.given) or "none"
            raise IRValueError(f"{text}: the metadata has no section {self.key!r} (it has {have})")
        if not 0 <= index < len(arrays):
            raise IRValueError(
                f"{text}: index out of range; section {self.key!r} holds {len(arrays)} "
                f"constant(s), indices 0 to {len(arrays) - 1}"
            )
        return MetadataRef(self.key, index, np.asarray(arrays[index]), self.made)


# -- the section beside a script file --------------------------------------------------------------
def metadata_path(path: str | os.PathLike[str]) -> str:
    """Where the section of script ``x.py`` lives: ``x.meta.npz`` (a ``.npz`` path as is)."""
    text = os.fspath(path)
    if text.endswith(".npz"):
        return text
    return os.path.splitext(text)[0] + ".meta.npz"


def save_metadata(path: str | os.PathLike[str], metadata: Mapping[str, Any]) -> str:
    """Write the section filled by ``script(..., metadata=d)`` beside script file ``path``
    (`metadata_path`); arrays are stored exactly, dtype included. Returns the file written."""
    members: dict[str, np.ndarray] = {}
    for key, arrays in metadata.items():
        if not isinstance(key, str) or "/" in key:
            raise IRValueError(f"save_metadata: a section name is a str without '/', got {key!r}")
        for i, a in enumerate(arrays):
            members[f"{key}/{i}"] = np.asarray(a)
    out = metadata_path(path)
    with open(out, "wb") as f:
        np.savez(f, **members)
    return out


def load_metadata(path: str | os.PathLike[str]) -> dict[str, list[np.ndarray]]:
    """The section `save_metadata` wrote beside script file ``path``, ready for ``from_source``."""
    found: dict[str, dict[int, np.ndarray]] = {}
    where = metadata_path(path)
    try:
        with np.load(where, allow_pickle=False) as z:
            for member in z.files:
                key, _, index = member.rpartition("/")
                if not key or not index.isdigit():
                    raise IRValueError(f"load_metadata: unexpected member {member!r} in {where}")
                found.setdefault(key, {})[int(index)] = z[member]
    except (ValueError, zipfile.BadZipFile) as e:
        if isinstance(e, IRValueError):
            raise
        raise IRValueError(f"load_metadata: {where} is not a metadata section ({e})") from None
    out: dict[str, list[np.ndarray]] = {}
    for key, items in found.items():
        if sorted(items) != list(range(len(items))):
            raise IRValueError(f"load_metadata: section {key!r} in {where} has gaps in its indices")
        out[key] = [items[i] for i in range(len(items))]
    return out


__all__ = [
    "INLINE_MAX_ELEMENTS",
    "PLACEHOLDER",
    "RELAX_CONSTANT",
    "MetadataRef",
    "MetadataTable",
    "MetadataWriter",
    "load_metadata",
    "metadata_path",
    "save_metadata",
]
