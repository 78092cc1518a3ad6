"""The torch frontend: `from_exported_program` (a ``torch.export.ExportedProgram`` to a relax
`IRModule`) and `from_module` (export, then import). torch is optional (``kiln[torch]``)."""

from kiln.relax.frontend.torch.exported_program import (
    export_module,
    from_exported_program,
    from_module,
)

__all__ = ["export_module", "from_exported_program", "from_module"]
