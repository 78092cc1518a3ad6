"""StaticPlanBlockMemory: intermediates share storage by liveness (2 storages for a chain of
same-size tensors, however long), escaping tensors keep their own allocation, aliases through
packed calls and tuples keep a tensor alive, sizes are reused best-fit or grown, symbolic sizes
are reused when equal, and If branches are planned on their own; the outputs of lowered calls
(FuseOps + LowerTE) are planned the same way."""

# ruff: noqa: F821, F841 - names in R scripts are script variables, not Python names

from __future__ import annotations

from typing import Any

import pytest

from kiln.examples.models import deep_mlp
from kiln.ir import IRModule
from kiln.ir.op import Op
from kiln.ir.transform import Sequential
from kiln.relax import Call, Function
from kiln.relax.analysis import verify_module
from kiln.relax.transform import (
    CallTIRRewrite,
    FuseOps,
    LegalizeOps,
    LowerTE,
    StaticPlanBlockMemory,
    ToNonDataflow,
)
from kiln.script import ir as I
from kiln.script import relax as R
from kiln.script import tir as T
from kiln.tir.expr import IntImm


def planned(mod: IRModule) -> Function:
    out = Sequential([LegalizeOps(), ToNonDataflow(), CallTIRRewrite(), StaticPlanBlockMemory()])(
        mod
    )
    verify_module(out)
    return out["main"]


def calls(func: Function, name: str) -> list[Call]:
    """Calls of operator ``name`` anywhere in ``func`` (branches included), in order."""
    from kiln.ir.visitor import pre_order_nodes

    op = Op.get(name)
    return [n for n in pre_order_nodes(func.body) if isinstance(n, Call) and n.op is op]


def storages(func: Function) -> list[Any]:
    return [c.args[0].values[0] for c in calls(func, "relax.memory.alloc_storage")]


def views(func: Function) -> dict[str, Any]:
    """The storage variable each planned tensor views, by the tensor's name."""
    out = {}
    for block in func.body.blocks:
        for b in block.bindings:
            if isinstance(b.value, Call) and b.value.op is Op.get("relax.memory.alloc_tensor"):
                out[b.var.name_hint] = b.value.args[0]
    return out


@pytest.mark.parametrize("layers", [1, 2, 20])
def test_a_chain_of_same_size_intermediates_uses_two_storages(layers: int) -> None:
    func = planned(deep_mlp(layers, width=64, batch=8))
    sizes = storages(func)
    assert len(sizes) == 2  # of 3 * layers - 1 intermediates (the last relu is the result)
    assert all(isinstance(s, IntImm) and s.value == 8 * 64 * 4 for s in sizes)
    assert len(calls(func, "relax.builtin.alloc_tensor")) == 1  # the result keeps its own


@pytest.mark.parametrize("layers", [3, 20])
def test_the_outputs_of_fused_kernels_share_two_storages(layers: int) -> None:
    passes = [
        FuseOps(),
        LowerTE("test"),
        ToNonDataflow(),
        CallTIRRewrite(),
        StaticPlanBlockMemory(),
    ]
    out = Sequential(passes)(deep_mlp(layers, width=64, batch=8))
    verify_module(out)
    func = out["main"]
    kernels = [
        c for c in pre_order_calls(func) if getattr(c.op, "name_hint", "").startswith("test")
    ]
    assert len(kernels) == layers  # one fused matmul + add + relu kernel per layer
    sizes = storages(func)
    assert len(sizes) == 2 and all(s.value == 8 * 64 * 4 for s in sizes)
    assert len(calls(func, "relax.builtin.alloc_tensor")) == 1


def pre_order_calls(func: Function) -> list[Call]:
    from kiln.ir.visitor import pre_order_nodes

    return [n for n in pre_order_nodes(func.body) if isinstance(n, Call)]


@I.ir_module
class Aliasing:
    @R.function
    def main(x: R.Tensor((4,), "float32")):
        a = R.add(x, x)
        v = R.call_packed("my.view", a, sinfo_args=R.Tensor((4,), "float32"))
        b = R.multiply(x, x)
        c = R.add(v, b)
        d = R.add(c, c)
        return d


def test_a_tensor_passed_to_a_packed_call_lives_as_long_as_its_result() -> None:
    func = planned(Aliasing)
    where = views(func)
    # v may be a, so a is alive until c: b cannot take a's storage
    assert where["a"] is not where["b"]
    assert len(storages(func)) == 3  # a, b, c (c reuses nothing: a and b are alive at c)
    assert "d" not in where  # the result escapes


@I.ir_module
class Sizes:
    @R.function
    def main(x: R.Tensor((16,), "float32")):
        a = R.add(x, x)
        b = R.strided_slice(a, axes=[0], begin=[0], end=[4])
        c = R.add(b, b)
        d = R.concat((x, x), axis=0)
        e = R.add(d, d)
        return e


def test_sizes_reuse_the_smallest_fit_or_grow_the_largest_free() -> None:
    func = planned(Sizes)
    where = views(func)
    # a (64 B) is dead after b; c (16 B) fits in a's storage; d (128 B) grows it once c is dead
    assert where["c"] is where["a"]
    assert where["d"] is where["a"]
    sizes = sorted(s.value for s in storages(func))
    assert sizes == [16, 128]


@I.ir_module
class Symbolic:
    @R.function
    def main(x: R.Tensor(("n", 32), "float32")):
        n = T.int64()
        a = R.add(x, x)
        b = R.add(a, a)
        c = R.add(b, b)
        d = R.add(c, c)
        e = R.nn.relu(d)
        return e


def test_symbolic_sizes_are_reused_when_equal() -> None:
    func = planned(Symbolic)
    sizes = storages(func)
    assert len(sizes) == 2 and all(str(s) == str(sizes[0]) for s in sizes)
    assert "n" in str(sizes[0])


@I.ir_module
class Widening:
    @R.function
    def main(x: R.Tensor(("n", 32), "float32")):
        n = T.int64()
        a = R.nn.relu(x)
        b = R.concat([a, a], axis=1)
        c = R.nn.relu(b)
        d = R.concat([c, c], axis=1)
        e = R.nn.relu(d)
        f = R.nn.relu(e)
        return f


def test_symbolic_sizes_reuse_a_bigger_storage_or_grow_one_of_the_same_dims() -> None:
    # n*128 B, n*256, n*256, n*512, n*512: a's storage grows for c and again for e, b's for d
    func = planned(Widening)
    where = views(func)
    assert where["c"] is where["a"] and where["e"] is where["a"] and where["d"] is where["b"]
    assert sorted(str(s) for s in storages(func)) == ["n * 512", "n * 512"]


@I.ir_module
class Branchy:
    @R.function
    def main(c: R.Tensor((), "bool"), x: R.Tensor((4,), "float32")):
        if c:
            a = R.add(x, x)
            b = R.add(a, a)
            y = R.add(b, b)
        else:
            y = R.multiply(x, x)
        z = R.add(y, y)
        return z


def test_branches_are_planned_on_their_own_and_their_value_escapes() -> None:
    func = planned(Branchy)
    assert len(storages(func)) == 2  # a and b, inside the true branch
    # each branch's value leaves its branch, and z leaves main: their own allocations
    assert len(calls(func, "relax.builtin.alloc_tensor")) == 3
