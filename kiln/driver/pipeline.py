"""The default pass pipelines, each one visible list (nothing reorders passes behind it).

Graph level (`default_relax_pipeline`), from normalized relax functions to VM form:

1. `Normalize` — struct info everywhere, A-normal form (hand-built modules may lack either);
2. `LegalizeOps` — every operator call becomes a ``call_tir`` of a TE-computed PrimFunc
   (the marked spot where FuseOps + LowerTE go: fused primitive functions lowered to scheduled
   kernels, external codegen, shape functions);
3. `LambdaLift` — local functions become module functions, capturing ones closures;
4. `ToNonDataflow` — dataflow blocks become ordinary blocks;
5. `CallTIRRewrite` — destination-passing calls get explicit output allocations;
6. `StaticPlanBlockMemory` — intermediates become views of storage shared by liveness;
7. `VMBuiltinLower` — allocations and the remaining builtins become ``vm.builtin.*`` calls;
8. `VMShapeLower` — a shape heap per function: inputs checked, symbolic dims read from them,
   compound dims computed by shape functions, shapes made from the heap;
9. `AttachGlobalSymbol` — every PrimFunc exported, so the VM finds it in the library.

After it `kiln.vm.vm_codegen` writes bytecode or ``__vmtir__`` PrimFuncs, and the kernels and
``__vmtir__`` functions together go through the TIR pipeline below (`kiln.relax.build`).

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


def default_relax_pipeline(target: Target) -> list[Pass]:
    """The graph-level passes `kiln.relax.build` runs for ``target``, in order (VM form)."""
    # NOTE: imported here so that `kiln.build` (TIR only) does not load the graph level.
    from kiln.relax import transform as relax_transform

    del target  # nothing target-specific yet; FuseOps/LowerTE will schedule per target
    return [
        relax_transform.Normalize(),
        # ---- operators to kernels --------------------------------------------------------
        # NOTE(lowerte): FuseOps + LowerTE go here, replacing LegalizeOps (which then only
        # legalizes what LowerTE leaves).
        relax_transform.LegalizeOps(),
        # ---- VM lowering -----------------------------------------------------------------
        relax_transform.LambdaLift(),
        relax_transform.ToNonDataflow(),
        relax_transform.CallTIRRewrite(),
        relax_transform.StaticPlanBlockMemory(),
        relax_transform.VMBuiltinLower(),
        relax_transform.VMShapeLower(),
        relax_transform.AttachGlobalSymbol(),
    ]
