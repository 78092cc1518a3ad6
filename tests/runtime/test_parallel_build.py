"""One library from several translation units: compiled in parallel, cached per unit, linked;
units call each other through exported entries; a unit that does not compile names its file."""

from __future__ import annotations

from pathlib import Path

import pytest

from kiln.errors import ToolchainError
from kiln.runtime import load_module, metadata_c_source
from kiln.runtime import parallel_build as pb

ENTRY = "(void* self, const TVMFFIAny* args, int32_t num_args, TVMFFIAny* result)"

INC = f"""#include <tvm/ffi/c_api.h>
TVM_FFI_DLL_EXPORT int __tvm_ffi_inc{ENTRY} {{
  (void)self; (void)num_args;
  result->type_index = kTVMFFIInt;
  result->zero_padding = 0;
  result->v_int64 = args[0].v_int64 + 1;
  return 0;
}}
"""

TWICE = f"""#include <tvm/ffi/c_api.h>
int __tvm_ffi_inc{ENTRY};
TVM_FFI_DLL_EXPORT int __tvm_ffi_twice{ENTRY} {{
  TVMFFIAny once;
  (void)self;
  if (__tvm_ffi_inc(NULL, args, num_args, &once) != 0) return -1;
  return __tvm_ffi_inc(NULL, &once, 1, result);
}}
"""

UNITS = [TWICE, INC, metadata_c_source(["twice", "inc"])]


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("KILN_CACHE_DIR", str(tmp_path))
    return tmp_path


def test_units_link_into_one_library_calling_across_units(cache: Path) -> None:
    lib, objects, texts = pb.compile_units(iter(UNITS), name_hint="two units", jobs=2)
    assert len(objects) == 3 and texts == tuple(UNITS)
    mod = load_module(lib)
    assert mod["twice"](5) == 7
    assert mod["inc"](-1) == 0
    assert sorted(mod.get_func_names()) == ["inc", "twice"]


def test_each_unit_is_compiled_once(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    runs: list[str] = []
    real = pb.run_and_publish

    def counting(command, src, out):
        runs.append(Path(out).suffix)
        return real(command, src, out)

    monkeypatch.setattr(pb, "run_and_publish", counting)
    first, objects, _ = pb.compile_units(UNITS, name_hint="a")
    assert sorted(runs) == [".o", ".o", ".o", ".so"]
    # the same units in another library (another order, another name): only a new link
    second, again, _ = pb.compile_units([UNITS[1], UNITS[0], UNITS[2]], name_hint="b")
    assert sorted(runs) == [".o", ".o", ".o", ".so", ".so"]
    assert set(again) == set(objects) and second != first
    assert load_module(second)["twice"](1) == 3


def test_a_damaged_object_is_compiled_again(cache: Path) -> None:
    _, objects, _ = pb.compile_units(UNITS, name_hint="c")
    objects[1].write_bytes(b"\x7fELF damaged")
    lib, again, _ = pb.compile_units(UNITS, name_hint="c")
    assert again[1] == objects[1]
    assert load_module(lib)["twice"](2) == 4


def test_a_unit_that_does_not_compile_names_its_source(cache: Path) -> None:
    with pytest.raises(ToolchainError) as info:
        pb.compile_units([INC, "int broken( {"], name_hint="d")
    assert info.value.src_path is not None and info.value.src_path.endswith(".c")
    assert "broken" in Path(info.value.src_path).read_text()


def test_no_units_is_an_error(cache: Path) -> None:
    with pytest.raises(ValueError, match="at least one"):
        pb.compile_units([], name_hint="e")


@pytest.mark.parametrize(
    "flag, link_only",
    [("-lm", True), ("-L/opt/lib", True), ("-Wl,-rpath,/x", True), ("blob.s", True),
     ("-shared", True), ("-O2", False), ("-march=native", False), ("-I/inc", False),
     ("-fopenmp", False)],
)  # fmt: skip
def test_link_only_flags(flag: str, link_only: bool) -> None:
    assert pb.is_link_only(flag) is link_only
