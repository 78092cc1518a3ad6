"""Imports point down the layer table of docs/architecture.md; passes import analyses, never
other passes.

Every module of the package is parsed and every import it makes is checked: module-level,
function-level and ``TYPE_CHECKING`` imports alike, plus ``importlib.import_module("kiln...")``
calls with a constant name. A package's ``__init__`` may re-export its own subpackages. The only
allowed upward import is the printer hook behind ``Node.script()`` (kiln/ir/node.py).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "kiln"

LAYERS: list[tuple[str, ...]] = [
    ("kiln.errors", "kiln.config"),
    ("kiln.runtime",),
    ("kiln.ir",),
    ("kiln.tir", "kiln.arith"),
    ("kiln.tir.analysis", "kiln.tir.transform"),
    ("kiln.te",),
    ("kiln.topi", "kiln.codegen"),
    # the graph level, in rows of its own: core IR -> op records -> analyses -> block builder
    # -> lowering backends (TE compiler, external codegens) -> rewrite rules and passes ->
    # frontends (and the package, which re-exports it all)
    (
        "kiln.relax.expr",
        "kiln.relax.struct_info",
        "kiln.relax.binding",
        "kiln.relax.visitor",
        "kiln.relax.te_bridge",
        "kiln.relax.analysis.struct_info",
    ),
    ("kiln.relax.op",),
    ("kiln.relax.analysis",),
    (
        "kiln.relax.normalizer",
        "kiln.relax.block_builder",
        "kiln.relax.expr_functor",
        "kiln.relax.function_pass",
        "kiln.relax.outline",
    ),
    ("kiln.relax.backend",),
    ("kiln.relax.pattern", "kiln.relax.transform"),
    ("kiln.relax.frontend",),
    ("kiln.vm",),
    ("kiln.script",),
    # the packages `kiln` and `kiln.relax` are facades: they re-export every layer (and load
    # `kiln.relax.build`, the driver's, on first use); ONNX's backend API compiles and runs
    (
        "kiln.driver",
        "kiln.cli",
        "kiln.examples",
        "kiln.__main__",
        "kiln",
        "kiln.relax",
        "kiln.relax.frontend.onnx.backend",
    ),
]
"""Lowest layer first; a module may import its own row and the rows before it."""

ALLOWED = {
    ("kiln.ir.node", "kiln.script"),
}
"""(importer, imported): the printer hook `Node.script()` loads the script layer on first use."""


def layer_of(module: str) -> int:
    """The row of the longest prefix of ``module`` in `LAYERS`."""
    best, best_len = -1, -1
    for row, prefixes in enumerate(LAYERS):
        for p in prefixes:
            if (module == p or module.startswith(p + ".")) and len(p) > best_len:
                best, best_len = row, len(p)
    assert best >= 0, f"{module} is in no layer: add it to LAYERS and to docs/architecture.md"
    return best


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports_of(path: Path) -> list[tuple[str, int]]:
    """(imported module, line) for every kiln import in the file."""
    tree = ast.parse(path.read_text(), str(path))
    found: list[tuple[str, int]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module == "kiln" or node.module.startswith("kiln."):
                # ``from kiln.relax import op``: the submodule, where the name is one
                subs = [f"{node.module}.{a.name}" for a in node.names]
                found += [(m, node.lineno) for m in subs if _real_module(m)]
                if node.module != "kiln" and not all(_real_module(m) for m in subs):
                    found.append((node.module, node.lineno))
        elif isinstance(node, ast.Import):
            found += [(a.name, node.lineno) for a in node.names if a.name.startswith("kiln")]
        elif (
            isinstance(node, ast.Call)
            and getattr(node.func, "attr", getattr(node.func, "id", "")) == "import_module"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and str(node.args[0].value).startswith("kiln")
        ):
            found.append((node.args[0].value, node.lineno))
    return [(m, n) for m, n in found if _real_module(m)]


def _real_module(name: str) -> bool:
    """Drop ``from kiln import X`` where X is not a module (a lazy attribute of kiln)."""
    rel = Path(*name.split("."))
    return (ROOT / rel).is_dir() or (ROOT / rel).with_suffix(".py").exists()


MODULES = sorted(PKG.rglob("*.py"))


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(ROOT)))
def test_imports_point_down(path: Path) -> None:
    me = module_name(path)
    mine = layer_of(me)
    bad = []
    for target, line in imports_of(path):
        if (me, target) in ALLOWED:
            continue
        if path.name == "__init__.py" and target.startswith(me + "."):
            continue  # a package re-exports its own subpackages
        if layer_of(target) > mine:
            bad.append(f"line {line}: {target} (layer {layer_of(target)} > {mine})")
    assert not bad, f"{me} imports upward:\n" + "\n".join(bad)


@pytest.mark.parametrize("folder", ["tir/transform", "relax/transform"])
def test_passes_never_import_other_passes(folder: str) -> None:
    base = PKG / folder
    if not base.exists():
        pytest.skip(f"kiln/{folder} does not exist yet")
    bad = []
    for path in sorted(base.glob("*.py")):
        if path.name == "__init__.py":
            continue
        for target, line in imports_of(path):
            prefix = "kiln." + folder.replace("/", ".")
            if target.startswith(prefix + ".") or target == prefix:
                bad.append(f"{path.relative_to(ROOT)}:{line} imports {target}")
    assert not bad, "passes import analyses, never other passes:\n" + "\n".join(bad)


def test_no_folder_named_target() -> None:
    """A standard Python .gitignore ignores ``target/``: no source may live in such a folder."""
    assert not [p for p in PKG.rglob("target") if p.is_dir()]


def test_every_module_is_in_a_layer() -> None:
    for path in MODULES:
        layer_of(module_name(path))
