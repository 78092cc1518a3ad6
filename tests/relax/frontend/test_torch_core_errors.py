"""What the torch frontend says about the ATen ops it lacks, and its coverage table.

A program with ops kiln cannot convert fails with one `FrontendError`, before anything is
compiled, listing every such op with the user's file:line of each use (from the FX node's stack
trace) and its node; ``docs/aten_coverage.md`` is the generated table of every Core ATen op
(regenerated here: the test fails when the committed one is stale)."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.filterwarnings("ignore::FutureWarning")

import kiln  # noqa: E402
import kiln.driver.model as model_module  # noqa: E402
from kiln.errors import FrontendError  # noqa: E402
from kiln.relax.frontend.torch import coverage  # noqa: E402

ROOT = Path(__file__).resolve().parents[3]
TABLE = ROOT / "docs" / "aten_coverage.md"


class _Spectra(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        power = torch.fft.rfft(x).abs()  # _fft_r2c
        echo = torch.fft.irfft(torch.fft.rfft(x * 2))  # _fft_r2c, _fft_c2r
        return power, echo, torch.poisson(x.abs()) + x  # poisson: random, not uniform/normal


def _line(text: str) -> int:
    """The line of ``_Spectra.forward`` holding ``text``."""
    lines, first = inspect.getsourcelines(_Spectra.forward)
    return first + next(k for k, line in enumerate(lines) if text in line)


def test_every_unsupported_op_is_listed_with_its_line(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_build(*args: object, **kwargs: object) -> None:
        raise AssertionError("kiln compiled a program it cannot convert")

    monkeypatch.setattr(model_module, "build", no_build)
    with pytest.raises(FrontendError) as info:
        kiln.compile(_Spectra(), example_args=(torch.randn(2, 8),))
    text = str(info.value)
    here = (
        Path(__file__).relative_to(ROOT).as_posix() if Path.cwd() == ROOT else Path(__file__).name
    )
    power, echo = _line("power ="), _line("echo =")
    assert "_Spectra: 3 ATen operator(s) kiln does not support (nothing was compiled)" in text
    for op, line in [("_fft_r2c", power), ("_fft_r2c", echo), ("_fft_c2r", echo),
                     ("poisson", _line("poisson"))]:  # fmt: skip
        assert re.search(rf"aten\.{op}\.default at \S*{re.escape(here)}:{line} \(node '\w+'\)",
                         text), (op, line, text)  # fmt: skip
    assert "Poisson draws" in text and "complex" in text
    assert "kiln/" not in text and "site-packages" not in text


class _Grown(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.clone().resize_(5, 6) + 1  # 24 elements -> 30, the new 6 read (garbage in torch)


def test_a_resize_that_reads_new_elements_names_its_node() -> None:
    with pytest.raises(FrontendError) as info:
        kiln.compile(_Grown(), example_args=(torch.ones(4, 6),))
    text = str(info.value)
    pattern = (r"node 'resize\w*' \(aten\.resize\.default\): resize_ from \[4, 6\] to \[5, 6\] "
               r"adds elements that torch leaves uninitialized")  # fmt: skip
    assert re.search(pattern, text), text


@pytest.fixture(scope="module")
def table() -> list[coverage.Row]:
    return coverage.rows(ROOT / "tests" / "relax" / "frontend")


def test_the_coverage_table_is_current(table: list[coverage.Row]) -> None:
    """``docs/aten_coverage.md`` is what the generator makes now (for the torch it names)."""
    committed = TABLE.read_text()
    made_for = re.search(r"from torch (\S+);", committed)
    assert made_for, "docs/aten_coverage.md names no torch version"
    if made_for[1] != torch.__version__:
        pytest.skip(f"the table is for torch {made_for[1]}, this is {torch.__version__}")
    fresh = coverage.markdown(table, torch.__version__)
    assert committed == fresh, (
        "docs/aten_coverage.md is stale: run python -m kiln.relax.frontend.torch.coverage "
        "--markdown docs/aten_coverage.md"
    )


def test_every_supported_op_has_a_test_and_the_share_is_met(table: list[coverage.Row]) -> None:
    untested = [r.op for r in table if r.status in ("supported", "decomposed") and not r.test]
    assert not untested, f"supported ops no test covers: {untested}"
    counts = coverage.counts(table)
    total = sum(counts.values())
    supported = counts["supported"] + counts["decomposed"]
    assert supported >= 0.95 * (total - counts["not applicable"]), coverage.summary(table)
    known = {r.op for r in table}
    claimed = set(coverage.covered_by(ROOT / "tests" / "relax" / "frontend"))
    assert claimed <= known, f"tests claim ops the table lacks: {sorted(claimed - known)}"
