"""The VM executable format: function table, instruction set, constant pool, serialization.

The runtime owns this format; the compiler half (kiln/vm) imports it to write executables.

Function table (`VMFunction`, one entry per callable the VM knows, by index):

- `FuncKind.BYTECODE`: a VM function interpreted from instructions ``[start, end)``;
- `FuncKind.VMTIR`: a compiled VM function, the library's exposed ``__vmtir__<name>``
  (see `kiln.runtime.vm_anylist` for its calling convention);
- `FuncKind.PACKED`: a tvm-ffi function looked up by name when the VM is created (the library
  first, then the global registry; every ``vm.builtin.*`` is one of these);
- `FuncKind.KERNEL`: an exposed function of the executable's own library (a compiled kernel).
  The kernel table, `Executable.kernels`, is the names of these entries.

VM functions have parameter names (for errors) and a register count; parameters arrive in
registers 0..n-1. A compiled function returns its result in register n.

Instructions (`Call`, `Ret`, `Goto`, `If`) index registers of the current frame. `Call(dst,
func, args)` calls function-table entry ``func`` and stores the result in register ``dst``
(`VOID_REGISTER`: drop it); each argument is an `Arg` of kind register, immediate (int64),
constant index or function index. Two special registers: `VOID_REGISTER` as an argument passes
None; `CONTEXT_REGISTER` passes the VM context (what builtins with ``needs_ctx`` take first).
`Goto(offset)` and `If(cond, false_offset)` jump relative to their own index; `If` falls through
when register ``cond`` holds a nonzero int or bool (read a tensor condition with
``vm.builtin.read_if_cond`` first). `Ret(reg)` returns register ``reg``.

Encoding: a flat little-endian int64 stream; ``Call`` is ``[1, dst, func, nargs, arg...]``,
``Ret`` ``[2, reg]``, ``Goto`` ``[3, offset]``, ``If`` ``[4, cond, false_offset]``; an argument
word holds its kind in the top 8 bits and a sign-extended 56-bit value below.

Constants: numpy arrays (tensors), `ShapeConst`, `DTypeConst`, str, int, float, bool, None.

Signatures (`Signature`, optional, one per VM function whose inputs and results are tensors):
the names, dtypes and dims (ints, or the names of symbolic dims) of what the function takes and
returns, so a loaded library says how to call it without the compiler.

Serialized executable (`Executable.serialize`), all offsets in bytes from the start:

    0   magic b"KILNVMX\\0"       8   u32 VM_FORMAT_VERSION     12  u32 flags (0)
    16  u64 meta offset, size     32  u64 code offset, words    48  u64 data offset, size
    64  meta: UTF-8 JSON {"functions": [...], "constants": [...], "signatures": [...],
                          "costs": [[kernel, flops, bytes], ...],
                          "nodes": {kernel: [model node name, ...], ...},
                          "externals": {symbol: external codegen name, ...}}
        code: int64 words (64-byte aligned); data: tensor bytes, each 64-byte aligned.

A blob without "signatures", "costs" or "nodes" (an older kiln's) reads as having none, one
without "externals" as not knowing them (``None``); an older kiln ignores the keys it does not
know, so adding one needs no new version.
Another magic is "not a kiln executable", another version is refused by name; both are
`KilnError`s, as is any section that does not fit in the blob.
"""

from __future__ import annotations

import enum
import io
import json
import os
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO, Union

import numpy as np

from kiln.errors import KilnError

VM_FORMAT_VERSION = 2
"""Version of the serialized format and instruction encoding (the C runtime checks it too)."""

MAGIC = b"KILNVMX\x00"
VOID_REGISTER = -1
CONTEXT_REGISTER = -2
ALIGN = 64

_HEADER = struct.Struct("<8sII6Q")
_VALUE_BITS = 56


class Opcode(enum.IntEnum):
    CALL = 1
    RET = 2
    GOTO = 3
    IF = 4


class ArgKind(enum.IntEnum):
    REGISTER = 0
    IMMEDIATE = 1
    CONST = 2
    FUNC = 3


class FuncKind(enum.IntEnum):
    BYTECODE = 0
    VMTIR = 1
    PACKED = 2
    KERNEL = 3


VMTIR_PREFIX = "__vmtir__"
VMTIR_ENTRY_PREFIX = "__vmtir_entry__"
"""``__vmtir_entry__<name>()`` (optional, in the library beside ``__vmtir__<name>``): the address
of the unchecked C function ``int32_t (void* ctx_ptr, void* r, void* c, void* f)``, which the VM
then calls directly (see `kiln.runtime.vm_anylist`)."""
"""A compiled VM function ``f`` is the library's exposed function ``__vmtir__f``."""


