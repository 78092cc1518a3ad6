"""The compiled-mode C contract (`kiln.runtime.vm_anylist`), with hand-written ``__vmtir__`` C."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import tvm_ffi

from kiln.runtime import VirtualMachine, build_module, find_compiler, metadata_c_source
from kiln.runtime.toolchain import tvm_ffi_compile_flags
from kiln.runtime.vm_anylist import (
    ANYLIST_C_HEADER,
    c_any,
    c_call_cpacked,
    c_call_packed,
    c_cpacked_decl,
    c_getitem,
    c_resetitem,
)
from kiln.runtime.vm_format import Executable, FuncKind, VMFunction


def test_the_header_compiles_alone_without_warnings(tmp_path: Path) -> None:
    src = tmp_path / "anylist.c"
    src.write_text(ANYLIST_C_HEADER + "\nint kiln_unused_probe(void) { return 0; }\n")
    cmd = [*find_compiler(), "-std=c11", "-Wall", "-Wextra", "-Werror", "-fsyntax-only"]
    proc = subprocess.run(
        [*cmd, *tvm_ffi_compile_flags(), str(src)], capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr


def test_printed_forms() -> None:
    assert c_getitem("r", 3) == "KILN_ANYLIST_GET(r, 3)"
    assert c_resetitem("r", 4) == "kiln_vm_anylist_resetitem(r, 4);"
    assert c_any("int", "n") == "(TVMFFIAny){.type_index = kTVMFFIInt, .v_int64 = (int64_t)(n)}"
    packed = c_call_packed("test.vm.add", [c_getitem("r", 0), c_getitem("c", 1)], ("r", 2))
    assert "static void* volatile cache = NULL;" in packed
    assert "TVMFFIAny argv[2] = {KILN_ANYLIST_GET(r, 0), KILN_ANYLIST_GET(c, 1)};" in packed
    assert 'kiln_vm_call_packed(ctx_ptr, &cache, "test.vm.add", argv, 2, r, 2) != 0' in packed
    cpacked = c_call_cpacked("shape_func", [c_getitem("r", 0)])
    assert (
        'kiln_vm_call_cpacked(ctx_ptr, __tvm_ffi_shape_func, "shape_func", argv, 1, NULL, -1)'
        in cpacked
    )
    assert c_cpacked_decl("k") == (
        "int __tvm_ffi_k(void* self, const TVMFFIAny* args, int32_t num_args, TVMFFIAny* result);"
    )


def vmtir(name: str, body: str) -> str:
    return f"""
TVM_FFI_DLL_EXPORT int __tvm_ffi___vmtir__{name}(void* self, const TVMFFIAny* args,
                                                 int32_t num_args, TVMFFIAny* result) {{
  void* ctx_ptr = args[0].v_ptr;
  void* r = args[1].v_ptr;
  void* c = args[2].v_ptr;
  void* f = args[3].v_ptr;
  (void)self; (void)num_args; (void)result; (void)c; (void)f;
{body}
  return 0;
}}
"""


def compiled(name: str, params: tuple[str, ...], regs: int, body: str, packed: list[str]) -> Any:
    source = ANYLIST_C_HEADER + vmtir(name, body) + metadata_c_source(["__vmtir__" + name])
    funcs = [VMFunction(name, FuncKind.VMTIR, params, regs)]
    funcs += [VMFunction(p, FuncKind.PACKED) for p in packed]
    return VirtualMachine(Executable(tuple(funcs), library=build_module(source)))[name]


@tvm_ffi.register_global_func("test.anylist.log", override=True)
def _log(*args: Any) -> int:
    _LOG.append(args)
    return len(args)


_LOG: list[Any] = []


def test_results_can_overwrite_an_argument_and_be_dropped_or_reset() -> None:
    # r0 = x; r2 = copy(x); r2 = add(r2, r2) (argument aliases the destination);
    # log(r2) with the result dropped; reset r2; return r2 (now None) and x as a tuple.
    body = "\n".join(
        [
            c_call_packed("vm.builtin.copy", [c_getitem("r", 0)], ("r", 2)),
            c_call_packed("test.vm.add2", [c_getitem("r", 2), c_getitem("r", 2)], ("r", 2)),
            c_call_packed("test.anylist.log", [c_getitem("r", 2), c_any("str", '"tag"')]),
            c_call_packed("vm.builtin.make_tuple", [c_getitem("r", 2)], ("r", 3)),
            c_resetitem("r", 2),
            c_call_packed(
                "vm.builtin.make_tuple", [c_getitem("r", 2), c_getitem("r", 3)], ("r", 1)
            ),
        ]
    )

    @tvm_ffi.register_global_func("test.vm.add2", override=True)
    def _add2(a: Any, b: Any) -> Any:
        return tvm_ffi.from_dlpack(np.from_dlpack(a) + np.from_dlpack(b))

    main = compiled("main", ("x",), 4, body, [])
    _LOG.clear()
    x = np.arange(3, dtype="float32")
    none, (doubled,) = main(x)
    assert none is None
    np.testing.assert_array_equal(doubled.numpy(), x + x)
    assert len(_LOG) == 1 and _LOG[0][1] == "tag"


def test_an_unregistered_callee_fails_at_the_call_with_its_name() -> None:
    body = c_call_packed("test.anylist.nobody", [c_getitem("r", 0)], ("r", 1))
    main = compiled("main", ("x",), 2, body, [])
    with pytest.raises(RuntimeError, match="no global tvm-ffi function test.anylist.nobody"):
        main(1)


def test_a_kernel_in_the_same_library_is_called_directly() -> None:
    kernel = r"""
TVM_FFI_DLL_EXPORT int __tvm_ffi_twice(void* self, const TVMFFIAny* args, int32_t num_args,
                                       TVMFFIAny* result) {
  (void)self; (void)num_args;
  result->type_index = kTVMFFIInt;
  result->zero_padding = 0;
  result->v_int64 = 2 * args[0].v_int64;
  return 0;
}
"""
    body = "\n".join(
        [
            c_call_cpacked("twice", [c_getitem("r", 0)], ("r", 2)),
            c_call_cpacked("twice", [c_getitem("r", 2)], ("r", 1)),
        ]
    )
    exposed = ["twice", "__vmtir__main"]
    source = ANYLIST_C_HEADER + kernel + vmtir("main", body) + metadata_c_source(exposed)
    funcs = (VMFunction("main", FuncKind.VMTIR, ("n",), 3), VMFunction("twice", FuncKind.KERNEL))
    vm = VirtualMachine(Executable(funcs, library=build_module(source)))
    assert vm["main"](5) == 20
    report = vm.profile("main", 1)
    assert [(r.kernel, r.calls) for r in report.rows] == [("twice", 2)]
