"""``kiln profile``: where a warm call of a model spends its time, per kernel.

The model is called ``--warmup`` times (and for at least 50 ms) before ``--repeat`` profiled
calls, so the table shows a warm call: each time is its median over the profiled calls, the
total the median call time (`kiln.runtime.profile`). Each kernel row gives the model nodes it
came from, its FLOPs and bytes, GFLOP/s, GB/s and its share of the FMA peak of the threads it
ran on and its share of its roofline bound (FLOPs at that peak or bytes at the memory
bandwidth on those threads, whichever takes longer), both measured once per machine
(`kiln.runtime.fma_peak`; ``--peak-gflops`` and ``--bandwidth`` override them). ``--json``
prints the same as JSON with the full kernel and node names (the table cuts long ones in the
middle).
"""

from __future__ import annotations

import argparse
import json

from kiln.cli.commands import _example_inputs, _model
from kiln.errors import KilnError


def cmd_profile(args: argparse.Namespace) -> int:
    for option, value, least in (("--repeat", args.repeat, 1), ("--warmup", args.warmup, 0)):
        if value < least:
            raise KilnError(f"{option} must be at least {least}, got {value}")
    for option, value in (("--peak-gflops", args.peak_gflops), ("--bandwidth", args.bandwidth)):
        if value is not None and value <= 0:
            raise KilnError(f"{option} must be a positive number, got {value:g}")
    model = _model(args)
    inputs = _example_inputs(model, args)
    report = model.profile(**inputs, repeat=args.repeat, warmup=args.warmup)
    peak = args.peak_gflops if args.peak_gflops is not None else report.peak_gflops
    bandwidth = args.bandwidth if args.bandwidth is not None else report.bandwidth_gbs
    report = report.with_bounds(peak, bandwidth).sorted_by(args.sort)
    print(json.dumps(report.to_json(), indent=2) if args.json else report)
    return 0


COMMANDS = {"profile": cmd_profile}
