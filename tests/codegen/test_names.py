"""CNameSupply: unique, C-safe identifiers that never collide with headers or kiln helpers."""

from __future__ import annotations

from kiln.codegen.names import CNameSupply, is_reserved, sanitize


def test_fresh_names_are_unique_and_safe() -> None:
    supply = CNameSupply()
    got = [supply.fresh(h) for h in ("A", "A", "int", "return", "expf", "NAN", "linux", "main")]
    assert got == ["A", "A_1", "int_1", "return_1", "expf_1", "NAN_1", "linux_1", "main_1"]
    assert len(set(got)) == len(got)


def test_reserved_prefixes_and_patterns() -> None:
    supply = CNameSupply()
    assert supply.fresh("kiln_alloc") == "v_kiln_alloc"
    assert supply.fresh("__tvm_ffi_main") == "v_tvm_ffi_main"
    assert supply.fresh("float32x8") == "float32x8_1"
    assert supply.fresh("int8_t") == "int8_t_1"
    assert is_reserved("TVMFFIAny") and is_reserved("DLTensor") and is_reserved("M_PI")
    assert not is_reserved("PRINT") and not is_reserved("x") and not is_reserved("A_data")


def test_sanitize_and_child_scopes() -> None:
    assert sanitize("a-b.c") == "a_b_c" and sanitize("1x") == "v1x" and sanitize("") == "v"
    top = CNameSupply()
    top.fresh("helper")
    child = top.child()
    assert child.fresh("helper") == "helper_1"  # a local never shadows a function
    assert top.fresh("x") == "x" and child.fresh("x") == "x"  # scopes are independent below
