"""The implementation of the T namespace (`kiln.script.tir` re-exports it)."""
