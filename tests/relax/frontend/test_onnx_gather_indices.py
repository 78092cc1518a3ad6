"""ONNX Gather / GatherElements / GatherND with indices outside their axis: a kiln error naming
the operator, the index and the range, never garbage or a crash (issue 22, finding 8); valid
negative indices match onnxruntime."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper  # noqa: E402

import kiln  # noqa: E402
from kiln.errors import FrontendError, KernelIndexError  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(__file__))))


def gather_model(op: str, data: list, idx: list, idx_type=TensorProto.INT64, **attrs) -> bytes:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, data)
    i = helper.make_tensor_value_info("i", idx_type, idx)
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    node = helper.make_node(op, ["x", "i"], ["y"], name="pick", **attrs)
    graph = helper.make_graph([node], "g", [x, i], [y])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    return model.SerializeToString()


def ort_run(model: bytes, **feeds: np.ndarray) -> np.ndarray:
    sess = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)[0]


X = np.arange(12, dtype=np.float32).reshape(4, 3)

# NOTE: before the fix these read far outside the tensor (10**9 is a SIGSEGV), so they run in a
# child process: a crash fails this test instead of ending the test run.
_CHILD = textwrap.dedent(
    """
    import json, sys
    import numpy as np
    import kiln
    from tests.relax.frontend.test_onnx_gather_indices import X, gather_model
    model = kiln.compile(gather_model("Gather", [4, 3], [2], axis=0), exec_mode="bytecode")
    for bad in json.loads(sys.argv[1]):
        try:
            got = model(x=X, i=np.array([1, bad], dtype=np.int64)).numpy()
            print(json.dumps({"bad": bad, "error": None, "got": got.tolist()}), flush=True)
        except Exception as e:
            print(json.dumps({"bad": bad, "error": type(e).__name__, "text": str(e),
                              "mro": [c.__name__ for c in type(e).__mro__]}), flush=True)
    """
)


def test_gather_out_of_range_raises_a_kiln_error_naming_op_index_and_range() -> None:
    bad = [7, -9, 2**40, 10**9, -(10**9)]
    env = {**os.environ, "PYTHONPATH": ROOT}
    proc = subprocess.run(
        [sys.executable, "-c", _CHILD, json.dumps(bad)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=600,
    )
    assert proc.returncode == 0, f"the child died ({proc.returncode}):\n{proc.stderr[-3000:]}"
    rows = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    assert [r["bad"] for r in rows] == bad
    for r in rows:
        assert r["error"] == "KernelIndexError", r
        assert "KilnError" in r["mro"] and "IndexError" in r["mro"]
        assert "take" in r["text"] and f"index {r['bad']} is out of range [-4, 4)" in r["text"]


@pytest.mark.parametrize("idx_type", [TensorProto.INT64, TensorProto.INT32])
def test_gather_valid_negative_indices_match_onnxruntime(idx_type: int) -> None:
    data = gather_model("Gather", [4, 3], [4], idx_type, axis=0)
    i = np.array([-1, -4, 0, 3], dtype=np.int64 if idx_type == TensorProto.INT64 else np.int32)
    got = kiln.compile(data, exec_mode="bytecode")(x=X, i=i).numpy()
    np.testing.assert_array_equal(got, ort_run(data, x=X, i=i))


def test_gather_on_axis_1_checks_that_axis() -> None:
    data = gather_model("Gather", [4, 3], [2], axis=1)
    model = kiln.compile(data, exec_mode="bytecode")
    i = np.array([-3, 2], dtype=np.int64)
    np.testing.assert_array_equal(model(x=X, i=i).numpy(), ort_run(data, x=X, i=i))
    with pytest.raises(KernelIndexError, match=r"axis 1 .* index 3 is out of range \[-3, 3\)"):
        model(x=X, i=np.array([0, 3], dtype=np.int64))


def test_gather_with_constant_out_of_range_indices_fails_at_import() -> None:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    idx = helper.make_tensor("idx", TensorProto.INT64, [2], [0, 5])
    node = helper.make_node("Gather", ["x", "idx"], ["y"], name="const_pick", axis=0)
    graph = helper.make_graph([node], "g", [x], [y], initializer=[idx])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    with pytest.raises(FrontendError, match=r"node 'const_pick' \(Gather\): index 5 .* -4\.\.3"):
        kiln.compile(model.SerializeToString())


def test_gather_elements_out_of_range() -> None:
    data = gather_model("GatherElements", [4, 3], [2, 3], axis=0)
    model = kiln.compile(data, exec_mode="bytecode")
    ok = np.array([[-1, 0, 3], [2, -4, 1]], dtype=np.int64)
    np.testing.assert_array_equal(model(x=X, i=ok).numpy(), ort_run(data, x=X, i=ok))
    for bad in (4, -5, 2**40):
        i = ok.copy()
        i[1, 2] = bad
        with pytest.raises(KernelIndexError, match=rf"index {bad} is out of range \[-4, 4\)"):
            model(x=X, i=i)


def test_gather_nd_matches_onnxruntime_and_checks_every_axis() -> None:
    data = gather_model("GatherND", [4, 3], [3, 2])
    model = kiln.compile(data, exec_mode="bytecode")
    ok = np.array([[3, 2], [-4, -1], [0, 0]], dtype=np.int64)
    np.testing.assert_array_equal(model(x=X, i=ok).numpy(), ort_run(data, x=X, i=ok))
    for row, col, bad, n in [(0, 0, 4, 4), (1, 1, 3, 3), (2, 1, -4, 3), (2, 0, 2**40, 4)]:
        i = ok.copy()
        i[row, col] = bad
        want = rf"gather_nd on axis {col} .* index {bad} is out of range \[-{n}, {n}\)"
        with pytest.raises(KernelIndexError, match=want):
            model(x=X, i=i)


def test_gather_nd_with_batch_dims_matches_onnxruntime() -> None:
    x = np.arange(2 * 4 * 3, dtype=np.float32).reshape(2, 4, 3)
    data = gather_model("GatherND", [2, 4, 3], [2, 2, 1], batch_dims=1)
    i = np.array([[[3], [-1]], [[0], [-4]]], dtype=np.int64)
    got = kiln.compile(data, exec_mode="bytecode")(x=x, i=i).numpy()
    np.testing.assert_array_equal(got, ort_run(data, x=x, i=i))
