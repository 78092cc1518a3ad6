"""A small reference interpreter for TIR over numpy, used to check lowered TE numerically.

Each expression and statement is compiled once into a Python closure; running executes every
loop iteration in order (parallel, vectorized and unrolled loops run serially, which is their
meaning). Perfectly nested ``threadIdx`` loops run as one block of Python threads, which meet at
``tvm_storage_sync`` barriers and share ``shared`` allocations, so cooperative fetches work.
Scalars keep their TIR dtype through numpy scalar types, so float32 arithmetic rounds like
float32. Scratch float buffers start as NaN so a read before any write shows up in the result.
"""

from __future__ import annotations

import itertools
import math
import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from kiln import tir
from kiln.ir.dtype import DataType

Env = dict[Any, Any]
Fn = Callable[[Env], Any]

_MATH: dict[str, Callable[..., Any]] = {
    "exp": np.exp,
    "log": np.log,
    "sqrt": np.sqrt,
    "tanh": np.tanh,
    "sin": np.sin,
    "cos": np.cos,
    "fabs": np.abs,
    "floor": np.floor,
    "ceil": np.ceil,
    "pow": np.power,
    "erf": lambda x: type(x)(math.erf(float(x))),
    "sigmoid": lambda x: type(x)(1.0 / (1.0 + math.exp(-float(x)))),
}


def np_dtype(dt: DataType) -> Any:
    if dt.is_bool:
        return np.bool_
    return np.dtype(str(dt)).type


def _cast(dt: DataType) -> Callable[[Any], Any]:
    if dt.is_bool:
        return bool
    if dt.is_integer:
        ty = np_dtype(dt)
        return lambda v: int(ty(v)) if not isinstance(v, (float, np.floating)) else int(ty(int(v)))
    ty = np_dtype(dt)
    return lambda v: ty(v)


