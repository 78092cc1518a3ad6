"""A small residual CNN as an ONNX model (what a user brings): written with ``onnx.helper`` from
fixed seeds, so the demo needs no download and no torch.

``cnn_onnx_model()`` -> ``onnx.ModelProto``: input ``image`` float32 ``[batch, 3, 32, 32]``
(``batch`` symbolic), Conv 3x3 3->16 + BatchNormalization + Relu, a residual block (two Conv 3x3
16->16, Add, Relu), MaxPool 2x2, a depthwise Conv 3x3 + Clip (ReLU6), GlobalAveragePool, Flatten,
Gemm 16->10, Softmax; output ``probs`` ``[batch, 10]``. Opset 17.
"""

from __future__ import annotations

from typing import Any

import numpy as np


def _weights(rng: np.random.Generator) -> dict[str, np.ndarray]:
    def conv(cout: int, cin: int) -> np.ndarray:
        return (rng.standard_normal((cout, cin, 3, 3)) * (2.0 / (cin * 9)) ** 0.5).astype("f4")

    return {
        "w0": conv(16, 3),
        "b0": np.zeros(16, "f4"),
        "bn_scale": (1 + 0.1 * rng.standard_normal(16)).astype("f4"),
        "bn_bias": (0.1 * rng.standard_normal(16)).astype("f4"),
        "bn_mean": (0.1 * rng.standard_normal(16)).astype("f4"),
        "bn_var": (1 + 0.1 * rng.random(16)).astype("f4"),
        "w1": conv(16, 16),
        "b1": (0.05 * rng.standard_normal(16)).astype("f4"),
        "w2": conv(16, 16),
        "b2": (0.05 * rng.standard_normal(16)).astype("f4"),
        "wd": conv(16, 1),
        "bd": (0.05 * rng.standard_normal(16)).astype("f4"),
        "relu6_lo": np.array(0.0, "f4"),
        "relu6_hi": np.array(6.0, "f4"),
        "fc_w": (rng.standard_normal((10, 16)) * 0.25).astype("f4"),
        "fc_b": np.zeros(10, "f4"),
    }


def cnn_onnx_model(seed: int = 0) -> Any:
    """The model (see the module docstring); needs the ``onnx`` package (``kiln[onnx]``)."""
    from onnx import TensorProto, helper, numpy_helper

    inits = [
        numpy_helper.from_array(v, k) for k, v in _weights(np.random.default_rng(seed)).items()
    ]
    node = helper.make_node
    pad = {"pads": [1, 1, 1, 1]}
    nodes = [
        node("Conv", ["image", "w0", "b0"], ["c0"], name="stem_conv", **pad),
        node(
            "BatchNormalization",
            ["c0", "bn_scale", "bn_bias", "bn_mean", "bn_var"],
            ["n0"],
            name="stem_bn",
        ),
        node("Relu", ["n0"], ["r0"], name="stem_relu"),
        node("Conv", ["r0", "w1", "b1"], ["c1"], name="block_conv1", **pad),
        node("Relu", ["c1"], ["r1"], name="block_relu1"),
        node("Conv", ["r1", "w2", "b2"], ["c2"], name="block_conv2", **pad),
        node("Add", ["c2", "r0"], ["s2"], name="block_residual"),
        node("Relu", ["s2"], ["r2"], name="block_relu2"),
        node("MaxPool", ["r2"], ["p2"], name="pool", kernel_shape=[2, 2], strides=[2, 2]),
        node("Conv", ["p2", "wd", "bd"], ["cd"], name="depthwise_conv", group=16, **pad),
        node("Clip", ["cd", "relu6_lo", "relu6_hi"], ["rd"], name="relu6"),
        node("GlobalAveragePool", ["rd"], ["g"], name="gap"),
        node("Flatten", ["g"], ["f"], name="flatten"),
        node("Gemm", ["f", "fc_w", "fc_b"], ["logits"], name="classifier", transB=1),
        node("Softmax", ["logits"], ["probs"], name="softmax", axis=-1),
    ]
    graph = helper.make_graph(
        nodes,
        "kiln_demo_cnn",
        [helper.make_tensor_value_info("image", TensorProto.FLOAT, ["batch", 3, 32, 32])],
        [helper.make_tensor_value_info("probs", TensorProto.FLOAT, ["batch", 10])],
        initializer=inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model
