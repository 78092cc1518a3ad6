"""`pip install -e .[test]` installs every third-party package that the suite and the README's
examples import (a plain install must run them, not only `make test`'s); `.[demo]`, which
`make demo` installs, holds exactly what the demo imports beyond the base package."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from importlib.metadata import PackageNotFoundError, distribution, packages_distributions
from importlib.util import find_spec
from pathlib import Path

import pytest

tomllib = pytest.importorskip("tomllib", reason="Python 3.11+ reads pyproject.toml")

ROOT = Path(__file__).resolve().parents[1]
OWN = {"kiln", "tests", "benchmarks", "__future__"}


def normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def requirement_name(req: str) -> str:
    return normalize(re.split(r"[\s\[<>=!~;]", req, maxsplit=1)[0])


def base_dependencies() -> set[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return {requirement_name(r) for r in project["dependencies"]}


def extra_closure(extra: str = "test") -> set[str]:
    """The distributions `.[extra]` installs: the base dependencies, the extra and every extra it
    names as ``kiln[...]``."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    names = base_dependencies()
    todo, seen = [extra], set()
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


def module_file(name: str) -> Path | None:
    """The source file of kiln module ``name`` (a package's ``__init__.py``), or None."""
    base = ROOT.joinpath(*name.split("."))
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.is_file():
            return path
    return None


def import_names(node: ast.stmt) -> list[str]:
    """Dotted names one import statement loads, ``from a import b`` giving ``a`` and ``a.b``."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
        return [node.module] + [f"{node.module}.{a.name}" for a in node.names]
    return []


def optional(node: ast.stmt) -> bool:
    """``if TYPE_CHECKING:``, or a ``try:`` that goes on when an import fails."""
    if isinstance(node, ast.If):
        return "TYPE_CHECKING" in ast.unparse(node.test)
    caught = [ast.unparse(h.type) for h in getattr(node, "handlers", []) if h.type is not None]
    return any("ImportError" in c or "ModuleNotFoundError" in c for c in caught)


def module_level_imports(body: list[ast.stmt]) -> list[str]:
    """What statements run when a module loads import: not inside functions, not optional."""
    names = []
    for node in body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) or optional(node):
            continue
        names += import_names(node)
        for field in ("body", "orelse", "finalbody", "handlers"):
            names += module_level_imports(getattr(node, field, []))
    return names


def demo_imports() -> dict[str, str]:
    """Third-party module -> the kiln file importing it, over what ``kiln.examples.demo`` reaches:
    every import of kiln.examples' own files (the demo's code, its function-level imports too),
    and the module-level imports of the library modules they load, followed through kiln."""
    found: dict[str, str] = {}
    todo, seen = ["kiln.examples.demo"], set()
    while todo:
        name = todo.pop()
        path = module_file(name)
        if name in seen or path is None:
            continue
        seen.add(name)
        tree = ast.parse(path.read_text())
        if name.startswith("kiln.examples"):
            names = [n for stmt in ast.walk(tree) for n in import_names(stmt)]
        else:
            names = module_level_imports(tree.body)
        for dotted in names:
            top = dotted.split(".")[0]
            if top == "kiln":
                parts = dotted.split(".")
                todo += [".".join(parts[:i]) for i in range(1, len(parts) + 1)]
            elif top not in OWN and top not in sys.stdlib_module_names:
                found.setdefault(top, str(path.relative_to(ROOT)))
    return found


def test_the_demo_extra_lists_exactly_what_the_demo_imports() -> None:
    dists = packages_distributions()
    needed = {}
    for mod, where in demo_imports().items():
        for dist in dists.get(mod, [mod]):
            needed[normalize(dist)] = f"{mod} (imported by {where})"
    base, demo = base_dependencies(), extra_closure("demo")
    missing = sorted(why for dist, why in needed.items() if dist not in demo)
    assert not missing, "pyproject's demo extra does not install: " + "; ".join(missing)
    unused = sorted(demo - base - set(needed))
    assert not unused, f"pyproject's demo extra installs what the demo never imports: {unused}"
    assert {"onnx", "onnxruntime"} <= set(needed), sorted(needed)  # the walk reached run_onnx


BLOCKER = """
import importlib.abc, sys
blocked = set(sys.argv[1].split(","))
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in blocked:
            raise ModuleNotFoundError(f"blocked: {name}", name=name)
sys.meta_path.insert(0, Block())
import kiln.examples.demo
print("imported")
"""


def installed_closure(names: set[str]) -> set[str]:
    """``names`` and, through the installed metadata, every distribution they require (without
    extras): what a venv holding ``names`` holds."""
    todo, seen = list(names), set()
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        try:
            requires = distribution(name).requires or []
        except PackageNotFoundError:
            continue
        todo += [requirement_name(r) for r in requires if "extra ==" not in r]
    return seen


def test_the_demo_loads_without_the_other_extras() -> None:
    """The walk above, checked by running: ``kiln.examples.demo`` imports in a process where every
    installed third-party module outside `.[demo]`'s install fails to import."""
    keep = installed_closure(extra_closure("demo"))
    blocked = {
        mod
        for mod, dists in packages_distributions().items()
        if not keep & {normalize(d) for d in dists} and mod not in OWN
    }
    assert "torch" in blocked or find_spec("torch") is None  # the check blocks what it should
    proc = subprocess.run(
        [sys.executable, "-c", BLOCKER, ",".join(sorted(blocked))],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert proc.returncode == 0 and "imported" in proc.stdout, proc.stderr[-2000:]
