"""Small models bundled with kiln, for the demo, the benchmarks and the tests.

- `mlp`: ``MLP``, a three-layer perceptron written as an ``R`` script (symbolic batch), with
  ``mlp_weights`` and the numpy reference ``mlp_reference``; ``deep_mlp(layers, width)``, an
  N-layer perceptron built with the `BlockBuilder` (what memory planning is measured on).
- `cnn_onnx`: ``cnn_onnx_model()``, a small residual CNN as an ONNX ``ModelProto`` (symbolic
  batch; needs the ``onnx`` package), what the demo compiles from a ``.onnx`` file.
"""

from kiln.examples.models.mlp import MLP, deep_mlp, deep_mlp_reference, mlp_reference, mlp_weights

__all__ = ["MLP", "deep_mlp", "deep_mlp_reference", "mlp_reference", "mlp_weights"]
