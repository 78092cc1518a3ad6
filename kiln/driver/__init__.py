"""The compiler driver: `build` (IR to loaded library), `build_op` (tensor expressions to a
compiled function), `lower`, and the default pipelines."""

from kiln.driver.build import as_module, build, build_op, lower
from kiln.driver.pipeline import default_tir_pipeline

__all__ = ["as_module", "build", "build_op", "default_tir_pipeline", "lower"]