@dataclass(frozen=True)
class Arg:
    """One call argument: a register, an int64 immediate, a constant or a function index."""

    kind: ArgKind
    value: int

    @staticmethod
    def reg(i: int) -> Arg:
        return Arg(ArgKind.REGISTER, i)

    @staticmethod
    def imm(v: int) -> Arg:
        return Arg(ArgKind.IMMEDIATE, v)

    @staticmethod
    def const(i: int) -> Arg:
        return Arg(ArgKind.CONST, i)

    @staticmethod
    def func(i: int) -> Arg:
        return Arg(ArgKind.FUNC, i)


CONTEXT = Arg(ArgKind.REGISTER, CONTEXT_REGISTER)
"""The VM context argument (for builtins with ``needs_ctx``)."""
NONE_ARG = Arg(ArgKind.REGISTER, VOID_REGISTER)
"""An argument that passes None."""


@dataclass(frozen=True)
class Call:
    dst: int
    func: int
    args: tuple[Arg, ...] = ()


@dataclass(frozen=True)
class Ret:
    reg: int


@dataclass(frozen=True)
class Goto:
    offset: int


@dataclass(frozen=True)
class If:
    cond: int
    false_offset: int


Instruction = Union[Call, Ret, Goto, If]


@dataclass(frozen=True)
class VMFunction:
    """One function-table entry (see the module docstring for the kinds)."""

    name: str
    kind: FuncKind
    params: tuple[str, ...] = ()
    num_registers: int = 0
    start: int = 0
    end: int = 0


@dataclass(frozen=True)
class TensorSpec:
    """A tensor a VM function takes or returns: name, dtype and dims (ints, or names of
    symbolic dims; None when the rank is unknown)."""

    name: str
    dtype: str
    dims: tuple[int | str, ...] | None

    def describe(self) -> str:
        if self.dims is None:
            return f"{self.name}: {self.dtype}"
        return f"{self.name}: {self.dtype}[{', '.join(str(d) for d in self.dims)}]"


@dataclass(frozen=True)
class Signature:
    """What VM function ``function`` takes (in parameter order) and returns (a tuple result
    flattened in order)."""

    function: str
    inputs: tuple[TensorSpec, ...]
    outputs: tuple[TensorSpec, ...]


@dataclass(frozen=True)
class ShapeConst:
    """A shape constant (a tvm-ffi Shape at run time)."""

    dims: tuple[int, ...]


@dataclass(frozen=True)
class DTypeConst:
    """A dtype constant, by name ("float32"; a tvm-ffi DataType at run time)."""

    name: str


def _pack_arg(a: Arg) -> int:
    lo, hi = -(1 << (_VALUE_BITS - 1)), (1 << (_VALUE_BITS - 1)) - 1
    if not lo <= a.value <= hi:
        raise KilnError(f"VM argument value {a.value} does not fit in {_VALUE_BITS} bits")
    word = (int(a.kind) << _VALUE_BITS) | (a.value & ((1 << _VALUE_BITS) - 1))
    return word - (1 << 64) if word >= 1 << 63 else word


def _unpack_arg(word: int) -> Arg:
    u = word & ((1 << 64) - 1)
    kind, value = u >> _VALUE_BITS, u & ((1 << _VALUE_BITS) - 1)
    if value >= 1 << (_VALUE_BITS - 1):
        value -= 1 << _VALUE_BITS
    if kind not in ArgKind._value2member_map_:
        raise KilnError(f"corrupt executable: unknown argument kind {kind}")
    return Arg(ArgKind(kind), value)


def encode(instructions: tuple[Instruction, ...] | list[Instruction]) -> np.ndarray:
    """The int64 word stream of ``instructions``."""
    words: list[int] = []
    for ins in instructions:
        if isinstance(ins, Call):
            words += [Opcode.CALL, ins.dst, ins.func, len(ins.args)]
            words += [_pack_arg(a) for a in ins.args]
        elif isinstance(ins, Ret):
            words += [Opcode.RET, ins.reg]
        elif isinstance(ins, Goto):
            words += [Opcode.GOTO, ins.offset]
        elif isinstance(ins, If):
            words += [Opcode.IF, ins.cond, ins.false_offset]
        else:
            raise KilnError(f"not a VM instruction: {ins!r}")
    return np.array(words, dtype="<i8")


