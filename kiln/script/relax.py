"""The ``R`` namespace of TVMScript: ``from kiln.script import relax as R``.

``@R.function`` (``private=``, ``pure=``); annotations ``R.Tensor``, ``R.Shape``, ``R.Prim``,
``R.Object``, ``R.Tuple``, ``R.Callable``; ``R.dataflow()``, ``R.output``, ``R.func_attr``,
``R.match_cast``; literals ``R.const``, ``R.shape``, ``R.prim_value``, ``R.str``, ``R.dtype``,
``R.tuple``; every graph-level operator under its TVM name (``R.add``, ``R.nn.relu``,
``R.matmul``, ``R.permute_dims``...) and the builtins ``R.call_tir``, ``R.call_packed``,
``R.call_dps_packed``, ``R.call_pure_packed``, ``R.shape_of``.
"""

from __future__ import annotations

from kiln.relax import op as _op
from kiln.relax.expr import ExternFunc
from kiln.relax.op import nn
from kiln.script.parser.entry import function
from kiln.script.relax_ns.api import (
    const,
    dataflow,
    dtype,
    func_attr,
    match_cast,
    output,
    prim_value,
    shape,
    str,
    tuple,
)
from kiln.script.relax_ns.types import Callable_ as Callable
from kiln.script.relax_ns.types import Object, Prim, Shape, Tensor, Tuple

_OPS = [n for n in _op.__all__ if not n[0].isupper() and n not in ("nn", "op_name")]
_OPS = [n for n in _OPS if n not in ("find_op_def", "get_op_def", "list_op_defs", "register_op")]
globals().update({n: getattr(_op, n) for n in _OPS})

__all__ = [
    "Callable",
    "ExternFunc",
    "Object",
    "Prim",
    "Shape",
    "Tensor",
    "Tuple",
    "const",
    "dataflow",
    "dtype",
    "func_attr",
    "function",
    "match_cast",
    "nn",
    "output",
    "prim_value",
    "shape",
    "str",
    "tuple",
    *_OPS,
]
