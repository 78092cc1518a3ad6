"""An executable records its signature (inputs, outputs, dtypes, symbolic dims), and an exported
library carries it: `kiln.load(p).inputs` / `.outputs` and the runtime alone can read it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import kiln
from kiln.driver.inputs import InputSpec
from kiln.driver.signature import signatures
from kiln.errors import FrontendError
from kiln.runtime import load_executable, load_module
from kiln.runtime.vm_format import Signature, TensorSpec
from kiln.script import ir as I
from kiln.script import relax as R


@I.ir_module
class Pair:
    @R.function
    def main(x: R.Tensor(("n", 4), "float32"), w: R.Tensor((4, 2), "float32")):
        with R.dataflow():
            y = R.nn.relu(R.matmul(x, w))
            z = R.concat([y, y], axis=0)
            s = R.sum(y, axis=[1])
            R.output(y, z, s)
        return (y, (z, s))


@I.ir_module
class Single:
    @R.function
    def main(a: R.Tensor((2, 3), "int32")):
        with R.dataflow():
            b = R.add(a, a)
            R.output(b)
        return b


PAIR = Signature(
    "main",
    (TensorSpec("x", "float32", ("n", 4)), TensorSpec("w", "float32", (4, 2))),
    (
        TensorSpec("y", "float32", ("n", 2)),
        TensorSpec(
            "z", "float32", (str(Pair["main"].ret_struct_info.fields[1].fields[0].dims[0]), 2)
        ),  # fmt: skip
        TensorSpec("s", "float32", ("n",)),
    ),
)


def test_signature_of_a_nested_tuple_result() -> None:
    (sig,) = signatures(Pair)
    assert sig == PAIR
    assert "n" in sig.outputs[1].dims[0]  # 2 * n, as text


def test_signature_of_a_single_result() -> None:
    (sig,) = signatures(Single)
    assert sig == Signature(
        "main", (TensorSpec("a", "int32", (2, 3)),), (TensorSpec("b", "int32", (2, 3)),)
    )


@pytest.mark.parametrize("mode", ["compiled", "bytecode"])
def test_exported_model_carries_its_signature(mode: str, tmp_path: Path) -> None:
    model = kiln.compile(Pair, exec_mode=mode)
    assert model.outputs == list(PAIR.outputs)
    path = model.export(tmp_path / "pair.so")
    loaded = kiln.load(path)
    assert loaded.inputs == [
        InputSpec("x", "float32", ("n", 4)),
        InputSpec("w", "float32", (4, 2)),
    ]
    assert loaded.outputs == list(PAIR.outputs)
    assert load_executable(load_module(path)).signature("main") == PAIR  # the runtime alone
    x, w = np.ones((3, 4), "float32"), np.ones((4, 2), "float32")
    y, (z, s) = loaded(x, w)
    np.testing.assert_allclose(y.numpy(), np.maximum(x @ w, 0))
    assert z.shape == (6, 2) and s.shape == (3,)
    with pytest.raises(FrontendError, match=r"expected x: float32\[n, 4\]"):
        loaded(np.ones((3, 5), "float32"), w)  # the signature checks inputs
