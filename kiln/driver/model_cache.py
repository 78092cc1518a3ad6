"""`kiln.compile`'s cache of whole models: a model compiled before loads without compiling.

The key (`model_key`) is a sha256 over the model's bytes (an ONNX file's content and every byte
of external data it reads, with each tensor's location, offset and length; ONNX bytes; or a
serialized ``onnx.ModelProto``; for a TorchDynamo graph, the digest `kiln.driver.dynamo` computes
over its code, inputs, weights and the torch version), the frontend options, target, exec mode,
entry and external codegens, the C compiler's identity and flags (`model_flags`, and through
`kiln.runtime.toolchain.cache_key` the compiler's version and, for ``-march=native``, the CPU),
and `source_fingerprint` (`kiln.driver.kernel_cache`): a hash of every source file of the
installed kiln, so a changed kiln never loads a library an older one compiled. Other model
kinds (IRModules, torch modules and programs) get no key: they compile as before, their kernels
still cached by the C toolchain.

An entry, in ``<KILN_CACHE_DIR>/models/``: ``kiln_model-<key>.so`` (the exported library, as
``CompiledModel.export`` writes it), its ``.so.sha256`` digest, and ``.json`` (the entry function
and the model's input specs). `lookup` returns an entry only when its digest matches and its
``.json`` reads; anything else is a miss, and the caller compiles and `store`s a fresh entry
over it. The folder is checked like every cache folder (`kiln.runtime.disk_cache`: mode 0700,
yours); a hit marks the entry used for the cache's size cap. The library is published with
`kiln.runtime.toolchain.publish_entry` (an atomic rename, then its digest).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from kiln import config
from kiln.driver.inputs import InputSpec
from kiln.driver.kernel_cache import source_fingerprint
from kiln.driver.relax_build import model_flags
from kiln.ir.target import Target
from kiln.runtime import disk_cache
from kiln.runtime.toolchain import cache_key, find_compiler, is_valid_entry, publish_entry

FORMAT = "kiln-model-cache-1"
"""Changes whenever the entry layout changes."""


EXTERNAL_MARK = b"location"
"""Every external tensor names its file under this key: a model without it has no external
data."""
DIGEST_MEMO = "file-digests.json"
"""In the models folder: the sha256 of model files read before, by path and `os.stat`."""
DIGEST_MEMO_SIZE = 256
"""How many files the memo remembers (the oldest are dropped)."""


def _stat_of(path: Path) -> list[int]:
    st = path.stat()
    return [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev]


def _file_digest(path: Path) -> tuple[str, bool]:
    """(sha256 of the file's bytes, whether they hold `EXTERNAL_MARK`), remembered in `DIGEST_MEMO`
    by the file's absolute path and its size, modification and change times, inode and device:
    any write changes the change time, so a file whose stat is the same has the same bytes.
    NOTE: a cached load of a 175 MB model hashed it for 0.15-0.3 s; it now reads the memo."""
    memo_path = disk_cache.subfolder("models") / DIGEST_MEMO
    try:
        memo = json.loads(memo_path.read_text())
    except (OSError, ValueError):
        memo = {}
    name = str(path.resolve())
    stat = _stat_of(path)
    known = memo.get(name) if isinstance(memo, dict) else None
    if isinstance(known, list) and len(known) == 3 and known[0] == stat:
        return str(known[1]), bool(known[2])
    h = hashlib.sha256()
    found, tail = False, b""
    with open(path, "rb") as f:
        while piece := f.read(1 << 20):
            h.update(piece)
            found = (
                found
                or EXTERNAL_MARK in tail + piece[: len(EXTERNAL_MARK)]
                or (EXTERNAL_MARK in piece)
            )
            tail = piece[-len(EXTERNAL_MARK) :]
    digest = h.hexdigest()
    memo = {k: v for k, v in (memo.items() if isinstance(memo, dict) else ()) if k != name}
    memo[name] = [stat, digest, found]
    tmp = disk_cache.temp_path(memo_path)
    try:
        tmp.write_text(json.dumps(dict(list(memo.items())[-DIGEST_MEMO_SIZE:])))
        os.replace(tmp, memo_path)
    finally:
        tmp.unlink(missing_ok=True)
    return digest, found


def _model_digest(obj: Any) -> str | None:
    """sha256 over every byte that defines ``obj`` when it is an ONNX model, else None: an ONNX
    file's bytes and those of its external data, read as the importer reads them (through
    `kiln.relax.frontend.onnx.external_data`, which refuses a location outside the file's folder).
    A model in memory has no external data the importer reads: its own bytes are all."""
    if isinstance(obj, (bytes, bytearray)):
        return hashlib.sha256(obj).hexdigest()
    if isinstance(obj, (str, os.PathLike)):
        path = Path(obj)
        if not path.is_file():
            return None
        digest, external = _file_digest(path)
        if not external:  # NOTE: not parsed here (the importer parses it)
            return digest
        # NOTE: must stay a function-level import, as in `kiln.driver.inputs`: only a model with
        # external data loads the ONNX frontend here
        from kiln.relax.frontend.onnx import external_data, importer

        data = path.read_bytes()
        h = hashlib.sha256(data)
        model = importer.parse_model(data, str(path))
        external_data.hash_external_data(model, path.parent, str(path), h)
        return h.hexdigest()
    if type(obj).__name__ == "ModelProto" and type(obj).__module__.startswith("onnx"):
        return hashlib.sha256(obj.SerializeToString()).hexdigest()
    return None


def model_key(
    obj: Any,
    target: Target,
    exec_mode: str,
    entry: str,
    external_codegens: Sequence[str],
    options: dict[str, Any],
    digest: str | None = None,
) -> str | None:
    """The cache key of compiling ``obj`` so (see the module docstring); None when ``obj`` is
    not a kind the cache keys, or when ``KILN_DEBUG`` is set. ``digest`` stands for the model's
    bytes where the caller hashed the model itself (a TorchDynamo graph: `kiln.driver.dynamo`)."""
    if config.load().debug > 0:  # NOTE: debugging asks to see the passes run: no cache
        return None
    digest = digest if digest is not None else _model_digest(obj)
    if digest is None:
        return None
    parts = [
        FORMAT,
        source_fingerprint(),
        digest,
        repr(sorted(options.items())),
        str(target),
        exec_mode,
        entry,
        repr(tuple(external_codegens)),
    ]
    return cache_key("\n".join(parts), model_flags(target), tuple(find_compiler()))


def entry_path(key: str) -> Path:
    return config.load().cache_dir / "models" / f"kiln_model-{key[:40]}.so"


def lookup(key: str) -> tuple[Path, list[InputSpec] | None] | None:
    """(library, input specs) of the valid entry for ``key``, or None."""
    disk_cache.subfolder("models", create=False)  # NOTE: never load from an unsafe folder
    lib = entry_path(key)
    if not is_valid_entry(lib):
        return None
    try:
        meta = json.loads(lib.with_suffix(".json").read_text())
        specs = meta["inputs"]
        inputs = None if specs is None else [
            InputSpec(s["name"], s["dtype"], None if s["dims"] is None else tuple(s["dims"]))
            for s in specs
        ]  # fmt: skip
    except (OSError, ValueError, KeyError, TypeError):
        return None
    disk_cache.touch(lib)
    disk_cache.note_in_use(lib)
    return lib, inputs


def store(key: str, export: Any, inputs: list[InputSpec] | None) -> Path:
    """Write the entry for ``key``: ``export(path)`` writes the library; returns its path."""
    disk_cache.subfolder("models")
    lib = entry_path(key)
    specs = None if inputs is None else [
        {"name": s.name, "dtype": s.dtype, "dims": None if s.dims is None else list(s.dims)}
        for s in inputs
    ]  # fmt: skip
    meta = lib.with_suffix(".json")
    # NOTE: temp files and folders are named by this process's pid and removed on any failure
    # (a full disk); a killed process's are removed by the next one (`disk_cache`).
    tmp = disk_cache.temp_path(meta)
    try:
        tmp.write_text(json.dumps({"format": FORMAT, "inputs": specs}))
        os.replace(tmp, meta)  # NOTE: before the library: a valid library always has its .json
    finally:
        tmp.unlink(missing_ok=True)
    work = disk_cache.temp_path(lib, folder=True)
    try:
        built = export(work / "model.so")
        publish_entry(Path(built), lib)
    finally:
        disk_cache.remove(work)
    return lib