def decode(words: np.ndarray) -> tuple[Instruction, ...]:
    """Instructions from an int64 word stream (`KilnError` when it is malformed)."""
    w = [int(x) for x in words]
    out: list[Instruction] = []
    pos = 0
    width = {Opcode.CALL: 4, Opcode.RET: 2, Opcode.GOTO: 2, Opcode.IF: 3}
    while pos < len(w):
        op = w[pos]
        if op not in width or pos + width[Opcode(op)] > len(w):
            raise KilnError(f"corrupt executable: bad instruction word {op} at {pos}")
        if op == Opcode.CALL:
            n = w[pos + 3]
            if n < 0 or pos + 4 + n > len(w):
                raise KilnError(f"corrupt executable: bad argument count {n} at {pos}")
            args = tuple(_unpack_arg(x) for x in w[pos + 4 : pos + 4 + n])
            out.append(Call(w[pos + 1], w[pos + 2], args))
            pos += 4 + n
        elif op == Opcode.RET:
            out.append(Ret(w[pos + 1]))
            pos += 2
        elif op == Opcode.GOTO:
            out.append(Goto(w[pos + 1]))
            pos += 2
        else:
            out.append(If(w[pos + 1], w[pos + 2]))
            pos += 3
    return tuple(out)


@dataclass(frozen=True, eq=False)
class Executable:
    """A VM program: function table, instructions, constants, and the library it runs with.

    ``library`` is the loaded kernels (and ``__vmtir__`` functions in compiled mode); it is not
    serialized. `kiln.runtime.vm_export.export_library` writes all of it into one file.
    """

    functions: tuple[VMFunction, ...]
    instructions: tuple[Instruction, ...] = ()
    constants: tuple[Any, ...] = ()
    library: Any = field(default=None)
    signatures: tuple[Signature, ...] = ()
    costs: tuple[tuple[str, int | str, int | str], ...] = ()
    """``(kernel, flops, bytes)`` of the kernels whose work is known
    (`kiln.relax.analysis.cost`; a symbolic count is its expression's text)."""
    nodes: tuple[tuple[str, tuple[str, ...]], ...] = ()
    """``(kernel, model node names)`` of the kernels whose calls named model nodes (ONNX or FX
    node names, from every call site of the kernel), for profiles and ``kiln inspect``."""
    externals: tuple[tuple[str, str], ...] | None = ()
    """``(symbol, codegen)`` of each function an external codegen (``"dnnl"``) made, linked into
    the library; ``None`` when not recorded (a blob from a kiln before they were)."""

    @property
    def exec_mode(self) -> str:
        """``"compiled"`` when any VM function is a ``__vmtir__`` function, else ``"bytecode"``."""
        vmtir = any(f.kind is FuncKind.VMTIR for f in self.functions)
        return "compiled" if vmtir else "bytecode"

    @property
    def kernels(self) -> tuple[str, ...]:
        """The kernel table: names of the library functions the executable calls."""
        return tuple(f.name for f in self.functions if f.kind is FuncKind.KERNEL)

    @property
    def vm_function_names(self) -> tuple[str, ...]:
        """The functions a `VirtualMachine` exposes (bytecode and compiled VM functions)."""
        vm_kinds = (FuncKind.BYTECODE, FuncKind.VMTIR)
        return tuple(f.name for f in self.functions if f.kind in vm_kinds)

    def signature(self, name: str) -> Signature | None:
        """The signature of VM function ``name``; None when the executable records none."""
        return next((s for s in self.signatures if s.function == name), None)

    def func_index(self, name: str) -> int:
        """The table index of the entry named ``name``; KeyError when there is none."""
        for i, f in enumerate(self.functions):
            if f.name == name:
                return i
        raise KeyError(name)

    def serialize(self) -> bytes:
        """The versioned binary form (see the module docstring); the library is not included."""
        return serialize(self)

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write `serialize()` to ``path``."""
        dest = Path(path)
        dest.write_bytes(self.serialize())
        return dest

    @staticmethod
    def load(path: str | os.PathLike[str], library: Any = None) -> Executable:
        """Read an executable written by `save` (optionally with the library it runs with)."""
        return deserialize(np.fromfile(Path(path), dtype=np.uint8), library, where=str(path))

    def export_library(
        self,
        path: str | os.PathLike[str],
        *,
        source: str | None = None,
        flags: tuple[str, ...] | None = None,
    ) -> Path:
        """Write this executable and its library as one shared library (`vm_export`)."""
        # NOTE: must stay a function-level import: vm_export builds on this module (it writes
        # and reads executables with `write_executable` / `deserialize`); this is its front door.
        from kiln.runtime.vm_export import export_library

        return export_library(self, path, source=source, flags=flags)


# ---- serialization ---------------------------------------------------------------------------


def _align(n: int) -> int:
    return (n + ALIGN - 1) // ALIGN * ALIGN


class _DataSection:
    """The tensor constants of the data section: each array at its (64-byte aligned) offset."""

    def __init__(self) -> None:
        self.size = 0
        self.arrays: list[tuple[int, np.ndarray]] = []

    def add(self, arr: np.ndarray) -> int:
        offset = _align(self.size)
        self.arrays.append((offset, arr))
        self.size = offset + arr.nbytes
        return offset


def _const_meta(c: Any, data: _DataSection) -> dict[str, Any]:
    if c is None:
        return {"type": "none"}
    if isinstance(c, bool):
        return {"type": "bool", "value": c}
    if isinstance(c, int):
        return {"type": "int", "value": c}
    if isinstance(c, float):
        return {"type": "float", "value": c}
    if isinstance(c, str):
        return {"type": "str", "value": c}
    if isinstance(c, ShapeConst):
        return {"type": "shape", "dims": [int(d) for d in c.dims]}
    if isinstance(c, DTypeConst):
        return {"type": "dtype", "value": c.name}
    if isinstance(c, np.ndarray) or hasattr(c, "__dlpack__"):
        # NOTE: np.asarray(order="C"), not np.ascontiguousarray, which makes a 0-d array 1-d.
        arr = np.asarray(c if isinstance(c, np.ndarray) else np.from_dlpack(c), order="C")
        meta = {"type": "tensor", "dtype": str(arr.dtype), "shape": list(arr.shape)}
        meta.update(offset=data.add(arr), nbytes=arr.nbytes)
        return meta
    raise KilnError(f"cannot serialize a VM constant of type {type(c).__name__}")


def _spec_meta(t: TensorSpec) -> dict[str, Any]:
    dims = None if t.dims is None else [d if isinstance(d, int) else str(d) for d in t.dims]
    return {"name": t.name, "dtype": t.dtype, "dims": dims}


def _signature_meta(s: Signature) -> dict[str, Any]:
    return {
        "function": s.function,
        "inputs": [_spec_meta(t) for t in s.inputs],
        "outputs": [_spec_meta(t) for t in s.outputs],
    }


def _spec(meta: dict[str, Any]) -> TensorSpec:
    dims = meta["dims"]
    if dims is not None:
        if not all(isinstance(d, (int, str)) and not isinstance(d, bool) for d in dims):
            raise ValueError(f"bad dims {dims!r} of tensor {meta['name']!r}")
        dims = tuple(dims)
    return TensorSpec(str(meta["name"]), str(meta["dtype"]), dims)


def _count(v: Any) -> int | str:
    """A cost as stored: an int, or a symbolic count's expression text."""
    if isinstance(v, str):
        return v
    return int(v)


