"""Model importers: `onnx.from_onnx` and `torch.from_exported_program` (each loads its optional
dependency on first use)."""
