"""A lowered module as several C translation units: each exposed function with its callees
(a shared private helper in every unit that calls it), packed deterministically, compiled in
parallel and linked into a library that runs."""

from __future__ import annotations

import numpy as np

from kiln.codegen.units import function_groups, generate_unit, pack_units
from kiln.driver.build import lower
from kiln.runtime import load_module, metadata_c_source
from kiln.runtime.parallel_build import compile_units
from kiln.script import ir as I  # noqa: N812
from kiln.script import tir as T  # noqa: N812


@I.ir_module
class Mod:
    @T.prim_func
    def set_a(A: T.Buffer(1, dtype="float32")):  # noqa: N803
        Mod.store(A.data, T.float32(42.0))

    @T.prim_func
    def set_b(B: T.Buffer(1, dtype="float32")):  # noqa: N803
        Mod.store(B.data, T.float32(7.0))

    @T.prim_func
    def alone(C: T.Buffer(4, dtype="float32")):  # noqa: N803
        for i in range(4):
            C[i] = C[i] * T.float32(2.0)

    @T.prim_func(private=True)
    def store(X_data: T.handle("float32"), v: T.float32):  # noqa: N803
        X = T.decl_buffer(1, dtype="float32", data=X_data)  # noqa: N806
        X[0] = v


def names(mod) -> list[set[str]]:
    return [{gv.name_hint for gv in part.functions} for part in mod]


def test_groups_carry_their_callees() -> None:
    groups = {gvs[0].name_hint: {gv.name_hint for gv in gvs} for gvs, _ in function_groups(Mod)}
    assert groups == {"set_a": {"set_a", "store"}, "set_b": {"set_b", "store"}, "alone": {"alone"}}


def test_packing_is_bounded_and_deterministic() -> None:
    assert len(pack_units(Mod, 2)) == 2
    assert len(pack_units(Mod, 8)) == 3
    assert len(pack_units(Mod, 1)) == 1
    assert names(pack_units(Mod, 2)) == names(pack_units(Mod, 2))
    every = set().union(*names(pack_units(Mod, 2)))
    assert every == {"set_a", "set_b", "alone", "store"}


def test_units_compile_link_and_run(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("KILN_CACHE_DIR", str(tmp_path))
    units = [generate_unit(lower(part)) for part in pack_units(Mod, 3)]
    assert all("kiln metadata" not in u.source for u in units)
    exposed = [n for u in units for n in u.exposed]
    assert sorted(exposed) == ["alone", "set_a", "set_b"]
    signatures = {k: v for u in units for k, v in u.signatures.items()}
    sources = [u.source for u in units] + [metadata_c_source(exposed, signatures)]
    lib, _, _ = compile_units(sources, name_hint="units")
    mod = load_module(lib)
    a, b, c = np.zeros(1, "float32"), np.zeros(1, "float32"), np.arange(4, dtype="float32")
    mod["set_a"](a)
    mod["set_b"](b)
    mod["alone"](c)
    assert a[0] == 42.0 and b[0] == 7.0
    np.testing.assert_array_equal(c, [0, 2, 4, 6])
