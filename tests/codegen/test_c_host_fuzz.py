"""Thousands of wrong calls to built functions: each raises TypeError/ValueError naming the
function and the argument; none crashes the process; good calls still work afterwards."""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

import kiln
from kiln import tir
from kiln.ir import GlobalVar, IRModule
from kiln.runtime import Module
from tests.codegen.helpers import prim_func

CALLS = 2400


@dataclass(frozen=True)
class Param:
    name: str
    dtype: str
    shape: tuple[int | str, ...] | None = None  # None: a scalar; str: a symbolic dim


SIGNATURES: dict[str, tuple[Param, ...]] = {
    "rows": (
        Param("A", "float32", ("n", 4)),
        Param("B", "float32", ("n", 4)),
        Param("C", "int32", (4,)),
    ),
    "scaled": (Param("x", "int32"), Param("V", "float64", ("m",)), Param("y", "float32")),
    "mixed": (
        Param("H", "float16", (2, "k", 3)),
        Param("M", "bool", ("k",)),
        Param("k2", "int64"),
        Param("U", "uint8", (8,)),
    ),
}


def _func(name: str, params: tuple[Param, ...]) -> tir.PrimFunc:
    dims: dict[str, tir.Var] = {}
    spec: dict[str, Any] = {}
    for p in params:
        if p.shape is None:
            spec[p.name] = p.dtype
        else:
            shape = tuple(
                dims.setdefault(d, tir.SizeVar(d)) if isinstance(d, str) else d for d in p.shape
            )
            spec[p.name] = (shape, p.dtype)

    def body(**named: Any) -> tir.Stmt:
        first = next(v for v in named.values() if isinstance(v, tir.Buffer))
        zero = tir.const(0, first.dtype)
        idx = tuple(tir.const(0, "int32") for _ in first.shape)
        store = tir.BufferStore(first, zero, idx)
        return tir.IfThenElse(tir.const(False), store)

    return prim_func(name, spec, body)


@pytest.fixture(scope="module")
def built() -> Module:
    return kiln.build(IRModule({GlobalVar(n): _func(n, ps) for n, ps in SIGNATURES.items()}))


def _good_args(params: tuple[Param, ...], rng: random.Random) -> list[Any]:
    dims = {"n": rng.randint(1, 5), "m": 0, "k": rng.randint(1, 4)}
    args: list[Any] = []
    for p in params:
        if p.shape is None:
            args.append(rng.randint(0, 9) if "int" in p.dtype else rng.random())
        else:
            shape = tuple(dims[d] if isinstance(d, str) else d for d in p.shape)
            args.append(np.zeros(shape, dtype=p.dtype))
    if params[0].name == "x":  # scaled: V's length is a free dim m, bound by V itself
        args[1] = np.zeros(rng.randint(1, 6), dtype="float64")
    return args


Mutation = Callable[[list[Any], tuple[Param, ...], random.Random], str | None]


def _tensor_positions(params: tuple[Param, ...]) -> list[int]:
    return [i for i, p in enumerate(params) if p.shape is not None]


def _scalar_positions(params: tuple[Param, ...]) -> list[int]:
    return [i for i, p in enumerate(params) if p.shape is None]


def m_count(args: list[Any], params: tuple[Param, ...], rng: random.Random) -> str | None:
    if rng.random() < 0.5 and args:
        del args[rng.randrange(len(args))]
    else:
        args.insert(rng.randrange(len(args) + 1), np.zeros(1, "float32"))
    return "expected"


def m_not_a_tensor(args: list[Any], params: tuple[Param, ...], rng: random.Random) -> str | None:
    i = rng.choice(_tensor_positions(params))
    args[i] = rng.choice([None, 1, 2.5, "x", True, [1, 2]])
    return params[i].name


