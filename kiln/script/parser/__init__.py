"""The script parser: Python AST of ``@I.ir_module`` / ``@T.prim_func`` code → kiln IR."""

from kiln.script.parser.entry import from_source, ir_module, prim_func

__all__ = ["from_source", "ir_module", "prim_func"]
