"""ToNonDataflow: dataflow blocks and variables become ordinary ones."""

from __future__ import annotations

from kiln.ir import assert_structural_equal
from kiln.relax import DataflowBlock, DataflowVar
from kiln.relax.analysis.well_formed import well_formed_errors
from kiln.relax.transform import ToNonDataflow
from kiln.script import ir as I
from kiln.script import relax as R


def test_dataflow_blocks_become_binding_blocks() -> None:
    @I.ir_module
    class Before:
        @R.function
        def main(x: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
            with R.dataflow():
                a = R.exp(x)
                b = R.add(a, x)
                R.output(b)
            return b

    @I.ir_module
    class Expected:
        @R.function
        def main(x: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
            a = R.exp(x)
            b = R.add(a, x)
            return b

    after = ToNonDataflow()(Before)
    assert_structural_equal(after, Expected)
    f = after["main"]
    assert not any(isinstance(b, DataflowBlock) for b in f.body.blocks)
    assert not any(isinstance(x.var, DataflowVar) for b in f.body.blocks for x in b.bindings)
    assert well_formed_errors(after) == []
    assert ToNonDataflow()(after) is after
