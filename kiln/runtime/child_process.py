"""Run the C compiler so that it never outlives kiln.

`run_tool(cmd)` runs ``cmd`` to completion and returns what it printed, like
``subprocess.run(cmd, capture_output=True, text=True)``, with two guarantees about the process
group the tool starts (a compiler driver and its children: ``cc1``, ``as``, ``collect2``/``ld``):

- an exception in the caller while the tool runs (``KeyboardInterrupt`` included) kills the
  whole group before the exception goes on;
- when kiln's process dies, even by SIGKILL, a watchdog kills every group still running.

`ToolGroup` scopes this to a job run by several threads (`kiln.runtime.parallel_build`):
tools run inside ``with group.owning():`` belong to it, and ``group.cancel()`` kills those
running and refuses to start more, so a failed or interrupted build stops all its compilers.

The watchdog is one small Python process per kiln process, started at the first `run_tool`.
It reads ``+<pgid>`` / ``-<pgid>`` lines from a pipe whose only writer is kiln; when the pipe
reads end of file, kiln is gone, and it SIGKILLs the groups it was told about.

NOTE: PR_SET_PDEATHSIG on the compiler (a ``preexec_fn`` running ``prctl``) is not enough: the
signal reaches the driver only, and ``cc1`` / ``as`` / ``ld``, orphaned, run on to the end. A
``preexec_fn`` is also unsafe in a process with threads (`kiln.runtime.parallel_build` runs
compilers from a thread pool); ``start_new_session`` is done by the interpreter's own fork code.
The watchdog also works on every POSIX system, not only Linux. A process forked (not spawned)
from kiln shares kiln's end of the pipe, so its watchdog fires only once both have exited; a
forked child that runs a tool starts a watchdog of its own.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import IO

from kiln.errors import ToolchainError

_WATCHDOG = """
import os, signal, sys
signal.signal(signal.SIGINT, signal.SIG_IGN)
groups = set()
for line in sys.stdin:
    sign, group = line[:1], int(line[1:])
    (groups.add if sign == "+" else groups.discard)(group)
for group in groups:
    try:
        os.killpg(group, signal.SIGKILL)
    except OSError:
        pass
"""

_lock = threading.Lock()
_watchdog: tuple[int, subprocess.Popen[str] | None] | None = None
"""(the pid of the kiln process that started it, the watchdog; None where it cannot start)."""


def _pipe() -> IO[str] | None:
    """The pipe to this process's watchdog, started on first use; None when none can run."""
    global _watchdog
    if _watchdog is None or _watchdog[0] != os.getpid():
        try:
            proc = subprocess.Popen(
                [sys.executable, "-S", "-E", "-c", _WATCHDOG],
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                text=True,
                start_new_session=True,  # NOTE: a Ctrl-C at the terminal must not reach it
            )
            _watchdog = (os.getpid(), proc)
        except OSError:
            _watchdog = (os.getpid(), None)
    return None if _watchdog[1] is None else _watchdog[1].stdin


class ToolGroup:
    """The tools run for one job (see the module docstring)."""

    __slots__ = ("cancelled",)

    def __init__(self) -> None:
        self.cancelled = False

    @contextmanager
    def owning(self) -> Iterator[None]:
        """Tools this thread runs inside the block belong to this group."""
        old = getattr(_owner, "group", None)
        _owner.group = self
        try:
            yield
        finally:
            _owner.group = old

    def cancel(self) -> None:
        """Kill the group's running tools; its later `run_tool` calls raise `ToolchainError`."""
        with _lock:
            self.cancelled = True
            pids = [pid for pid, group in _running.items() if group is self]
        for pid in pids:
            _killpg(pid)


_owner = threading.local()
_running: dict[int, ToolGroup | None] = {}
"""pid (and process group) of each tool running now -> the group it belongs to."""


def _killpg(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except OSError:  # NOTE: the group is gone already
        pass


def _tell(line: str) -> None:
    with _lock:
        pipe = _pipe()
        if pipe is None:
            return
        try:
            pipe.write(line + "\n")
            pipe.flush()
        except OSError:  # the watchdog died: carry on without one
            global _watchdog
            _watchdog = (os.getpid(), None)


def run_tool(cmd: Sequence[str]) -> subprocess.CompletedProcess[str]:
    """Run ``cmd`` in a process group of its own and wait for it (see the module docstring).
    Raises OSError when it cannot start, `ToolchainError` when its `ToolGroup` was cancelled."""
    group: ToolGroup | None = getattr(_owner, "group", None)
    if group is not None and group.cancelled:
        raise ToolchainError(list(cmd), "not started: the build it belongs to was stopped")
    proc = subprocess.Popen(
        list(cmd), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True,
    )  # fmt: skip
    _tell(f"+{proc.pid}")
    with _lock:
        _running[proc.pid] = group
        if group is not None and group.cancelled:  # NOTE: cancelled while it started
            _killpg(proc.pid)
    try:
        out, err = proc.communicate()
    except BaseException:
        _killpg(proc.pid)
        proc.wait()
        raise
    finally:
        with _lock:
            _running.pop(proc.pid, None)
        _tell(f"-{proc.pid}")
    return subprocess.CompletedProcess(list(cmd), proc.returncode, out, err)
