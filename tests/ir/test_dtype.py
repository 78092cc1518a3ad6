import pytest

from kiln.errors import IRError, KilnError
from kiln.ir import DataType, dtype


@pytest.mark.parametrize(
    "text,kind,bits,lanes",
    [
        ("int8", "int", 8, 1),
        ("int1", "int", 1, 1),
        ("uint64", "uint", 64, 1),
        ("float16", "float", 16, 1),
        ("float32x8", "float", 32, 8),
        ("float64", "float", 64, 1),
        ("bfloat16", "bfloat", 16, 1),
        ("float8_e4m3fn", "float8_e4m3fn", 8, 1),
        ("float8_e5m2x4", "float8_e5m2", 8, 4),
        ("bool", "bool", 1, 1),
        ("handle", "handle", 64, 1),
        ("int32x16", "int", 32, 16),
    ],
)
def test_parse_and_print_round_trip(text, kind, bits, lanes):
    dt = DataType.parse(text)
    assert (dt.kind, dt.bits, dt.lanes) == (kind, bits, lanes)
    assert str(dt) == text
    assert DataType.parse(str(dt)) == dt
    assert dt == text and hash(dt) == hash(DataType(kind, bits, lanes))


def test_predicates_and_lanes():
    f = dtype("float32x4")
    assert f.is_float and not f.is_scalar and f.element_of() == "float32"
    assert f.itemsize == 16 and dtype("bool").itemsize == 1
    assert dtype("bfloat16").is_bfloat16 and dtype("float8_e5m2").is_float8
    assert dtype("uint8").is_integer and not dtype("bool").is_integer
    assert dtype("int32").with_lanes(4) == "int32x4"


@pytest.mark.parametrize("bad", ["float8", "int7", "floaty", "int32x", "", "float128"])
def test_bad_dtype_names_the_string(bad):
    with pytest.raises(IRError) as e:
        DataType.parse(bad)
    assert repr(bad) in str(e.value) and isinstance(e.value, KilnError)


def test_non_string_is_rejected():
    with pytest.raises(IRError, match="dtype string"):
        DataType.parse(32)  # type: ignore[arg-type]
