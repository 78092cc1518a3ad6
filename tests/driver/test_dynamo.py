"""``torch.compile(model, backend="kiln")`` (kiln.driver.dynamo): found through its entry point,
cached across processes, right across graph breaks, recompiles and changed weights; graphs it
does not run (gradients, mutated inputs) run eagerly with a warning. Results against eager."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.filterwarnings("ignore::FutureWarning")

from kiln.driver.dynamo import KilnGraph, kiln_backend  # noqa: E402

EAGERLY = "kiln runs this graph eagerly"


def counting() -> tuple[Callable[..., Any], list[Any]]:
    """kiln's backend, keeping what it returned for each graph Dynamo compiled."""
    compiled: list[Any] = []

    def backend(gm: Any, example_inputs: Any, **kwargs: Any) -> Any:
        fn = kiln_backend(gm, example_inputs, **kwargs)
        compiled.append(fn)
        return fn

    return backend, compiled


def close(got: Any, want: Any) -> None:
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-5, atol=1e-6)


class Branchy(torch.nn.Module):
    """A data-dependent branch between two layers: Dynamo breaks the graph there."""

    def __init__(self) -> None:
        super().__init__()
        self.a, self.b = torch.nn.Linear(6, 6), torch.nn.Linear(6, 3)

    def forward(self, x: Any) -> Any:
        h = self.a(x)
        h = h * 2 if x[0, 0] > 0 else h - 1
        return self.b(h)


def test_graph_breaks_run_eagerly_between_kiln_graphs_and_sizes_recompile() -> None:
    torch._dynamo.reset()
    torch.manual_seed(0)
    net = Branchy().eval()
    backend, graphs = counting()
    fast = torch.compile(net, backend=backend)
    with torch.no_grad():
        for batch, sign in [(2, 1), (2, -1), (4, 1), (5, 1), (7, 1)]:
            if batch == 5:
                before = len(graphs)  # batch 4 made the dim dynamic: 5 and 7 reuse its graphs
            x = sign * (torch.rand(batch, 6) + 0.1)
            close(fast(x), net(x))
    assert before >= 3 and len(graphs) == before, graphs
    assert all(isinstance(g, KilnGraph) for g in graphs), graphs
    dims = [g.model.inputs[0].dims for g in graphs]
    assert any(isinstance(d[0], str) for d in dims) and any(d[0] == 2 for d in dims), dims


def test_weights_changed_in_place_are_seen_and_outputs_are_fresh_tensors() -> None:
    class Out(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc = torch.nn.Linear(4, 4)

        def forward(self, x: Any) -> Any:
            return self.fc(x), x * 1, torch.ones(3)

    torch._dynamo.reset()
    net = Out().eval()
    fast = torch.compile(net, backend="kiln")
    x = torch.randn(2, 4)
    with torch.no_grad():
        y, same, ones = fast(x)
        close(y, net(x)[0])
        assert same.data_ptr() != x.data_ptr()  # eager's x * 1 is a new tensor, kiln's x itself
        ones.add_(1)  # must not change the model's constant
        net.fc.weight.mul_(-2)  # bumps the version counter: the next call compiles again
        y2, _, ones2 = fast(x)
    close(y2, net(x)[0])
    close(ones2, torch.ones(3))


def test_graphs_that_need_autograd_or_mutate_inputs_run_eagerly_with_a_warning() -> None:
    torch._dynamo.reset()
    net = torch.nn.Linear(4, 2)
    x = torch.randn(3, 4)
    with pytest.warns(UserWarning, match=f"{EAGERLY}: it records gradients .* torch.no_grad"):
        y = torch.compile(net, backend="kiln")(x)
    y.sum().backward()  # eager autograd works as it does without torch.compile
    assert net.weight.grad is not None
    close(y, net(x))

    def bump(x: Any) -> Any:
        x[1:].add_(1)  # through a view
        return x * 2

    a, b = torch.zeros(3), torch.zeros(3)
    with pytest.warns(UserWarning, match=f"{EAGERLY}: it mutates its input"):
        got = torch.compile(bump, backend="kiln")(a)
    close(got, bump(b))
    close(a, b)


def test_unknown_options_are_named() -> None:
    torch._dynamo.reset()
    fast = torch.compile(torch.nn.ReLU(), backend="kiln", options={"threads": 2})
    with pytest.raises(Exception, match="takes options num_threads, target; got \\['threads'\\]"):
        fast(torch.randn(3))


SCRIPT = textwrap.dedent(
    """
    import json, sys, torch
    assert "kiln" not in sys.modules
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.GELU(), torch.nn.Linear(16, 4))
    fast = torch.compile(net.eval(), backend="kiln", options={"num_threads": 1})
    x = torch.randn(3, 8)
    with torch.no_grad():
        err = float((fast(x) - net(x)).abs().max())
    from kiln.driver.kernel_cache import source_fingerprint  # part of the cache key
    print(json.dumps({"err": err, "kiln": "kiln.driver.dynamo" in sys.modules,
                      "kiln source": source_fingerprint()}))
    """
)


def test_the_entry_point_needs_no_import_and_a_new_process_hits_the_cache(tmp_path: Path) -> None:
    env = {**os.environ, "KILN_CACHE_DIR": str(tmp_path / "cache"), "KILN_DEBUG": "time"}
    runs, sources = [], []
    for _ in range(2):
        done = subprocess.run(
            [sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=300
        )
        assert done.returncode == 0, done.stderr[-3000:]
        result = json.loads(done.stdout.strip().splitlines()[-1])
        assert result["kiln"] and result["err"] < 1e-5, result
        runs.append(phases(done.stderr))
        sources.append(result["kiln source"])
    assert sources[0] == sources[1], "kiln's source files changed between the two processes"
    assert "import" in runs[0] and "c compile (waiting) + link" in runs[0], runs[0]
    assert runs[1] == ["cache key", "cache lookup + load"], runs[1]  # loaded, not compiled


def phases(stderr: str) -> list[str]:
    """The rows of the ``KILN_DEBUG=time`` table (`kiln.driver.timing`) in ``stderr``."""
    lines = stderr.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("kiln compile times"))
    rows = []
    for line in lines[start + 1 :]:
        row = re.match(r"(\S.*?)\s{2,}[\d.]+\s", line)
        if row is None or row.group(1).startswith(("(sum", "total")):
            break
        rows.append(row.group(1))
    return rows


def test_no_graph_warns_when_kiln_runs_it() -> None:
    torch._dynamo.reset()
    net = torch.nn.Sequential(torch.nn.Linear(3, 3), torch.nn.Softmax(-1)).eval()
    x = torch.randn(2, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        with torch.no_grad():
            close(torch.compile(net, backend="kiln")(x), net(x))
