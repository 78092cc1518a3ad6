"""`pip install -e .[test]` installs every third-party package that the suite and the README's
examples import (a plain install must run them, not only `make test`'s)."""

from __future__ import annotations

import ast
import re
import sys
from importlib.metadata import packages_distributions
from pathlib import Path

import pytest

tomllib = pytest.importorskip("tomllib", reason="Python 3.11+ reads pyproject.toml")

ROOT = Path(__file__).resolve().parents[1]
OWN = {"kiln", "tests", "benchmarks", "__future__"}


def normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def requirement_name(req: str) -> str:
    return normalize(re.split(r"[\s\[<>=!~;]", req, maxsplit=1)[0])


def extra_closure() -> set[str]:
    """The distributions `.[test]` installs: the base dependencies, the test extra and every extra
    it names as ``kiln[...]``."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    names = {requirement_name(r) for r in project["dependencies"]}
    todo, seen = ["test"], set()
    while todo:
        extra = todo.pop()
        if extra in seen:
            continue
        seen.add(extra)
        for req in extras[extra]:
            m = re.fullmatch(r"kiln\[([\w,\s-]+)\]", req.strip())
            if m:
                todo += [e.strip() for e in m.group(1).split(",")]
            else:
                names.add(requirement_name(req))
    return names


def imported_modules(source: str) -> set[str]:
    """Top-level names of every module ``source`` imports (or asks pytest.importorskip for)."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module.split(".")[0])
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "importorskip":
            if node.args and isinstance(node.args[0], ast.Constant):
                found.add(str(node.args[0].value).split(".")[0])
    return found


def third_party_imports() -> dict[str, str]:
    """Third-party module -> the first file importing it, over tests/ and the README's examples."""
    sources = [(p, p.read_text()) for p in sorted((ROOT / "tests").rglob("*.py"))]
    readme = (ROOT / "README.md").read_text()
    sources += [(ROOT / "README.md", b) for b in re.findall(r"```python\n(.*?)```", readme, re.S)]
    local = {p.stem for p in (ROOT / "tests").rglob("*.py")}  # rootdir-relative helpers
    found: dict[str, str] = {}
    for path, text in sources:
        for mod in imported_modules(text) - OWN - local - set(sys.stdlib_module_names):
            found.setdefault(mod, str(path.relative_to(ROOT)))
    return found


def test_the_test_extra_installs_everything_the_suite_and_readme_import() -> None:
    closure = extra_closure()
    dists = packages_distributions()
    missing = []
    for mod, where in sorted(third_party_imports().items()):
        provided = {normalize(d) for d in dists.get(mod, ())}
        if not provided & closure:
            missing.append(f"{mod} (imported by {where}; from {sorted(provided) or 'nothing'})")
    assert not missing, "pyproject's test extra does not install: " + "; ".join(missing)
