"""The graph level: relax IR (expressions, bindings, functions), struct info, operator records,
`BlockBuilder`, analyses and passes.

    from kiln import relax
    x = relax.Var("x", relax.TensorStructInfo([n, 4], "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        gv = bb.emit(relax.op.nn.relu(x))
        bb.emit_func_output(gv)
"""

from kiln.relax import analysis, backend, op, transform
from kiln.relax.backend import register_codegen
from kiln.relax.binding import Binding, BindingBlock, DataflowBlock, MatchCast, VarBinding
from kiln.relax.block_builder import BlockBuilder
from kiln.relax.expr import (
    Call,
    Constant,
    DataflowVar,
    DataTypeImm,
    Expr,
    ExternFunc,
    Function,
    If,
    PrimValue,
    SeqExpr,
    ShapeExpr,
    StringImm,
    Tuple,
    TupleGetItem,
    Var,
    const,
)
from kiln.relax.expr_functor import ExprMutator, ExprVisitor
from kiln.relax.struct_info import (
    FuncStructInfo,
    ObjectStructInfo,
    PrimStructInfo,
    ShapeStructInfo,
    StructInfo,
    TensorStructInfo,
    TupleStructInfo,
)

__all__ = [
    "Binding",
    "BindingBlock",
    "BlockBuilder",
    "Call",
    "Constant",
    "DataTypeImm",
    "DataflowBlock",
    "DataflowVar",
    "Expr",
    "ExprMutator",
    "ExprVisitor",
    "ExternFunc",
    "FuncStructInfo",
    "Function",
    "If",
    "MatchCast",
    "ObjectStructInfo",
    "PrimStructInfo",
    "PrimValue",
    "SeqExpr",
    "ShapeExpr",
    "ShapeStructInfo",
    "StringImm",
    "StructInfo",
    "TensorStructInfo",
    "Tuple",
    "TupleGetItem",
    "TupleStructInfo",
    "Var",
    "VarBinding",
    "analysis",
    "backend",
    "const",
    "op",
    "register_codegen",
    "transform",
]
