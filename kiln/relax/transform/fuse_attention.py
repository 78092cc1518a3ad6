"""FuseAttention: ``softmax(q @ k^T * c + bias) @ v`` becomes one ``relax.nn.attention`` call.

For a CPU target, in each dataflow block of every graph function that is not primitive,
external or a ``Compiler`` function, a binding ``matmul(P, V)`` is rewritten when

- ``P = softmax(X)`` over the last axis, and ``X`` is, from the outside in, any number of bias
  terms -- ``add(X', b)`` (either order) or ``where(mask, -inf, X')`` --, then any number of
  scalings by a scalar constant -- ``multiply(X', c)``, ``multiply(c, X')``, ``divide(X', c)`` --,
  then ``S = matmul(Q, KT)``;
- every value of that chain (``S`` to ``P``) is a dataflow variable used once, by the next, and
  has the scores' shape (a bias does not broadcast them to a larger one);
- ``Q``, ``KT`` and ``V`` are float32 tensors of one constant rank (at least 2) and constant
  shapes ``[..., S, D]``, ``[..., D, T]``, ``[..., T, E]`` with the same leading dimensions.

The key is ``KT`` with its last two axes swapped: a ``permute_dims`` producing ``KT`` is folded
into one ``permute_dims`` of its source (the identity permutation: the source itself). Bias
terms add up to one bias (``where(mask, -inf, 0)`` for a mask, a constant for a constant mask);
the scalings multiply into the scale. Another order (a scaling outside a bias) is left alone, as
is everything else. The chain's other bindings are dropped.

Postcondition: every function computes what it did (a division by ``c`` becomes a product with
``1 / c``, exact for the powers of two a head width's square root usually is); no score
tensor of a rewritten chain is materialized.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from kiln.ir.function import BaseFunc, GlobalVar
from kiln.ir.module import IRModule
from kiln.ir.op import Op
from kiln.ir.target import Target
from kiln.ir.transform import PassContext
from kiln.ir.visitor import pre_order_nodes
from kiln.relax import op as R
from kiln.relax.analysis.free_vars import use_counts
from kiln.relax.analysis.primitive import is_lowerable
from kiln.relax.analysis.struct_info import static_dims
from kiln.relax.binding import Binding, VarBinding
from kiln.relax.expr import Call, Constant, DataflowVar, Expr, Function, const
from kiln.relax.expr_functor import ExprMutator
from kiln.relax.function_pass import FunctionPass

SCALINGS = ("relax.multiply", "relax.divide")


@dataclass
class _Chain:
    """What a matched chain computes: ``softmax(q @ key^T * scale + sum(biases)) @ v``, with
    ``key = permute_dims(key_src, key_axes)``; ``chain`` holds the variables it replaces."""

    q: Expr
    key_src: Expr
    key_axes: list[int]
    v: Expr
    scale: float
    biases: list[tuple[str, Expr]]
    chain: set[int]


def _op_name(e: Any) -> str | None:
    return e.op.name if isinstance(e, Call) and isinstance(e.op, Op) else None


def _scalar(e: Any) -> float | None:
    """The value of a scalar float constant (any rank, one element), else None."""
    if isinstance(e, Constant) and e.data.size == 1 and e.data.dtype.kind == "f":
        return float(e.data.reshape(()))
    return None


def _static(e: Any) -> list[int] | None:
    """The constant shape of a float32 tensor (the dtype the CPU kernel computes in)."""
    dtype = getattr(e.struct_info_, "dtype", None)
    return static_dims(e) if str(dtype) == "float32" else None


class _Matcher:
    """The attention chains of a function, by the variable of their last product."""

    def __init__(self, func: Function) -> None:
        self.uses = use_counts(func)
        self.defs = {
            id(b.var): b.value for b in pre_order_nodes(func.body) if isinstance(b, VarBinding)
        }
        self.chains: dict[int, _Chain] = {}
        for var_id, value in self.defs.items():
            chain = self.match(value)
            if chain is not None:
                self.chains[var_id] = chain

    def inner(self, e: Any) -> Call | None:
        """The call bound to ``e`` when ``e`` is a dataflow variable used once."""
        if not isinstance(e, DataflowVar) or self.uses.get(id(e), 0) != 1:
            return None
        value = self.defs.get(id(e))
        return value if isinstance(value, Call) else None

    def match(self, value: Any) -> _Chain | None:
        if _op_name(value) != "relax.matmul":
            return None
        p, v = value.args
        sm = self.inner(p)
        if sm is None or _op_name(sm) != "relax.nn.softmax":
            return None
        if sm.attrs["axis"] not in (-1, getattr(sm.struct_info_, "ndim", 0) - 1):
            return None
        found = self.scores(sm.args[0])
        if found is None:
            return None
        (q, kt), scale, biases, chain = found
        if not _shapes_fit(q, kt, v):
            return None
        src, axes = self.key(kt, chain)
        return _Chain(q, src, axes, v, scale, biases, chain | {id(p)})

    def scores(self, x: Any) -> tuple[tuple[Expr, Expr], float, list, set[int]] | None:
        """Walk ``x`` from the softmax inwards: bias terms, then scalings, then the product."""
        scale, biases, scaled, chain = 1.0, [], False, set()
        while (c := self.inner(x)) is not None:
            chain.add(id(x))
            name = _op_name(c)
            if name == "relax.matmul":
                return (c.args[0], c.args[1]), scale, biases, chain
            if name in SCALINGS:
                k = _scalar(c.args[1])
                if k is None and name == "relax.multiply":
                    k, x = _scalar(c.args[0]), c.args[1]
                else:
                    x = c.args[0]
                if not k:
                    return None
                scale, scaled = (scale * k if name == "relax.multiply" else scale / k), True
            elif scaled:
                return None  # a bias inside a scaling: not this pattern
            elif name == "relax.where" and _scalar(c.args[1]) == -math.inf:
                biases.append(("mask", c.args[0]))
                x = c.args[2]
            elif name == "relax.add":
                at = 0 if self.inner(c.args[0]) is not None else 1
                biases.append(("add", c.args[1 - at]))
                x = c.args[at]
            else:
                return None
            if _static(c) is None or _static(c) != _static(x):
                return None  # a bias that broadcasts the scores up, or a dtype change
        return None

    def key(self, kt: Expr, chain: set[int]) -> tuple[Expr, list[int]]:
        """The key as a permutation of a source: ``kt`` with its last two axes swapped, a
        ``permute_dims`` producing ``kt`` folded in (its variable joins ``chain``)."""
        axes = list(range(len(_static(kt) or ())))
        src, c = kt, self.inner(kt)
        if c is not None and _op_name(c) == "relax.permute_dims" and c.attrs["axes"] is not None:
            src, axes = c.args[0], [int(a) for a in c.attrs["axes"]]
            chain.add(id(kt))
        axes[-2], axes[-1] = axes[-1], axes[-2]
        return src, axes


def _shapes_fit(q: Expr, kt: Expr, v: Expr) -> bool:
    qs, ks, vs = (_static(e) for e in (q, kt, v))
    if qs is None or ks is None or vs is None or not len(qs) == len(ks) == len(vs) >= 2:
        return False
    return qs[:-2] == ks[:-2] == vs[:-2] and qs[-1] == ks[-2] and ks[-1] == vs[-2]


class _Fuse(ExprMutator):
    def __init__(self, mod: IRModule, chains: dict[int, _Chain]) -> None:
        super().__init__(mod)
        self.chains = chains
        self.dropped = set().union(*(c.chain for c in chains.values()))

    def visit_binding(self, b: Binding) -> None:
        if isinstance(b, VarBinding) and id(b.var) in self.dropped:
            return None
        if isinstance(b, VarBinding) and id(b.var) in self.chains:
            return self.reemit(b, self.rewrite(self.chains[id(b.var)]))
        return super().visit_binding(b)

    def bias(self, terms: list[tuple[str, Expr]]) -> Expr | None:
        total = None
        for kind, e in terms:
            e = self.visit(e)
            if kind == "mask" and isinstance(e, Constant):  # a causal mask: no kernel
                e = const(np.where(e.data, np.float32(-np.inf), np.float32(0.0)))
            elif kind == "mask":
                neg, zero = const(np.float32(-np.inf)), const(np.float32(0.0))
                e = self.builder.emit(R.where(e, neg, zero), "attention_mask")
            total = e if total is None else self.builder.emit(R.add(total, e), "attention_bias")
        return total

    def rewrite(self, c: _Chain) -> Expr:
        key = self.visit(c.key_src)
        if c.key_axes != sorted(c.key_axes):
            key = self.builder.emit(R.permute_dims(key, c.key_axes), "attention_key")
        return R.nn.attention(self.visit(c.q), key, self.visit(c.v), self.bias(c.biases), c.scale)


@dataclass(frozen=True)
class FuseAttention(FunctionPass):
    """One ``relax.nn.attention`` per attention chain for a CPU target (see the module
    docstring); nothing for other targets."""

    name: ClassVar[str] = "fuse-attention"
    target: Target

    def transform(self, gv: GlobalVar, func: Function, mod: IRModule, ctx: PassContext) -> BaseFunc:
        if self.target.device != "cpu" or not is_lowerable(func):
            return func
        chains = _Matcher(func).chains
        return _Fuse(mod, chains).visit(func) if chains else func


__all__ = ["FuseAttention"]
