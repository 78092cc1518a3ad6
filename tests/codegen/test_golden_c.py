"""The C of the golden corpus is unchanged (see tests/codegen/golden_corpus.py).

A failure here is not necessarily a bug: it shows a change to emitted C for review. If the change
is intended, regenerate with ``python -m tests.codegen.golden_corpus --update`` and commit the
reviewed diff of tests/codegen/golden/.
"""

from __future__ import annotations

import difflib

import pytest

from tests.codegen.golden_corpus import GOLDEN, emit, kernels

NAMES = sorted(kernels())


@pytest.mark.parametrize("name", NAMES)
def test_emitted_c_matches_golden(name: str) -> None:
    path = GOLDEN / f"{name}.golden"
    assert path.exists(), (
        f"no golden C for {name!r}: run python -m tests.codegen.golden_corpus --update"
    )
    want, got = path.read_text(), emit(name)
    if got != want:
        diff = "".join(
            difflib.unified_diff(
                want.splitlines(True), got.splitlines(True), f"golden/{name}.golden", "emitted"
            )
        )
        pytest.fail(
            f"the C emitted for {name!r} changed; review the diff and, if intended, run "
            f"`python -m tests.codegen.golden_corpus --update`:\n{diff[:6000]}"
        )


def test_corpus_has_every_golden_file() -> None:
    stale = sorted(p.stem for p in GOLDEN.glob("*.golden") if p.stem not in kernels())
    assert not stale, f"golden files without a kernel (delete them): {stale}"
    assert len(NAMES) >= 20


def test_simplified_index_arithmetic() -> None:
    """No ``(f / 64) * 1024 + (f % 64) * 16``-style pairs where the simplifier knows bounds."""
    for name in NAMES:
        text = (GOLDEN / f"{name}.golden").read_text()
        assert "kiln_floordiv" not in text and "kiln_floormod" not in text, name
