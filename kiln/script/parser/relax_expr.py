"""Evaluation of ``R`` script expressions: relax values, symbolic variables and annotations.

On top of `ExprEvaluator` (names, literals, Python semantics for Python values):

- a name bound to ``T.int64()`` (or another integer type) is the function's symbolic variable of
  that name, made on first use; a string dim in an annotation (``R.Tensor(("n", 4))``) is the
  same variable;
- annotations (``R.Tensor(...)``, ``R.Tuple(...)``...) are resolved to struct info when passed to
  anything but another annotation constructor;
- arithmetic on relax values builds operator calls (``x + y`` is ``R.add(x, y)``, ``a @ b`` is
  ``R.matmul``), ``t[0]`` of a tuple value is a `TupleGetItem`;
- calling a module function (``cls.f(x)``, ``Module.f(x)``, or a PrimFunc by name) or a local
  function builds a relax `Call`; a PrimFunc called directly receives its arguments as they are.
"""

from __future__ import annotations

import ast
from typing import Any

from kiln.errors import IRError
from kiln.ir.function import GlobalVar
from kiln.relax import op as relax_op
from kiln.relax.expr import Call, Expr, Tuple, Var
from kiln.relax.op.common import as_expr
from kiln.relax.struct_info import FuncStructInfo, StructInfo
from kiln.script.metadata import MetadataRef
from kiln.script.parser.expr import ExprEvaluator
from kiln.script.relax_ns.types import SinfoCtor, resolve_all, resolve_sinfo
from kiln.script.tir_ns.types import VarSpec
from kiln.tir.expr import PrimExpr
from kiln.tir.expr import Var as TirVar

_RELAX_BINOPS = {
    ast.Add: relax_op.add,
    ast.Sub: relax_op.subtract,
    ast.Mult: relax_op.multiply,
    ast.Div: relax_op.divide,
    ast.FloorDiv: relax_op.floor_divide,
    ast.Pow: relax_op.power,
    ast.MatMult: relax_op.matmul,
}


class DataflowLocal:
    """What a dataflow block's non-output variable is bound to after the block."""

    def __init__(self, name: str) -> None:
        self.name = name


def as_value(value: Any) -> Any:
    """A relax value from a relax expression or a (nested) Python tuple of them."""
    if isinstance(value, (list, tuple)):
        return Tuple(tuple(as_value(v) for v in value))
    return value


def is_value(value: Any) -> bool:
    if isinstance(value, (Expr, GlobalVar)):
        return True
    if isinstance(value, (list, tuple)):
        return len(value) == 0 or all(is_value(v) for v in value)
    return False


class RelaxEvaluator(ExprEvaluator):
    """Evaluates expressions of one relax function (see the module docstring)."""

    def __init__(self, *args: Any, outer: RelaxEvaluator | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.sym: dict[str, TirVar] = {}
        self.outer = outer
        self.gv_kind: dict[str, str] = {}

    # -- symbolic variables ----------------------------------------------------------------------
    def sym_var(self, name: str, dtype: Any = "int64") -> TirVar:
        """The symbolic variable ``name`` of this function (or an enclosing one), made if new."""
        p: RelaxEvaluator | None = self
        while p is not None:
            if name in p.sym:
                return p.sym[name]
            p = p.outer
        var = TirVar(name, dtype)
        self.sym[name] = var
        return var

    def declare_sym(self, name: str, spec: VarSpec, span: Any) -> TirVar:
        """``name = T.int64()`` in a function: the symbolic variable ``name``."""
        dtype, _ = spec.var_type()
        if not dtype.is_integer:
            raise IRError(f"symbolic variable {name!r} must be an integer (T.int64()), not {dtype}")
        if name in self.sym:
            return self.sym[name]
        var = TirVar(name, dtype, span=span)
        self.sym[name] = var
        return var

    def resolve(self, value: Any) -> StructInfo:
        """The struct info an annotation stands for."""
        return resolve_sinfo(value, self.sym_var)

    # -- names and operators ---------------------------------------------------------------------
    def e_Name(self, node: ast.Name) -> Any:
        value = self.lookup(node.id, node)
        if isinstance(value, VarSpec):
            return self.sym_var(node.id, value.var_type()[0])
        if isinstance(value, DataflowLocal):
            raise self.src.error(
                node,
                f"{value.name!r} is local to a dataflow block; list it in R.output(...) to use it "
                "after the block",
            )
        return value

    def e_Attribute(self, node: ast.Attribute) -> Any:
        obj = self.eval(node.value)
        if getattr(obj, "__name__", "") in ("kiln.script.relax", "kiln.relax.op.nn"):
            if not hasattr(obj, node.attr):
                prefix = "R.nn" if obj.__name__.endswith("nn") else "R"
                raise self.src.error(node, f"unknown R function or type '{prefix}.{node.attr}'")
        return super().e_Attribute(node)

    def e_BinOp(self, node: ast.BinOp) -> Any:
        a, b = self.eval(node.left), self.eval(node.right)
        if isinstance(a, Expr) or isinstance(b, Expr):
            fn = _RELAX_BINOPS.get(type(node.op))
            if fn is None:
                raise self.src.error(node, "this operator is not defined on relax values")
            return self.at(node, fn, a, b)
        return super().e_BinOp(node)

    def e_Subscript(self, node: ast.Subscript) -> Any:
        obj = self.eval(node.value)
        if isinstance(obj, Expr):
            index = self.eval(node.slice)
            if isinstance(index, bool) or not isinstance(index, int):
                raise self.src.error(node.slice, f"a tuple is indexed with an int, got {index!r}")
            return obj[index]
        return super().e_Subscript(node)

    # -- calls -----------------------------------------------------------------------------------
    def call(self, func: Any, args: list, kwargs: dict, node: ast.Call) -> Any:
        if isinstance(func, SinfoCtor):
            return func.spec(*args, **kwargs)
        args = [resolve_all(a, self.sym_var) for a in args]
        kwargs = {k: resolve_all(v, self.sym_var) for k, v in kwargs.items()}
        if isinstance(func, GlobalVar):
            return self.call_global(func, args, kwargs)
        if isinstance(func, Var) and isinstance(func.struct_info_, FuncStructInfo):
            if kwargs:
                raise IRError(f"{func.name_hint}() takes no keyword arguments")
            return Call(func, tuple(self.arg(a) for a in args))
        if isinstance(func, (Expr, PrimExpr)):
            raise IRError(f"{ast.unparse(node.func)} is not a function")
        if args and isinstance(args[0], MetadataRef) and isinstance(node.args[0], ast.Subscript):
            # a metadata reference that disagrees with its R.const is reported at the reference
            return self.at(node.args[0], super().call, func, args, kwargs, node)
        return super().call(func, args, kwargs, node)

    def call_global(self, gv: GlobalVar, args: list, kwargs: dict) -> Call:
        """A call of module function ``gv`` (a PrimFunc receives its arguments as they are)."""
        sinfo_args = kwargs.pop("sinfo_args", ())
        if kwargs:
            raise IRError(f"{gv.name_hint}() takes no keyword arguments")
        if isinstance(sinfo_args, StructInfo):
            sinfo_args = (sinfo_args,)
        return Call(gv, tuple(self.arg(a) for a in args), sinfo_args=tuple(sinfo_args))

    def arg(self, value: Any) -> Expr:
        """A call argument as a relax expression."""
        value = as_value(value)
        if isinstance(value, (Expr, GlobalVar)):
            return value  # type: ignore[return-value]
        return as_expr(value)