def _trunc_div(a: Any, b: Any) -> Any:
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def _binary(e: Any) -> Callable[[Any, Any], Any]:
    is_int = e.a.dtype.is_integer or e.a.dtype.is_bool
    table: dict[type, Callable[[Any, Any], Any]] = {
        tir.Add: lambda a, b: a + b,
        tir.Sub: lambda a, b: a - b,
        tir.Mul: lambda a, b: a * b,
        tir.Div: _trunc_div if is_int else (lambda a, b: a / b),
        tir.Mod: (lambda a, b: a - _trunc_div(a, b) * b),
        tir.FloorDiv: (lambda a, b: a // b) if is_int else (lambda a, b: np.floor(a / b)),
        tir.FloorMod: lambda a, b: a % b,
        tir.Min: lambda a, b: a if a <= b else b,
        tir.Max: lambda a, b: a if a >= b else b,
        tir.EQ: lambda a, b: bool(a == b),
        tir.NE: lambda a, b: bool(a != b),
        tir.LT: lambda a, b: bool(a < b),
        tir.LE: lambda a, b: bool(a <= b),
        tir.GT: lambda a, b: bool(a > b),
        tir.GE: lambda a, b: bool(a >= b),
        tir.And: lambda a, b: bool(a and b),
        tir.Or: lambda a, b: bool(a or b),
    }
    return table[type(e)]


class Interpreter:
    """Runs one PrimFunc on numpy arrays (in place, like the compiled function)."""

    def __init__(self, func: tir.PrimFunc | None = None) -> None:
        self.func = func
        self.body = self.stmt(func.body) if func is not None else None

    # -- expressions --------------------------------------------------------------------------
    def expr(self, e: Any) -> Fn:
        fn = getattr(self, f"e_{type(e).__name__}", None)
        if fn is not None:
            return fn(e)
        if isinstance(e, tir.BinaryOp):
            op, fa, fb = _binary(e), self.expr(e.a), self.expr(e.b)
            return lambda env: op(fa(env), fb(env))
        if isinstance(e, tir.Var):
            return lambda env: env[e]
        raise NotImplementedError(f"interpreter: expression {type(e).__name__}")

    def e_IntImm(self, e: tir.IntImm) -> Fn:
        v = bool(e.value) if e.dtype.is_bool else e.value
        return lambda env: v

    def e_FloatImm(self, e: tir.FloatImm) -> Fn:
        v = np_dtype(e.dtype)(e.value)
        return lambda env: v

    def e_Not(self, e: tir.Not) -> Fn:
        fa = self.expr(e.a)
        return lambda env: not fa(env)

    def e_Cast(self, e: tir.Cast) -> Fn:
        fv, cast = self.expr(e.value), _cast(e.dtype)
        return lambda env: cast(fv(env))

    def e_Select(self, e: tir.Select) -> Fn:
        c, t, f = self.expr(e.condition), self.expr(e.true_value), self.expr(e.false_value)

        def run(env: Env) -> Any:
            tv, fv = t(env), f(env)
            return tv if c(env) else fv

        return run

    def e_Let(self, e: tir.Let) -> Fn:
        fv, fb = self.expr(e.value), self.expr(e.body)

        def run(env: Env) -> Any:
            env[e.var] = fv(env)
            return fb(env)

        return run

    def e_BufferLoad(self, e: tir.BufferLoad) -> Fn:
        idx = [self.expr(i) for i in e.indices]
        buf = e.buffer
        return lambda env: env[buf][tuple(f(env) for f in idx)]

    def e_Call(self, e: tir.Call) -> Fn:
        name = e.op_name.removeprefix("tir.")
        if name == "tvm_storage_sync":
            return _sync
        args = [self.expr(a) for a in e.args]
        if name == "if_then_else":
            c, t, f = args
            return lambda env: t(env) if c(env) else f(env)
        if name == "likely":
            return args[0]
        fn = _MATH[name]
        ty = np_dtype(e.dtype)
        return lambda env: ty(fn(*(a(env) for a in args)))

    # -- statements ---------------------------------------------------------------------------
    def stmt(self, s: Any) -> Fn:
        fn = getattr(self, f"s_{type(s).__name__}", None)
        if fn is None:
            raise NotImplementedError(f"interpreter: statement {type(s).__name__}")
        return fn(s)

    def s_SeqStmt(self, s: tir.SeqStmt) -> Fn:
        parts = [self.stmt(x) for x in s.seq]

        def run(env: Env) -> None:
            for p in parts:
                p(env)

        return run

    def s_For(self, s: tir.For) -> Fn:
        if _thread_tag(s).startswith("threadIdx"):
            return self._block(s)
        lo, ext, body, var = self.expr(s.min), self.expr(s.extent), self.stmt(s.body), s.loop_var

        def run(env: Env) -> None:
            start = lo(env)
            for v in range(start, start + ext(env)):
                env[var] = v
                body(env)

        return run

    def _block(self, s: tir.For) -> Fn:
        """The perfectly nested threadIdx loops from ``s`` run as one block of Python threads
        that wait for each other at ``tvm_storage_sync`` and share ``shared`` allocations."""
        loops = [s]
        while isinstance(loops[-1].body, tir.For) and _thread_tag(loops[-1].body).startswith(
            "threadIdx"
        ):
            loops.append(loops[-1].body)
        exts = [self.expr(x.extent) for x in loops]
        mins = [self.expr(x.min) for x in loops]
        body = self.stmt(loops[-1].body)
        serial = self._serial(loops, mins, exts, body)

        def run(env: Env) -> None:
            if _BLOCK in env:  # a nested thread scope: the block is already running
                serial(env)
                return
            ranges = [range(m(env), m(env) + e(env)) for m, e in zip(mins, exts)]
            points = list(itertools.product(*ranges))
            block = _Block(len(points))
            threads = [
                threading.Thread(target=block.run, args=(body, env, loops, p)) for p in points
            ]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            if block.errors:
                raise block.errors[0]

        return run

    def _serial(self, loops: list[tir.For], mins: list[Fn], exts: list[Fn], body: Fn) -> Fn:
        def run(env: Env) -> None:
            ranges = [range(m(env), m(env) + e(env)) for m, e in zip(mins, exts)]
            for p in itertools.product(*ranges):
                env.update({x.loop_var: v for x, v in zip(loops, p)})
                body(env)

        return run

    def s_BufferStore(self, s: tir.BufferStore) -> Fn:
        idx = [self.expr(i) for i in s.indices]
        value = self.expr(s.value)
        buf = s.buffer

        def run(env: Env) -> None:
            env[buf][tuple(f(env) for f in idx)] = value(env)

        return run

    def s_IfThenElse(self, s: tir.IfThenElse) -> Fn:
        c, t = self.expr(s.condition), self.stmt(s.then_case)
        f = self.stmt(s.else_case) if s.else_case is not None else (lambda env: None)
        return lambda env: t(env) if c(env) else f(env)

    def s_LetStmt(self, s: tir.LetStmt) -> Fn:
        fv, fb = self.expr(s.value), self.stmt(s.body)

        def run(env: Env) -> None:
            env[s.var] = fv(env)
            fb(env)

        return run

    def s_Allocate(self, s: tir.Allocate) -> Fn:
        extents = [self.expr(x) for x in s.extents]
        body, ty, var = self.stmt(s.body), np_dtype(s.dtype), s.buffer_var
        fill = np.nan if s.dtype.is_float else 0

        shared = _scope(var) == "shared"

        def run(env: Env) -> None:
            n = int(np.prod([f(env) for f in extents]))
            block = env.get(_BLOCK)
            if shared and block is not None:
                env[var] = block.allocate(env, s, lambda: np.full(n, fill, dtype=ty))
            else:
                env[var] = np.full(n, fill, dtype=ty)
            body(env)

        return run

    def s_DeclBuffer(self, s: tir.DeclBuffer) -> Fn:
        shape = [self.expr(x) for x in s.buffer.shape]
        body, buf = self.stmt(s.body), s.buffer

        def run(env: Env) -> None:
            flat = env[buf.data]
            n = int(np.prod([f(env) for f in shape]))
            env[buf] = flat[:n].reshape([f(env) for f in shape])
            body(env)

        return run

    def s_AttrStmt(self, s: tir.AttrStmt) -> Fn:
        return self.stmt(s.body)

    def s_Evaluate(self, s: tir.Evaluate) -> Fn:
        fv = self.expr(s.value)
        return lambda env: fv(env)

    # -- entry --------------------------------------------------------------------------------
    def __call__(self, *args: Any) -> None:
        assert self.func is not None and self.body is not None
        env: Env = {}
        if len(args) != len(self.func.params):
            raise TypeError(f"expected {len(self.func.params)} arguments, got {len(args)}")
        for p, a in zip(self.func.params, args):
            buf = self.func.buffer_map.get(p)
            if buf is None:
                env[p] = a
                continue
            self._bind(env, buf, a)
        self.body(env)

    def _bind(self, env: Env, buf: tir.Buffer, arr: np.ndarray) -> None:
        assert arr.dtype == np.dtype(np_dtype(buf.dtype)), (buf.name, arr.dtype, buf.dtype)
        assert arr.ndim == len(buf.shape), (buf.name, arr.shape)
        for dim, n in zip(buf.shape, arr.shape):
            if isinstance(dim, tir.Var):
                if dim in env:
                    assert env[dim] == n, (buf.name, dim.name, env[dim], n)
                env[dim] = n
            else:
                assert self.expr(dim)(env) == n, (buf.name, arr.shape)
        env[buf] = arr


_BLOCK = "__block__"


def _thread_tag(s: Any) -> str:
    if s.kind == tir.ForKind.THREAD_BINDING and s.thread_binding is not None:
        return str(s.thread_binding.thread_tag)
    return ""


def _scope(var: Any) -> str:
    return str(getattr(var.type_annotation, "scope", "global"))


def _sync(env: Env) -> int:
    block = env.get(_BLOCK)
    if block is not None:
        block.barrier.wait()
    return 0


class _Block:
    """One thread block: a barrier over its threads and its ``shared`` allocations."""

    def __init__(self, n: int) -> None:
        self.barrier = threading.Barrier(n)
        self.lock = threading.Lock()
        self.arrays: dict[tuple[int, int], np.ndarray] = {}
        self.errors: list[BaseException] = []

    def allocate(self, env: Env, node: Any, make: Callable[[], np.ndarray]) -> np.ndarray:
        # NOTE: every thread reaches the same allocations in the same order, so the k-th
        # execution of one Allocate is the same array in every thread.
        counts = env[_BLOCK + "counts"]
        k = counts[id(node)] = counts.get(id(node), -1) + 1
        with self.lock:
            return self.arrays.setdefault((id(node), k), make())

    def run(self, body: Fn, env: Env, loops: list[tir.For], point: tuple[int, ...]) -> None:
        mine = dict(env)
        mine.update({x.loop_var: v for x, v in zip(loops, point)})
        mine[_BLOCK], mine[_BLOCK + "counts"] = self, {}
        try:
            body(mine)
        except BaseException as e:  # noqa: BLE001 - re-raised by the caller
            self.errors.append(e)
            self.barrier.abort()


def run_tir(func: tir.PrimFunc, *args: Any) -> None:
    """Interpret ``func`` on numpy arrays (outputs are written in place)."""
    Interpreter(func)(*args)


def eval_expr(e: Any, env: dict[Any, Any]) -> Any:
    """The value of expression ``e`` with variables bound by ``env`` (Var -> value)."""
    return Interpreter().expr(e)(dict(env))
