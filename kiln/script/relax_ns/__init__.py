"""The implementation of the R namespace (`kiln.script.relax` re-exports it)."""
