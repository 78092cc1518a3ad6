"""The default pass pipelines, each one visible list (nothing reorders passes behind it).

TIR, for a target with a device (``cuda``, host ``c``):

1. `BindTarget` — every function gets its target: host, device, or device with host attached;
2. `FlattenBuffer` — N-D buffer accesses become 1-D accesses of the same memory;
3. `ThreadSync("shared")` — block barriers between shared-memory writes and their readers
   (must precede the merge, which reuses bytes only across a barrier);
4. `MergeSharedMemoryAllocations` — one dynamic shared buffer per kernel region, reused by
   liveness (must precede the split: a kernel launch passes one dynamic shared size);
5. `AnnotateDeviceRegions` → 6. `SplitHostDevice` → 7. `LowerDeviceKernelLaunch` — thread scopes
   become kernels, host calls of kernels become launches (these three always run back to back);
8. `MakePackedAPI` — typed signatures, and the checked tvm-ffi entry plan of exposed functions;
9. `LegalizeStorage` — bfloat16 / float8 values are computed in float32 and rounded once on
   store, on every target without native arithmetic for them (all but bf16 on CUDA sm_80+);
10. `Simplify` — index arithmetic rewritten by `kiln.arith` under loop and thread bounds
    (``(f // 64) * 1024 + (f % 64) * 16 + i`` becomes ``f * 16 + i``), values kept exactly;
11. `VectorizeLoop(target)` — vectorized loops annotated ``pragma_explicit_vector`` become vector
    statements of the target's vector width (other vectorized loops stay loops: the C emitter
    prints them under ``#pragma omp simd``);
12. `LowerIntrin(target)` — math builtins become C calls (or, in vectorized CPU loops,
    vectorizable float32 arithmetic), floor division becomes C division;
13. `OutlineParallelLoops` — the body of a parallel loop of a ``tir.noalias`` host function
    becomes a private function with ``restrict`` pointers (GCC drops ``restrict`` from what an
    OpenMP region captures). After it the emitters only print.

For a host-only target (``c``) the device steps (1, 3-7) have nothing to do -- there are no
kernels -- and are left out, so its pipeline is 2 and 8-13.
"""

from __future__ import annotations

from kiln.ir.target import Target
from kiln.ir.transform import Pass
from kiln.tir.transform import (
    AnnotateDeviceRegions,
    BindTarget,
    FlattenBuffer,
    LegalizeStorage,
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
        Simplify(),
        VectorizeLoop(target),
        LowerIntrin(target),
        OutlineParallelLoops(),
    ]
