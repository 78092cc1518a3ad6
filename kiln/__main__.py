"""``python -m kiln``: the command line (`kiln.cli`)."""

from kiln.cli.main import run

run()
