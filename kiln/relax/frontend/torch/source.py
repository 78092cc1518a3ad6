"""Where an FX node came from in the user's code, and the one error that lists every ATen
operator of a program kiln cannot convert.

torch records each node's Python stack in ``node.meta["stack_trace"]`` (the format of
``traceback.format_list``); the user's line is the innermost frame outside torch's own package.
"""

from __future__ import annotations

import os
import re
from typing import Any

from kiln.errors import FrontendError

_FRAME = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+)')
SHOWN_PER_OP = 6
"""Uses listed per operator; the rest are counted."""


def _torch_root() -> str:
    import torch

    return os.path.dirname(os.path.abspath(torch.__file__)) + os.sep


def user_line(node: Any) -> str | None:
    """``file:line`` of the innermost frame of ``node``'s stack outside torch, or None when
    torch recorded no stack. The file is shown relative to the working directory when it lies
    below it."""
    trace = node.meta.get("stack_trace") or ""
    root = _torch_root()
    frames = [m for m in _FRAME.finditer(trace) if not os.path.abspath(m["file"]).startswith(root)]
    if not frames:
        return None
    path = os.path.abspath(frames[-1]["file"])
    here = os.getcwd() + os.sep
    shown = path[len(here) :] if path.startswith(here) else path
    return f"{shown}:{frames[-1]['line']}"


def unsupported_error(where: str, uses: list[tuple[str, Any]]) -> FrontendError:
    """One `FrontendError` naming every unsupported operator of the program (sorted), each
    use with its source line and node, and why where the operator is not applicable
    (`kiln.relax.frontend.torch.coverage.NOT_APPLICABLE`)."""
    from kiln.relax.frontend.torch.coverage import NOT_APPLICABLE, UNSUPPORTED

    by_op: dict[str, list[Any]] = {}
    for key, node in uses:
        by_op.setdefault(key, []).append(node)
    lines = []
    for key in sorted(by_op):
        nodes = by_op[key]
        why = NOT_APPLICABLE.get(key) or UNSUPPORTED.get(key)
        for node in nodes[:SHOWN_PER_OP]:
            at = user_line(node) or "an unknown line"
            lines.append(f"  {key} at {at} (node {node.name!r})" + (f": {why}" if why else ""))
        if len(nodes) > SHOWN_PER_OP:
            lines.append(f"  ... and {len(nodes) - SHOWN_PER_OP} more use(s) of {key}")
    head = f"{where}: {len(by_op)} ATen operator(s) kiln does not support"
    return FrontendError(f"{head} (nothing was compiled):\n" + "\n".join(lines))
