"""The signatures an executable records (`kiln.runtime.vm_format.Signature`), read from the
graph-level module it is built from.

Each public graph-level function whose parameters are tensors and whose result is a tensor or a
(nested) tuple of tensors gets one: its inputs as `input_specs` describes them, its outputs in
flattened tuple order, named after the variables the function returns (``y`` for ``return y``;
an ONNX model's graph output names) or ``output_<k>`` where the result has no variable of its
own. Dims are ints or the text of a symbolic dim (``"batch"``, ``"n * 2"``).
"""

from __future__ import annotations

from typing import TypeAlias, Union

from kiln.driver.inputs import input_specs
from kiln.ir.module import IRModule
from kiln.relax.binding import VarBinding
from kiln.relax.expr import Expr, Function, SeqExpr, Tuple, Var
from kiln.relax.struct_info import StructInfo, TensorStructInfo, TupleStructInfo
from kiln.runtime.vm_format import Signature, TensorSpec
from kiln.tir.expr import IntImm


def signatures(mod: IRModule) -> tuple[Signature, ...]:
    """The signature of every public graph-level function of ``mod`` that has one."""
    out = []
    for gv, func in mod.items():
        if not isinstance(func, Function) or func.global_symbol is None:
            continue
        inputs = input_specs(mod, gv.name_hint)
        outputs = _outputs(func)
        if inputs is None or outputs is None:
            continue
        specs = tuple(TensorSpec(s.name, s.dtype, s.dims) for s in inputs)
        out.append(Signature(func.global_symbol, specs, outputs))
    return tuple(out)


Names: TypeAlias = Union[str, None, tuple["Names", ...]]
"""The names of what a function returns: a variable's name, None, or a tuple's field names."""


def _outputs(func: Function) -> tuple[TensorSpec, ...] | None:
    leaves: list[tuple[str | None, TensorStructInfo]] = []
    sinfo = func.ret_struct_info
    if sinfo is None or not _flatten(sinfo, _returned_names(func), leaves):
        return None
    return tuple(
        TensorSpec(name or f"output_{k}", str(s.dtype), _dims(s))
        for k, (name, s) in enumerate(leaves)
    )


def _dims(s: TensorStructInfo) -> tuple[int | str, ...] | None:
    if s.dims is None:
        return None
    return tuple(d.value if isinstance(d, IntImm) else str(d) for d in s.dims)


def _returned_names(func: Function) -> Names:
    """The names of what ``func`` returns; a returned variable bound to a tuple is seen
    through, so its fields keep their own names."""
    body = func.body
    bound: dict[Var, Expr] = {}
    if isinstance(body, SeqExpr):
        for block in body.blocks:
            bound.update((b.var, b.value) for b in block.bindings if isinstance(b, VarBinding))
        body = body.body

    def names(e: Expr) -> Names:
        value = bound.get(e) if isinstance(e, Var) else None
        if isinstance(value, Tuple):
            e = value
        if isinstance(e, Tuple):
            return tuple(names(f) for f in e.fields)
        return e.name_hint if isinstance(e, Var) else None

    return names(body)


def _flatten(
    sinfo: StructInfo, names: Names, leaves: list[tuple[str | None, TensorStructInfo]]
) -> bool:
    """Append the tensors of ``sinfo`` with their ``names``; False when a leaf is not a
    tensor."""
    if isinstance(sinfo, TensorStructInfo):
        leaves.append((names if isinstance(names, str) else None, sinfo))
        return True
    if isinstance(sinfo, TupleStructInfo):
        fields = names if isinstance(names, tuple) else ()
        if len(fields) != len(sinfo.fields):
            fields = (None,) * len(sinfo.fields)
        return all(_flatten(s, n, leaves) for s, n in zip(sinfo.fields, fields))
    return False
