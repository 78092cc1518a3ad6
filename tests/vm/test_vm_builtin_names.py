"""The builtin names the compiler can emit are in the runtime's table, and every name in the
table is a registered tvm-ffi global: emitted ⊆ table ⊆ registered."""

from __future__ import annotations

import ast
from pathlib import Path

import tvm_ffi

from kiln import relax
from kiln.driver.relax_build import lower_to_vm
from kiln.ir.visitor import pre_order_nodes
from kiln.runtime.vm_builtins import BUILTIN_PREFIX, BUILTINS, is_builtin
from kiln.runtime.vm_format import FuncKind
from kiln.runtime.vm_runtime import load_vm_runtime
from kiln.tir.expr import StringImm
from kiln.vm import ExecBuilder, codegen_bytecode, codegen_tir
from tests.vm import test_vm_build, test_vm_models

ROOT = Path(__file__).resolve().parents[2]
EMITTERS = sorted((ROOT / "kiln" / "relax" / "transform").glob("*.py")) + sorted(
    (ROOT / "kiln" / "vm").glob("*.py")
)
TABLE = {b.name for b in BUILTINS}


def names_in_source(path: Path) -> set[str]:
    """``vm.builtin.*`` literals and ``builtin("x")`` look-ups in one compiler file."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            if node.value.startswith(BUILTIN_PREFIX) and " " not in node.value:
                found.add(node.value)
        if (
            isinstance(node, ast.Call)
            and getattr(node.func, "id", "") == "builtin"
            and node.args
            and isinstance(node.args[0], ast.Constant)
        ):
            found.add(BUILTIN_PREFIX + str(node.args[0].value))
    return found


def test_every_name_the_compiler_source_spells_is_in_the_table() -> None:
    spelled = set().union(*(names_in_source(p) for p in EMITTERS))
    assert spelled, "the scan found nothing: it is broken"
    assert spelled <= TABLE, sorted(spelled - TABLE)
    assert set(codegen_tir.EMITS) | set(codegen_bytecode.EMITS) <= TABLE


def emitted(mod: object) -> set[str]:
    """Builtin names in the executables of ``mod``, both modes: table entries and the names
    the ``__vmtir__`` functions call."""
    lowered = lower_to_vm(mod)  # type: ignore[arg-type]
    names: set[str] = set()
    for mode in ("bytecode", "compiled"):
        builder = ExecBuilder()
        tir_mod = relax.vm_codegen(lowered, mode, builder)
        names |= {f.name for f in builder.functions if f.kind is FuncKind.PACKED}
        names |= {
            n.value
            for n in pre_order_nodes(tuple(tir_mod.functions.values()))
            if isinstance(n, StringImm)
        }
    return {n for n in names if n.startswith(BUILTIN_PREFIX)}


def test_every_name_emitted_for_the_test_programs_is_in_the_table() -> None:
    programs = [
        test_vm_build.Kernels,
        test_vm_build.Branches,
        test_vm_build.Tuples,
        test_vm_build.Closures,
        test_vm_build.Constants,
        test_vm_build.Calls,
        test_vm_build.DataDependent,
        test_vm_models.ConvBlock,
        test_vm_models.Dynamic,
    ]
    seen = set().union(*(emitted(m) for m in programs))
    assert seen <= TABLE, sorted(seen - TABLE)
    # the programs exercise the builtins that shape, memory and control lowering use
    shapes = ("match_shape", "make_shape", "tensor_to_shape", "call_tir_dyn")
    for name in (*shapes, "alloc_storage", "empty", "read_if_cond"):
        assert BUILTIN_PREFIX + name in seen
    assert all(is_builtin(n) for n in seen)


def test_every_name_in_the_table_is_a_registered_global() -> None:
    load_vm_runtime()
    missing = [n for n in sorted(TABLE) if tvm_ffi.get_global_func(n, allow_missing=True) is None]
    assert missing == []
