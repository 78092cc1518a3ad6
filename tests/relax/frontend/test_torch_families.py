"""A model of each architecture family through both of kiln's PyTorch paths, against eager
(rtol = atol = 2e-3): ``kiln.compile(module, example_args=...)`` (torch.export) with a dynamic
batch (and sequence), and ``torch.compile(module, backend="kiln")``
(TorchDynamo), whose first call compiles a static graph and whose call at another size
recompiles it with the sizes Dynamo made dynamic (tests/relax/frontend/torch_families.py).

NOTE: each case compiles its model (~5-10 s of CPU each); the models are built once per
family (module-scope fixture). The static torch.export path is the first call of the
``torch.compile`` case (Dynamo exports its static graph with torch.export and builds it through
``kiln.compile``'s model cache), so a separate static ``kiln.compile`` case is not repeated here
(suite time); static ``kiln.compile`` of modules is tested in test_torch.py."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest

from tests.relax.frontend.torch_families import FAMILIES, build

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.filterwarnings("ignore::FutureWarning", "ignore::DeprecationWarning")

import kiln  # noqa: E402

TOL = 2e-3


@pytest.fixture(scope="module", params=sorted(FAMILIES))
def family(request: pytest.FixtureRequest) -> tuple[str, Any]:
    """(name, model) of each family, built once for this file's tests."""
    return request.param, build(request.param)


def eager(net: Any, args: tuple[Any, ...]) -> np.ndarray:
    with torch.no_grad():
        return net(*args).numpy()


def check(got: Any, want: np.ndarray, what: str) -> None:
    got = got.detach().numpy() if isinstance(got, torch.Tensor) else np.asarray(got)
    assert got.shape == want.shape, (what, got.shape, want.shape)
    np.testing.assert_allclose(got, want, rtol=TOL, atol=TOL, err_msg=what)


def test_kiln_compile_with_dynamic_batch_and_sequence(family: tuple[str, Any]) -> None:
    name, net = family
    fam = FAMILIES[name]
    model = kiln.compile(net, example_args=fam.example(), dims=fam.dims)
    named = {d for spec in model.inputs or () for d in spec.dims or () if isinstance(d, str)}
    assert named == set(fam.dims), model.inputs
    for args in [fam.example(), *fam.others()]:
        check(model(*args), eager(net, args), f"{name} at {[tuple(a.shape) for a in args]}")


def test_torch_compile_static_then_dynamic(family: tuple[str, Any]) -> None:
    name, net = family
    fam = FAMILIES[name]
    torch._dynamo.reset()
    fast = torch.compile(net, backend="kiln")
    # NOTE: Dynamo keeps sizes 0 and 1 static (a batch of 1 would compile a third graph)
    sizes = [fam.example(), fam.others()[0], fam.inputs(4, 9)]
    with warnings.catch_warnings(record=True) as caught, torch.no_grad():
        warnings.simplefilter("always")
        for args in sizes:
            got = fast(*args)
            check(got, eager(net, args), f"{name} at {[tuple(a.shape) for a in args]}")
    eager_graphs = [
        str(w.message) for w in caught if "kiln runs this graph eagerly" in str(w.message)
    ]
    assert not eager_graphs, eager_graphs
