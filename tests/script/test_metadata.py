"""The metadata section: large relax constants print as ``metadata["relax.Constant"][i]``
references, the parser reads them back from the section (or as zero-filled placeholders), the
section round-trips through an ``.npz`` beside the script, and every mistake is a located
`ScriptError`."""

from __future__ import annotations

import numpy as np
import pytest

import kiln.script
from kiln import relax
from kiln.errors import IRValueError, ScriptError
from kiln.ir import IRModule, assert_structural_equal
from kiln.relax import op
from kiln.relax.expr import Constant
from kiln.script.metadata import INLINE_MAX_ELEMENTS, RELAX_CONSTANT

RNG = np.random.default_rng(7)
SMALL = np.array([1.5, -2.0, 3.25], dtype="float32")


def large_arrays() -> list[np.ndarray]:
    """Constants above the inline limit in each dtype a `Constant` holds, edge values included."""
    f16 = RNG.standard_normal((5, 7)).astype("float16")
    f16.flat[:4] = [np.inf, -np.inf, -0.0, np.float16(6.1e-5)]
    return [
        RNG.standard_normal((4, 3, 3, 3)).astype("float32"),
        RNG.integers(-(2**62), 2**62, size=(33,), dtype="int64"),
        RNG.integers(0, 2, size=(2, 9)).astype("bool"),
        f16,
        RNG.integers(0, 255, size=(20,), dtype="uint8"),
        RNG.standard_normal((17,)).astype("float64"),
    ]


def module_of(arrays: list[np.ndarray], small: np.ndarray = SMALL) -> IRModule:
    """A module whose ``main`` binds each array as a constant, then a small inline one."""
    bb = relax.BlockBuilder()
    with bb.function("main", []):
        out = [bb.emit(Constant(a)) for a in [*arrays, small]]
        bb.emit_func_output(relax.Tuple(out))
    return bb.get()


def constants(mod: IRModule) -> list[np.ndarray]:
    """The constants ``main`` binds, in order."""
    return [b.value.data for b in mod["main"].body.blocks[0].bindings]


def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def test_large_constants_round_trip_through_the_section() -> None:
    arrays = large_arrays()
    mod = module_of(arrays)
    meta: dict = {}
    text = mod.script(metadata=meta)
    for i, a in enumerate(arrays):
        dtype = "bool" if a.dtype == np.bool_ else str(a.dtype)
        shape = f"({a.shape[0]},)" if a.ndim == 1 else str(a.shape)
        assert f'R.const(metadata["relax.Constant"][{i}], "{dtype}", shape={shape})' in text
    assert 'R.const([1.5, -2.0, 3.25], "float32")' in text  # small ones stay inline
    assert list(meta) == [RELAX_CONSTANT]
    assert all(same_bits(a, b) for a, b in zip(meta[RELAX_CONSTANT], arrays, strict=True))
    again = kiln.script.from_source(text, "<printed>", metadata=meta)
    assert_structural_equal(mod, again)
    assert all(same_bits(a, b) for a, b in zip(constants(again), [*arrays, SMALL], strict=True))
    assert again.script(metadata={}) == text


def test_the_text_ends_with_a_comment_counting_the_elided_constants() -> None:
    text = module_of(large_arrays()).script()
    last = text.rstrip("\n").splitlines()[-1]
    assert last.startswith("# 6 constants were elided into the metadata section")
    assert 'metadata["relax.Constant"][0..5]' in last
    assert "elided" not in module_of([]).script()  # nothing elided: no comment


def test_the_limit_is_on_the_number_of_elements() -> None:
    at = np.arange(INLINE_MAX_ELEMENTS, dtype="int64")
    above = np.arange(INLINE_MAX_ELEMENTS + 1, dtype="int64")
    text = module_of([at, above]).script()
    assert f"R.const({at.tolist()}, " in text
    assert 'R.const(metadata["relax.Constant"][0], "int64", shape=(17,))' in text
    assert f"R.const({above.tolist()}, " not in text


def test_show_meta_prints_everything_inline() -> None:
    arrays = large_arrays()
    mod = module_of(arrays)
    meta: dict = {}
    text = mod.script(show_meta=True, metadata=meta)
    assert "metadata" not in text and meta == {}
    again = kiln.script.from_source(text, "<inline>")
    assert_structural_equal(mod, again)
    assert all(same_bits(a, b) for a, b in zip(constants(again), [*arrays, SMALL], strict=True))


def test_one_constant_used_twice_gets_one_index() -> None:
    w = Constant(RNG.standard_normal((8, 8)).astype("float32"))
    x, y = (relax.Var(n, relax.TensorStructInfo([8, 8], "float32")) for n in "xy")
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        a = bb.emit(op.add(x, w))
        bb.emit_func_output(bb.emit(op.multiply(a, w)))
    with bb.function("other", [y]):
        bb.emit_func_output(bb.emit(op.subtract(y, w)))
    mod = bb.get()
    meta: dict = {}
    text = mod.script(metadata=meta)
    assert text.count('metadata["relax.Constant"][0]') == 3
    assert "[1]" not in text and len(meta[RELAX_CONSTANT]) == 1
    assert same_bits(meta[RELAX_CONSTANT][0], w.data)
    again = kiln.script.from_source(text, metadata=meta)
    assert_structural_equal(mod, again)
    assert again.script() == text  # the parser builds one Constant per index, too


