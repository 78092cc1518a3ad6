"""Struct info annotations of the R namespace: ``R.Tensor``, ``R.Shape``, ``R.Prim``,
``R.Object``, ``R.Tuple``, ``R.Callable``.

Each constructor returns a *spec*: the annotation as written, with dims that may be strings
(``R.Tensor(("n", 4))``: the symbolic variable named ``n`` of the enclosing function, made on
first use). A bare constructor (``x: R.Tensor``) is a spec too. The parser turns specs into
struct info with `resolve_sinfo`, giving it a function that maps a name to its symbolic
variable; nothing is validated before that, so mistakes are reported at their source location.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kiln.errors import IRError
from kiln.ir.dtype import DataType
from kiln.relax.expr import Expr
from kiln.relax.struct_info import (
    FuncStructInfo,
    ObjectStructInfo,
    PrimStructInfo,
    ShapeStructInfo,
    StructInfo,
    TensorStructInfo,
    TupleStructInfo,
    as_dim,
)
from kiln.script.tir_ns.types import DTypeCtor
from kiln.tir.expr import PrimExpr, Var, convert

SymLookup = Callable[[str], PrimExpr]


class SinfoSpec:
    """Base of annotation specs (see the module docstring)."""

    def resolve(self, sym: SymLookup) -> StructInfo:
        raise NotImplementedError


def _dtype(value: Any, what: str) -> DataType:
    if value is None:
        return DataType("handle", 0)
    if isinstance(value, DTypeCtor):
        return value.dtype
    if isinstance(value, (str, DataType)):
        return DataType.parse(value)
    raise IRError(f'{what}: dtype must be a string such as "float32", got {value!r}')


def _dims(values: Any, sym: SymLookup, what: str) -> list[PrimExpr]:
    if isinstance(values, (int, str, PrimExpr)):
        values = [values]
    if not isinstance(values, (list, tuple)):
        raise IRError(f"{what}: the shape must be a tuple or list of dims, got {values!r}")
    out = []
    for v in values:
        if isinstance(v, str):
            v = sym(v)
        out.append(as_dim(v, f"{what} dimension"))
    return out


@dataclass(frozen=True)
class TensorSpec(SinfoSpec):
    shape: Any = None
    dtype: Any = None
    ndim: int = -1

    def resolve(self, sym: SymLookup) -> StructInfo:
        dt = _dtype(self.dtype, "R.Tensor")
        if not isinstance(self.ndim, int) or isinstance(self.ndim, bool) or self.ndim < -1:
            raise IRError(f"R.Tensor: ndim must be an int >= -1, got {self.ndim!r}")
        if self.shape is None:
            return TensorStructInfo(None, dt, self.ndim)

        if isinstance(self.shape, Expr):
            return TensorStructInfo(self.shape, dt, self.ndim)
        dims = _dims(self.shape, sym, "R.Tensor")
        if self.ndim not in (-1, len(dims)):
            raise IRError(f"R.Tensor: ndim={self.ndim} but the shape has {len(dims)} dims")
        return TensorStructInfo(dims, dt)


@dataclass(frozen=True)
class ShapeSpec(SinfoSpec):
    values: Any = None
    ndim: int = -1

    def resolve(self, sym: SymLookup) -> StructInfo:
        if self.values is None:
            return ShapeStructInfo(None, self.ndim)
        return ShapeStructInfo(_dims(self.values, sym, "R.Shape"), self.ndim)


@dataclass(frozen=True)
class PrimSpec(SinfoSpec):
    dtype: Any = None
    value: Any = None

    def resolve(self, sym: SymLookup) -> StructInfo:
        value = sym(self.value) if isinstance(self.value, str) else self.value
        if value is not None and not isinstance(value, PrimExpr):
            value = convert(value, _dtype(self.dtype, "R.Prim") if self.dtype else "int64")
        dt = _dtype(self.dtype, "R.Prim") if self.dtype is not None else None
        return PrimStructInfo(dt, value)


@dataclass(frozen=True)
class ObjectSpec(SinfoSpec):
    def resolve(self, sym: SymLookup) -> StructInfo:
        return ObjectStructInfo()


@dataclass(frozen=True)
class TupleSpec(SinfoSpec):
    fields: tuple[Any, ...] = ()

    def resolve(self, sym: SymLookup) -> StructInfo:
        return TupleStructInfo(tuple(resolve_sinfo(f, sym) for f in self.fields))


@dataclass(frozen=True)
class CallableSpec(SinfoSpec):
    params: Any = None
    ret: Any = None
    purity: bool = True

    def resolve(self, sym: SymLookup) -> StructInfo:
        ret = resolve_sinfo(self.ret, sym) if self.ret is not None else ObjectStructInfo()
        if self.params is None:
            return FuncStructInfo.opaque_func(ret, bool(self.purity))
        params = tuple(resolve_sinfo(p, sym) for p in self.params)
        return FuncStructInfo(params, ret, bool(self.purity))


class SinfoCtor:
    """``R.Tensor`` & co. In a script the parser takes the spec (`spec`) and resolves string
    dims to the function's symbolic variables; called from Python (``relax.Var("x",
    R.Tensor((2, 3), "float32"))``) it returns struct info, each string dim a fresh int64
    variable of that name."""

    kiln_sinfo_ctor = True

    def __init__(self, name: str, make: Callable[..., SinfoSpec]) -> None:
        self.name, self.make = name, make

    def spec(self, *args: Any, **kwargs: Any) -> SinfoSpec:
        """The annotation as written (for the parser)."""
        try:
            return self.make(*args, **kwargs)
        except TypeError as e:
            raise IRError(f"R.{self.name}: {e}") from None

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        spec = self.spec(*args, **kwargs)
        try:
            return spec.resolve(_fresh_lookup())
        except (IRError, ValueError):
            return spec  # e.g. a dim declared as T.int64() outside a script: the parser's job

    def __repr__(self) -> str:
        return f"R.{self.name}"


def _tensor(shape: Any = None, dtype: Any = None, vdevice: Any = None, ndim: int = -1) -> Any:
    if isinstance(shape, (str, DataType, DTypeCtor)) and dtype is None:
        shape, dtype = None, shape  # R.Tensor("float32")
    return TensorSpec(shape, dtype, ndim)


def _tuple(*fields: Any) -> TupleSpec:
    return TupleSpec(tuple(fields))


Tensor = SinfoCtor("Tensor", _tensor)
Shape = SinfoCtor("Shape", lambda values=None, ndim=-1: ShapeSpec(values, ndim))
Prim = SinfoCtor("Prim", lambda dtype=None, value=None: PrimSpec(dtype, value))
Object = SinfoCtor("Object", ObjectSpec)
Tuple = SinfoCtor("Tuple", _tuple)
Callable_ = SinfoCtor(
    "Callable", lambda params=None, ret=None, purity=True: CallableSpec(params, ret, purity)
)


def _fresh_lookup() -> SymLookup:
    made: dict[str, PrimExpr] = {}

    def lookup(name: str) -> PrimExpr:

        if name not in made:
            made[name] = Var(name, "int64")
        return made[name]

    return lookup


def resolve_sinfo(value: Any, sym: SymLookup) -> StructInfo:
    """The struct info an annotation value stands for (an error for anything else)."""
    if isinstance(value, StructInfo):
        return value
    if isinstance(value, SinfoCtor):
        value = value.spec()
    if isinstance(value, SinfoSpec):
        return value.resolve(sym)
    raise IRError(
        f'expected a struct info annotation such as R.Tensor((n, 4), "float32"), got {value!r}'
    )


def is_sinfo(value: Any) -> bool:
    """Whether ``value`` is an annotation (spec, constructor or struct info)."""
    return isinstance(value, (StructInfo, SinfoCtor, SinfoSpec))


def resolve_all(value: Any, sym: SymLookup) -> Any:
    """``value`` with every annotation inside lists and tuples resolved to struct info."""
    if is_sinfo(value):
        return resolve_sinfo(value, sym)
    if isinstance(value, list):
        return [resolve_all(v, sym) for v in value]
    if isinstance(value, tuple):
        return tuple(resolve_all(v, sym) for v in value)
    if isinstance(value, dict):
        return {k: resolve_all(v, sym) for k, v in value.items()}
    return value
