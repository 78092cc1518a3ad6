"""Every pass of kiln by its one kebab-case name (``kiln opt -p NAME``, ``kiln opt --list``).

    pass_by_name("fuse-ops")                                # FuseOps()
    pass_by_name("lower-te", PassOptions(target="cuda"))    # LowerTE("default", cuda + host c)
    pass_names()                                            # all names, relax passes first

`PASSES` holds one `PassEntry` per pass class: its level (``relax`` or ``tir``), the options it
takes and how to make it from them. A pass that needs an argument gets it from `PassOptions`
(``--target``, ``--module-name``, ``--compiler`` on the command line); ``fold-constant`` folds
with the host kernels the build uses (`kiln.driver.pipeline.host_kernel`). The arguments the
default pipelines give but `PassOptions` does not (``thread-sync``'s scope, ``shared``) are the
passes' defaults.

TIR passes rewrite a module's PrimFuncs and leave its relax functions as they are (every TIR
pass looks at PrimFuncs only, as `kiln.relax.build`, which hands them only the PrimFuncs,
expects), so they run on a module that holds both. A test checks that every `Pass` subclass
under ``kiln/`` is listed here.
"""

from __future__ import annotations

import difflib
import inspect
import re
from collections.abc import Callable
from dataclasses import dataclass

from kiln.driver.build import build_target
from kiln.driver.pipeline import host_kernel
from kiln.errors import KilnError
from kiln.ir.target import Target
from kiln.ir.transform import Pass
from kiln.relax import transform as rx
from kiln.tir import transform as tx


@dataclass(frozen=True)
class PassOptions:
    """The values a pass that takes arguments is made with (the command line's options)."""

    target: str = "c"
    module_name: str = "default"
    compiler: str = "dnnl"

    def build_target(self) -> Target:
        """``target`` as the build lowers for it (a device target gets its default host)."""
        return build_target(self.target)


@dataclass(frozen=True)
class PassEntry:
    """One registered pass: its class, the `PassOptions` fields it reads and its factory."""

    cls: type[Pass]
    make: Callable[[PassOptions], Pass]
    options: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        return self.cls.name

    @property
    def level(self) -> str:
        """``tir`` for the passes of `kiln.tir.transform`, else ``relax``."""
        return "tir" if self.cls.__module__.startswith("kiln.tir.") else "relax"

    @property
    def summary(self) -> str:
        """The first clause of the class docstring, without its pointer to the module's."""
        para = " ".join((inspect.getdoc(self.cls) or "").split("\n\n")[0].split())
        para = re.sub(r"\s*\((see )?(the )?module\s+doc(string)?[^)]*\)", "", para)
        return para.replace("``", "").split("; ")[0].rstrip(".;") + "."


def _plain(cls: type[Pass]) -> PassEntry:
    return PassEntry(cls, lambda _: cls())


def _targeted(cls: Callable[[Target], Pass]) -> Callable[[PassOptions], Pass]:
    return lambda o: cls(o.build_target())


_ENTRIES = (
    # ---- graph level, in the order of `default_relax_pipeline` -----------------------------
    _plain(rx.Normalize),
    PassEntry(rx.FoldConstant, lambda _: rx.FoldConstant(build=host_kernel)),
    _plain(rx.SimplifyInference),
    _plain(rx.SimplifyIdentities),
    PassEntry(
        rx.PartitionForCompiler, lambda o: rx.PartitionForCompiler(o.compiler), ("compiler",)
    ),
    PassEntry(rx.AlterOpLayout, _targeted(rx.AlterOpLayout), ("target",)),
    _plain(rx.HoistDimsOnly),
    PassEntry(rx.FuseAttention, _targeted(rx.FuseAttention), ("target",)),
    _plain(rx.FuseOps),
    PassEntry(
        rx.LowerTE,
        lambda o: rx.LowerTE(o.module_name, o.build_target()),
        ("module_name", "target"),
    ),
    _plain(rx.LegalizeOps),
    _plain(rx.LambdaLift),
    _plain(rx.ToNonDataflow),
    _plain(rx.CallShapeFunctions),
    _plain(rx.CallTIRRewrite),
    _plain(rx.StaticPlanBlockMemory),
    _plain(rx.VMBuiltinLower),
    _plain(rx.VMShapeLower),
    _plain(rx.AttachGlobalSymbol),
    # ---- graph level, outside the default pipeline -----------------------------------------
    _plain(rx.CanonicalizeBindings),
    _plain(rx.DeadCodeElimination),
    _plain(rx.RenameSymbolicDims),  # NOTE: names come from the caller (kiln.driver.torch_export)
    # ---- TIR, in the order of `default_tir_pipeline` ---------------------------------------
    PassEntry(tx.BindTarget, _targeted(tx.BindTarget), ("target",)),
    _plain(tx.FlattenBuffer),
    _plain(tx.ThreadSync),
    _plain(tx.MergeSharedMemoryAllocations),
    _plain(tx.AnnotateDeviceRegions),
    _plain(tx.SplitHostDevice),
    _plain(tx.LowerDeviceKernelLaunch),
    _plain(tx.MakePackedAPI),
    _plain(tx.LegalizeStorage),
    _plain(tx.LoopPartition),
    _plain(tx.Simplify),
    PassEntry(tx.VectorizeLoop, _targeted(tx.VectorizeLoop), ("target",)),
    PassEntry(tx.LowerIntrin, _targeted(tx.LowerIntrin), ("target",)),
    _plain(tx.OutlineParallelLoops),
)

PASSES: dict[str, PassEntry] = {e.name: e for e in _ENTRIES}
"""Every pass by name, relax passes first (each level in its pipeline's order)."""

assert len(PASSES) == len(_ENTRIES), "two registered passes share a name"


def pass_names() -> list[str]:
    """The names of all registered passes, in `PASSES` order."""
    return list(PASSES)


def lookup(name: str) -> PassEntry:
    """The entry of pass ``name``; a `KilnError` naming the close matches when there is none."""
    entry = PASSES.get(name)
    if entry is not None:
        return entry
    close = difflib.get_close_matches(name, PASSES, n=3, cutoff=0.6)
    hint = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
    raise KilnError(f"unknown pass {name!r}{hint} (`kiln opt --list` names every pass)")


def check_print_after(names: frozenset[str] | None) -> None:
    """Refuse a `KILN_PRINT_AFTER` that names a pass kiln does not have (its close matches in
    the error), before a compile that would print nothing for it."""
    for name in sorted(names or ()):
        try:
            lookup(name)
        except KilnError as e:
            raise KilnError(f"KILN_PRINT_AFTER: {e}") from None


def pass_by_name(name: str, options: PassOptions | None = None) -> Pass:
    """A new instance of pass ``name``, made with ``options`` (default: `PassOptions()`)."""
    return lookup(name).make(options or PassOptions())


__all__ = [
    "PASSES",
    "PassEntry",
    "PassOptions",
    "check_print_after",
    "lookup",
    "pass_by_name",
    "pass_names",
]
