"""KILN_DEBUG=1 names the loops kiln asked to vectorize that the C compiler did not, and why;
the compiler's output is kept with the cached library."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import kiln
from kiln import tir
from kiln.codegen.vector_report import VectorLoop, loop_marks, missed_loops, strip_loop_marks
from kiln.runtime.toolchain import compile_c, compiler_output, find_compiler, is_gcc
from tests.codegen.helpers import loop, prim_func

N = 256
needs_gcc = pytest.mark.skipif(
    not is_gcc(tuple(find_compiler())), reason="missed-vectorization notes come from GCC"
)


def test_marks_are_stripped_and_give_each_loops_lines() -> None:
    a0, a1 = loop_marks(0)
    b0, b1 = loop_marks(1)
    text = f"int f() {{\n  for (;;) {{{a0}\n    for (;;) {{{b0}\n    }}{b1}\n  }}{a1}\n}}"
    clean, loops = strip_loop_marks(text, [("f", "i", False), ("f", "j", True)])
    assert "\x00" not in clean and clean.count("\n") == text.count("\n")
    assert loops == [VectorLoop("f", "i", 2, 5, False), VectorLoop("f", "j", 3, 4, True)]


def test_notes_belong_to_the_innermost_loop_and_vectorized_loops_are_quiet() -> None:
    loops = [
        VectorLoop("f", "i", 2, 9, False),
        VectorLoop("f", "j", 3, 5, True),
        VectorLoop("f", "k", 6, 8, True),
    ]
    log = "\n".join(
        [
            "/c/x.c:2:5: missed: couldn't vectorize loop",  # the outer, serial loop: ignored
            "/c/x.c:4:9: missed: couldn't vectorize loop",
            "/c/x.c:4:9: missed: not vectorized: control flow in loop.",
            "/c/x.c:4:20: missed: statement clobbers memory: _5 = log1pf (_4);",
            "/c/x.c:7:9: missed: couldn't vectorize loop",  # k: vectorized after all
            "/c/x.c:7:9: optimized: loop vectorized using 64 byte vectors",
            "/c/other.c:4:9: missed: couldn't vectorize loop",  # another file
        ]
    )
    assert missed_loops(log, "x.c", loops) == [
        "f: loop 'j' (line 3) was not vectorized: not vectorized: control flow in loop; "
        "statement clobbers memory: _5 = log1pf (_4)"
    ]


def _vector_map(fn: Any) -> tir.PrimFunc:
    return prim_func(
        "main",
        {"A": ((N,), "float32"), "B": ((N,), "float32")},
        lambda A, B: loop(
            N, lambda i: tir.BufferStore(B, fn(A[i]), (i,)), kind=tir.ForKind.VECTORIZED
        ),
    )


@needs_gcc
def test_debug_level_1_names_a_loop_gcc_did_not_vectorize(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    func = _vector_map(lambda v: tir.call_pure_extern("float32", "log1pf", v))
    monkeypatch.setenv("KILN_DEBUG", "0")
    quiet = kiln.build(func)
    assert capsys.readouterr().err == ""
    monkeypatch.setenv("KILN_DEBUG", "1")
    loud = kiln.build(func)
    assert loud.path != quiet.path  # the notes flag is part of the cache key
    (line,) = [x for x in capsys.readouterr().err.splitlines() if "not vectorized" in x]
    assert line.startswith("kiln: main: loop 'i' (line ")
    # GCC's reason follows (with -fno-math-errno no longer the errno of log1pf, "statement
    # clobbers memory", but that log1pf has no vector version)
    assert line.split(" was not vectorized: ", 1)[1].strip()
    a = np.linspace(0, 1, N, dtype="float32")
    b = np.zeros_like(a)
    loud["main"](a, b)
    np.testing.assert_allclose(b, np.log1p(a), rtol=1e-6)
    # a cached build says it again: the notes are kept with the library
    kiln.build(func)
    assert "loop 'i'" in capsys.readouterr().err


@needs_gcc
def test_a_vectorized_loop_is_not_reported(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("KILN_DEBUG", "1")
    kiln.build(_vector_map(lambda v: tir.exp(v) * v + tir.const(1.0, "float32")))
    assert "not vectorized" not in capsys.readouterr().err


def test_compiler_output_is_kept_on_success() -> None:
    lib = compile_c('#warning "kiln-test-warning"\nint kiln_answer(void) { return 42; }\n')
    assert "kiln-test-warning" in compiler_output(lib)