def m_not_a_scalar(args: list[Any], params: tuple[Param, ...], rng: random.Random) -> str | None:
    i = rng.choice(_scalar_positions(params))
    choices: list[Any] = [None, np.zeros(3, "float32"), "x", [1]]
    if "int" in params[i].dtype:
        choices.append(1.5)
    args[i] = rng.choice(choices)
    return params[i].name


def m_dtype(args: list[Any], params: tuple[Param, ...], rng: random.Random) -> str | None:
    i = rng.choice(_tensor_positions(params))
    other = rng.choice(
        [
            d
            for d in ("float32", "float64", "int32", "int8", "uint8", "bool", "float16")
            if d != params[i].dtype
        ]
    )
    args[i] = args[i].astype(other)
    return params[i].name


def m_ndim(args: list[Any], params: tuple[Param, ...], rng: random.Random) -> str | None:
    i = rng.choice(_tensor_positions(params))
    args[i] = args[i][None] if rng.random() < 0.5 or args[i].ndim == 1 else args[i].reshape(-1)
    return params[i].name


def m_shape(args: list[Any], params: tuple[Param, ...], rng: random.Random) -> str | None:
    i = rng.choice(_tensor_positions(params))
    shape = list(args[i].shape)
    axis = rng.randrange(len(shape))
    symbolic = isinstance(params[i].shape[axis], str)  # type: ignore[index]
    if symbolic and sum(isinstance(d, str) for p in params if p.shape for d in p.shape) < 2:
        return None  # the only sight of this dim: any size is valid
    shape[axis] += rng.choice([1, 2, 7])
    args[i] = np.zeros(shape, dtype=args[i].dtype)
    return params[i].name


def m_strides(args: list[Any], params: tuple[Param, ...], rng: random.Random) -> str | None:
    i = rng.choice(_tensor_positions(params))
    a = args[i]
    shape = a.shape
    if all(d <= 1 for d in shape):
        return None
    axis = rng.choice([d for d in range(len(shape)) if shape[d] > 1])
    big_shape = list(shape)
    big_shape[axis] *= 2
    view = np.zeros(big_shape, dtype=a.dtype)
    args[i] = view[
        tuple(slice(None, None, 2) if d == axis else slice(None) for d in range(len(shape)))
    ]
    return params[i].name


def m_range(args: list[Any], params: tuple[Param, ...], rng: random.Random) -> str | None:
    ints = [i for i in _scalar_positions(params) if params[i].dtype == "int32"]
    if not ints:
        return None
    args[ints[0]] = rng.choice([2**31, -(2**31) - 1, 2**40])
    return params[ints[0]].name


MUTATIONS: list[Mutation] = [
    m_count,
    m_not_a_tensor,
    m_not_a_scalar,
    m_dtype,
    m_ndim,
    m_shape,
    m_strides,
    m_range,
]


def test_randomized_bad_calls_raise_clear_errors(built: Module) -> None:
    rng = random.Random(1234)
    seen: dict[str, int] = {}
    made = 0
    while made < CALLS:
        name = rng.choice(list(SIGNATURES))
        params = SIGNATURES[name]
        args = _good_args(params, rng)
        mutation = rng.choice(MUTATIONS)
        if mutation is m_not_a_scalar and not _scalar_positions(params):
            continue
        arg = mutation(args, params, rng)
        if arg is None:
            continue
        with pytest.raises((TypeError, ValueError)) as info:
            built[name](*args)
        msg = str(info.value)
        assert msg.startswith(f"{name}: "), msg
        if mutation is m_count:
            assert "argument" in msg and all(p.name in msg for p in params), msg
        else:
            assert re.search(rf"\bargument {arg}\b|\b{arg}\.", msg), (mutation.__name__, msg)
        seen[mutation.__name__] = seen.get(mutation.__name__, 0) + 1
        made += 1
    assert len(seen) == len(MUTATIONS), seen
    for name, params in SIGNATURES.items():  # the functions still work
        built[name](*_good_args(params, rng))
