"""The operator registry: every record has every piece, and a numpy check in cases.py.

A failure names the file to edit: the record's family file for a missing piece, the cases file
for a missing numpy check.
"""

from __future__ import annotations

import inspect

import pytest

from kiln.ir import Op
from kiln.relax import op as R
from kiln.relax.op.registry import OpDef, get_op_def, list_op_defs, register_op
from kiln.topi.tag import Pattern
from tests.relax.op.cases import ALL

RECORDS = list_op_defs()
CHECKED = {c.op for c in ALL}


def test_the_issue_operators_are_all_registered() -> None:
    names = {r.name for r in RECORDS}
    wanted = (
        "exp log sqrt rsqrt tanh sigmoid erf abs negative floor ceil round sin cos clip "
        "logical_not isnan add subtract multiply divide floor_divide power maximum minimum "
        "equal not_equal less less_equal greater greater_equal logical_and logical_or where "
        "sum mean max min prod variance argmax argmin matmul permute_dims reshape expand_dims "
        "squeeze flatten concat split strided_slice take broadcast_to full zeros ones arange "
        "astype shape_of call_tir call_dps_packed call_pure_packed "
        "sign isinf isfinite logical_xor trunc_divide floor_mod trunc_mod"
    ).split()
    nn = "relu gelu gelu_tanh silu conv2d max_pool2d avg_pool2d adaptive_avg_pool2d batch_norm"
    nn += " layer_norm softmax log_softmax dropout pad"
    nn += " softplus mish hardswish hardsigmoid softsign swish leakyrelu prelu elu selu celu"
    nn += " thresholded_relu shrink"
    missing = sorted(
        ({f"relax.{n}" for n in wanted} | {f"relax.nn.{n}" for n in nn.split()}) - names
    )
    assert not missing, f"operators without a record: {missing}"
    assert callable(R.call_packed) and callable(R.linear)


def record_problems(rec: OpDef, checked: set[str]) -> list[str]:
    """What a record lacks, each naming the file to edit."""
    where = f"edit {rec.family}"
    out = []
    if not callable(rec.builder) or not inspect.getdoc(rec.builder):
        out.append(f"{rec.name}: no documented builder ({where})")
    if not callable(rec.infer):
        out.append(f"{rec.name}: no struct info inference ({where})")
    if not isinstance(rec.pattern, Pattern):
        out.append(f"{rec.name}: no fusion pattern ({where})")
    if not isinstance(rec.pure, bool):
        out.append(f"{rec.name}: purity not stated ({where})")
    if rec.legalize is None and not rec.lowered_by:
        out.append(f"{rec.name}: no legalization to TE, and no word on what lowers it ({where})")
    if rec.legalize is not None and rec.name not in checked:
        out.append(f"{rec.name}: no numpy check; add a Case to tests/relax/op/cases.py")
    return out


@pytest.mark.parametrize("rec", RECORDS, ids=[r.name for r in RECORDS])
def test_record_is_complete(rec: OpDef) -> None:
    assert rec.family.startswith("kiln/relax/op/"), rec.family
    assert record_problems(rec, CHECKED) == []
    assert Op.get(rec.name) is rec.op and get_op_def(rec.op) is rec


def test_builders_are_exported_under_tvm_names() -> None:
    for rec in RECORDS:
        parts = rec.name.split(".")[1:]
        obj = R
        for p in parts:
            obj = getattr(obj, p, None)
        assert obj is rec.builder, f"relax.op.{'.'.join(parts)} is not the builder of {rec.name}"


def test_a_missing_piece_names_the_file() -> None:
    def builder() -> None:
        """A test-only operator."""

    rec = OpDef("relax.test_only", builder, None, lambda c, a: None, Pattern.OPAQUE, True, "k/x.py")
    problems = record_problems(rec, set())
    assert problems == [
        "relax.test_only: no struct info inference (edit k/x.py)",
        "relax.test_only: no numpy check; add a Case to tests/relax/op/cases.py",
    ]


def test_registering_twice_is_an_error() -> None:
    with pytest.raises(Exception, match="registered twice"):
        register_op("relax.add", infer=None, legalize=None, pattern=Pattern.OPAQUE)(lambda: None)
