"""``KILN_DEBUG=time`` / ``kiln compile --time-passes``: a table of the time of each phase and
pass of a compile, whose rows are non-negative and add up to (about) the total."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

import kiln
from kiln.cli.main import main
from kiln.driver.timing import CompileTimer
from tests.driver.test_model_cache import mlp

ROW = re.compile(r"^(\S.*?)\s+(-?\d+\.\d+)\s+(-?\d+\.\d+)(?:\s+(\d+))?$")
DETAIL = re.compile(r"^  (\S.*?)\s+(-?\d+\.\d+)$")

COLD_PHASES = [
    "cache key",
    "cache lookup + load",
    "import",
    "graph: fuse-ops",
    "graph: lower-te",
    "vm codegen",
    "tir: flatten-buffer",
    "tir: simplify",
    "c codegen",
    "c compile (waiting) + link",
    "load",
    "cache store + load",
]


def parse(table: str) -> tuple[dict[str, tuple[float, float]], dict[str, float]]:
    """(rows by name: (wall, cpu); details by name: wall) of a printed table."""
    rows: dict[str, tuple[float, float]] = {}
    details: dict[str, float] = {}
    for line in table.splitlines():
        if m := DETAIL.match(line):
            details[m[1]] = float(m[2])
        elif m := ROW.match(line):
            rows[m[1]] = (float(m[2]), float(m[3]))
    return rows, details


def check_sums(rows: dict[str, tuple[float, float]]) -> None:
    phases = {k: v for k, v in rows.items() if k not in ("(sum of the rows)", "total")}
    assert all(w >= 0 and c >= 0 for w, c in phases.values()), phases
    wall = sum(w for w, _ in phases.values())
    total = rows["total"][0]
    assert rows["(sum of the rows)"][0] == pytest.approx(wall, abs=0.002 * len(phases))
    # the rows are disjoint parts of the compile: they add up to no more than it took, and to
    # most of it (what is left out is a few lines between the phases)
    assert wall <= total + 0.01
    # the table rounds to milliseconds; a busy machine may preempt the process for a few
    # milliseconds between two phases (a 7 ms warm load measured 3 ms in its rows under load)
    assert wall >= 0.9 * total - 0.002 * len(phases) - 0.005


def test_nested_phases_count_their_own_time_only() -> None:
    timer = CompileTimer()
    with timer.phase("outer"):
        time.sleep(0.05)
        with timer.phase("inner"):
            time.sleep(0.1)
    with timer.phase("inner"):
        time.sleep(0.02)
    assert 0.045 <= timer.rows["outer"][0] < 0.1
    assert timer.rows["inner"][0] >= 0.12 and timer.rows["inner"][2] == 2
    rows, _ = parse(timer.table())
    assert list(rows) == ["outer", "inner", "(sum of the rows)", "total"]
    check_sums(rows)


def test_kiln_debug_time_prints_every_phase(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("KILN_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("KILN_DEBUG", "time")
    data = mlp(3)[0]
    kiln.compile(data)
    rows, details = parse(capsys.readouterr().err)
    for phase in COLD_PHASES:
        assert phase in rows, (phase, sorted(rows))
    assert "cc unit 0" in details and "link" in details
    check_sums(rows)

    kiln.compile(data)  # from the model cache: nothing is imported or compiled
    rows, details = parse(capsys.readouterr().err)
    assert "cache lookup + load" in rows and "import" not in rows and not details
    check_sums(rows)


def test_cli_time_passes(tmp_path: Path, monkeypatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("KILN_CACHE_DIR", str(tmp_path / "cache"))
    model = tmp_path / "mlp.onnx"
    model.write_bytes(mlp(4)[0])
    assert main(["compile", str(model), "-o", str(tmp_path / "m.so"), "-q", "--time-passes"]) == 0
    rows, _ = parse(capsys.readouterr().err)
    assert "graph: lower-te" in rows and "tir: flatten-buffer" in rows
    check_sums(rows)
