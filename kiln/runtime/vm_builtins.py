"""The VM builtins: one table of names, arities and effects, implemented once in C.

The bytecode interpreter calls these by their global tvm-ffi name, through the function table
(a `FuncKind.PACKED` entry, resolved when the VM is created); compiled-mode C calls the C entry
directly, by its index in `BUILTINS` through the VM context (see `kiln.runtime.vm_anylist`), so
re-registering a ``vm.builtin.*`` global changes what bytecode calls, not compiled code. The C
source is kiln/runtime/vm_c/builtins.c and checks.c; `kiln.runtime.vm_runtime.load_vm_runtime()`
compiles and registers them. The compiler half (kiln/vm) imports this table to know what it may
emit; a test checks that the table and the registered ``vm.builtin.*`` globals are the same set.

Conventions shared by all builtins:

- ``ctx`` is the VM context: the special register `CONTEXT_REGISTER` in bytecode, ``ctx_ptr``
  in compiled mode. Builtins with ``needs_ctx`` take it as argument 0.
- Shapes are tvm-ffi ``Shape`` objects, dtypes tvm-ffi ``DataType`` values, tuples tvm-ffi
  ``Array`` objects, closures tvm-ffi ``Function`` objects.
- ``err_ctx`` is a string naming what is checked (``"main: argument x"``); errors append to it,
  e.g. ``main: argument x.shape[1] expected 16, got 15``.
- A shape heap is a 1-D int64 tensor (`vm.builtin.alloc_shape_heap`) holding the values of
  symbolic dims, addressed by slot; shape functions compiled from TIR read and write it as a
  buffer. `MatchCode` / `MakeCode` say what `match_shape` / `make_shape` do per dim.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass


class Effect(enum.Enum):
    """What calling a builtin does besides returning its value."""

    PURE = "pure"  # a function of its arguments (may read a shape heap)
    ALLOC = "alloc"  # allocates memory
    CHECK = "check"  # may raise on bad input; match_* may also write the shape heap
    OPAQUE = "opaque"  # calls a function it was given
    STATE = "state"  # returns a new value on every call


class MatchCode(enum.IntEnum):
    """Per-dim action of `vm.builtin.match_shape` / `match_prim_value` (with its value v)."""

    NO_OP = 0
    ASSERT_EQUAL_TO_IMM = 1  # dim == v
    STORE_TO_HEAP = 2  # heap[v] = dim
    ASSERT_EQUAL_TO_LOAD = 3  # dim == heap[v]


class MakeCode(enum.IntEnum):
    """Per-dim source of `vm.builtin.make_shape` / `make_prim_value` (with its value v)."""

    USE_IMM = 0  # v
    LOAD_SHAPE = 1  # heap[v]


@dataclass(frozen=True)
class Builtin:
    """One VM builtin: its global name, argument counts (``max_args`` None: variadic)."""

    name: str
    min_args: int
    max_args: int | None
    effect: Effect
    needs_ctx: bool
    signature: str


def _b(name: str, lo: int, hi: int | None, effect: Effect, sig: str) -> Builtin:
    return Builtin(f"vm.builtin.{name}", lo, hi, effect, sig.startswith("ctx"), sig)


_A, _P, _C, _O, _S = Effect.ALLOC, Effect.PURE, Effect.CHECK, Effect.OPAQUE, Effect.STATE

BUILTINS: tuple[Builtin, ...] = (
    _b("alloc_storage", 2, 5, _A, "ctx, size, device_index=0, dtype_hint=uint8, scope='global'"),
    _b("alloc_tensor", 4, 4, _A, "storage, offset, shape, dtype -> tensor viewing storage"),
    _b("empty", 3, 4, _A, "ctx, shape, dtype, device_index=0 -> tensor with its own storage"),
    _b("alloc_shape_heap", 2, 2, _A, "ctx, size -> zeroed int64 tensor"),
    _b("make_tuple", 0, None, _P, "*items -> tuple"),
    _b("tuple_getitem", 2, 2, _P, "tuple, index -> item"),
    _b("make_closure", 1, None, _P, "func, *captured -> closure"),
    _b("invoke_closure", 2, None, _O, "ctx, closure, *args -> closure(*args)"),
    _b("call_tir_dyn", 2, None, _O, "func, *args, shape -> func(*args, *shape)"),
    _b("read_if_cond", 1, 1, _P, "int | bool | one-element tensor -> bool"),
    _b("copy", 1, 1, _P, "value -> value"),
    _b("null_value", 0, 0, _P, "-> None"),
    _b("shape_of", 1, 1, _P, "tensor -> shape"),
    _b("tensor_to_shape", 1, 1, _P, "1-D int tensor -> shape"),
    _b("reshape", 2, 2, _P, "tensor, shape -> view"),
    _b("match_shape", 4, None, _C, "value, heap, ndim, (code, v) * ndim, err_ctx"),
    _b("make_shape", 2, None, _P, "heap, ndim, (code, v) * ndim -> shape"),
    _b("match_prim_value", 5, 5, _C, "value, heap, code, v, err_ctx"),
    _b("make_prim_value", 3, 3, _P, "heap, code, v -> int"),
    _b("check_tensor_info", 4, 4, _C, "value, ndim (-1: any), dtype (None: any), err_ctx"),
    _b("check_shape_info", 3, 3, _C, "value, ndim (-1: any), err_ctx"),
    _b("check_tuple_info", 3, 3, _C, "value, size (-1: any), err_ctx"),
    _b("check_func_info", 2, 2, _C, "value, err_ctx"),
    _b("call_memoized", 3, 3, _O, "ctx, func, dims -> func(dims), once per distinct dims"),
    _b("random_seed", 0, 0, _S, "-> the next int of a process-wide counter (random seeds)"),
)
"""Every builtin, in the order of the C table."""

BUILTIN_PREFIX = "vm.builtin."

_BY_NAME = {b.name: b for b in BUILTINS}
_INDEX = {b.name: i for i, b in enumerate(BUILTINS)}


def builtin(name: str) -> Builtin:
    """The table entry of ``name`` (``vm.builtin.`` prefix optional); KeyError lists the names."""
    full = name if name.startswith(BUILTIN_PREFIX) else BUILTIN_PREFIX + name
    found = _BY_NAME.get(full)
    if found is None:
        raise KeyError(f"no VM builtin {name!r}; the builtins are {', '.join(_BY_NAME)}")
    return found


def builtin_index(name: str) -> int | None:
    """The index of builtin ``name`` (full global name) in `BUILTINS`, which is its index in the
    C runtime's table (checked when the runtime loads); None for anything else."""
    return _INDEX.get(name)


def takes_ctx(name: str) -> bool:
    """Whether ``name`` is a builtin that takes the VM context first: a plain call of it
    (``Call(ExternFunc(name), args)``, which may pass functions) gets the context from the
    codegen, as ``call_builtin_with_ctx`` does."""
    found = _BY_NAME.get(name)
    return found is not None and found.needs_ctx


def is_builtin(name: str) -> bool:
    """Whether ``name`` is a builtin's full global name."""
    return name in _BY_NAME
