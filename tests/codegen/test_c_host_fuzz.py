"""Thousands of wrong calls to built functions, in child processes so that a crash is counted:
every call raises an error naming the function and the argument at fault; none crashes the
process or is accepted; good calls still work afterwards (see `tests.codegen.bad_calls`)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import kiln
from tests.codegen.bad_calls import MUTATIONS, fuzz_module

SEED = 20260
BATCHES = 4
CALLS_PER_BATCH = 900
REPO_ROOT = Path(__file__).resolve().parents[2]


def test_randomized_bad_calls_name_their_argument_and_never_crash(tmp_path: Path) -> None:
    lib = kiln.build(fuzz_module()).path
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    crashes: list[str] = []
    unnamed: list[str] = []
    accepted: list[str] = []
    kinds: dict[str, int] = {}
    calls = 0
    for batch in range(BATCHES):
        progress = tmp_path / f"progress-{batch}"
        cmd = [sys.executable, "-m", "tests.codegen.bad_calls"]
        cmd += [str(lib), str(SEED + batch), str(CALLS_PER_BATCH), str(progress)]
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
        if proc.returncode != 0:
            last = progress.read_text().strip() if progress.exists() else "?"
            crashes.append(
                f"batch {batch} (seed {SEED + batch}): exit {proc.returncode} at call "
                f"{last}\n{proc.stderr[-2000:]}"
            )
            continue
        summary = json.loads(proc.stdout.splitlines()[-1])
        calls += summary["calls"]
        unnamed += summary["unnamed"]
        accepted += summary["accepted"]
        for k, n in summary["kinds"].items():
            kinds[k] = kinds.get(k, 0) + n
    assert not crashes, "\n".join(crashes)
    assert not unnamed, "errors that do not name the function and argument:\n" + "\n".join(unnamed)
    assert not accepted, "wrong calls that raised nothing:\n" + "\n".join(accepted)
    assert calls == BATCHES * CALLS_PER_BATCH
    assert set(kinds) == {m.__name__ for m in MUTATIONS}, kinds
    assert min(kinds.values()) >= 50, kinds