def test_the_section_is_saved_beside_the_script(tmp_path) -> None:  # noqa: ANN001
    arrays = large_arrays()
    mod = module_of(arrays)
    meta: dict = {}
    script_path = tmp_path / "dump.py"
    script_path.write_text(mod.script(metadata=meta))
    written = kiln.script.save_metadata(script_path, meta)
    assert written == str(tmp_path / "dump.meta.npz")
    loaded = kiln.script.load_metadata(script_path)
    assert all(same_bits(a, b) for a, b in zip(loaded[RELAX_CONSTANT], arrays, strict=True))
    again = kiln.script.from_source(script_path.read_text(), str(script_path), metadata=loaded)
    assert_structural_equal(mod, again)


def test_a_file_that_is_no_section_is_refused(tmp_path) -> None:  # noqa: ANN001
    bad = tmp_path / "x.meta.npz"
    bad.write_bytes(b"not a zip file")
    with pytest.raises(IRValueError, match="is not a metadata section"):
        kiln.script.load_metadata(tmp_path / "x.py")


def test_placeholder_mode_reads_the_structure_with_zero_filled_constants() -> None:
    arrays = large_arrays()
    text = module_of(arrays).script()
    parsed = kiln.script.from_source(text, metadata="placeholder")
    zeros = [np.zeros(a.shape, a.dtype) for a in arrays]
    assert_structural_equal(module_of(zeros), parsed)
    assert all(same_bits(a, b) for a, b in zip(constants(parsed), [*zeros, SMALL], strict=True))


def test_a_printed_variable_named_metadata_does_not_hide_the_section() -> None:
    w = Constant(np.arange(32, dtype="float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", []):
        v = bb.emit(op.add(w, w), name_hint="metadata")
        bb.emit_func_output(bb.emit(op.multiply(v, w)))
    mod = bb.get()
    meta: dict = {}
    text = mod.script(metadata=meta)
    assert "metadata =" not in text and "metadata:" not in text
    assert_structural_equal(mod, kiln.script.from_source(text, metadata=meta))


# -- mistakes --------------------------------------------------------------------------------
def located(text: str, index: int, **kwargs: object) -> ScriptError:
    """The error parsing ``text`` raises, checked to sit at the reference with ``index``."""
    with pytest.raises(ScriptError) as info:
        kiln.script.from_source(text, "<dump>", **kwargs)  # type: ignore[arg-type]
    ref = f'metadata["relax.Constant"][{index}]'
    line_no, col = next((i, line.index(ref) + 1) for i, line in enumerate(text.splitlines(), 1)
                        if ref in line)  # fmt: skip
    err = info.value
    assert (err.span.line, err.span.column) == (line_no, col)
    assert ref in err.reason
    assert "kiln/" not in str(err)
    return err


def test_a_reference_without_metadata_is_a_located_error() -> None:
    text = module_of(large_arrays()).script()
    err = located(text, 0)
    assert "none was given" in err.reason and "load_metadata" in err.reason


def test_an_index_out_of_range_is_a_located_error() -> None:
    meta: dict = {}
    text = module_of(large_arrays()).script(metadata=meta)
    meta[RELAX_CONSTANT] = meta[RELAX_CONSTANT][:5]
    err = located(text, 5, metadata=meta)
    assert "index out of range" in err.reason and "holds 5 constant(s)" in err.reason


def test_a_missing_section_is_a_located_error() -> None:
    text = module_of(large_arrays()).script()
    err = located(text, 0, metadata={"tir.AllocateConst": []})
    assert "no section 'relax.Constant'" in err.reason


def test_a_shape_that_disagrees_with_the_array_is_a_located_error() -> None:
    meta: dict = {}
    text = module_of(large_arrays()).script(metadata=meta)
    meta[RELAX_CONSTANT][2] = meta[RELAX_CONSTANT][2].reshape(9, 2)
    err = located(text, 2, metadata=meta)
    assert "holds bool data of shape (9, 2); the script expects shape (2, 9)" in err.reason


def test_a_dtype_that_disagrees_with_the_array_is_a_located_error() -> None:
    meta: dict = {}
    text = module_of(large_arrays()).script(metadata=meta)
    meta[RELAX_CONSTANT][1] = meta[RELAX_CONSTANT][1].astype("int32")
    err = located(text, 1, metadata=meta)
    assert "holds int32 data of shape (33,); the script expects dtype int64" in err.reason


def test_a_placeholder_needs_the_printed_shape() -> None:
    text = module_of(large_arrays()).script().replace(", shape=(4, 3, 3, 3)", "")
    err = located(text, 0, metadata="placeholder")
    assert "needs its dtype and shape=" in err.reason


def test_r_const_checks_its_shape_against_inline_data() -> None:
    text = (
        "@R.function\ndef f():\n"
        '    c = R.const([[1, 2], [3, 4]], "int32", shape=(4,))\n    return c\n'
    )
    with pytest.raises(ScriptError) as info:
        kiln.script.from_source(text)
    assert info.value.span.line == 3
    assert "the data has shape (2, 2) but shape=(4,) was given" in info.value.reason
    ok = kiln.script.from_source(text.replace("shape=(4,)", "shape=(2, 2)"))
    data = ok.body.blocks[0].bindings[0].value.data
    assert same_bits(data, np.array([[1, 2], [3, 4]], "int32"))


def test_metadata_must_be_a_dict_or_placeholder() -> None:
    with pytest.raises(IRValueError, match="takes a dict of sections or 'placeholder'"):
        kiln.script.from_source("", metadata="zeros")
