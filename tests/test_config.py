"""kiln.config reads the environment (and only it does)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from kiln import config

ROOT = Path(__file__).resolve().parents[1]


def test_load_reads_variables(monkeypatch, tmp_path):
    monkeypatch.setenv("KILN_DEBUG", "2")
    monkeypatch.setenv("KILN_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("KILN_CC", "gcc")
    cfg = config.load()
    assert (cfg.debug, cfg.cache_dir, cfg.cc) == (2, tmp_path, "gcc")


@pytest.mark.parametrize(
    ("raw", "level", "timed"),
    [("time", 0, True), ("1,time", 1, True), ("time,3", 3, True), ("2", 2, False)],
)
def test_kiln_debug_time(monkeypatch, raw, level, timed):
    monkeypatch.setenv("KILN_DEBUG", raw)
    cfg = config.load()
    assert (cfg.debug, cfg.time_passes) == (level, timed)


def test_bad_integer_is_named(monkeypatch):
    monkeypatch.setenv("KILN_DEBUG", "lots")
    with pytest.raises(ValueError, match="KILN_DEBUG must be an integer, got 'lots'"):
        config.load()
    monkeypatch.setenv("KILN_DEBUG", "1,2")
    with pytest.raises(ValueError, match="KILN_DEBUG must be an integer"):
        config.load()


def test_openmp_defaults_applied_before_the_runtime_loads():
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OMP_", "KILN_"))}
    env["KILN_NUM_THREADS"] = "1"
    code = (
        "import os, kiln.runtime; "
        "print(os.environ['OMP_NUM_THREADS'], os.environ['OMP_WAIT_POLICY'])"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    assert out == ["1", "passive"]


def test_environment_is_read_only_in_config():
    offenders = []
    for path in (ROOT / "kiln").rglob("*.py"):
        if path.name == "config.py":
            continue
        text = path.read_text()
        if "os.environ" in text or "os.getenv" in text:
            offenders.append(str(path.relative_to(ROOT)))
    assert offenders == []


def test_pool_threads_and_spin(monkeypatch):
    monkeypatch.delenv("KILN_NUM_THREADS", raising=False)
    monkeypatch.setenv("OMP_NUM_THREADS", "3,2")
    assert config.pool_threads() == 3
    monkeypatch.setenv("KILN_NUM_THREADS", "2")
    assert config.pool_threads() == 2
    monkeypatch.delenv("KILN_NUM_THREADS")
    monkeypatch.delenv("OMP_NUM_THREADS")
    assert config.pool_threads() == len(os.sched_getaffinity(0))
    monkeypatch.setenv("KILN_POOL_SPIN_US", "250")
    assert config.pool_spin_us() == 250.0
    monkeypatch.delenv("KILN_POOL_SPIN_US")
    assert config.pool_spin_us() == config.POOL_SPIN_US


@pytest.mark.parametrize("raw", ["-1", "soon"])
def test_bad_pool_spin_is_named(monkeypatch, raw):
    monkeypatch.setenv("KILN_POOL_SPIN_US", raw)
    with pytest.raises(ValueError, match="KILN_POOL_SPIN_US"):
        config.pool_spin_us()


def test_print_filters_are_comma_separated(monkeypatch):
    monkeypatch.setenv("KILN_PRINT_AFTER", "fuse-ops, lower-te,")
    monkeypatch.setenv("KILN_PRINT_FUNCS", "main,*conv2d*")
    cfg = config.load()
    assert cfg.print_after == {"fuse-ops", "lower-te"}
    assert cfg.print_funcs == ("main", "*conv2d*")
    monkeypatch.setenv("KILN_PRINT_AFTER", " ")
    monkeypatch.delenv("KILN_PRINT_FUNCS")
    assert config.load().print_after is None and config.load().print_funcs is None
