"""ONNX arithmetic that kiln once wrote as chains: each node imports as one relax operator record
(``Sign`` is one ``relax.sign``, integer ``Div`` one ``relax.trunc_divide``, ``Mod`` one
``relax.floor_mod`` / ``relax.trunc_mod``, ``IsInf`` one ``relax.isinf``, ``Xor`` one
``relax.logical_xor``, integer ``Pow`` one ``relax.power``) and, compiled with `kiln.compile`,
matches onnxruntime on negative operands, ``+-inf``, NaN and ``-0.0``. Integer divisors are
never 0 here: onnxruntime's integer division by zero is undefined behaviour (kiln's raises a
``ValueError``, tests/relax/op/test_arith.py). The outputs come from one model holding every
case's node (compiled once: the suite's time); each case is still a test of its own."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper  # noqa: E402

import kiln  # noqa: E402
from kiln.ir.visitor import pre_order_nodes  # noqa: E402
from kiln.relax.expr import Call  # noqa: E402
from kiln.relax.frontend.onnx import from_onnx  # noqa: E402
from tests.relax.op.cases_arith import FX, FY, IX, IY  # noqa: E402

F32, I32 = FX.astype("float32"), IX.astype("int32")
BASE = np.int32([[2, 3, -3, 1, -1, 0, 7, -2, 5, 2, -1, 1], [11, -6, 4, 1, 9, -9, 2, 3, 0, 1, 1, 2]])
EXPONENT = np.int32([3, 2, 7, 40, 5, 3, 8, 9, 0, -1, -3, 30])  # every result fits in int32
TYPES = {np.dtype(k): v for k, v in (("float32", TensorProto.FLOAT), ("int32", TensorProto.INT32),
         ("int8", TensorProto.INT8), ("int64", TensorProto.INT64), ("uint8", TensorProto.UINT8),
         ("bool", TensorProto.BOOL))}  # fmt: skip

CASES = [
    ("Sign", {}, [F32], ["relax.sign"]),
    ("Sign", {}, [I32], ["relax.sign"]),
    ("Sign", {}, [np.uint8([[0, 1, 200]])], ["relax.sign"]),
    ("IsInf", {}, [F32], ["relax.isinf"]),
    ("IsInf", {"detect_negative": 0}, [F32], ["relax.isinf"]),
    ("IsInf", {"detect_positive": 0}, [F32], ["relax.isinf"]),
    ("Xor", {}, [F32 > 0, np.array([True, False] * 6)], ["relax.logical_xor"]),
    ("Div", {}, [I32, IY.astype("int32")], ["relax.trunc_divide"]),
    ("Div", {}, [IX.astype("int8"), IY.astype("int8")], ["relax.trunc_divide"]),  # -128 / -1
    ("Mod", {}, [I32, IY.astype("int32")], ["relax.floor_mod"]),
    ("Mod", {"fmod": 1}, [IX.astype("int64"), IY.astype("int64")], ["relax.trunc_mod"]),
    ("Mod", {"fmod": 1}, [F32, FY.astype("float32")], ["relax.trunc_mod"]),
    ("Mod", {}, [F32, FY.astype("float32")], ["relax.floor_mod"]),  # floats: opset 28
    ("Pow", {}, [BASE, EXPONENT], ["relax.power"]),
    ("Pow", {}, [BASE.astype("int64"), EXPONENT.astype("int64")], ["relax.power"]),
    ("Reciprocal", {}, [F32], ["relax.divide"]),
]


POW_INT_FLOAT = (np.int32([4, 2, 3, 7, 5, -2]), np.float32([0.5, 0.5, 2.0, 1.9999, 0.0, 3.0]))


def _out_like(op: str, inputs: list[np.ndarray]) -> np.ndarray:
    """A zero array of the node's output shape and dtype (for its value info)."""
    shape = np.broadcast_shapes(*(a.shape for a in inputs))
    return np.zeros(shape, "bool" if op in ("IsInf", "Xor") else inputs[0].dtype)


def _node(op: str, attrs: dict, inputs: list[np.ndarray], i: int = 0) -> tuple[Any, list, Any]:
    """Case ``i``'s node (inputs ``x<i>_<k>``, output ``y<i>``) and its value infos."""
    names = [f"x{i}_{k}" for k in range(len(inputs))]
    out = _out_like(op, inputs)
    ins = [helper.make_tensor_value_info(n, TYPES[a.dtype], a.shape) for n, a in zip(names, inputs)]
    y = helper.make_tensor_value_info(f"y{i}", TYPES[out.dtype], out.shape)
    return helper.make_node(op, names, [f"y{i}"], **attrs), ins, y


def _model(cases: list[tuple[str, dict, list[np.ndarray]]], name: str) -> Any:
    """One graph holding each of ``cases`` (op, attributes, inputs) as its own node."""
    made = [_node(op, attrs, inputs, i) for i, (op, attrs, inputs) in enumerate(cases)]
    graph = helper.make_graph(
        [m[0] for m in made], name, [v for m in made for v in m[1]], [m[2] for m in made]
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 28)])


def _feeds(cases: list[tuple[str, dict, list[np.ndarray]]]) -> dict[str, np.ndarray]:
    return {f"x{i}_{k}": a for i, c in enumerate(cases) for k, a in enumerate(c[2])}


def _ops(mod: Any) -> list[str]:
    return [n.op.name for n in pre_order_nodes(mod["main"].body) if isinstance(n, Call)]


def _same(got: np.ndarray, want: np.ndarray, label: str) -> None:
    assert got.dtype == want.dtype, label
    np.testing.assert_array_equal(got, want, err_msg=label)  # NaN matches NaN
    if got.dtype.kind == "f":
        np.testing.assert_array_equal(np.signbit(got), np.signbit(want), err_msg=f"{label}: signs")


@pytest.fixture(scope="module")
def outputs() -> tuple[list[np.ndarray], list[np.ndarray]]:
    """kiln's and onnxruntime's output of every case (`CASES`, then ``int32 ** float32``), from
    one model holding all the nodes."""
    cases = [(op, attrs, inputs) for op, attrs, inputs, _ in CASES]
    cases.append(("Pow", {}, list(POW_INT_FLOAT)))
    model, feeds = _model(cases, "all"), _feeds(cases)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    got = kiln.compile(model)(**feeds)
    return [g.numpy() for g in got], sess.run(None, feeds)


IDS = [f"{c[0]}{c[1]}-{c[2][0].dtype}" for c in CASES]


@pytest.mark.parametrize("k", range(len(CASES)), ids=IDS)
def test_one_record_matches_onnxruntime(k: int, outputs: tuple[list, list]) -> None:
    op, attrs, inputs, records = CASES[k]
    assert _ops(from_onnx(_model([(op, attrs, inputs)], op.lower()))) == records
    _same(outputs[0][k], outputs[1][k], f"{op} {attrs} {inputs[0].dtype}")


def test_pow_of_an_integer_base_and_a_float_exponent_truncates_like_onnxruntime(
    outputs: tuple[list, list],
) -> None:
    """``static_cast<int>(std::pow(x, y))``: 7 ** 1.9999 is 48, not 49."""
    model = _model([("Pow", {}, list(POW_INT_FLOAT))], "pow")
    assert _ops(from_onnx(model)).count("relax.power") == 1
    _same(outputs[0][-1], outputs[1][-1], "Pow int32 ** float32")
