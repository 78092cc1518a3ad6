"""Graphs thousands of operations deep: a relax call nested 2,000 levels (normalized by the
BlockBuilder into 2,000 bindings), a 2,000-binding chain and its R script, a TE graph 2,000
stages deep; each verified, printed, fused in groups of at most `MAX_FUSED_OPS`, compiled and
run against numpy, never a `RecursionError`."""

from __future__ import annotations

from functools import reduce

import numpy as np
import pytest

import kiln
import kiln.script
from kiln import relax, te, tir
from kiln.errors import ScriptError
from kiln.relax import op as R
from kiln.relax.analysis.well_formed import verify_module, well_formed_errors
from kiln.relax.transform import FuseOps, Normalize
from kiln.relax.transform.fuse_ops import MAX_FUSED_OPS

DEPTH = 2_000


def _module(body) -> kiln.ir.IRModule:
    """``main(x)`` returning ``body(bb, x)`` from one dataflow block."""
    x = relax.Var("x", relax.TensorStructInfo((4,), "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            out = bb.emit_output(body(bb, x))
        bb.emit_func_output(out)
    return bb.get()


def test_call_nested_two_thousand_deep_compiles_and_runs() -> None:
    def nested(bb: relax.BlockBuilder, x: relax.Var) -> relax.Var:
        return bb.emit(reduce(lambda e, _: R.add(e, x), range(DEPTH), x))

    mod = _module(nested)
    main = mod["main"]
    assert len(main.body.blocks[0].bindings) == DEPTH + 1  # A-normal form: one binding per call
    verify_module(mod)
    assert main.script().count("R.add(") == DEPTH
    a = np.arange(4, dtype="float32")
    np.testing.assert_array_equal(kiln.compile(mod)(a).numpy(), a * (DEPTH + 1))


def test_long_chain_fuses_in_bounded_groups() -> None:
    def chain(bb: relax.BlockBuilder, x: relax.Var) -> relax.Var:
        y = x
        for _ in range(600):
            y = bb.emit(R.add(y, x))
        return y

    fused = FuseOps()(Normalize()(_module(chain)))
    sizes = sorted(
        sum(len(b.bindings) for b in f.body.blocks)
        for _, f in fused.items()
        if f.get_attr("Primitive")
    )
    assert sizes == [88, MAX_FUSED_OPS, MAX_FUSED_OPS]


def test_two_thousand_line_r_script_compiles_and_runs() -> None:
    lines = "".join(f"        y{k + 1} = R.add(y{k}, x)\n" for k in range(DEPTH))
    text = (
        "@I.ir_module\nclass M:\n    @R.function\n"
        '    def main(x: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):\n'
        f"        y0 = x\n{lines}        return y{DEPTH}\n"
    )
    mod = kiln.script.from_source(text, "chain.py")
    a = np.arange(4, dtype="float32")
    np.testing.assert_array_equal(kiln.compile(mod)(a).numpy(), a * (DEPTH + 1))


def test_schedule_of_a_te_graph_two_thousand_stages_deep() -> None:
    A = te.placeholder((4,), "float32", name="A")
    stages = [A]
    for k in range(DEPTH):
        prev = stages[-1]
        stages.append(te.compute((4,), lambda i, p=prev: p[i] + tir.const(1.0), name=f"B{k}"))
    s = te.create_schedule(stages[-1].op)
    assert [st.op for st in s.stages] == [t.op for t in stages]  # producers first
    assert s[stages[-1]].is_output and not s[stages[1]].is_output


def test_hand_built_nested_body_prints_verifies_and_normalizes() -> None:
    """A body that is not in A-normal form (a call nested 2,000 deep, built without the
    BlockBuilder): printed, reported by the verifier, made A-normal by Normalize."""
    x = relax.Var("x", relax.TensorStructInfo((4,), "float32"))
    body = reduce(lambda e, _: R.add(e, x), range(DEPTH), x)
    func = relax.Function((x,), relax.SeqExpr((), body), relax.TensorStructInfo((4,), "float32"))
    mod = kiln.ir.IRModule({kiln.ir.GlobalVar("main"): func})
    assert func.script().count("R.add(") == DEPTH
    errors = well_formed_errors(mod)
    assert errors[0] == "main: the body of a sequence is not a leaf: Call"
    assert errors[1:] == ["main: an argument of a call of relax.add is not a leaf (Call)"] * (
        DEPTH - 1
    )
    normal = Normalize()(mod)
    verify_module(normal)
    assert sum(len(b.bindings) for b in normal["main"].body.blocks) == DEPTH


_R_HEAD = (
    "@I.ir_module\nclass M:\n    @R.function\n"
    '    def main(x: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):\n'
)


def test_r_expression_two_thousand_operators_long_parses() -> None:
    text = _R_HEAD + "        y = " + " + ".join(["x"] * (DEPTH + 1)) + "\n        return y\n"
    main = kiln.script.from_source(text, "sum.py")["main"]
    assert sum(len(b.bindings) for b in main.body.blocks) == DEPTH  # one per +


def test_r_call_nested_past_pythons_parser_is_a_script_error_naming_the_limit() -> None:
    nested = reduce(lambda e, _: f"R.add({e}, x)", range(DEPTH), "x")
    text = _R_HEAD + f"        y = {nested}\n        return y\n"
    with pytest.raises(ScriptError, match="too many nested parentheses .*allows 200 levels") as e:
        kiln.script.from_source(text, "nested.py")
    assert e.value.span is not None and e.value.span.line == 5
    assert "RecursionError" not in str(e.value) and len(str(e.value)) < 1_000