def _signature(meta: dict[str, Any]) -> Signature:
    return Signature(
        str(meta["function"]),
        tuple(_spec(t) for t in meta["inputs"]),
        tuple(_spec(t) for t in meta["outputs"]),
    )


def serialize(exe: Executable) -> bytes:
    """See `Executable.serialize`."""
    out = io.BytesIO()
    write_executable(exe, out)
    return out.getvalue()


def write_executable(exe: Executable, out: BinaryIO) -> int:
    """Write `serialize`'s bytes to the binary file ``out`` (at its position), the constants
    straight from their arrays (a 100 MB weight set is written once, never copied in memory);
    returns the number of bytes written."""
    data = _DataSection()
    funcs = [
        {"name": f.name, "kind": f.kind.name.lower(), "params": list(f.params)}
        | {"num_registers": f.num_registers, "start": f.start, "end": f.end}
        for f in exe.functions
    ]
    consts = [_const_meta(c, data) for c in exe.constants]
    sigs = [_signature_meta(s) for s in exe.signatures]
    costs = [list(c) for c in exe.costs]
    nodes = {k: list(names) for k, names in exe.nodes}
    meta = json.dumps(
        {"functions": funcs, "constants": consts, "signatures": sigs, "costs": costs,
         "nodes": nodes, "externals": dict(exe.externals or ())}
    ).encode()  # fmt: skip
    code = encode(exe.instructions).tobytes()
    meta_off = _HEADER.size
    code_off = _align(meta_off + len(meta))
    data_off = _align(code_off + len(code))
    fields = (meta_off, len(meta), code_off, len(code) // 8, data_off, data.size)
    parts: list[tuple[int, Any]] = [(0, _HEADER.pack(MAGIC, VM_FORMAT_VERSION, 0, *fields))]
    parts += [(meta_off, meta), (code_off, code)]
    parts += [(data_off + off, arr.reshape(-1).view(np.uint8).data) for off, arr in data.arrays]
    parts.append((data_off + data.size, b""))  # NOTE: the data section starts even when empty
    written = 0
    for offset, part in parts:
        out.write(b"\0" * (offset - written))
        out.write(part)
        written = offset + len(part)
    return written


def _section(blob: np.ndarray, offset: int, size: int, what: str) -> np.ndarray:
    if offset < 0 or size < 0 or offset + size > blob.size:
        raise KilnError(f"corrupt kiln executable: the {what} section lies outside the blob")
    return blob[offset : offset + size]


def _const_value(meta: dict[str, Any], data: np.ndarray) -> Any:
    kind = meta["type"]
    if kind == "none":
        return None
    if kind in ("bool", "int", "float", "str"):
        return {"bool": bool, "int": int, "float": float, "str": str}[kind](meta["value"])
    if kind == "shape":
        return ShapeConst(tuple(int(d) for d in meta["dims"]))
    if kind == "dtype":
        return DTypeConst(str(meta["value"]))
    if kind == "tensor":
        raw = _section(data, int(meta["offset"]), int(meta["nbytes"]), "constant")
        return raw.view(np.dtype(meta["dtype"])).reshape(tuple(meta["shape"]))
    raise KilnError(f"corrupt kiln executable: unknown constant type {kind!r}")


def _function(meta: dict[str, Any]) -> VMFunction:
    return VMFunction(
        name=str(meta["name"]),
        kind=FuncKind[str(meta["kind"]).upper()],
        params=tuple(str(p) for p in meta["params"]),
        num_registers=int(meta["num_registers"]),
        start=int(meta["start"]),
        end=int(meta["end"]),
    )


def check_header(blob: np.ndarray, where: str = "blob") -> tuple[int, ...]:
    """The header fields of a serialized executable; `KilnError` unless magic and version match."""
    if blob.size < _HEADER.size or bytes(blob[:8]) != MAGIC:
        raise KilnError(f"{where} is not a kiln VM executable (no {MAGIC[:7].decode()} header)")
    fields = _HEADER.unpack(bytes(blob[: _HEADER.size]))
    if fields[1] != VM_FORMAT_VERSION:
        raise KilnError(
            f"{where} was written for kiln VM format version {fields[1]}; this kiln reads "
            f"version {VM_FORMAT_VERSION}: rebuild it with this kiln"
        )
    return fields


def deserialize(buf: Any, library: Any = None, where: str = "blob") -> Executable:
    """An executable from `serialize`'s bytes (or a uint8 array); tensors are zero-copy views."""
    blob = buf if isinstance(buf, np.ndarray) else np.frombuffer(buf, dtype=np.uint8)
    _, _, _, meta_off, meta_size, code_off, code_words, data_off, data_size = check_header(
        blob, where
    )
    meta_raw = bytes(_section(blob, meta_off, meta_size, "metadata"))
    code = _section(blob, code_off, code_words * 8, "code").view("<i8")
    data = _section(blob, data_off, data_size, "data")
    try:
        meta = json.loads(meta_raw.decode())
        functions = tuple(_function(f) for f in meta["functions"])
        constants = tuple(_const_value(c, data) for c in meta["constants"])
        signatures = tuple(_signature(s) for s in meta.get("signatures", ()))
        costs = tuple((str(k), _count(f), _count(b)) for k, f, b in meta.get("costs", ()))
        nodes = tuple((str(k), tuple(map(str, v))) for k, v in meta.get("nodes", {}).items())
        known = meta.get("externals")
        externals = None if known is None else tuple((str(k), str(v)) for k, v in known.items())
    except (ValueError, KeyError, TypeError, AttributeError) as e:
        raise KilnError(f"corrupt kiln executable ({where}): {e}") from e
    return Executable(
        functions, decode(code), constants, library, signatures, costs, nodes, externals
    )
