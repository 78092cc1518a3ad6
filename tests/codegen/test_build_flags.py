"""The C compiler flags of a build come from its target: ``-march=`` is the ``c`` target's CPU
(``native`` for the host), and the build cache keeps each CPU's library apart."""

from __future__ import annotations

import numpy as np
import pytest

import kiln
from kiln import tir
from kiln.codegen.build import compile_flags
from kiln.ir import Target
from kiln.runtime import DEFAULT_FLAGS
from kiln.runtime.toolchain import cache_key, default_flags, find_compiler
from tests.codegen.helpers import f32, loop, prim_func

RUNS_AVX2 = Target("c").cpu.isa in ("avx2", "avx512")


def test_flags_name_the_target_cpu() -> None:
    assert compile_flags(Target("c")) == DEFAULT_FLAGS == default_flags("native")
    avx2 = compile_flags(Target("c -mcpu=haswell"))
    assert "-march=haswell" in avx2 and "-march=native" not in avx2
    assert [f for f in avx2 if not f.startswith("-march=")] == [
        f for f in DEFAULT_FLAGS if not f.startswith("-march=")
    ]
    # a device target's host code is compiled for its host's CPU
    assert "-march=x86-64-v3" in compile_flags(Target("cuda", host="c -mcpu=x86-64-v3"))
    # given flags keep their own -march, and get the target's when they name none
    assert compile_flags(Target("c -mcpu=haswell"), ["-O1", "-march=znver2"]) == (
        "-O1",
        "-march=znver2",
    )
    assert compile_flags(Target("c -mcpu=haswell"), ["-O1"]) == ("-O1", "-march=haswell")


def test_cache_key_changes_with_the_cpu() -> None:
    cc = tuple(find_compiler())
    keys = {
        cache_key("int x;", compile_flags(Target(t)), cc)
        for t in ("c", "c -mcpu=haswell", "c -mcpu=x86-64-v4")
    }
    assert len(keys) == 3


def _scale_by_two() -> tir.PrimFunc:
    def body(A: tir.Buffer) -> tir.Stmt:
        return loop(64, lambda i: tir.BufferStore(A, A[i] * f32(2), [i]))

    return prim_func("scale", {"A": ((64,), "float32")}, body)


@pytest.mark.skipif(not RUNS_AVX2, reason="the host cannot run AVX2 (haswell) code")
def test_same_module_for_two_cpus_is_two_libraries() -> None:
    host = kiln.build(_scale_by_two())
    avx2 = kiln.build(_scale_by_two(), target="c -mcpu=haswell")
    assert host.path != avx2.path and host.inspect_source() == avx2.inspect_source()
    for mod in (host, avx2):
        a = np.arange(64, dtype="float32")
        mod["scale"](a)
        np.testing.assert_array_equal(a, np.arange(64) * 2)


def test_a_square_root_in_a_vector_loop_is_vector_code() -> None:
    """``x / sqrt(v + eps)`` (T5's RMS norm): with ``-fno-math-errno`` the C compiler turns
    ``sqrtf`` into the square-root instruction (here hoisted out of the row's vector loop)
    instead of a libm call per element that kept the loop scalar (173 -> 34 us for 128x512 on
    one Zen 3 core); the results are IEEE's."""
    from kiln import te, topi
    from tests.topi.conftest import machine_code

    assert "-fno-math-errno" in DEFAULT_FLAGS
    x, v = te.placeholder((4, 64), name="x"), te.placeholder((4, 1), name="v")
    y = topi.divide(x, topi.sqrt(topi.add(v, tir.const(1e-6, "float32"))))
    mod = kiln.build(te.lower(topi.schedule_for(y), [x, v, y]), target="c")
    asm = machine_code(mod)
    assert ("sqrtps" in asm or "sqrtss" in asm) and "sqrtf@plt" not in asm  # never libm
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((4, 64), "float32"), rng.random((4, 1), "float32")
    out = np.zeros_like(a)
    mod["main"](a, b, out)
    np.testing.assert_allclose(out, a / np.sqrt(b + np.float32(1e-6)), rtol=1e-6)
