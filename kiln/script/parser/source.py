"""Script source: the parsed file a function or class comes from, and spans of its AST nodes.

The whole file is parsed (and cached by name and text), so AST line and column numbers are the
file's own: spans point at the user's real code whatever the indentation of the definition.
"""

from __future__ import annotations

import ast
import functools
import inspect
import linecache
import sys
from dataclasses import dataclass, field
from typing import Any

from kiln.errors import ScriptError
from kiln.ir.span import Span


@dataclass(eq=False)
class Source:
    """A script's text and AST; `span` turns an AST node into a `Span`."""

    name: str
    lines: list[str]
    tree: ast.Module
    _texts: dict[int, str] = field(default_factory=dict)

    def span(self, node: ast.AST) -> Span:
        line = getattr(node, "lineno", 1)
        text = self.line_text(line)
        col = _char_col(text, getattr(node, "col_offset", 0)) + 1
        end_line = getattr(node, "end_lineno", None) or line
        end_off = getattr(node, "end_col_offset", None)
        if end_off is None:
            end_col = col + 1
        elif end_line == line:
            end_col = _char_col(text, end_off) + 1
        else:
            end_col = end_off + 1
        return Span(self.name, line, col, end_line, end_col, text)

    def line_text(self, line: int) -> str:
        """Line ``line`` (1-based) without its newline."""
        cache = self._texts
        text = cache.get(line)
        if text is None:
            text = self.lines[line - 1].rstrip("\r\n") if 0 < line <= len(self.lines) else ""
            cache[line] = text
        return text

    def error(self, node: ast.AST, reason: str) -> ScriptError:
        """A `ScriptError` at ``node`` (to be raised by the caller)."""
        return ScriptError(self.span(node), reason)


def _char_col(text: str, byte_offset: int) -> int:
    """The character column of a UTF-8 byte offset within ``text``."""
    if text.isascii():
        return byte_offset
    return len(text.encode("utf-8")[:byte_offset].decode("utf-8", errors="ignore"))


@functools.lru_cache(maxsize=64)
def _parse_cached(name: str, text: str) -> Source:
    return Source(name, text.splitlines(keepends=True), ast.parse(text, filename=name))


def source_from_text(text: str, name: str = "<script>") -> Source:
    """Parse script text (Python syntax errors become `ScriptError`s)."""
    try:
        return _parse_cached(name, text)
    except SyntaxError as e:
        lines = text.splitlines()
        line = e.lineno or 1
        shown = lines[line - 1] if 0 < line <= len(lines) else ""
        span = Span(name, line, e.offset or 1, line, (e.offset or 1) + 1, shown)
        hint = ""
        if "nested parentheses" in e.msg:
            hint = " (Python allows 200 levels; bind parts of the expression to variables)"
        raise ScriptError(span, f"invalid Python syntax: {e.msg}{hint}") from None
    except RecursionError:
        raise ScriptError(
            None,
            f"{name}: an expression is nested too deeply for Python's parser, which stops at "
            f"about {3 * sys.getrecursionlimit()} levels (three times the recursion limit); "
            "bind parts of it to variables first",
        ) from None


def source_of_file(filename: str, module_globals: dict[str, Any] | None = None) -> Source:
    """The parsed source file ``filename`` (as Python's tracebacks find it)."""
    lines = linecache.getlines(filename, module_globals)
    if not lines:
        raise ScriptError(
            None, f"cannot find the source code in {filename!r}; use kiln.script.from_source(text)"
        )
    return source_from_text("".join(lines), filename)


def first_line(node: ast.FunctionDef | ast.ClassDef) -> int:
    """The line a definition starts on (its first decorator, as ``co_firstlineno`` counts)."""
    return min([node.lineno] + [d.lineno for d in node.decorator_list])


def find_function(src: Source, name: str, lineno: int) -> ast.FunctionDef:
    """The ``def name`` starting at ``lineno``."""
    for node in ast.walk(src.tree):
        if isinstance(node, ast.FunctionDef) and node.name == name and first_line(node) == lineno:
            return node
    raise ScriptError(None, f"cannot find the definition of {name!r} in {src.name}:{lineno}")


def find_class(src: Source, cls: type, inner_lines: list[int]) -> ast.ClassDef:
    """The ``class`` statement defining ``cls`` (holding the functions at ``inner_lines``)."""
    candidates = [
        n for n in ast.walk(src.tree) if isinstance(n, ast.ClassDef) and n.name == cls.__name__
    ]
    for node in candidates:
        if inner_lines and all(node.lineno <= ln <= (node.end_lineno or 0) for ln in inner_lines):
            return node
    if not inner_lines:
        try:
            line = inspect.findsource(cls)[1] + 1
        except (OSError, TypeError):
            line = 0
        for node in candidates:
            if node.lineno == line or first_line(node) == line:
                return node
    raise ScriptError(None, f"cannot find the definition of class {cls.__name__!r} in {src.name}")
