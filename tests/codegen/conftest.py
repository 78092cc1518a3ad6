"""Every test here builds into one fresh KILN_CACHE_DIR per test session (per xdist worker)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture(scope="session", autouse=True)
def kiln_cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    path = tmp_path_factory.mktemp("kiln-cache")
    patch = pytest.MonkeyPatch()
    patch.setenv("KILN_CACHE_DIR", str(path))
    patch.delenv("KILN_DEBUG", raising=False)
    yield path
    patch.undo()
