"""`Module`: calling compiled functions, errors from C, metadata, export and reload."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import tvm_ffi

from kiln.errors import KilnError
from kiln.runtime import (
    FunctionNotFoundError,
    LibraryFunction,
    Module,
    build_module,
    compile_c,
    load_module,
    metadata_c_source,
    tensor,
    to_numpy,
)


@pytest.fixture
def mod(cache_dir: Path, kernels_source: str) -> Module:
    return build_module(kernels_source, name_hint="kernels")


def test_call_with_numpy(mod: Module) -> None:
    x = np.arange(12, dtype="float32").reshape(3, 4)
    y = np.zeros_like(x)
    assert mod["add_one"](x, y) is None
    np.testing.assert_array_equal(y, x + 1)


def test_call_with_ffi_tensors(mod: Module) -> None:
    x = tensor(np.arange(4, dtype="float32"))
    y = tensor(np.zeros(4, dtype="float32"))
    mod.get_function("add_one")(x, y)
    np.testing.assert_array_equal(to_numpy(y), [1, 2, 3, 4])


def test_functions_wrap_raw_ffi_functions(mod: Module) -> None:
    f = mod["add_one"]
    assert isinstance(f, LibraryFunction) and isinstance(f.ffi_function, tvm_ffi.Function)
    assert mod.get_function("add_one") is f
    # passed to tvm-ffi (a VM's function table, a container), it is the raw function
    (inner,) = tvm_ffi.convert([f])
    assert inner.same_as(f.ffi_function)


def test_error_raised_in_c_arrives_as_python_exception(mod: Module) -> None:
    with pytest.raises(ValueError, match="kiln test: the value is bad"):
        mod["raise_value_error"]()
    with pytest.raises(TypeError, match="add_one: expected 2 arguments"):
        mod["add_one"](np.zeros(2, dtype="float32"))
    with pytest.raises(TypeError, match="float32"):
        mod["add_one"](np.zeros(2, dtype="int32"), np.zeros(2, dtype="float32"))


def test_func_names_come_from_the_library(mod: Module) -> None:
    assert mod.get_func_names() == ["add_one", "raise_value_error"]
    assert "add_one" in mod and "hidden" not in mod
    assert "add_one" in repr(mod)


@pytest.mark.parametrize("name", ["nope", "hidden", "__kiln_func_names"])
def test_unknown_or_unexposed_name_lists_exposed_names(mod: Module, name: str) -> None:
    with pytest.raises(FunctionNotFoundError) as info:
        mod[name]
    err = info.value
    assert isinstance(err, KeyError) and isinstance(err, KilnError)
    assert repr(name) in str(err)
    assert "exposed functions: add_one, raise_value_error" in str(err)
    if name == "hidden":  # the symbol exists; only the metadata keeps it private
        assert mod.ffi_module.get_function("hidden")() == 42


def test_inspect_source(mod: Module, kernels_source: str) -> None:
    assert mod.inspect_source() == kernels_source
    assert mod.inspect_source("c") == kernels_source
    with pytest.raises(KilnError, match="unknown format"):
        mod.inspect_source("asm")
    reloaded = load_module(mod.path)
    with pytest.raises(KilnError, match="no source kept"):
        reloaded.inspect_source()


_CHILD = """
import sys
import numpy as np
from kiln.runtime import load_module
m = load_module(sys.argv[1])
x = np.arange(6, dtype="float32")
y = np.zeros_like(x)
m["add_one"](x, y)
assert (y == x + 1).all(), y
try:
    m["raise_value_error"]()
except ValueError as e:
    assert "the value is bad" in str(e)
else:
    raise AssertionError("no ValueError")
assert "kiln.tir" not in sys.modules and "kiln.ir" not in sys.modules
allowed = {"kiln", "kiln.errors", "kiln.config"}
extra = [k for k in sys.modules if k.startswith("kiln") and k not in allowed
         and not k.startswith("kiln.runtime")]
assert not extra, extra
print(",".join(m.get_func_names()))
"""


def test_export_and_load_in_fresh_process(
    mod: Module, tmp_path: Path, child_env: dict[str, str]
) -> None:
    exported = mod.export_library(tmp_path / "out" / "kernels.so")
    assert exported.read_bytes() == mod.path.read_bytes()
    proc = subprocess.run(
        [sys.executable, "-c", _CHILD, str(exported)],
        env=child_env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "add_one,raise_value_error"


def test_export_refuses_to_drop_imported_modules(mod: Module, tmp_path: Path) -> None:
    assert mod.imported_modules == []
    mod.imported_modules.append(load_module(mod.path))
    with pytest.raises(KilnError, match="imported modules"):
        mod.export_library(tmp_path / "x.so")


def test_library_without_metadata_still_loads(cache_dir: Path, bare_kernels_source: str) -> None:
    m = load_module(compile_c(bare_kernels_source))
    assert m.get_func_names() == []
    assert m["hidden"]() == 42
    with pytest.raises(FunctionNotFoundError, match="no kiln metadata"):
        m["nope"]


def test_load_missing_file(tmp_path: Path) -> None:
    with pytest.raises(KilnError, match="no such library"):
        load_module(tmp_path / "missing.so")


def test_empty_metadata(cache_dir: Path) -> None:
    src = "#include <tvm/ffi/c_api.h>\n" + metadata_c_source([])
    m = load_module(compile_c(src))
    assert m.get_func_names() == []
    with pytest.raises(FunctionNotFoundError, match="exposed functions: none"):
        m["anything"]


@pytest.mark.parametrize(
    "names, match",
    [
        (["ok", "not-an-ident"], "not a C identifier"),
        (["1abc"], "not a C identifier"),
        (["a", "b", "a"], "listed twice"),
        (["__kiln_func_names"], "reserved"),
        (["__kiln_func_args"], "reserved"),
    ],
)
def test_metadata_rejects_bad_names(names: list[str], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        metadata_c_source(names)


def test_torch_tensors_are_accepted(mod: Module) -> None:
    torch = pytest.importorskip("torch", reason="PyTorch is not installed")
    x = torch.arange(6, dtype=torch.float32).reshape(2, 3)
    y = torch.zeros(2, 3)
    mod["add_one"](x, y)
    assert torch.equal(y, x + 1)
