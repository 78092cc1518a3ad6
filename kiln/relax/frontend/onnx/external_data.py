"""ONNX external data: tensors whose bytes lie in files beside the ``.onnx`` file, read safely.

- `external_tensors(model)`: every tensor the model stores outside itself, with a label naming it
  (initializers, sparse initializers and attribute tensors of the graph, of every subgraph and of
  the model's functions).
- `locate(label, tensor, folder, where)`: where one tensor's bytes lie (an `ExternalRef`).
- `load_external_data(model, folder, where)`: reads them into the model, which then holds no
  external tensor (what the importer does).
- `hash_external_data(model, folder, where, h)`: feeds them to a hash, chunk by chunk (what the
  model cache's key does), through the same `locate`.

Invariants: a location resolves against ``folder``, the folder of the model's file, never the
working directory. One that leaves it (an absolute path, ``..``, a symlink that points out) is a
`FrontendError` naming the tensor, the location and the folder (onnxruntime refuses it too); a
missing or short file is one naming the tensor and the resolved path. A model given in memory has
no folder (``folder`` is None): its external data must have been loaded already (``onnx.load(path)``
does), else a `FrontendError`. ``onnx`` itself is never imported here: the protos carry their enums.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kiln.errors import FrontendError

CHUNK = 1 << 20
"""Bytes read at a time when hashing: a large weights file is never held whole for a key."""


@dataclass(frozen=True)
class ExternalRef:
    """``length`` bytes (None: to the end of the file) at ``offset`` of ``path``, a regular file
    inside the model's folder; ``what`` names the model and the tensor for errors."""

    what: str
    location: str
    path: Path
    offset: int
    length: int | None


def external_tensors(model: Any) -> list[tuple[str, Any]]:
    """(label, tensor) of every tensor of ``model`` stored in external data, in model order."""
    return [(label, t) for label, t in _all_tensors(model) if t.data_location == t.EXTERNAL]


def _all_tensors(model: Any) -> Iterator[tuple[str, Any]]:
    yield from _graph_tensors(model.graph)
    for func in model.functions:
        yield from _node_tensors(func.node)


def _graph_tensors(graph: Any) -> Iterator[tuple[str, Any]]:
    for t in graph.initializer:
        yield f"initializer {t.name!r}", t
    for s in graph.sparse_initializer:
        yield f"sparse initializer {s.values.name!r}", s.values
        yield f"the indices of sparse initializer {s.values.name!r}", s.indices
    yield from _node_tensors(graph.node)


def _node_tensors(nodes: Iterable[Any]) -> Iterator[tuple[str, Any]]:
    for node in nodes:
        for a in node.attribute:
            where = f"attribute {a.name!r} of node {node.name or node.op_type!r}"
            tensors = ([a.t] if a.HasField("t") else []) + list(a.tensors)
            sparse = ([a.sparse_tensor] if a.HasField("sparse_tensor") else []) + list(
                a.sparse_tensors
            )
            tensors += [part for s in sparse for part in (s.values, s.indices)]
            for t in tensors:
                yield (f"tensor {t.name!r} ({where})" if t.name else f"the tensor of {where}"), t
            for g in ([a.g] if a.HasField("g") else []) + list(a.graphs):
                yield from _graph_tensors(g)


def locate(label: str, tensor: Any, folder: Path | None, where: str) -> ExternalRef:
    """Where ``tensor``'s external bytes lie, checked (see the module docstring)."""
    info = {e.key: e.value for e in tensor.external_data}
    location = info.get("location", "")
    what = f"{where}: {label}"
    if folder is None:
        raise FrontendError(
            f"{what} is stored in the external data file {location!r}, which a model given in "
            "memory cannot read (it has no folder to read it from): pass the model's path, or "
            "load it with onnx.load(path), which reads its external data"
        )
    if not location:
        raise FrontendError(f"{what} is stored in external data that names no location")
    offset = _count(info, "offset", what)
    length = _count(info, "length", what) if "length" in info else None
    root = folder.resolve()
    try:
        # NOTE: resolve() follows every symlink: the check below is on the file that is read.
        path = (root / location).resolve()
    except (OSError, ValueError, RuntimeError) as e:  # a NUL byte, a symlink loop
        raise FrontendError(
            f"{what}: external data location {location!r} is not a path: {e}"
        ) from None
    if os.path.isabs(location) or not path.is_relative_to(root):
        raise FrontendError(
            f"{what} names the external data file {location!r}, outside the model's folder "
            f"{root}: external data must lie in the folder of the .onnx file or below it "
            "(onnxruntime refuses it too)"
        )
    if not path.is_file():
        raise FrontendError(
            f"{what}: its external data file {path} does not exist (external data is read from "
            f"the model's folder, {root})"
        )
    return ExternalRef(what, location, path, offset, length)


def _count(info: dict[str, str], key: str, what: str) -> int:
    try:
        value = int(info.get(key, "0"))
    except ValueError:
        value = -1
    if value < 0:
        raise FrontendError(f"{what}: external data {key} {info[key]!r} is not a byte count")
    return value


def read_chunks(ref: ExternalRef, chunk: int | None = CHUNK) -> Iterator[bytes]:
    """The bytes of ``ref`` in pieces of at most ``chunk`` bytes (None: one piece)."""
    try:
        with open(ref.path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            end = size if ref.length is None else ref.offset + ref.length
            if ref.offset > size or end > size:
                raise FrontendError(
                    f"{ref.what}: its external data file {ref.path} holds {size} bytes; the "
                    f"tensor needs bytes {ref.offset} to {end}"
                )
            f.seek(ref.offset)
            left = end - ref.offset
            while left > 0:
                piece = f.read(left if chunk is None else min(chunk, left))
                if not piece:
                    raise FrontendError(f"{ref.what}: {ref.path} shrank while kiln read it")
                left -= len(piece)
                yield piece
    except OSError as e:
        raise FrontendError(
            f"{ref.what}: cannot read its external data file {ref.path}: {e}"
        ) from None


def load_external_data(model: Any, folder: Path | None, where: str) -> None:
    """Read every external tensor of ``model`` into it (``model`` is changed in place; a model
    without external data is left as it is)."""
    for label, t in external_tensors(model):
        ref = locate(label, t, folder, where)
        t.raw_data = b"".join(read_chunks(ref, None))
        t.data_location = t.DEFAULT
        del t.external_data[:]


def hash_external_data(model: Any, folder: Path, where: str, h: Any) -> None:
    """Feed ``h`` (a hashlib object) the location, offset, length and bytes of every external
    tensor of ``model``."""
    for label, t in external_tensors(model):
        ref = locate(label, t, folder, where)
        data = hashlib.sha256()
        for piece in read_chunks(ref):
            data.update(piece)
        h.update(f"{ref.location}\0{ref.offset}\0{ref.length}\0{data.hexdigest()}\n".encode())
