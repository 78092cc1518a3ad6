"""The small set of exception types kiln raises.

- `KilnError`: base of everything kiln raises on purpose.
- `IRError`: IR built from the wrong kind of piece (a Python float where an expression is
  required, a string where a shape is): a `TypeError`. Raised by constructors' conversion helpers.
- `IRValueError`: IR built from pieces of the right kind with a wrong value (a constant that does
  not fit its dtype, a tensor listed twice, a schedule step on an axis that no longer exists): a
  `ValueError`.
- `ScriptError`: the user's script is wrong; carries a span and prints file:line:col with a caret.
- `VerifyError`: a module broke an IR invariant (a compiler bug, or hand-built IR that is wrong).
- `PassError`: a pass cannot transform what it was given; names the pass and the node (with its
  source location when the node has one).
- `CodegenError`: the lowered IR cannot be written as code for its target.
- `ToolchainError`: the C compiler / NVRTC failed or is missing.
- `FunctionNotFoundError`: a built module has no exposed function of that name.
- `FrontendError`: a model (ONNX, torch) the frontends cannot import or run as given: names the
  file, node or input and what was expected.
- `KernelIndexError`: a kernel met an index outside its tensor's axis at run time (a gather's
  index input): names the kernel, the operator, the index and the valid range. An `IndexError`.
"""

from __future__ import annotations


class KilnError(Exception):
    """Base class of every error kiln raises on purpose."""


class IRError(KilnError, TypeError):
    """IR constructed from the wrong kind of value; the message says what was expected."""


class IRValueError(KilnError, ValueError):
    """IR constructed from a value of the right kind that is wrong; the message says why."""


class VerifyError(KilnError):
    """A module or function violates an IR invariant; the message names the offending node."""


class ScriptError(KilnError, SyntaxError):
    """A mistake in user script, reported at its source location with the line and a caret."""

    def __init__(self, span: object, reason: str) -> None:
        self.span = span
        self.reason = reason
        super().__init__(self._render())

    def _render(self) -> str:
        span = self.span
        if span is None:
            return self.reason
        fname = getattr(span, "source_name", "<script>")
        line, col = getattr(span, "line", 0), getattr(span, "column", 0)
        text = getattr(span, "source_line", "") or ""
        head = f"{fname}:{line}:{col}: error: {self.reason}"
        if not text:
            return head
        end_col = getattr(span, "end_column", col + 1) or col + 1
        width = max(1, end_col - col) if getattr(span, "end_line", line) == line else 1
        text, start, width = _window(text, max(0, col - 1), width)
        caret = " " * start + "^" * width
        return f"{head}\n    {text}\n    {caret}"

    def __str__(self) -> str:
        return self._render()


SHOWN_LINE = 120
"""Widest source line a `ScriptError` shows; a longer one is cut around the error, with ``...``."""


def _window(text: str, start: int, width: int) -> tuple[str, int, int]:
    """``text`` cut to at most `SHOWN_LINE` characters around ``[start, start + width)``; returns
    the shown text and the caret's start and width within it."""
    if len(text) <= SHOWN_LINE:
        return text, start, width
    width = min(width, SHOWN_LINE // 2)
    lo = max(0, start - (SHOWN_LINE - width) // 2)
    hi = min(len(text), lo + SHOWN_LINE)
    lo = max(0, hi - SHOWN_LINE)
    head, tail = ("..." if lo > 0 else ""), ("..." if hi < len(text) else "")
    return head + text[lo:hi] + tail, len(head) + start - lo, width


class PassError(KilnError):
    """A pass met IR it cannot handle; the message names the pass, the node and where it is."""

    def __init__(self, pass_name: str, message: str, node: object = None) -> None:
        self.pass_name = pass_name
        self.node = node
        span = getattr(node, "span", None)
        where = f" (at {span})" if span is not None else ""
        super().__init__(f"{pass_name}: {message}{where}")


class CodegenError(KilnError):
    """The lowered IR cannot be turned into code for its target; the message says what to change."""


class FunctionNotFoundError(KilnError, KeyError):
    """A function name that a built module does not expose; the message lists the exposed names."""

    def __str__(self) -> str:
        # NOTE: KeyError.__str__ shows repr(arg); show the message as written.
        return str(self.args[0]) if self.args else ""


class ToolchainError(KilnError):
    """An external compiler failed or is missing: keeps the command, its stderr and the source."""

    def __init__(self, cmd: list[str] | str, stderr: str, src_path: str | None = None) -> None:
        self.cmd = cmd
        self.stderr = stderr
        self.src_path = src_path
        shown = cmd if isinstance(cmd, str) else " ".join(cmd)
        msg = f"compiler failed: {shown}\n{stderr.strip()}"
        if src_path:
            msg += f"\n(source kept at {src_path})"
        super().__init__(msg)


class KernelIndexError(KilnError, IndexError):
    """An index read at run time (a gather's or take's index input) is outside the axis it
    indexes; raised from generated C (registered with tvm-ffi by `kiln.runtime`)."""


class FrontendError(KilnError, ValueError):
    """A model a frontend cannot import, or inputs that do not fit it; the message names the
    model's node or input and what was expected."""


class InputNeededAtCompileTimeError(FrontendError):
    """A model input decides a shape (a Reshape target, Slice bounds...): the model compiles only
    once its value is known (``inputs`` names them); `from_onnx(bind_inputs=...)` gives them."""

    def __init__(self, message: str, inputs: tuple[str, ...]) -> None:
        super().__init__(message)
        self.inputs = inputs
