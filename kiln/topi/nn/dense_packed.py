"""The matrix product with pre-packed column panels: `matmul_packed`.

``matmul_packed(x, panels, units)[..., i, j] = sum_k x[..., i, k] * panels[j // cols, k,
j % cols]`` for ``j < units``: ``panels`` (``[panels, K, cols]``) holds a ``K x units`` matrix
``w`` in the layout ``NK<cols>n`` of `kiln.topi.layout` (zero past ``units``), the layout the
CPU kernel of `kiln.topi.x86.dense` reads. Packing ``w`` once (at compile time, for a constant
weight) saves the kernel a copy of it per call. This is the target-independent definition
(``x``'s leading extents may be symbolic); `kiln.topi.x86.dense.matmul_packed` is the fast one.
"""

from __future__ import annotations

from typing import Any

from kiln import te
from kiln.errors import IRError, IRValueError
from kiln.te import Tensor
from kiln.tir.expr import convert
from kiln.topi.tag import Pattern, attrs_for
from kiln.topi.utils import check_numeric, check_tensor, const_int, show_shape

MATMUL_PACKED = "matmul_packed"
"""Tag of the compute (pattern ``OUT_ELEMWISE_FUSABLE``)."""


def check_packed(x: Any, panels: Any, units: int) -> tuple[Tensor, Tensor, int]:
    """Check the operands of `matmul_packed`; returns them and the panel width."""
    op = MATMUL_PACKED
    x, panels = check_tensor(op, x, "x"), check_tensor(op, panels, "panels")
    for t in (x, panels):
        check_numeric(op, t)
    if x.dtype != panels.dtype:
        raise IRError(f"{op}: x and panels have different dtypes ({x.dtype}, {panels.dtype})")
    if panels.ndim != 3 or x.ndim < 1:
        raise IRValueError(
            f"{op}: needs x of rank 1 or more and panels [panels, K, cols]; got x {x.name!r} "
            f"{show_shape(x)} and panels {panels.name!r} {show_shape(panels)}"
        )
    npanels, k, cols = (const_int(d) for d in panels.shape)
    if npanels is None or k is None or cols is None:
        raise IRValueError(f"{op}: panels {panels.name!r} need a constant shape")
    if const_int(x.shape[-1]) not in (None, k):
        raise IRValueError(
            f"{op}: x {x.name!r} {show_shape(x)} has {x.shape[-1]} columns, panels "
            f"{panels.name!r} {show_shape(panels)} have {k} rows"
        )
    if not 0 < units <= npanels * cols:
        raise IRValueError(f"{op}: units={units} do not fit {npanels} panels of {cols} columns")
    return x, panels, cols


def matmul_packed(x: Any, panels: Any, units: int, name: str = "matmul_packed") -> Tensor:
    """``x @ w`` for ``w`` packed into ``panels`` (module docstring)."""
    x, panels, cols = check_packed(x, panels, units)
    it = x.shape[0].dtype
    k = te.reduce_axis((convert(0, it), convert(const_int(panels.shape[1]), it)), name="k")

    def body(*idx: Any) -> Any:
        j = idx[-1]
        return te.sum(x[(*idx[:-1], k)] * panels[j // cols, k, j % cols], axis=k)

    attrs = attrs_for(MATMUL_PACKED, Pattern.OUT_ELEMWISE_FUSABLE)
    shape = (*x.shape[:-1], convert(units, it))
    return te.compute(shape, body, name=name, tag=MATMUL_PACKED, attrs=attrs)
