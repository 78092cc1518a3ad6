"""Random numbers: ``rand`` / ``randn`` / ``randperm`` (Core ATen), their ``_like`` forms,
``randint``, ``bernoulli.p`` and the functional ``uniform`` / ``normal`` that in-place
``uniform_`` / ``normal_`` and ``torch.normal(mean, std)`` export to, as `relax.random` records.

Each such node gets a seed of its own, drawn when the model runs: `seeds` binds
``vm.builtin.random_seed`` (a process-wide counter the VM advances on every call) to a
symbolic int before the program's dataflow block, which the node's records take as a prim
value. The records are pure functions of that seed, so every call of a compiled model draws
fresh numbers while its kernels stay pure, fuse and parallelize like any other. The numbers
are kiln's own (`kiln.topi.random`'s counter-based generator): ``torch.manual_seed`` does not
reproduce them, and they differ from torch's for any seed; a model's first call after a
process starts draws the same numbers each time the process runs.
"""

from __future__ import annotations

from typing import Any

from kiln.relax import op as R
from kiln.relax.expr import Expr, PrimValue
from kiln.relax.frontend.common import ident
from kiln.relax.frontend.torch.aten import TorchCtx, aten, dims_of, shape_arg
from kiln.relax.op.builtin import call_packed
from kiln.relax.struct_info import PrimStructInfo
from kiln.runtime.vm_builtins import builtin
from kiln.tir.expr import Var as TirVar

RANDOM_SEED = builtin("random_seed").name

SEEDED = frozenset({
    "aten.rand.default", "aten.randn.default", "aten.randperm.default",
    "aten.rand_like.default", "aten.randn_like.default", "aten.randint.low",
    "aten.randint.default", "aten.bernoulli.p", "aten.uniform.default",
    "aten.normal.Tensor_float",
})  # fmt: skip
"""The converters that draw random numbers: each node of these gets a seed (`seeds`)."""


def seeds(bb: Any, nodes: list[Any]) -> dict[Any, PrimValue]:
    """A fresh seed per node, read from ``vm.builtin.random_seed`` when the model runs: bound
    outside any dataflow block (the call is impure: it returns another value every time)."""
    out = {}
    for node in nodes:
        name = ident(f"{node.name}_seed", "seed")
        drawn = bb.emit(call_packed(RANDOM_SEED, sinfo_args=PrimStructInfo("int64")), name)
        seed = TirVar(name, "int64")
        bb.match_cast(drawn, PrimStructInfo(value=seed), f"{name}_bound")
        out[node] = PrimValue(seed)
    return out


def _seed(ctx: TorchCtx) -> PrimValue:
    assert ctx.seed is not None, f"no seed for random node {ctx.node.name!r} (see SEEDED)"
    return ctx.seed


@aten("rand.default", "randn.default")
def _rand(ctx: TorchCtx, size: Any, **kwargs: Any) -> Expr:
    """Uniform numbers in ``[0, 1)`` (``randn``: standard normal ones) of ``size``."""
    draw = R.random.normal if "randn" in str(ctx.node.target) else R.random.uniform
    return ctx.emit(draw(shape_arg(size), _seed(ctx), ctx.out_dtype))


@aten("rand_like.default", "randn_like.default")
def _rand_like(ctx: TorchCtx, x: Expr, **kwargs: Any) -> Expr:
    draw = R.random.normal if "randn" in str(ctx.node.target) else R.random.uniform
    return ctx.emit(draw(shape_arg(dims_of(x)), _seed(ctx), ctx.out_dtype))


@aten("randperm.default")
def _randperm(ctx: TorchCtx, n: Any, **kwargs: Any) -> Expr:
    """A random order of ``0 .. n-1`` (``n`` may be a symbolic size)."""
    return ctx.emit(R.random.permutation(n, _seed(ctx), ctx.out_dtype))


@aten("randint.low", "randint.default")
def _randint(ctx: TorchCtx, *args: Any, **kwargs: Any) -> Expr:
    """Integers in ``[low, high)``: ``low + floor(u * (high - low))`` of float64 uniforms
    ``u`` (53 random bits), kept below ``high`` where ``u * (high - low)`` rounds up."""
    low, high, size = (0, *args) if "default" in str(ctx.node.target) else args
    u = ctx.emit(R.random.uniform(shape_arg(size), _seed(ctx), "float64"))
    span = ctx.tensor(float(high - low), "float64")
    top = ctx.tensor(high - low - 1.0, "float64")
    steps = ctx.emit(R.minimum(R.floor(R.multiply(u, span)), top))
    return ctx.emit(R.astype(R.add(steps, ctx.tensor(float(low), "float64")), ctx.out_dtype))


@aten("bernoulli.p")
def _bernoulli(ctx: TorchCtx, x: Expr, p: float = 0.5, **kwargs: Any) -> Expr:
    """1 with probability ``p``, else 0, shaped and typed like ``x``."""
    u = ctx.emit(R.random.uniform(shape_arg(dims_of(x)), _seed(ctx), "float64"))
    return ctx.emit(R.astype(R.less(u, ctx.tensor(float(p), "float64")), ctx.out_dtype))


@aten("uniform.default")
def _uniform(ctx: TorchCtx, x: Expr, low: float = 0.0, high: float = 1.0, **kwargs: Any) -> Expr:
    """Numbers uniform in ``[low, high)`` shaped and typed like ``x`` (``x.uniform_``)."""
    u = ctx.emit(R.random.uniform(shape_arg(dims_of(x)), _seed(ctx), ctx.out_dtype))
    scaled = R.multiply(u, ctx.tensor(float(high) - float(low)))
    return ctx.emit(R.add(scaled, ctx.tensor(float(low))))


@aten("normal.Tensor_float")
def _normal(ctx: TorchCtx, mean: Expr, std: float = 1.0, **kwargs: Any) -> Expr:
    """Normal numbers of mean ``mean`` (a tensor: the shape) and standard deviation ``std``."""
    z = ctx.emit(R.random.normal(shape_arg(dims_of(mean)), _seed(ctx), ctx.out_dtype))
    return ctx.emit(R.add(R.multiply(z, ctx.tensor(float(std))), ctx.tensor(mean)))
