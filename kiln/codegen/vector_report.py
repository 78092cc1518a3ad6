"""Which generated loops kiln asked to vectorize, and which of them the C compiler did not.

The C emitter tags the first and last line of every loop it prints with an invisible mark
(`loop_marks`); `strip_loop_marks` removes the marks from the finished translation unit and
returns, per loop, its function, loop variable, line range and whether kiln asked to vectorize
it. With ``KILN_DEBUG=1`` the
toolchain asks GCC for ``-fopt-info-vec-loop-optimized-missed`` and keeps its messages
(`kiln.runtime.toolchain.compiler_output`); `missed_loops` turns them into one line per loop GCC
reports it "couldn't vectorize" and neither vectorized nor replaced by a library call
(``memset``), with the reasons GCC gives on that loop's lines, e.g.

    main_1: loop 'i1_inner' (line 41) was not vectorized: not vectorized: control flow in loop;
    statement clobbers memory: _20 = sqrtf (_10)
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import PurePath

_MARK = re.compile("\x00(\\d+):([ab])\x00")
_NOTE = re.compile(
    r"^(?P<file>.+?):(?P<line>\d+):(?P<col>\d+): (?P<kind>missed|optimized): (?P<msg>.*)$"
)
_GIVE_UP = "couldn't vectorize loop"
_DONE = re.compile(r"loop vectorized|split to 0 loops")
MAX_REASONS = 2


@dataclass(frozen=True)
class VectorLoop:
    """A loop kiln asked to vectorize: where it is in the generated C."""

    function: str
    loop_var: str
    first: int
    """Line of the ``for`` head (1-based)."""
    last: int
    """Line of the closing brace."""
    vectorize: bool = True
    """Whether kiln asked for this loop to be vectorized (others are kept to place notes)."""


def loop_marks(index: int) -> tuple[str, str]:
    """The marks to append to the head line and the closing line of loop number ``index``."""
    return f"\x00{index}:a\x00", f"\x00{index}:b\x00"


def strip_loop_marks(text: str, loops: list[tuple[str, str, bool]]) -> tuple[str, list[VectorLoop]]:
    """``text`` without marks, and the `VectorLoop` of every marked (function, loop var,
    vectorize) entry of ``loops``, by index."""
    if "\x00" not in text:
        return text, []
    lines = text.split("\n")
    where: dict[int, dict[str, int]] = {}
    for n, line in enumerate(lines, start=1):
        if "\x00" in line:
            for m in _MARK.finditer(line):
                where.setdefault(int(m.group(1)), {})[m.group(2)] = n
            lines[n - 1] = _MARK.sub("", line)
    found = [
        VectorLoop(
            loops[k][0], loops[k][1], lines_of["a"], lines_of.get("b", lines_of["a"]), loops[k][2]
        )
        for k, lines_of in sorted(where.items())
        if "a" in lines_of
    ]
    return "\n".join(lines), found


def missed_loops(log: str, source_name: str, loops: list[VectorLoop]) -> list[str]:
    """One message per loop of ``loops`` that the compiler's notes ``log`` (about the file named
    ``source_name``) say it could not vectorize."""
    notes: dict[VectorLoop, list[str]] = {}
    done: set[VectorLoop] = set()
    for raw in log.splitlines():
        m = _NOTE.match(raw.strip())
        if m is None or PurePath(m.group("file")).name != source_name:
            continue
        loop = _innermost(loops, int(m.group("line")))
        if loop is None or not loop.vectorize:
            continue
        if m.group("kind") == "optimized":
            if _DONE.search(m.group("msg")):
                done.add(loop)
            continue
        notes.setdefault(loop, []).append(m.group("msg").strip().rstrip(";."))
    out = []
    for loop, msgs in notes.items():
        if _GIVE_UP not in msgs or loop in done:
            continue
        unique = list(dict.fromkeys(r for r in msgs if r != _GIVE_UP))[:MAX_REASONS]
        why = "; ".join(unique) or "no reason given"
        out.append(
            f"{loop.function}: loop {loop.loop_var!r} (line {loop.first}) was not vectorized: {why}"
        )
    return out


def _innermost(loops: list[VectorLoop], line: int) -> VectorLoop | None:
    """The loop with the fewest lines that contains ``line``."""
    inside = [x for x in loops if x.first <= line <= x.last]
    return min(inside, key=lambda x: x.last - x.first) if inside else None
