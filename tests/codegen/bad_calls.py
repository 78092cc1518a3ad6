"""Randomized wrong calls of built functions, run by `test_c_host_fuzz` in child processes.

``python -m tests.codegen.bad_calls LIBRARY SEED CALLS PROGRESS`` loads the library built from
`fuzz_module`, makes ``CALLS`` wrong calls drawn from ``SEED`` (each a good call with one
`MUTATIONS` applied), writes the index of the call it is about to make to ``PROGRESS`` (so a
crash can be traced to its call), and prints a JSON summary: calls made per mutation, the calls
that raised an error not naming the function and the argument (*unnamed*), and the wrong calls
that raised nothing (*accepted*). A good call of every function ends the batch.
"""

from __future__ import annotations

import ctypes
import json
import os
import random
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from kiln import te, tir
from kiln.ir import GlobalVar, IRModule
from kiln.runtime import Module, load_module
from kiln.runtime.tensor import STORAGE_DTYPES

# NOTE: after kiln.runtime, which imports tvm_ffi without torch: imported first, tvm_ffi imports
# torch (2.4 s of each child process).
import tvm_ffi  # isort: skip


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
    "small": (Param("a", "int8"), Param("b", "uint16"), Param("X", "float32", (4,))),
    "axpy": (
        Param("P", "float32", ("p",)),
        Param("Q", "float32", ("p",)),
        Param("R", "float32", ("p",)),
    ),
    "half": (
        Param("S", "bfloat16", (6,)),
        Param("T", "bfloat16", (6,)),
        Param("U", "bfloat16", (6,)),
    ),
}
"""The fuzzed functions. ``axpy`` and ``half`` come from TE (``tir.noalias``: overlap checks);
the others are hand-written TIR whose first tensor is written."""


def _hand_written(name: str, params: tuple[Param, ...]) -> tir.PrimFunc:
    dims: dict[str, tir.Var] = {}
    handles, bmap = [], {}
    for p in params:
        if p.shape is None:
            handles.append(tir.Var(p.name, p.dtype))
            continue
        shape = tuple(
            dims.setdefault(d, tir.SizeVar(d)) if isinstance(d, str) else d for d in p.shape
        )
        h = tir.Var(p.name, "handle")
        handles.append(h)
        bmap[h] = tir.decl_buffer(shape, p.dtype, p.name)
    first = next(iter(bmap.values()))
    store = tir.BufferStore(
        first, tir.const(0, first.dtype), tuple(tir.const(0) for _ in first.shape)
    )
    never = tir.IfThenElse(first.shape[0] < tir.const(0, first.shape[0].dtype), store)
    return tir.PrimFunc(tuple(handles), never, buffer_map=bmap, attrs={"global_symbol": name})


def _te(name: str, dtype: str, n: Any) -> tir.PrimFunc:
    a, b = te.placeholder((n,), dtype, "A"), te.placeholder((n,), dtype, "B")
    c = te.compute((n,), lambda i: a[i] + b[i], name="C")
    return te.lower(te.create_schedule(c), [a, b, c], name=name)


def fuzz_module() -> IRModule:
    """The module every batch calls into."""
    funcs = {n: _hand_written(n, ps) for n, ps in SIGNATURES.items() if n not in ("axpy", "half")}
    funcs["axpy"] = _rename(_te("axpy", "float32", te.var("p")), ("P", "Q", "R"))
    funcs["half"] = _rename(_te("half", "bfloat16", 6), ("S", "T", "U"))
    return IRModule({GlobalVar(n): f for n, f in funcs.items()})


def _rename(f: tir.PrimFunc, names: tuple[str, ...]) -> tir.PrimFunc:
    """``f`` with its three tensor parameters named ``names`` (the buffers keep theirs)."""
    params = tuple(tir.Var(n, "handle") for n in names)
    bmap = {new: f.buffer_map[old] for new, old in zip(params, f.params)}
    return tir.PrimFunc(params, f.body, f.ret_type, buffer_map=bmap, attrs=f.attrs)


# -- good calls ---------------------------------------------------------------------------------
def _np_dtype(dtype: str) -> Any:
    if dtype in STORAGE_DTYPES:
        import ml_dtypes

        return getattr(ml_dtypes, dtype)
    return dtype


def good_args(params: tuple[Param, ...], rng: random.Random) -> list[Any]:
    dims = {"n": rng.randint(1, 5), "m": rng.randint(1, 6), "k": rng.randint(1, 4), "p": 8}
    args: list[Any] = []
    for p in params:
        if p.shape is None:
            args.append(rng.randint(0, 9) if "int" in p.dtype else rng.random())
        else:
            shape = tuple(dims[d] if isinstance(d, str) else d for d in p.shape)
            args.append(np.zeros(shape, dtype=_np_dtype(p.dtype)))
    return args


# -- mutations: each returns the name of the argument at fault ("" for the count), or None ----
Mutation = Callable[[list[Any], tuple[Param, ...], set[str], random.Random], str | None]


def _tensors(params: tuple[Param, ...]) -> list[int]:
    return [i for i, p in enumerate(params) if p.shape is not None]


