"""The compiler driver: `build` (IR to loaded library), `build_op` (tensor expressions to a
compiled function), `lower`, the default pipelines, `relax_build` (a graph-level module to a VM
executable, `kiln.relax.build`) and `compile` / `load` (a model object)."""

from kiln.driver.build import as_module, build, build_op, lower
from kiln.driver.model import CompiledModel, compile, load
from kiln.driver.pipeline import default_relax_pipeline, default_tir_pipeline
from kiln.driver.relax_build import build as relax_build

__all__ = [
    "CompiledModel",
    "as_module",
    "build",
    "build_op",
    "compile",
    "default_relax_pipeline",
    "default_tir_pipeline",
    "load",
    "lower",
    "relax_build",
]
