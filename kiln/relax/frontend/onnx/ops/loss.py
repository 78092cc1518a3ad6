"""``GatherElements`` and the losses built on it: ``NegativeLogLikelihoodLoss`` and
``SoftmaxCrossEntropyLoss`` (``reduction`` none / sum / mean, class ``weight``,
``ignore_index``)."""

from __future__ import annotations

from typing import Any

from kiln.relax import op as R
from kiln.relax.expr import Expr
from kiln.relax.frontend.onnx.ops import Ctx, Node, converter, dtype, ndim
from kiln.relax.frontend.onnx.ops.elementwise import scalar


@converter("GatherElements")
def _gather_elements(ctx: Ctx, node: Node, ins: list[Any]) -> Any:
    x, idx = ctx.tensor(ins, 0), ctx.tensor(ins, 1)
    return ctx.emit(R.gather_elements(x, idx, node.attrs.get("axis", 0)))


def nll(ctx: Ctx, node: Node, logp: Expr, target: Expr, weight: Expr | None) -> Expr:
    """The negative log-likelihood of ``target`` classes (axis 1 of ``logp``), reduced."""
    ignore = node.attrs.get("ignore_index")
    safe = target
    keep = None
    if ignore is not None:
        hit = ctx.emit(R.equal(target, scalar(ignore, target)))
        safe = ctx.emit(R.where(hit, scalar(0, target), target))
        keep = ctx.emit(R.astype(R.logical_not(hit), dtype(logp)))
    picked = ctx.emit(R.gather_elements(logp, R.expand_dims(safe, [1]), 1))
    loss = ctx.emit(R.negative(R.squeeze(picked, [1])))
    w = ctx.emit(R.take(weight, safe, 0)) if weight is not None else None
    if keep is not None:
        w = keep if w is None else ctx.emit(R.multiply(w, keep))
    if w is not None:
        loss = ctx.emit(R.multiply(loss, w))
    reduction = node.attrs.get("reduction", "mean")
    if reduction == "none":
        return loss
    total = ctx.emit(R.sum(loss))
    if reduction == "sum":
        return total
    if w is None:
        return ctx.emit(R.mean(loss))
    return ctx.emit(R.divide(total, R.sum(w)))


@converter("NegativeLogLikelihoodLoss")
def _nll_loss(ctx: Ctx, node: Node, ins: list[Any]) -> Any:
    weight = ctx.tensor(ins, 2) if len(ins) > 2 and ins[2] is not None else None
    return nll(ctx, node, ctx.tensor(ins, 0), ctx.tensor(ins, 1), weight)


@converter("SoftmaxCrossEntropyLoss")
def _softmax_ce(ctx: Ctx, node: Node, ins: list[Any]) -> Any:
    scores, labels = ctx.tensor(ins, 0), ctx.tensor(ins, 1)
    weight = ctx.tensor(ins, 2) if len(ins) > 2 and ins[2] is not None else None
    logp = ctx.emit(R.nn.log_softmax(scores, 1 if ndim(scores) > 1 else 0))
    return [nll(ctx, node, logp, labels, weight), logp]
