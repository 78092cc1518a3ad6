"""Source locations carried by IR nodes, so errors can point at the user's code."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Span:
    """A region of a source file: 1-based line and column (end exclusive) and the line's text."""

    source_name: str
    line: int
    column: int
    end_line: int = 0
    end_column: int = 0
    source_line: str = ""

    def __str__(self) -> str:
        return f"{self.source_name}:{self.line}:{self.column}"
