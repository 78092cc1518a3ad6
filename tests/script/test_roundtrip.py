"""The script corpus: every file parses, verifies, prints, re-parses to an equal module."""

from __future__ import annotations

from pathlib import Path

import pytest

import kiln.script
from kiln.ir import IRModule, assert_structural_equal
from kiln.tir import PrimFunc, verify_well_formed
from tests.script.helpers import nodes_without_span, roundtrip

CORPUS = sorted((Path(__file__).parent / "corpus").glob("*.py"))


def test_corpus_is_large_enough() -> None:
    assert len(CORPUS) >= 40


@pytest.mark.parametrize("path", CORPUS, ids=[p.stem for p in CORPUS])
def test_corpus_roundtrip(path: Path) -> None:
    text = path.read_text()
    ir = kiln.script.from_source(text, str(path))
    verify_well_formed(ir)
    roundtrip(ir, map_free_vars="kiln-test: map_free_vars" in text)


@pytest.mark.parametrize("path", CORPUS, ids=[p.stem for p in CORPUS])
def test_corpus_spans(path: Path) -> None:
    ir = kiln.script.from_source(path.read_text(), str(path))
    assert nodes_without_span(ir) == []
    funcs = list(ir.functions.values()) if hasattr(ir, "functions") else [ir]
    for f in funcs:
        assert f.span.source_name == str(path)
        assert path.read_text().splitlines()[f.span.line - 1].lstrip().startswith("def ")


def test_corpus_text_runs_as_python() -> None:
    """Each corpus file is also a plain Python module using the decorators (real file spans)."""
    import importlib.util

    for path in CORPUS:
        spec = importlib.util.spec_from_file_location(f"corpus_{path.stem}", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)  # type: ignore[union-attr]
        parsed = [v for v in vars(module).values() if isinstance(v, (IRModule, PrimFunc))]
        assert len(parsed) == 1, path
        from_text = kiln.script.from_source(path.read_text(), str(path))
        assert_structural_equal(parsed[0], from_text, map_free_vars=True)
        assert nodes_without_span(parsed[0]) == []
