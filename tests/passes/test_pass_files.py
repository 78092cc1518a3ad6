"""Pass tests as script files, run through ``kiln opt`` (kiln.cli.opt).

Each ``NAME.before.py`` opens with ``# RUN: kiln opt ARGS %s`` (``%s``: the file itself); the
module `kiln opt` prints for it must be structurally equal to ``NAME.after.py``, written by hand.
Compared as IR, not as text, so a change of the printer's layout breaks none of them; and the
result must differ from the input, so a pass that does nothing fails. To add a test, add a pair.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from kiln.cli.main import main
from kiln.ir import assert_structural_equal, structural_equal
from kiln.ir.module import IRModule
from kiln.script import from_source

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
CASES = sorted(HERE.glob("*.before.py"))
RUN = re.compile(r"# RUN: kiln opt (.+)")


def _name(before: Path) -> str:
    return before.name.removesuffix(".before.py")


def run_args(before: Path) -> list[str]:
    """The ``kiln opt`` arguments of ``before``'s RUN line, ``%s`` replaced by its path."""
    first = before.read_text().splitlines()[0]
    match = RUN.fullmatch(first)
    assert match, f"{before.name}: the first line must be '# RUN: kiln opt ARGS %s'"
    args = shlex.split(match[1])
    assert "%s" in args, f"{before.name}: the RUN line must name the file as %s"
    return [str(before) if a == "%s" else a for a in args]


def parse(path: Path) -> IRModule:
    mod = from_source(path.read_text(), str(path))
    assert isinstance(mod, IRModule), f"{path.name} must hold one @I.ir_module"
    return mod


def check(before: Path, printed: str) -> None:
    """``printed`` (kiln opt's output) parses to NAME.after.py's module, not to the input."""
    actual = from_source(printed, f"<kiln opt of {before.name}>")
    assert_structural_equal(actual, parse(before.with_name(f"{_name(before)}.after.py")))
    assert not structural_equal(actual, parse(before)), f"{before.name}: the passes did nothing"


def test_the_folder_holds_the_documented_cases() -> None:
    names = {_name(p) for p in CASES}
    assert {"fold_constant", "fuse_ops", "dce_then_canonicalize", "simplify"} <= names
    for before in CASES:
        assert before.with_name(f"{_name(before)}.after.py").is_file(), before.name


@pytest.mark.parametrize("before", CASES, ids=_name)
def test_pass_file(before: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["opt", *run_args(before)]) == 0
    check(before, capsys.readouterr().out)


def test_pass_file_through_python_m_kiln(tmp_path: Path) -> None:
    """The same, as a user runs it: ``python -m kiln opt ... -o FILE`` in a process of its own."""
    before = HERE / "fuse_ops.before.py"
    out = tmp_path / "fused.py"
    cmd = [sys.executable, "-m", "kiln", "opt", *run_args(before), "-o", str(out)]
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == ""
    check(before, out.read_text())
