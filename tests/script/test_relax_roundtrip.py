"""The R script corpus: every file parses, verifies, prints, and re-parses to an equal module,
both from its text and as a Python module using the decorators."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

import kiln.script
from kiln.ir import BaseFunc, IRModule, Node, assert_structural_equal
from kiln.relax import StructInfo
from kiln.relax.analysis.well_formed import well_formed_errors

CORPUS = sorted((Path(__file__).parent / "corpus_relax").glob("*.py"))


def code_without_span(ir: object) -> list[object]:
    """Every expression, binding, block and function below ``ir`` whose span is None (struct
    info is a type, not code: it is not required to carry one)."""
    missing, seen = [], set()
    stack = list(ir.functions.values()) if isinstance(ir, IRModule) else [ir]
    while stack:
        n = stack.pop()
        if isinstance(n, (tuple, list)):
            stack.extend(n)
            continue
        if not isinstance(n, Node) or isinstance(n, StructInfo) or id(n) in seen:
            continue
        seen.add(id(n))
        if "span" in n.field_names() and n.span is None:
            missing.append(n)
        stack.extend(getattr(n, f) for f in n.field_names() if f not in ("span", "struct_info_"))
    return missing


def test_corpus_is_large_enough() -> None:
    assert len(CORPUS) >= 30


def roundtrip(ir: object) -> object:
    """Print ``ir``, parse it back, check equality, well-formedness and stable printing."""
    assert well_formed_errors(ir) == []  # type: ignore[arg-type]
    text = ir.script()  # type: ignore[attr-defined]
    again = kiln.script.from_source(text, "<printed>")
    assert type(again) is type(ir)
    assert_structural_equal(ir, again)
    assert again.script() == text, "printing a reparsed module must give the same text"
    return again


@pytest.mark.parametrize("path", CORPUS, ids=[p.stem for p in CORPUS])
def test_corpus_roundtrip(path: Path) -> None:
    ir = kiln.script.from_source(path.read_text(), str(path))
    roundtrip(ir)


@pytest.mark.parametrize("path", CORPUS, ids=[p.stem for p in CORPUS])
def test_corpus_runs_as_python_with_spans(path: Path) -> None:
    spec = importlib.util.spec_from_file_location(f"relax_corpus_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    parsed = [v for v in vars(module).values() if isinstance(v, (IRModule, BaseFunc))]
    assert len(parsed) == 1, path
    from_text = kiln.script.from_source(path.read_text(), str(path))
    assert_structural_equal(parsed[0], from_text)
    assert code_without_span(parsed[0]) == []
