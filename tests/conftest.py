"""Fixtures shared by the whole suite.

- Every test session (each xdist worker) builds into one fresh ``KILN_CACHE_DIR`` with
  ``KILN_DEBUG`` unset, so tests never read or fill the user's cache.
- CUDA: tests marked ``needs_nvrtc`` skip, with the reason, where the ``cuda`` extra (NVRTC) is
  not installed; the ``gpu`` fixture skips a test unless an NVIDIA GPU and driver are present.
- ``pytest -n N`` schedules by work stealing (see `pytest_xdist_make_scheduler`).
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest


def _have_module(name: str) -> bool:
    """``find_spec`` that answers False, not ModuleNotFoundError, when a parent is missing."""
    try:
        return importlib.util.find_spec(name) is not None
    except ModuleNotFoundError:
        return False


HAVE_NVRTC = _have_module("cuda.bindings")
NO_NVRTC = "NVRTC is not installed (pip install 'kiln[cuda]')"
NO_GPU = "no NVIDIA GPU/driver"


@pytest.fixture(scope="session", autouse=True)
def kiln_cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    path = tmp_path_factory.mktemp("kiln-cache")
    patch = pytest.MonkeyPatch()
    patch.setenv("KILN_CACHE_DIR", str(path))
    patch.delenv("KILN_DEBUG", raising=False)
    yield path
    patch.undo()


@pytest.fixture(scope="session")
def gpu_reason() -> str | None:
    """None when kernels can run here, else why not."""
    from kiln.runtime import cuda_runtime

    return cuda_runtime.unavailable_reason()


@pytest.fixture
def gpu(gpu_reason: str | None) -> None:
    """Skip the test unless an NVIDIA GPU and driver are present."""
    if gpu_reason is not None:
        pytest.skip(NO_GPU)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "needs_nvrtc" in item.keywords and not HAVE_NVRTC:
            item.add_marker(pytest.mark.skip(reason=NO_NVRTC))


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "needs_nvrtc: compiles CUDA with NVRTC (kiln[cuda])")


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """Work stealing for ``--dist load`` (what ``-n`` picks): it hands each worker a contiguous
    half of the tests and moves tests from a busy worker's queue to an idle one at the end.
    ``load`` never moves a test once queued, and a worker whose queue held the long compiles
    finished 75 s after the other (2 workers, 2 cores); contiguous shares also keep a file's
    module fixtures on one worker."""
    if config.getvalue("dist") != "load":
        return None
    from xdist.scheduler import WorkStealingScheduling

    return WorkStealingScheduling(config, log)
