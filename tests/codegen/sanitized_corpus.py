"""Build and run every kernel of the golden-C corpus once on random inputs (for `TARGET`).

``python -m tests.codegen.sanitized_corpus`` is what `test_sanitizers` runs in a child process
whose ``KILN_CC`` adds AddressSanitizer + UBSan flags and whose ``LD_PRELOAD`` loads the ASan
runtime (Python itself is not instrumented). Each kernel's exposed functions are called with
compact random arrays of their declared shapes (symbolic dimensions are 5, integer scalars 1,
float scalars 0.5); a sanitizer report aborts the process. Prints ``ran <name>`` per kernel.

``--control`` instead runs one kernel that reads past the end of its input (a ``take`` in the
unchecked ``mode="fast"`` with an index beyond the tensor): under the sanitizers it must be
reported, which shows that the instrumentation is live.
"""

from __future__ import annotations

import os
import sys
from typing import Any

import numpy as np

import kiln
from kiln import te, tir, topi
from kiln.codegen.build import compile_source, generate
from kiln.driver import lower
from kiln.tir.attrs import PACKED_API
from kiln.tir.packed_api import PackedAPI
from tests.codegen.golden_corpus import TARGET, kernels

DIM = 5


def _value(e: Any, env: dict[tir.Var, int]) -> int:
    if isinstance(e, tir.IntImm):
        return int(e.value)
    if isinstance(e, tir.Var):
        return env.setdefault(e, DIM)
    raise AssertionError(f"shape expression {e!r} is not a constant or a variable")


def arguments(api: PackedAPI, rng: np.random.Generator) -> list[Any]:
    """Random inputs (zeros for outputs) matching ``api``'s declared arguments."""
    env: dict[tir.Var, int] = {}
    args: list[Any] = []
    for i, a in enumerate(api.args):
        dt = a.buffer.dtype if a.buffer is not None else a.param.dtype
        if a.buffer is None:
            args.append(1 if dt.is_integer else 0.5)
            continue
        shape = tuple(_value(d, env) for d in a.buffer.shape)
        if i in api.writes:
            args.append(np.zeros(shape, str(dt)))
        elif dt.is_float:
            args.append(rng.standard_normal(shape).astype(str(dt)))
        else:
            args.append(rng.integers(0, 4, shape).astype(str(dt)))
    return args


def control() -> None:
    """A read one element past the end of a 4096-float input."""
    x = te.placeholder((4096,), name="x")
    idx = te.placeholder((1,), "int32", name="idx")
    out = topi.take(x, idx, mode="fast")
    fn = kiln.build_op([out], [x, idx, out])
    fn(np.ones(4096, "float32"), np.array([4096], "int32"), np.zeros(1, "float32"))


def main() -> int:
    # NOTE: the ASan runtime is already loaded in this process; the compilers kiln starts need
    # none (preloaded, it slows every gcc, as and ld run: a third of the CPU time).
    os.environ.pop("LD_PRELOAD", None)
    if sys.argv[1:] == ["--control"]:
        control()
        return 0
    rng = np.random.default_rng(0)
    for name, make in kernels().items():
        mod = lower(make(), TARGET)
        built = compile_source(generate(mod, TARGET), TARGET, name_hint=name)
        for f in mod.functions.values():
            api = f.get_attr(PACKED_API)
            if isinstance(api, PackedAPI):
                built[api.symbol](*arguments(api, rng))
        print(f"ran {name}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
