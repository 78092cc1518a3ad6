"""The compiler driver: `build` (IR to loaded library), `lower`, and the default pipelines."""

from kiln.driver.build import as_module, build, lower
from kiln.driver.pipeline import default_tir_pipeline

__all__ = ["as_module", "build", "default_tir_pipeline", "lower"]
