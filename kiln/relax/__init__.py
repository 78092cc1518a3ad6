"""The graph level: relax IR (expressions, bindings, functions), struct info, operator records,
`BlockBuilder`, analyses and passes.

    from kiln import relax
    x = relax.Var("x", relax.TensorStructInfo([n, 4], "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        gv = bb.emit(relax.op.nn.relu(x))
        bb.emit_func_output(gv)

Running it: ``ex = relax.build(mod, target="c", exec_mode="compiled")`` (or ``"bytecode"``),
``vm = relax.VirtualMachine(ex)``, ``vm["main"](x)``; ``relax.vm_codegen(mod, exec_mode)`` is
the VM code generation step alone (for a module already in VM form). ``build`` and
``vm_codegen`` live in the layers above (`kiln.driver`, `kiln.vm`) and load on first use.
"""

from typing import Any

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
from kiln.runtime.vm import VirtualMachine

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
    "VirtualMachine",
    "VarBinding",
    "analysis",
    "backend",
    "build",
    "const",
    "op",
    "register_codegen",
    "transform",
    "vm_codegen",
]


def __getattr__(name: str) -> Any:
    # NOTE: this package is a facade in the top row of the layer table (tests/test_layers.py):
    # it offers the driver's build and the VM's code generation under the names TVM users
    # expect here, loaded on first use so that `import kiln.relax` stays cheap.
    if name == "build":
        from kiln.driver.relax_build import build

        return build
    if name == "vm_codegen":
        from kiln.vm import vm_codegen

        return vm_codegen
    raise AttributeError(f"module 'kiln.relax' has no attribute {name!r}")
