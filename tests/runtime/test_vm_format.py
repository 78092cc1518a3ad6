"""The executable format: instruction encoding, serialization, and refusal of bad blobs."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import numpy as np
import pytest

from kiln.errors import KilnError
from kiln.runtime import vm_format
from kiln.runtime.vm import VirtualMachine
from kiln.runtime.vm_format import (
    CONTEXT,
    NONE_ARG,
    VOID_REGISTER,
    Arg,
    Call,
    DTypeConst,
    Executable,
    FuncKind,
    Goto,
    If,
    Ret,
    ShapeConst,
    Signature,
    TensorSpec,
    VMFunction,
    decode,
    deserialize,
    encode,
)

PROGRAM = (
    Call(2, 1, (Arg.reg(0), Arg.imm(-5), Arg.imm(2**40), Arg.const(1), Arg.func(1))),
    Call(VOID_REGISTER, 2, (CONTEXT, NONE_ARG)),
    If(2, 3),
    Goto(2),
    Ret(0),
    Ret(2),
)


def sample() -> Executable:
    functions = (
        VMFunction("main", FuncKind.BYTECODE, ("x", "y"), 3, 0, len(PROGRAM)),
        VMFunction("vm.builtin.make_tuple", FuncKind.PACKED),
        VMFunction("vm.builtin.null_value", FuncKind.PACKED),
    )
    constants = (
        np.arange(6, dtype="float32").reshape(2, 3),
        np.array([True, False]),
        np.arange(3, dtype="int64"),
        np.array(1.5, dtype="float32"),  # 0-d: a scalar weight stays 0-d
        ShapeConst((4, 5)),
        DTypeConst("float16"),
        "text",
        7,
        2.5,
        True,
        None,
    )
    return Executable(functions, PROGRAM, constants)


def test_encode_decode_round_trip() -> None:
    words = encode(PROGRAM)
    assert words.dtype == np.dtype("<i8")
    assert list(words[:4]) == [1, 2, 1, 5]  # Call opcode, dst, func, nargs
    assert decode(words) == PROGRAM


def test_argument_values_must_fit_56_bits() -> None:
    with pytest.raises(KilnError, match="does not fit"):
        encode((Call(0, 0, (Arg.imm(2**60),)),))


def check_same(a: Executable, b: Executable) -> None:
    assert a.functions == b.functions
    assert a.instructions == b.instructions
    assert len(a.constants) == len(b.constants)
    for x, y in zip(a.constants, b.constants):
        if isinstance(x, np.ndarray):
            assert x.dtype == y.dtype and x.shape == y.shape
            np.testing.assert_array_equal(x, y)
        else:
            assert type(x) is type(y) and x == y


def test_serialize_round_trip_and_alignment() -> None:
    exe = sample()
    blob = exe.serialize()
    assert blob[:8] == b"KILNVMX\x00"
    back = deserialize(blob)
    check_same(exe, back)
    for c in back.constants:
        if isinstance(c, np.ndarray):
            data_offset = (
                c.__array_interface__["data"][0] - np.frombuffer(blob, np.uint8).ctypes.data
            )
            assert data_offset % 64 == 0  # zero-copy views, 64-byte aligned


SIGNATURE = Signature(
    "main",
    (TensorSpec("x", "float32", ("batch", 3)), TensorSpec("y", "int64", None)),
    (TensorSpec("probs", "float32", ("batch", "n * 2")), TensorSpec("output_1", "bool", ())),
)


def with_meta(blob: bytes, change: object) -> bytes:
    """``blob`` with its metadata JSON passed through ``change`` (the code and data kept)."""
    meta_off, meta_size, code_off, words, data_off, size = struct.unpack_from("<6Q", blob, 16)
    meta = json.loads(blob[meta_off : meta_off + meta_size])
    change(meta)
    raw = json.dumps(meta).encode()
    out = bytearray(blob[:meta_off]) + raw
    shift = -(-(len(out)) // 64) * 64 - code_off
    out += bytes(code_off + shift - len(out)) + blob[code_off:]
    struct.pack_into("<6Q", out, 16, meta_off, len(raw), code_off + shift, words,
                     data_off + shift, size)  # fmt: skip
    return bytes(out)


def test_signatures_round_trip() -> None:
    base = sample()
    exe = Executable(base.functions, base.instructions, base.constants, None, (SIGNATURE,))
    back = deserialize(exe.serialize())
    assert back.signatures == (SIGNATURE,)
    assert back.signature("main") == SIGNATURE and back.signature("other") is None
    assert SIGNATURE.inputs[0].describe() == "x: float32[batch, 3]"


def test_a_blob_without_signatures_reads_as_having_none() -> None:
    base = sample()
    exe = Executable(base.functions, base.instructions, base.constants, None, (SIGNATURE,))
    old = with_meta(exe.serialize(), lambda meta: meta.pop("signatures"))
    back = deserialize(old)
    assert back.signatures == () and back.signature("main") is None
    check_same(base, back)


@pytest.mark.parametrize(
    "bad", [[{"function": "main"}], [{"function": "f", "inputs": [{"name": "x"}], "outputs": []}],
            [{"function": "f", "inputs": [], "outputs": [{"name": "y", "dtype": "float32",
                                                         "dims": [1.5]}]}]]
)  # fmt: skip
def test_a_corrupt_signature_is_a_kiln_error(bad: object) -> None:
    blob = with_meta(sample().serialize(), lambda meta: meta.update(signatures=bad))
    with pytest.raises(KilnError, match="corrupt kiln executable"):
        deserialize(blob)


NODES = (("fused_add_relu", ("fc1/Add", "act1", "fc2/Add")), ("fused_matmul", ("fc1/MatMul",)))


def test_kernel_nodes_round_trip_and_an_older_blob_has_none() -> None:
    """Each kernel's model node names survive serialization; a blob written before they were
    recorded (no ``nodes`` key) reads as having none, everything else the same."""
    base = sample()
    exe = Executable(base.functions, base.instructions, base.constants, nodes=NODES)
    assert deserialize(exe.serialize()).nodes == NODES
    old = deserialize(with_meta(exe.serialize(), lambda meta: meta.pop("nodes")))
    assert old.nodes == ()
    check_same(base, old)


@pytest.mark.parametrize("bad", [[["k", ["a"]]], {"k": 3}])
def test_corrupt_kernel_nodes_are_a_kiln_error(bad: object) -> None:
    blob = with_meta(sample().serialize(), lambda meta: meta.update(nodes=bad))
    with pytest.raises(KilnError, match="corrupt kiln executable"):
        deserialize(blob)


EXTERNALS = (("dnnl_conv2d_relu", "dnnl"), ("dnnl_matmul", "dnnl"))


def test_external_codegens_round_trip_and_an_older_blob_has_them_unknown() -> None:
    """Which codegen made each external function survives serialization; a blob written before
    that was recorded (no ``externals`` key) reads as not knowing (``None``), not as none."""
    base = sample()
    exe = Executable(base.functions, base.instructions, base.constants, externals=EXTERNALS)
    assert deserialize(exe.serialize()).externals == EXTERNALS
    assert deserialize(base.serialize()).externals == ()
    old = deserialize(with_meta(exe.serialize(), lambda meta: meta.pop("externals")))
    assert old.externals is None
    check_same(base, old)


def test_corrupt_externals_are_a_kiln_error() -> None:
    blob = with_meta(sample().serialize(), lambda meta: meta.update(externals=[["k", "dnnl"]]))
    with pytest.raises(KilnError, match="corrupt kiln executable"):
        deserialize(blob)


def test_save_and_load(tmp_path: Path) -> None:
    exe = sample()
    path = exe.save(tmp_path / "prog.kvm")
    check_same(exe, Executable.load(path))


def test_a_blob_that_is_not_an_executable_is_refused() -> None:
    with pytest.raises(KilnError, match="is not a kiln VM executable"):
        deserialize(b"\x7fELF" + bytes(100))
    with pytest.raises(KilnError, match="is not a kiln VM executable"):
        deserialize(b"KILN")


def test_another_format_version_is_refused_by_name() -> None:
    blob = bytearray(sample().serialize())
    blob[8:12] = struct.pack("<I", vm_format.VM_FORMAT_VERSION + 1)
    version = vm_format.VM_FORMAT_VERSION + 1
    with pytest.raises(KilnError, match=f"format version {version}; this kiln reads version"):
        deserialize(bytes(blob))


def test_truncated_and_corrupt_blobs_are_kiln_errors() -> None:
    blob = sample().serialize()
    with pytest.raises(KilnError, match="outside the blob"):
        deserialize(blob[: len(blob) // 2])
    header = bytearray(blob)
    meta_off, meta_size = struct.unpack_from("<QQ", header, 16)
    header[meta_off : meta_off + 1] = b"!"
    with pytest.raises(KilnError, match="corrupt kiln executable"):
        deserialize(bytes(header))
    bad_meta = json.dumps({"functions": [{"name": "f"}], "constants": []}).encode()
    patched = bytearray(blob[:meta_off]) + bad_meta
    struct.pack_into("<QQQQQQ", patched, 16, meta_off, len(bad_meta), 0, 0, 0, 0)
    with pytest.raises(KilnError, match="corrupt kiln executable"):
        deserialize(bytes(patched))
    code = bytearray(blob)
    code_off = struct.unpack_from("<Q", code, 32)[0]
    struct.pack_into("<q", code, code_off, 99)  # an unknown opcode
    with pytest.raises(KilnError, match="bad instruction word 99"):
        deserialize(bytes(code))


def test_exec_mode_kernels_and_names() -> None:
    exe = Executable(
        (
            VMFunction("main", FuncKind.VMTIR, ("x",), 2),
            VMFunction("add_one", FuncKind.KERNEL),
            VMFunction("helper", FuncKind.BYTECODE, (), 1, 0, 1),
        ),
        (Ret(0),),
    )
    assert exe.exec_mode == "compiled"
    assert exe.kernels == ("add_one",)
    assert exe.vm_function_names == ("main", "helper")
    assert sample().exec_mode == "bytecode"
    assert exe.func_index("helper") == 2


@pytest.mark.parametrize(
    "bad, message",
    [
        (Call(9, 1, ()), "function main, instruction 0: destination register 9"),
        (Call(0, 7, ()), "callee index 7"),
        (Call(0, 1, (Arg.reg(3),)), "register 3"),
        (Call(0, 1, (Arg.const(0),)), "constant index 0"),
        (Call(0, 1, (Arg.func(-1),)), "function index -1"),
        (Goto(5), "jump offset 5"),
        (If(0, -1), "jump offset -1"),
        (Ret(3), "register 3"),
    ],
)
def test_the_vm_refuses_invalid_bytecode(bad: object, message: str) -> None:
    exe = Executable(
        (
            VMFunction("main", FuncKind.BYTECODE, ("x",), 3, 0, 2),
            VMFunction("vm.builtin.copy", FuncKind.PACKED),
        ),
        (bad, Ret(0)),
    )
    with pytest.raises(KilnError, match=f"invalid executable: {message}|{message}"):
        VirtualMachine(exe)


def test_the_vm_refuses_bad_function_ranges() -> None:
    funcs = (VMFunction("main", FuncKind.BYTECODE, ("x",), 1, 0, 3),)
    with pytest.raises(KilnError, match="function main has bad instruction range"):
        VirtualMachine(Executable(funcs, (Ret(0),)))
    compiled = (VMFunction("main", FuncKind.VMTIR, ("x",), 1),)
    with pytest.raises(
        KilnError, match="needs compiled VM function '__vmtir__main', but it has no library"
    ):
        VirtualMachine(Executable(compiled))


def test_the_vm_refuses_a_table_with_a_name_twice() -> None:
    funcs = (
        VMFunction("main", FuncKind.BYTECODE, ("x",), 1, 0, 1),
        VMFunction("main", FuncKind.PACKED),
    )
    with pytest.raises(KilnError, match="lists main twice"):
        VirtualMachine(Executable(funcs, (Ret(0),)))
