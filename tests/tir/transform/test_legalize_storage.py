"""LegalizeStorage: bfloat16 / float8 stored narrow, computed in float32, rounded once on store."""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np
import pytest

import kiln
from kiln import tir
from kiln.ir import GlobalVar, IRModule
from kiln.ir.target import Target
from kiln.tir.transform import FlattenBuffer, LegalizeStorage, MakePackedAPI
from kiln.tir.transform.legalize_storage import legalized_dtypes
from tests.codegen.helpers import loop, prim_func

N = 4096
DTYPES = {
    "bfloat16": ml_dtypes.bfloat16,
    "float8_e4m3fn": ml_dtypes.float8_e4m3fn,
    "float8_e5m2": ml_dtypes.float8_e5m2,
}


def fused(dt: str) -> tir.PrimFunc:
    """``C[i] = (A[i] + B[i]) * A[i] - 0.1``, all in ``dt``."""

    def body(A: Any, B: Any, C: Any) -> tir.Stmt:  # noqa: N803
        def store(i: tir.Var) -> tir.Stmt:
            return tir.BufferStore(C, (A[i] + B[i]) * A[i] - tir.const(0.1, dt), (i,))

        return loop(N, store)

    return prim_func(f"fused_{dt}", {"A": ((N,), dt), "B": ((N,), dt), "C": ((N,), dt)}, body)


def legalize(func: tir.PrimFunc, dtypes: Any = None) -> tir.PrimFunc:
    mod = LegalizeStorage(dtypes)(FlattenBuffer()(IRModule({GlobalVar("f"): func})))
    return next(iter(mod.functions.values()))


def nodes(func: tir.PrimFunc) -> list[Any]:
    found: list[Any] = []
    tir.post_order_visit(func.body, found.append)
    return found


def test_arithmetic_runs_in_float32_and_stores_round_once() -> None:
    out = legalize(fused("bfloat16"))
    arith = [n for n in nodes(out) if isinstance(n, tir.BinaryOp) and n.dtype.is_float]
    assert arith and all(str(n.dtype) == "float32" for n in arith)
    (store,) = [n for n in nodes(out) if isinstance(n, tir.BufferStore)]
    assert isinstance(store.value, tir.Cast) and str(store.value.dtype) == "bfloat16"
    assert str(store.value.value.dtype) == "float32"


def test_other_types_and_unchanged_functions_are_left_alone() -> None:
    f = prim_func(
        "g",
        {"A": ((4,), "float32")},
        lambda A: loop(4, lambda i: tir.BufferStore(A, A[i] + tir.const(1.0, "float32"), (i,))),
    )
    mod = FlattenBuffer()(IRModule({GlobalVar("g"): f}))
    assert LegalizeStorage()(mod) is mod
    out = legalize(fused("bfloat16"), dtypes=["float8_e5m2"])
    assert any(isinstance(n, tir.Add) and str(n.dtype) == "bfloat16" for n in nodes(out))


def test_which_targets_legalize_what() -> None:
    assert legalized_dtypes(Target("c")) == {"bfloat16", "float8_e4m3fn", "float8_e5m2"}
    assert legalized_dtypes(Target("cuda")) == {"float8_e4m3fn", "float8_e5m2"}
    assert "bfloat16" in legalized_dtypes(Target("cuda -arch=sm_75"))
    assert legalized_dtypes(None) == legalized_dtypes(Target("c"))


torch = pytest.importorskip("torch")
TORCH = {"bfloat16": "bfloat16", "float8_e4m3fn": "float8_e4m3fn", "float8_e5m2": "float8_e5m2"}


def to_torch(x: np.ndarray, dt: str) -> Any:
    wide = x.itemsize == 2
    carrier = torch.from_numpy(x.view("int16" if wide else "uint8").copy())
    return carrier.view(getattr(torch, TORCH[dt]))


def bits(t: Any, itemsize: int) -> np.ndarray:
    return t.view(torch.int16 if itemsize == 2 else torch.uint8).numpy()


@pytest.mark.parametrize("dt", sorted(DTYPES))
def test_bit_exact_against_ml_dtypes(dt: str) -> None:
    np_dt = DTYPES[dt]
    rng = np.random.default_rng(1)
    scale = 4.0 if dt.startswith("float8") else 100.0
    a = (rng.standard_normal(N) * scale).astype(np_dt)
    b = (rng.standard_normal(N) * scale).astype(np_dt)
    built = kiln.build(fused(dt), pipeline=[FlattenBuffer(), LegalizeStorage(), MakePackedAPI()])
    c = to_torch(np.zeros(N, np_dt), dt)
    built[f"fused_{dt}"](to_torch(a, dt), to_torch(b, dt), c)
    f32 = np.float32
    tenth = np.float32(np.array(0.1, dtype=np_dt))
    want = ((a.astype(f32) + b.astype(f32)) * a.astype(f32) - tenth).astype(np_dt)
    got = bits(c, want.itemsize).view(want.dtype)
    both_nan = np.isnan(got.astype(f32)) & np.isnan(want.astype(f32))
    np.testing.assert_array_equal(
        got.view("uint16" if want.itemsize == 2 else "uint8")[~both_nan],
        want.view("uint16" if want.itemsize == 2 else "uint8")[~both_nan],
    )