def _scalars(params: tuple[Param, ...], kind: str = "") -> list[int]:
    return [i for i, p in enumerate(params) if p.shape is None and kind in p.dtype]


def m_count(args: list[Any], params: tuple[Param, ...], out: set[str], rng: random.Random) -> str:
    if rng.random() < 0.5:
        del args[rng.randrange(len(args))]
    else:
        args.insert(rng.randrange(len(args) + 1), np.zeros(1, "float32"))
    return ""


class _Broken:
    def __dlpack__(self, *args: Any, **kwargs: Any) -> Any:
        raise BufferError("exporter refuses")

    def __dlpack_device__(self) -> tuple[int, int]:
        return (1, 0)


NOT_TENSORS: list[Callable[[], Any]] = [
    lambda: None,
    lambda: 1,
    lambda: 2.5,
    lambda: "x",
    lambda: True,
    lambda: [1, 2],
    lambda: {"a": 1},
    lambda: b"bytes",
    lambda: object(),
    lambda: lambda: 0,
    lambda: tvm_ffi.device("cpu"),
    lambda: np.float32(1.0),
    lambda: _Broken(),
    lambda: np.zeros(3, "U1"),
    lambda: np.zeros(3, object),
]


def m_not_a_tensor(
    args: list[Any], params: tuple[Param, ...], out: set[str], rng: random.Random
) -> str:
    i = rng.choice(_tensors(params))
    args[i] = rng.choice(NOT_TENSORS)()
    return params[i].name


def m_not_a_scalar(
    args: list[Any], params: tuple[Param, ...], out: set[str], rng: random.Random
) -> str | None:
    if not _scalars(params):
        return None
    i = rng.choice(_scalars(params))
    choices: list[Any] = [None, np.zeros(3, "float32"), "x", [1], object(), 1 + 2j, {}]
    if "int" in params[i].dtype:
        choices.append(1.5)
    args[i] = rng.choice(choices)
    return params[i].name


def m_dtype(args: list[Any], params: tuple[Param, ...], out: set[str], rng: random.Random) -> str:
    i = rng.choice(_tensors(params))
    others = ["float32", "float64", "int32", "int8", "uint8", "bool", "float16", "complex64"]
    others += ["bfloat16", "float8_e4m3fn"]
    other = rng.choice([d for d in others if d != params[i].dtype])
    args[i] = np.zeros(args[i].shape, _np_dtype(other))
    return params[i].name


def m_ndim(args: list[Any], params: tuple[Param, ...], out: set[str], rng: random.Random) -> str:
    i = rng.choice(_tensors(params))
    a = args[i]
    args[i] = a[None] if rng.random() < 0.5 or a.ndim == 1 else a.reshape(-1)
    return params[i].name


def m_shape(
    args: list[Any], params: tuple[Param, ...], out: set[str], rng: random.Random
) -> str | None:
    i = rng.choice(_tensors(params))
    shape = list(args[i].shape)
    axis = rng.randrange(len(shape))
    dim = params[i].shape[axis]  # type: ignore[index]
    sights = sum(d == dim for p in params if p.shape for d in p.shape)
    if isinstance(dim, str) and sights < 2:
        return None  # the only sight of this dim: any size is valid
    shape[axis] += rng.choice([1, 2, 7])
    if not isinstance(dim, str) and rng.random() < 0.3:
        shape[axis] = 0
    args[i] = np.zeros(shape, dtype=args[i].dtype)
    return params[i].name


def m_strides(
    args: list[Any], params: tuple[Param, ...], out: set[str], rng: random.Random
) -> str | None:
    i = rng.choice(_tensors(params))
    a = args[i]
    axes = [d for d in range(a.ndim) if a.shape[d] > 1]
    if not axes:
        return None
    axis = rng.choice(axes)
    how = rng.choice(["step", "reverse", "broadcast"])
    if how == "step":
        big = list(a.shape)
        big[axis] *= 2
        view = np.zeros(big, a.dtype)[
            tuple(slice(None, None, 2) if d == axis else slice(None) for d in range(a.ndim))
        ]
    elif how == "reverse":
        view = np.zeros(a.shape, a.dtype)[
            tuple(slice(None, None, -1) if d == axis else slice(None) for d in range(a.ndim))
        ]
    else:
        view = np.broadcast_to(
            np.zeros((*a.shape[:axis], 1, *a.shape[axis + 1 :]), a.dtype), a.shape
        )
    args[i] = view
    return params[i].name


_versioned = ctypes.pythonapi.PyCapsule_GetPointer
_versioned.restype = ctypes.c_void_p
_versioned.argtypes = [ctypes.py_object, ctypes.c_char_p]


def on_device(a: np.ndarray, device_type: int) -> tvm_ffi.Tensor:
    """A tvm-ffi tensor over ``a``'s memory that claims to live on ``device_type``."""
    capsule = a.__dlpack__(max_version=(1, 0))
    # DLManagedTensorVersioned: version (8 bytes), manager_ctx, deleter, flags, then DLTensor
    # {data, device_type, ...}: the device type is at byte 40.
    address = _versioned(capsule, b"dltensor_versioned") + 40
    ctypes.c_int32.from_address(address).value = device_type
    return tvm_ffi.from_dlpack(capsule)


