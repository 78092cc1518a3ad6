"""The public entry points' error boundary: user mistakes surface without kiln's stack frames.

A `ScriptError` raised anywhere inside the parser is re-raised from a thin wrapper with its
traceback cleared, so the traceback a user sees ends at their own decorator line. NOTE: the
wrapper is compiled under the pseudo file name ``<kiln.script>`` so that even its one frame names
no file inside kiln (as Triton's compile-error tests demand of Triton).
"""

from __future__ import annotations

import functools
from typing import Any, Callable, TypeVar

from kiln.errors import ScriptError

F = TypeVar("F", bound=Callable[..., Any])

_TEMPLATE = """
def {name}(*args, **kwargs):
    try:
        return _impl(*args, **kwargs)
    except _ScriptError as err:
        raise err.with_traceback(None)
"""

PSEUDO_FILE = "<kiln.script>"


def entry_point(impl: F) -> F:
    """``impl`` wrapped so that the `ScriptError`s it raises carry no kiln frames."""
    namespace: dict[str, Any] = {"_impl": impl, "_ScriptError": ScriptError}
    code = compile(_TEMPLATE.format(name=impl.__name__), PSEUDO_FILE, "exec")
    exec(code, namespace)  # noqa: S102 - a fixed template, see the module docstring
    wrapper = namespace[impl.__name__]
    functools.update_wrapper(wrapper, impl)
    return wrapper  # type: ignore[return-value]
