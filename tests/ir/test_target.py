"""Target: parsing, canonical string form, attributes and their defaults, host handling."""

from __future__ import annotations

import pytest

from kiln.errors import KilnError
from kiln.ir.target import TARGET_KINDS, Target, TargetKind


def test_from_any_and_str() -> None:
    t = Target.from_any("c")
    assert t == Target("c") and str(t) == "c" and t.device == "cpu"
    assert Target.from_any(t) is t
    assert Target.from_any({"kind": "c"}) == t
    assert t.host_target() is t
    assert t.is_host_kind and t.device_type == 1


def test_unknown_kind_and_attribute() -> None:
    with pytest.raises(KilnError, match="unknown target kind 'llvm'.*\\['cuda'\\] \\(device\\)"):
        Target("llvm")
    with pytest.raises(KilnError, match="target 'c' has no attribute\\(s\\) \\['arch'\\]"):
        Target.from_any("c -arch=sm_80")
    with pytest.raises(KilnError, match="expected a target"):
        Target.from_any("  ")
    with pytest.raises(KilnError, match="'max_threads_per_block' expects int, got 'many'"):
        Target("cuda -max_threads_per_block=many")
    with pytest.raises(KilnError, match="needs a 'kind' key"):
        Target({"arch": "sm_80"})


def test_cuda_spellings_are_one_value() -> None:
    spellings = [
        Target("cuda -arch=sm_80", host="c"),
        Target("cuda -arch=sm_80 -host=c"),
        Target({"kind": "cuda", "arch": "sm_80", "host": "c"}),
        Target("cuda", {"arch": "sm_80"}, "c"),
        Target.from_any("cuda -arch=sm_80", host="c"),
        Target("cuda -arch=sm_80").with_host("c"),
    ]
    assert all(t == spellings[0] for t in spellings)
    assert len({hash(t) for t in spellings}) == 1
    assert {str(t) for t in spellings} == {"cuda -arch=sm_80 -host=c"}


def test_cuda_attributes_and_defaults() -> None:
    t = Target("cuda")
    assert (t.arch, t.max_threads_per_block, t.max_shared_memory_per_block) == (
        "sm_90",
        1024,
        49152,
    )
    assert t.get("thread_warp_size") == 32 and t.thread_warp_size == 32
    assert t.device == "cuda" and t.device_type == 2 and not t.is_host_kind
    # a default spelled out is the default: same value, same string
    assert Target("cuda -arch=sm_90") == t and str(Target("cuda -arch=sm_90")) == "cuda"
    small = Target("cuda -max_threads_per_block=256")
    assert small.max_threads_per_block == 256 and str(small) == "cuda -max_threads_per_block=256"
    assert small != t
    with pytest.raises(AttributeError):
        _ = t.mcpu


def test_host_handling() -> None:
    dev = Target("cuda")
    assert dev.host is None and dev.host_target() == Target("c")
    with_host = dev.with_host("c")
    assert with_host.host == Target("c") and with_host != dev
    assert with_host.without_host() == dev and dev.without_host() is dev
    assert str(with_host) == "cuda -host=c"
    assert Target(str(with_host)) == with_host


def test_repr_names_the_target() -> None:
    assert repr(Target("cuda -arch=sm_80", host="c")) == "Target('cuda -arch=sm_80', host='c')"
    assert repr(Target("c")) == "Target('c')"


def test_a_registered_kind_with_attributes_and_host(monkeypatch: pytest.MonkeyPatch) -> None:
    kinds = dict(TARGET_KINDS)
    kinds["fake"] = TargetKind("fake", "gpu", {"arch": "sm_50", "fast": False}, is_host=False)
    monkeypatch.setattr("kiln.ir.target.TARGET_KINDS", kinds)
    t = Target.from_any("fake -arch=sm_90 -fast")
    assert str(t) == "fake -arch=sm_90 -fast"
    assert t.get("arch") == "sm_90" and t.device == "gpu"
    assert Target("fake").get("arch") == "sm_50"
    assert t.host_target() == Target("c")
    assert t.with_host("c").host == Target("c")
    assert Target("fake -fast=false") == Target("fake")
    with pytest.raises(KilnError, match="no DLPack device type"):
        _ = t.device_type


def test_host_with_attributes_round_trips(monkeypatch: pytest.MonkeyPatch) -> None:
    kinds = dict(TARGET_KINDS)
    kinds["cpu2"] = TargetKind("cpu2", "cpu", {"opt": 2})
    monkeypatch.setattr("kiln.ir.target.TARGET_KINDS", kinds)
    t = Target("cuda", host="cpu2 -opt=3")
    assert str(t) == "cuda -host='cpu2 -opt=3'"
    assert Target(str(t)) == t and t.host.get("opt") == 3
