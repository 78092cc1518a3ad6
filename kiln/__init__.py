"""kiln: a tensor-program compiler written in Python.

The layers (see docs/architecture.md): `kiln.ir` (core, `Target`), `kiln.tir` (tensor-level IR),
`kiln.arith` (simplifier), `kiln.te` / `kiln.topi` (tensor expressions, operator library),
`kiln.codegen` (C / CUDA), `kiln.relax` (graph level), `kiln.vm` (VM codegen), `kiln.script`
(TVMScript parser/printer), `kiln.runtime` (tvm-ffi runtime, `VirtualMachine`), `kiln.driver`
(`kiln.build`; `kiln.compile` / `kiln.load`: a model object). Importing `kiln` stays cheap:
the heavier entry points are loaded on first use.
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"

_LAZY = {
    "build": ("kiln.driver", "build"),
    "build_op": ("kiln.driver", "build_op"),
    "compile": ("kiln.driver", "compile"),
    "load": ("kiln.driver", "load"),
    "tensor": ("kiln.runtime", "tensor"),
    "empty": ("kiln.runtime", "empty"),
    "cpu": ("kiln.runtime", "cpu"),
    "cuda": ("kiln.runtime", "cuda"),
    "Target": ("kiln.ir.target", "Target"),
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        module, attr = _LAZY[name]
        return getattr(importlib.import_module(module), attr)
    raise AttributeError(f"module 'kiln' has no attribute {name!r}")
