"""TVMScript for kiln: ``from kiln.script import ir as I, relax as R, tir as T``.

- `ir` / `tir` / `relax`: the ``I``, ``T`` and ``R`` namespaces (``@I.ir_module``,
  ``@T.prim_func``, ``@R.function``...).
- `from_source(text)`: parse script text into an `IRModule` or `PrimFunc`.
- `script(node)`: print a module, function, statement or expression as script; importing this
  package registers it, so ``mod.script()``, ``func.script()`` and ``str(node)`` use it.

Printing and parsing round-trip: ``from_source(mod.script())`` is structurally equal to ``mod``.
"""

from kiln.ir.node import register_printer
from kiln.script import ir, relax, tir
from kiln.script.parser import from_source
from kiln.script.printer import script

register_printer(script)
parse = from_source

ir_module = ir.ir_module

__all__ = ["from_source", "ir", "ir_module", "parse", "relax", "script", "tir"]
