"""The ONNX frontend: `from_onnx` (a model to a relax `IRModule`) and, in `backend`, the
``onnx.backend.base.Backend`` that runs ONNX's backend test suite against kiln.

onnx is an optional dependency (``pip install kiln[onnx]``); it is imported when used.
"""

from __future__ import annotations

from typing import Any

from kiln.relax.frontend.onnx.importer import MAX_OPSET, MIN_OPSET, from_onnx, load_model

__all__ = ["MAX_OPSET", "MIN_OPSET", "from_onnx", "load_model"]


def __getattr__(name: str) -> Any:
    if name == "backend":
        import importlib

        return importlib.import_module("kiln.relax.frontend.onnx.backend")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
