"""Every operator record against numpy, with fixed and with symbolic shapes: each case is a
relax function legalized to TE PrimFuncs (LegalizeOps), built with kiln.build (one library per
family and mode: compilation dominates the run time) and run on numpy arrays."""

from __future__ import annotations

import pytest

from tests.relax.op.cases import FAMILIES
from tests.relax.op.harness import run_cases


@pytest.mark.parametrize("symbolic", [False, True], ids=["fixed", "symbolic"])
@pytest.mark.parametrize("family", list(FAMILIES))
def test_family_against_numpy(family: str, symbolic: bool) -> None:
    run_cases(FAMILIES[family], symbolic)
