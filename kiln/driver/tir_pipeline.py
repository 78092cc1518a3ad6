"""The TIR list of the default pipelines: `default_tir_pipeline`, the passes `kiln.build` runs.

Each step is described, in order, in `kiln.driver.pipeline` (which re-exports this list next to
the graph-level one). It lives apart because `kiln.driver.build` runs it, and the graph-level
list in `kiln.driver.pipeline` builds host kernels with `kiln.driver.build`.
"""

from __future__ import annotations

from kiln.ir.target import Target
from kiln.ir.transform import Pass
from kiln.tir.transform import (
    AnnotateDeviceRegions,
    BindTarget,
    FlattenBuffer,
    LegalizeStorage,
    LoopPartition,
    LowerDeviceKernelLaunch,
    LowerIntrin,
    MakePackedAPI,
    MergeSharedMemoryAllocations,
    OutlineParallelLoops,
    Simplify,
    SplitHostDevice,
    ThreadSync,
    VectorizeLoop,
)


def default_tir_pipeline(target: Target) -> list[Pass]:
    """The TIR passes `kiln.build` runs for ``target``, in order."""
    device = not target.is_host_kind
    return [
        *([BindTarget(target)] if device else []),
        FlattenBuffer(),
        *(
            [
                ThreadSync("shared"),
                MergeSharedMemoryAllocations(),
                AnnotateDeviceRegions(),
                SplitHostDevice(),
                LowerDeviceKernelLaunch(),
            ]
            if device
            else []
        ),
        MakePackedAPI(),
        LegalizeStorage(),
        LoopPartition(),
        Simplify(),
        VectorizeLoop(target),
        LowerIntrin(target),
        OutlineParallelLoops(),
    ]
