"""Target: parsing, canonical string form, attributes and their defaults, host handling, and the
CPU of a ``c`` target (``mcpu``, read from the C compiler)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kiln.errors import KilnError
from kiln.ir.target import TARGET_KINDS, CpuInfo, Target, TargetKind
from kiln.runtime.toolchain import compiler_version, find_compiler


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


# -- the CPU of a c target ----------------------------------------------------------------------
def test_c_target_cpu_spellings_and_canonical_form() -> None:
    host = Target("c")
    assert host == Target("c -mcpu=native") == Target({"kind": "c", "mcpu": "native"})
    assert str(host) == "c" and host.mcpu == "native"
    avx2 = Target("c -mcpu=haswell")
    assert str(avx2) == "c -mcpu=haswell" and Target(str(avx2)) == avx2 and avx2 != host
    assert avx2 == Target("c", {"mcpu": "haswell"}) and hash(avx2) == hash(Target(str(avx2)))
    dev = Target("cuda", host="c -mcpu=x86-64-v3")
    assert str(dev) == "cuda -host='c -mcpu=x86-64-v3'" and Target(str(dev)) == dev
    assert dev.host_target().mcpu == "x86-64-v3"


def test_host_cpu_is_read_from_the_compiler() -> None:
    cpu = Target("c").cpu
    assert cpu.march == "native" and cpu.name
    assert Target("c").cpu is cpu  # memoized per process
    cc = tuple(find_compiler())
    if "Free Software Foundation" in compiler_version(cc):
        assert cpu.name != "native"  # GCC says which CPU -march=native is
    info = Path("/proc/cpuinfo")
    text = info.read_text() if info.exists() else ""
    if "\nflags" not in text:
        pytest.skip("no x86 CPU flags in /proc/cpuinfo to compare with")
    flags = text.split("\nflags")[1].split("\n")[0].split()
    for feature in ("avx512f", "avx2", "fma", "avx"):  # the compiler agrees with the kernel
        assert (feature in cpu.features) == (feature in flags), feature
    width = 64 if "avx512f" in flags else 32 if "avx" in flags else 16
    assert Target("c").vector_bytes == cpu.vector_bytes == width


@pytest.mark.parametrize(
    ("mcpu", "isa", "vector_bytes", "registers"),
    [
        ("x86-64", "sse2", 16, 16),
        ("haswell", "avx2", 32, 16),
        ("x86-64-v3", "avx2", 32, 16),
        ("skylake-avx512", "avx512", 64, 32),
        ("x86-64-v4", "avx512", 64, 32),
    ],
)
def test_named_cpus_give_their_isa(mcpu: str, isa: str, vector_bytes: int, registers: int) -> None:
    t = Target(f"c -mcpu={mcpu}")
    assert (t.cpu.name, t.cpu.isa) == (mcpu, isa)
    assert t.vector_bytes == t.cpu.vector_bytes == vector_bytes
    assert t.cpu.vector_registers == registers
    assert Target("cuda", host=t).vector_bytes == 16  # a device target's own width


def test_bad_cpus_are_named() -> None:
    with pytest.raises(KilnError, match="'mcpu' expects a value matching .* got '-O0'"):
        Target("c -mcpu=-O0")
    with pytest.raises(KilnError, match="'mcpu' expects a value matching .* got True"):
        Target("c -mcpu")
    with pytest.raises(KilnError, match="'c -mcpu=pentium9000': the C compiler rejects "):
        _ = Target("c -mcpu=pentium9000").cpu
    with pytest.raises(KilnError, match="runs on 'cuda', not a CPU"):
        _ = Target("cuda").cpu


def test_cpu_info_levels() -> None:
    cpu = CpuInfo("x", "x", frozenset({"avx", "avx2", "fma", "avx512f"}))
    assert cpu.isa == "avx2" and cpu.vector_bytes == 64 and cpu.vector_registers == 32
    assert CpuInfo("x", "x", frozenset({"aarch64", "neon"})).vector_registers == 32
    assert CpuInfo("x", "x", frozenset()).isa == "scalar"
