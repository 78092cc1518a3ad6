"""Deep IR without `RecursionError`: recursive walks continue on a fresh thread's stack.

kiln's walkers (visitors, mutators, the printer, the emitters, the simplifier, structural
equality) recurse once per nesting level of the IR. Python stops a thread at its recursion limit
(1000 frames by default), which a walk of a few hundred nested nodes reaches. Rather than rewrite
every walker as a loop, a walker counts its own nesting and, every `PROBE_EVERY` levels, checks
how deep the thread's stack really is; past `SEGMENT_FRAMES` frames it continues the walk on a
new thread (a fresh stack with its own recursion count) and waits for it. The walk is the same
code in the same order, so results, exceptions and their tracebacks are unchanged; the cost is a
counter per call, and one thread start per segment where the IR really is deep.

Invariants: at most one thread of a walk runs at a time (each waits for the one it started), so
walkers need no locking. A walk nested deeper than `MAX_NESTING` levels raises `IRValueError`
naming the limit instead of starting more threads (each holds a stack).
"""

from __future__ import annotations

import functools
import sys
import threading
from typing import Any, Callable, TypeVar

from kiln.errors import IRValueError

PROBE_EVERY = 16
"""A walker checks the real stack depth once per this many levels of its own nesting."""
PROBE_MASK = PROBE_EVERY - 1  # PROBE_EVERY is a power of two
SEGMENT_FRAMES = 400
"""A walk moves to a fresh stack once the thread's stack holds this many frames (or half the
recursion limit, if that is lower)."""
MAX_NESTING = 50_000
"""The deepest nesting one walk follows; deeper IR is refused with `IRValueError`."""

F = TypeVar("F", bound=Callable[..., Any])


def stack_is_deep() -> bool:
    """True when this thread's Python stack holds more than `SEGMENT_FRAMES` frames."""
    try:
        sys._getframe(min(SEGMENT_FRAMES, sys.getrecursionlimit() // 2))
    except ValueError:
        return False
    return True


def on_fresh_stack(fn: Callable[..., Any], *args: Any) -> Any:
    """``fn(*args)`` run on a new thread (a fresh stack); its result or exception comes back."""
    outcome: list[Any] = []

    def run() -> None:
        try:
            outcome.append((True, fn(*args)))
        except BaseException as e:  # handed to the waiting thread, which raises it
            outcome.append((False, e))

    worker = threading.Thread(target=run, name="kiln-deep-walk", daemon=True)
    try:
        worker.start()
    except RuntimeError as e:  # the system refused another thread
        raise IRValueError(f"the IR is nested too deeply to walk: {e}") from None
    worker.join()
    ok, value = outcome[0]
    if ok:
        return value
    raise value


def too_deep(depth: int) -> IRValueError:
    """The error for a walk nested deeper than `MAX_NESTING`."""
    return IRValueError(
        f"the IR is nested {depth} levels deep; kiln follows at most {MAX_NESTING} "
        "(kiln.ir.deep.MAX_NESTING): bind parts of the expression to variables (let) "
        "to make it shallower"
    )


def descend(walker: Any, fn: Callable[[Any], Any], node: Any) -> Any:
    """``fn(node)`` one nesting level below ``walker``'s current one (counted in its
    ``_walk_depth``); on a fresh stack when the current one is deep."""
    depth = walker._walk_depth
    if depth & PROBE_MASK == PROBE_MASK:
        return probed(walker, fn, depth, (node,))
    walker._walk_depth = depth + 1
    try:
        return fn(node)
    finally:
        walker._walk_depth = depth


def probed(walker: Any, fn: Callable[..., Any], depth: int, args: tuple[Any, ...]) -> Any:
    """The nesting level of ``fn(*args)`` where the real stack depth is checked (one level in
    `PROBE_EVERY`): past `MAX_NESTING` an error, on a deep stack a fresh one, else here."""
    if depth >= MAX_NESTING:
        raise too_deep(depth)
    if stack_is_deep():
        return on_fresh_stack(_level, walker, fn, depth, args)
    return _level(walker, fn, depth, args)


def _level(walker: Any, fn: Callable[..., Any], depth: int, args: tuple[Any, ...]) -> Any:
    walker._walk_depth = depth + 1
    try:
        return fn(*args)
    finally:
        walker._walk_depth = depth


def stack_safe(method: F) -> F:
    """Decorator for the recursive method of a walker class (one call per nesting level): the
    walk survives any nesting up to `MAX_NESTING` (see module docstring). The class needs a
    writable ``_walk_depth`` attribute (`DeepWalker` provides one)."""

    @functools.wraps(method)
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        depth = self._walk_depth
        if depth & PROBE_MASK == PROBE_MASK:
            return probed(self, functools.partial(method, self, *args, **kwargs), depth, ())
        self._walk_depth = depth + 1
        try:
            return method(self, *args, **kwargs)
        finally:
            self._walk_depth = depth

    return wrapper  # type: ignore[return-value]


class DeepWalker:
    """Base for walker classes using `stack_safe`: the nesting counter starts at zero."""

    _walk_depth: int = 0