def m_device(
    args: list[Any], params: tuple[Param, ...], out: set[str], rng: random.Random
) -> str | None:
    i = rng.choice(_tensors(params))
    if params[i].dtype in STORAGE_DTYPES:
        return None
    args[i] = on_device(args[i], rng.choice([2, 3, 4, 7, 13]))  # CUDA, CUDA host, OpenCL, ...
    return params[i].name


def m_overlap(
    args: list[Any], params: tuple[Param, ...], out: set[str], rng: random.Random
) -> str | None:
    outs = [i for i in _tensors(params) if params[i].name in out]
    ins = [i for i in _tensors(params) if params[i].name not in out]
    if not outs or not ins or params[0].name not in ("P", "S"):  # the noalias functions
        return None
    o, i = rng.choice(outs), rng.choice(ins)
    n = args[o].shape[0]
    base = np.zeros(n + rng.randint(1, n - 1), args[o].dtype)
    shift = rng.randint(0, base.size - n)
    args[o] = base[:n]
    args[i] = base[shift : shift + n]
    return params[o].name


def m_read_only(
    args: list[Any], params: tuple[Param, ...], out: set[str], rng: random.Random
) -> str | None:
    outs = [i for i in _tensors(params) if params[i].name in out]
    if not outs:
        return None
    i = rng.choice(outs)
    args[i] = args[i].copy()
    args[i].flags.writeable = False
    return params[i].name


HUGE = [2**100, -(2**100), 2**64, 2**63, -(2**63) - 1, np.uint64(2**64 - 1)]


def m_huge_int(
    args: list[Any], params: tuple[Param, ...], out: set[str], rng: random.Random
) -> str | None:
    ints = _scalars(params, "int")
    if not ints:
        return None
    i = rng.choice(ints)
    dtype = params[i].dtype
    bits = int(re.sub(r"\D", "", dtype))
    lo, hi = (
        (0, 2**bits - 1) if dtype.startswith("u") else (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1)
    )
    values = [v for v in HUGE if not lo <= int(v) <= hi] + [hi + 1, lo - 1]
    args[i] = rng.choice(values)
    return params[i].name


def m_none(args: list[Any], params: tuple[Param, ...], out: set[str], rng: random.Random) -> str:
    i = rng.randrange(len(params))
    args[i] = None
    return params[i].name


MUTATIONS: list[Mutation] = [
    m_count,
    m_not_a_tensor,
    m_not_a_scalar,
    m_dtype,
    m_ndim,
    m_shape,
    m_strides,
    m_device,
    m_overlap,
    m_read_only,
    m_huge_int,
    m_none,
]


def named(fn: str, arg: str, params: tuple[Param, ...], msg: str) -> bool:
    """Whether ``msg`` names the function and (for a count mistake: every) argument."""
    if not msg.startswith(f"{fn}: "):
        return False
    rest = msg[len(fn) + 2 :]
    wanted = [p.name for p in params] if arg == "" else [arg]
    return all(re.search(rf"\b{re.escape(w)}\b", rest) for w in wanted)


def run_batch(mod: Module, seed: int, calls: int, progress: str) -> dict[str, Any]:
    rng = random.Random(seed)
    outs = {fn: {a.name for a in (mod.get_func_args(fn) or ()) if a.written} for fn in SIGNATURES}
    kinds: dict[str, int] = {}
    unnamed: list[str] = []
    accepted: list[str] = []
    fd = os.open(progress, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    made = 0
    while made < calls:
        fn = rng.choice(sorted(SIGNATURES))
        params = SIGNATURES[fn]
        args = good_args(params, rng)
        mutation = rng.choice(MUTATIONS)
        arg = mutation(args, params, outs[fn], rng)
        if arg is None:
            continue
        os.pwrite(fd, f"{made:>8} {fn} {mutation.__name__}\n".encode(), 0)
        what = f"{fn} {mutation.__name__} -> {arg or '(count)'}"
        try:
            mod[fn](*args)
        except Exception as e:  # noqa: BLE001 - every kind is judged by its message
            if not named(fn, arg, params, str(e)):
                unnamed.append(f"{what}: {type(e).__name__}: {e}")
        else:
            accepted.append(what)
        kinds[mutation.__name__] = kinds.get(mutation.__name__, 0) + 1
        made += 1
    os.close(fd)
    for fn, params in SIGNATURES.items():  # the functions still work
        mod[fn](*good_args(params, rng))
    return {
        "calls": made,
        "kinds": kinds,
        "unnamed": unnamed[:20],
        "accepted": accepted[:20],
        "unnamed_count": len(unnamed),
        "accepted_count": len(accepted),
    }


def main(argv: list[str]) -> int:
    lib, seed, calls, progress = argv
    summary = run_batch(load_module(lib), int(seed), int(calls), progress)
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
