"""Target: parsing, attributes, host."""

from __future__ import annotations

import pytest

from kiln.errors import KilnError
from kiln.target import TARGET_KINDS, Target, TargetKind


def test_from_any_and_str() -> None:
    t = Target.from_any("c")
    assert t == Target("c") and str(t) == "c" and t.device == "cpu"
    assert Target.from_any(t) is t
    assert Target.from_any({"kind": "c"}) == t
    assert t.host_target() is t


def test_unknown_kind_and_attribute() -> None:
    with pytest.raises(KilnError, match="unknown target kind 'cuda'"):
        Target("cuda")
    with pytest.raises(KilnError, match="target 'c' has no attribute\\(s\\) \\['arch'\\]"):
        Target.from_any("c -arch=sm_80")
    with pytest.raises(KilnError, match="expected a target"):
        Target.from_any("  ")


def test_a_registered_kind_with_attributes_and_host(monkeypatch: pytest.MonkeyPatch) -> None:
    kinds = dict(TARGET_KINDS)
    kinds["fake"] = TargetKind("fake", "gpu", {"arch": "sm_50", "fast": False}, is_host=False)
    monkeypatch.setattr("kiln.target.target.TARGET_KINDS", kinds)
    t = Target.from_any("fake -arch=sm_90 -fast")
    assert str(t) == "fake -arch=sm_90 -fast"
    assert t.get("arch") == "sm_90" and t.device == "gpu"
    assert Target("fake").get("arch") == "sm_50"
    assert t.host_target() == Target("c")
    assert t.with_host("c").host == Target("c")
