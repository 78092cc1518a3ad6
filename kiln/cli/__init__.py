"""The command line: ``kiln compile | run | bench | profile`` (see `kiln.cli.main`)."""

from kiln.cli.main import main, parser, run

__all__ = ["main", "parser", "run"]
