"""cache_read / cache_write: the stages they add, packed tiles, local accumulators, errors."""

import pytest

from kiln import te, tir
from kiln.errors import IRError, IRValueError
from tests.te.tir_text import expr, show


def _lower(s, args):
    f = te.lower(s, args)
    assert tir.verify_well_formed(f) == [], show(f)
    return f


def _err(fn, *needles):
    with pytest.raises((IRError, IRValueError)) as e:
        fn()
    for n in needles:
        assert n in str(e.value), str(e.value)


def _allocs(f):
    return {
        n.buffer_var.name: n for n in tir.pre_order_nodes(f.body) if isinstance(n, tir.Allocate)
    }


def _matmul(n=16, m=None, k_ext=None):
    m, k_ext = m or n, k_ext or n
    A = te.placeholder((n, k_ext), name="A")
    B = te.placeholder((k_ext, m), name="B")
    k = te.reduce_axis((0, k_ext), name="k")
    C = te.compute((n, m), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    return A, B, C, k, te.create_schedule(C)


def test_cache_read_adds_copy_stage():
    A, B, C, k, s = _matmul(8)
    AA = s.cache_read(A, "shared", [C])
    assert AA.name == "A_shared" and s[AA].scope == "shared"
    assert [st.name for st in s.stages] == ["A", "A_shared", "B", "C"]
    assert s[C].op.input_tensors[0] is AA
    f = _lower(s, [A, B, C])
    alloc = _allocs(f)["A_shared_data"]
    assert alloc.buffer_var.type_annotation.scope == "shared"
    assert "A_shared[i, k]" in show(f)


def test_cache_read_packs_tile_at_loop():
    A, B, C, k, s = _matmul(16)
    BP = s.cache_read(B, "global", [C])
    i, j = C.op.axis
    jo, ji = s[C].split(j, factor=8)
    s[C].reorder(jo, i, k, ji)
    s[BP].compute_at(s[C], jo)
    f = _lower(s, [A, B, C])
    alloc = _allocs(f)["B_global_data"]
    assert [e.value for e in alloc.extents] == [16, 8]
    copy = next(
        n
        for n in tir.pre_order_nodes(f.body)
        if isinstance(n, tir.BufferStore) and n.buffer.name == "B_global"
    )
    assert expr(copy.value) == "B[ax0, ((j_outer * 8) + ax1)]"


def test_cache_write_local_accumulator():
    A, B, C, k, s = _matmul(16)
    CL = s.cache_write(C, "local")
    assert CL.name == "C_local" and [st.name for st in s.stages][-2:] == ["C_local", "C"]
    assert CL.op.reduce_axis == (k,) and s[C].op.reduce_axis == ()
    assert s[C].leaf_iter_vars == list(C.op.axis)
    xo, yo, xi, yi = s[C].tile(*C.op.axis, 4, 4)
    s[CL].compute_at(s[C], yo)
    f = _lower(s, [A, B, C])
    alloc = _allocs(f)["C_local_data"]
    assert [e.value for e in alloc.extents] == [4, 4]
    assert alloc.buffer_var.type_annotation.scope == "local"
    assert (
        "C[((i_outer * 4) + i_inner), ((j_outer * 4) + j_inner)] = C_local[i_inner, j_inner]"
        in (show(f))
    )


def test_cache_write_elementwise():
    A = te.placeholder((8,), name="A")
    B = te.compute((8,), lambda i: A[i] * tir.const(2.0), name="B")
    s = te.create_schedule(B)
    BL = s.cache_write(B, "local")
    f = _lower(s, [A, B])
    assert "B_local[i] = (A[i] * 2.0)" in show(f) and "B[i_1] = B_local[i_1]" in show(f)
    assert BL.op.reduce_axis == ()


def test_cache_write_reduction_axis_moves():
    A, B, C, k, s = _matmul(8)
    s.cache_write(C, "local")
    _err(lambda: s[C].split(k, factor=2), "'k'", "no longer exists", "moved to stage 'C_local'")
    ko, ki = s[s.stages[-2]].split(k, factor=2)
    assert ko.is_reduce


def test_cache_errors():
    A, B, C, k, s = _matmul(8)
    _err(lambda: s.cache_read(A, "", [C]), "scope must be a non-empty string")
    _err(lambda: s.cache_read(A, "local", []), "no readers")
    D = te.compute((8, 8), lambda i, j: C[i, j], name="D")
    s2 = te.create_schedule(D)
    _err(lambda: s2.cache_read(A, "local", [D]), "stage 'D' does not read 'A'")
    _err(lambda: s.cache_write(A, "local"), "placeholder")
    s[C].split(C.op.axis[0], factor=2)
    _err(lambda: s.cache_write(C, "local"), "already scheduled", "before other primitives")
    other = te.placeholder((3,), name="other")
    _err(lambda: s.cache_read(other, "local", [C]), "'other' is not part of this schedule")
