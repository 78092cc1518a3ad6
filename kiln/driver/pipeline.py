"""The default pass pipelines, each one visible list (nothing reorders passes behind it).

Graph level (`default_relax_pipeline`), from normalized relax functions to VM form:

1. `Normalize` — struct info everywhere, A-normal form (hand-built modules may lack either);
   ---- weights and layouts ----
2. `FoldConstant(build)` — operator calls on constants only (weight-only subgraphs:
   ``permute_dims(w)``, ``reshape(bias)``) evaluated at compile time, in numpy where that is
   exact, else by their host kernel;
3. `SimplifyInference` — a constant-statistics ``batch_norm`` becomes ``x * s + t``;
4. `SimplifyIdentities` — calls that return their operand or undo each other go (``x * 1``,
   ``reshape(reshape(x))``, a ``permute_dims`` of a ``permute_dims``, ``astype`` to the same
   dtype), bit-exact. 3 and 4 are rewrite rules (`kiln.relax.pattern`);
5. `PartitionForCompiler(name)` per external codegen the caller asks for (``dnnl``) — what it
   supports becomes ``Compiler=<name>`` functions (left out when none is asked for);
6. `AlterOpLayout(target)` — for a CPU target, convolutions and their neighbours in the
   channel-blocked layouts of the CPU kernels (converted at the chain's boundary only), and
   constant matmul weights as packed column panels;
7. `FoldConstant(build)` again — the weight layouts of step 6 computed once, at compile time
   (the kernels then read packed constants; nothing repacks a weight per call);
8. `HoistDimsOnly` — values that depend only on symbolic dims (masks, position ids) move to
   a function the VM runs once per distinct dims (``vm.builtin.call_memoized``);
   ---- operators to kernels ----
9. `FuseAttention(target)` — for a CPU target, each ``softmax(q @ k^T * c + bias) @ v`` chain
   becomes one ``relax.nn.attention`` call;
10. `FuseOps` — operator calls of dataflow blocks grouped into ``Primitive`` functions
    (element-wise chains, an anchor with its epilogue, a reduction with its producers);
11. `LowerTE(module_name, target)` — each primitive becomes one kernel scheduled for
    ``target`` (equal ones shared), ``Compiler`` functions go to their codegen (C in the
    module's ``external_mods``, the function kept as ``Extern=1``), calls become
    ``call_lowered``, with a host shape function where the result shape is unknown;
12. `LegalizeOps` — what LowerTE leaves (operators outside dataflow blocks, unknown shapes)
    becomes ``call_tir`` of a TE-computed PrimFunc, one per operator;
    ---- VM lowering ----
13. `LambdaLift` — local functions become module functions, capturing ones closures;
14. `ToNonDataflow` — dataflow blocks become ordinary blocks;
15. `CallShapeFunctions` — a ``call_lowered`` of unknown result shape first calls its host
    shape function, whose results become fresh symbolic dims of its outputs;
16. `CallTIRRewrite` — destination-passing calls (``call_tir``, ``call_lowered``,
    ``call_dps_packed``) get explicit output allocations and become kernel calls;
17. `StaticPlanBlockMemory` — intermediates become views of storage shared by liveness;
18. `VMBuiltinLower` — allocations and the remaining builtins become ``vm.builtin.*`` calls;
19. `VMShapeLower` — a shape heap per function: inputs checked, symbolic dims read from them,
    compound dims computed by shape functions, shapes made from the heap;
20. `AttachGlobalSymbol` — every PrimFunc exported, so the VM finds it in the library.

``Extern=1`` functions are kernels of the library (their C comes from ``external_mods``): the
VM passes leave their bodies alone and calls reach their symbol. After the list
`kiln.vm.vm_codegen` writes bytecode or ``__vmtir__`` PrimFuncs, and the kernels, the
``__vmtir__`` functions and the external C together go through the TIR pipeline below and the
C compiler into one library (`kiln.relax.build`).

TIR, for a target with a device (``cuda``, host ``c``):

1. `BindTarget` — every function gets its target: host, device, or device with host attached;
2. `FlattenBuffer` — N-D buffer accesses become 1-D accesses of the same memory;
3. `ThreadSync("shared")` — block barriers between shared-memory writes and their readers
   (must precede the merge, which reuses bytes only across a barrier);
4. `MergeSharedMemoryAllocations` — one dynamic shared buffer per kernel region, reused by
   liveness (must precede the split: a kernel launch passes one dynamic shared size);
5. `AnnotateDeviceRegions` — each outermost thread scope of a host function marked as a
   device region;
6. `SplitHostDevice` — each marked region becomes a kernel;
7. `LowerDeviceKernelLaunch` — host calls of kernels become launches (5-7 always run back to
   back);
8. `MakePackedAPI` — typed signatures, and the checked tvm-ffi entry plan of exposed functions;
9. `LegalizeStorage` — bfloat16 / float8 values are computed in float32 and rounded once on
   store, on every target without native arithmetic for them (all but bf16 on CUDA sm_80+);
10. `LoopPartition` — loops the schedule marked ``loop_partition`` (padding copies) split where
    the conditions of their bodies change, so each piece is a plain copy or a fill; a loop over
    a symbolic extent split into its whole steps (no tail guard) and the guarded rest;
11. `Simplify` — index arithmetic rewritten by `kiln.arith` under loop and thread bounds
    (``(f // 64) * 1024 + (f % 64) * 16 + i`` becomes ``f * 16 + i``), values kept exactly;
12. `VectorizeLoop(target)` — vectorized loops annotated ``pragma_explicit_vector`` become vector
    statements of the target's vector width (other vectorized loops stay loops: the C emitter
    prints them under ``#pragma omp simd``);
13. `LowerIntrin(target)` — math builtins become C calls (or, in vectorized CPU loops,
    vectorizable float32 arithmetic), floor division becomes C division;
14. `OutlineParallelLoops` — the body of a parallel loop of a ``tir.noalias`` host function
    becomes a private function with ``restrict`` pointers (GCC drops ``restrict`` from what an
    OpenMP region captures); the C emitter runs such a loop on kiln's thread pool
    (`kiln.codegen.c_parallel`). After it the emitters only print.

For a host-only target (``c``) the device steps (1, 3-7) have nothing to do -- there are no
kernels -- and are left out, so its pipeline is 2 and 8-14. That list is written in
`kiln.driver.tir_pipeline` (re-exported here): `kiln.driver.build` runs it, and `host_kernel`
below builds with `kiln.driver.build`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from kiln.driver.build import build
from kiln.driver.tir_pipeline import default_tir_pipeline
from kiln.ir.target import Target
from kiln.ir.transform import Pass
from kiln.relax import transform as relax_transform
from kiln.tir.function import PrimFunc

__all__ = ["default_relax_pipeline", "default_tir_pipeline", "host_kernel"]


def host_kernel(prim: PrimFunc) -> Callable[..., Any]:
    """``prim`` compiled for the host (the kernels `FoldConstant` runs at compile time)."""
    return build(prim, target="c")["main"]


def default_relax_pipeline(
    target: Target, *, external_codegens: Sequence[str] = (), module_name: str = "default"
) -> list[Pass]:
    """The graph-level passes `kiln.relax.build` runs for ``target``, in order (VM form);
    ``external_codegens`` names the external codegens to partition for (e.g. ``["dnnl"]``),
    ``module_name`` prefixes the names of the fused kernels."""
    return [
        relax_transform.Normalize(),
        # ---- weights and layouts ---------------------------------------------------------
        relax_transform.FoldConstant(build=host_kernel),
        relax_transform.SimplifyInference(),
        relax_transform.SimplifyIdentities(),
        *(relax_transform.PartitionForCompiler(name) for name in external_codegens),
        relax_transform.AlterOpLayout(target),
        relax_transform.FoldConstant(build=host_kernel),
        relax_transform.HoistDimsOnly(),
        # ---- operators to kernels --------------------------------------------------------
        relax_transform.FuseAttention(target),
        relax_transform.FuseOps(),
        relax_transform.LowerTE(module_name, target),
        relax_transform.LegalizeOps(),
        # ---- VM lowering -----------------------------------------------------------------
        relax_transform.LambdaLift(),
        relax_transform.ToNonDataflow(),
        relax_transform.CallShapeFunctions(),
        relax_transform.CallTIRRewrite(),
        relax_transform.StaticPlanBlockMemory(),
        relax_transform.VMBuiltinLower(),
        relax_transform.VMShapeLower(),
        relax_transform.AttachGlobalSymbol(),
    ]
