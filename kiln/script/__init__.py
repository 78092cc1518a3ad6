"""TVMScript for kiln: ``from kiln.script import ir as I, relax as R, tir as T``.

- `ir` / `tir` / `relax`: the ``I``, ``T`` and ``R`` namespaces (``@I.ir_module``,
  ``@T.prim_func``, ``@R.function``...).
- `from_source(text)`: parse script text into an `IRModule` or `PrimFunc`.
- `script(node)`: print a module, function, statement or expression as script; importing this
  package registers it, so ``mod.script()``, ``func.script()`` and ``str(node)`` use it.
- `save_metadata` / `load_metadata`: the metadata section (large constants, printed as
  ``metadata["relax.Constant"][i]``) in an ``.npz`` beside a script file (`metadata`).

Printing and parsing round-trip: ``from_source(mod.script(metadata=d), metadata=d)`` is
structurally equal to ``mod`` (without large constants, ``from_source(mod.script())`` is).
"""

from kiln.ir.node import register_printer
from kiln.script import ir, relax, tir
from kiln.script.metadata import load_metadata, save_metadata
from kiln.script.parser import from_source
from kiln.script.parser.entry import register_namespaces
from kiln.script.printer import script

register_printer(script)
register_namespaces(T=tir, I=ir, R=relax)
parse = from_source

ir_module = ir.ir_module

__all__ = [
    "from_source",
    "ir",
    "ir_module",
    "load_metadata",
    "parse",
    "relax",
    "save_metadata",
    "script",
    "tir",
]
