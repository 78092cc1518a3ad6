"""The README's Python examples run as written (the README is the front door: keep it true)."""

import contextlib
import io
import re
import runpy
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def _python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)


def test_readme_has_examples():
    assert _python_blocks(), "README.md should show at least one Python example"


def test_readme_python_examples_run_and_print_what_they_claim(tmp_path, monkeypatch):
    monkeypatch.setenv("KILN_CACHE_DIR", str(tmp_path / "cache"))
    for n, block in enumerate(_python_blocks()):
        # a real file, as a user would run it: the script parser reads its source back
        path = tmp_path / f"readme_example_{n}.py"
        path.write_text(block)
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            runpy.run_path(str(path), run_name="__main__")
        claimed = re.findall(r"#\s*->\s*(.+)", block)
        printed = out.getvalue().splitlines()
        for want in claimed:
            assert any(line.strip() == want.strip() for line in printed), (want, printed)
