"""docs/ stays true: the README links it, every path it names exists, its layer table is the
one tests/test_layers.py enforces, and every variable and pass it names is kiln's."""

from __future__ import annotations

import re
from pathlib import Path

from kiln.driver.passes import pass_names
from tests.test_layers import LAYERS

ROOT = Path(__file__).resolve().parents[1]
DOCS = {name: (ROOT / "docs" / name).read_text() for name in ("architecture.md", "debugging.md")}


def test_readme_links_the_docs() -> None:
    readme = (ROOT / "README.md").read_text()
    for name in DOCS:
        assert f"](docs/{name})" in readme


def test_every_path_the_docs_name_exists() -> None:
    for name, text in DOCS.items():
        for path in re.findall(r"`(kiln/[\w/.]+?|tests/[\w/.]+?)/?`", text):
            assert (ROOT / path).exists(), f"docs/{name} names {path}, which does not exist"


def test_the_layer_table_is_the_enforced_one() -> None:
    text = DOCS["architecture.md"]
    rows = re.findall(r"^\| (\d+) \| ([^|]+) \|", text, flags=re.M)
    assert [int(n) for n, _ in rows] == list(range(1, len(LAYERS) + 1))
    for (_, folders), prefixes in zip(rows, LAYERS):
        paths = [f.strip("`/ ").removesuffix(".py") for f in folders.split(",")]
        named = {p.replace("/", ".").removesuffix(".__init__") for p in paths}
        assert set(prefixes) == named, f"layer row {folders.strip()} != {sorted(prefixes)}"


def test_variables_and_passes_named_in_debugging_exist() -> None:
    text = DOCS["debugging.md"]
    config_doc = (ROOT / "kiln" / "config.py").read_text()
    for var in set(re.findall(r"KILN_[A-Z_]+", text)):
        assert f"`{var}`" in config_doc, f"docs/debugging.md names {var}, unknown to kiln.config"
    known = set(pass_names())
    for names in re.findall(r"(?:-p |KILN_PRINT_AFTER=)([a-z,-]+)", text):
        for name in filter(None, names.split(",")):
            assert name in known, f"docs/debugging.md names pass {name!r}, which is not one"
