"""How much of PyTorch's Core ATen opset the torch frontend converts, op by op.

    python -m kiln.relax.frontend.torch.coverage                    # the counts
    python -m kiln.relax.frontend.torch.coverage --markdown docs/aten_coverage.md

The Core ATen opset is read from torch itself: every ``torch.ops.aten`` overload tagged
``torch.Tag.core``. Each gets one status:

- ``supported``: a converter (`kiln.relax.frontend.torch.aten` and its sibling families);
- ``decomposed``: torch rewrites the op into supported ones before kiln sees it (its
  decomposition table, as `from_exported_program` runs it, or functionalization);
- ``not applicable``: meaningless for an inference compiler (`NOT_APPLICABLE` says why);
- ``unsupported``: the rest (`UNSUPPORTED` says why where it is known).

The test column names the test that exports a module using the op and checks kiln's result
against eager PyTorch: the frontend tests declare what they cover in module-level ``COVERS``
(ops kiln converts) and ``BY_TORCH`` (ops torch rewrites) dicts, test name -> ops, read here
from their source (``ast``; nothing is imported); each test asserts that its ``COVERS`` ops
are in its decomposed program and its ``BY_TORCH`` ops in the program before. The non-core ops that
torch.export leaves in real models (`EXTRA`) are listed after the core ones.
"""

from __future__ import annotations

import argparse
import ast
import sys
from dataclasses import dataclass
from pathlib import Path

NOT_APPLICABLE = {
    "aten._adaptive_avg_pool2d_backward.default": "a gradient (training only)",
    "aten.avg_pool2d_backward.default": "a gradient (training only)",
    "aten.convolution_backward.default": "a gradient (training only)",
    "aten.embedding_dense_backward.default": "a gradient (training only)",
    "aten.max_pool2d_with_indices_backward.default": "a gradient (training only)",
    "aten.native_group_norm_backward.default": "a gradient (training only)",
    "aten.native_layer_norm_backward.default": "a gradient (training only)",
}
"""Core ops kiln does not mean to convert, and why."""

UNSUPPORTED = {
    "aten._fft_r2c.default": "complex results: kiln has no complex dtypes",
    "aten._fft_c2r.default": "complex operands: kiln has no complex dtypes",
    "aten.poisson.default": "Poisson draws: kiln draws uniform and normal numbers (relax.random)",
    "aten.multinomial.default": "sampling from weights: kiln draws uniform and normal numbers "
    "(relax.random)",
}
"""Ops kiln lacks (or converts only in cases that real programs do not reach), and why: the
core ones, and non-core ones programs keep, so the unsupported-op error says why of them too
(the table lists core ops and `EXTRA` only)."""

EXTRA = (
    "aten.scaled_dot_product_attention.default",
    "aten._native_multi_head_attention.default",
    "aten.upsample_nearest2d.default",
    "aten.linalg_vector_norm.default",
    "aten._embedding_bag_forward_only.default",
    "aten.scatter.reduce",
    "aten.scatter.value_reduce",
    "aten.replication_pad1d.default",
    "aten.sort.stable",
    "aten._native_batch_norm_legit_functional.default",
    "aten.rand_like.default",
    "aten.randn_like.default",
    "aten.randint.low",
    "aten.randint.default",
    "aten.bernoulli.p",
    "aten.uniform.default",
    "aten.normal.Tensor_float",
    "aten.resize.default",
)
"""Non-core ops torch.export leaves in real models (kept whole or never decomposed)."""

NOTES = {
    "aten.convolution.default": "1-D to 3-D; transposed 1-D and 2-D",
    "aten.grid_sampler_2d.default": "bilinear and nearest (not bicubic)",
    "aten.index.Tensor": "integer indices (a boolean mask has a data-dependent shape)",
    "aten.index_put.default": "integer indices; a boolean mask with values that broadcast",
    "aten.as_strided.default": "views of a dense tensor",
    "aten.native_dropout.default": "inference mode (p=0 or train=False)",
    "aten.nonzero.default": "the count is read when the model runs",
    "aten._local_scalar_dense.default": "integers (sizes), read when the model runs",
    "aten.avg_pool3d.default": "without divisor_override",
    "aten.avg_pool2d.default": "without divisor_override",
    "aten.sort.default": "O(n^2) per line (the top-k kernel)",
    "aten.scaled_dot_product_attention.default": "masks, is_causal, scale, GQA; no dropout",
    "aten.rand.default": "fresh numbers per call; kiln's generator, not torch's (manual_seed "
    "does not reproduce them)",
    "aten.randn.default": "fresh numbers per call; kiln's generator, not torch's",
    "aten.randperm.default": "fresh order per call; O(n^2) in n",
    "aten.sym_stride.int": "the strides of a compact tensor (torch.export writes strides as "
    "sizes: tested in an edited program)",
    "aten.sym_storage_offset.default": "0: kiln tensors start their storage (tested in an "
    "edited program)",
    "aten.resize.default": "the same count, fewer elements, or new elements never read",
}
"""What a supported op does not cover."""

STATUSES = ("supported", "decomposed", "not applicable", "unsupported")


@dataclass(frozen=True)
class Row:
    """One op's line of the table."""

    op: str
    status: str
    why: str
    test: str
    core: bool


def core_ops() -> list[str]:
    """Every ``torch.ops.aten`` overload tagged ``torch.Tag.core``, by name."""
    import torch

    found = set()
    for schema in torch._C._jit_get_all_schemas():
        if not schema.name.startswith("aten::"):
            continue
        packet = getattr(torch.ops.aten, schema.name[len("aten::") :], None)
        overload = getattr(packet, schema.overload_name or "default", None)
        if overload is not None and torch.Tag.core in overload.tags:
            found.add(str(overload))
    return sorted(found)


def covered_by(test_root: Path, name: str = "COVERS") -> dict[str, str]:
    """op -> ``<file>::<test>`` from the ``COVERS`` dicts of the torch frontend tests (ops kiln
    converts), or from their ``BY_TORCH`` dicts (ops torch rewrites before kiln sees them)."""
    out: dict[str, str] = {}
    for path in sorted(test_root.glob("test_torch*.py")):
        tree = ast.parse(path.read_text())
        for node in tree.body:
            value = _dict_value(node, name)
            if value is None:
                continue
            for test, ops in ast.literal_eval(value).items():
                for op in ops:
                    out.setdefault(op, f"{path.name}::{test}")
    return out


def _dict_value(node: ast.stmt, name: str) -> ast.expr | None:
    if isinstance(node, ast.AnnAssign) and getattr(node.target, "id", "") == name:
        return node.value
    if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == name for t in node.targets):
        return node.value
    return None


def rows(test_root: Path | None = None) -> list[Row]:
    """The status of every core op, then of `EXTRA`."""
    from kiln.relax.frontend.torch.activations import decompositions
    from kiln.relax.frontend.torch.exported_program import ATEN

    decomposed = {str(op) for op in decompositions()}
    tests = covered_by(test_root) if test_root is not None else {}
    by_torch = covered_by(test_root, "BY_TORCH") if test_root is not None else {}
    out = []
    core = core_ops()
    for op in [*core, *(e for e in EXTRA if e not in core)]:
        if op in NOT_APPLICABLE:
            status, why = "not applicable", NOT_APPLICABLE[op]
        elif op in UNSUPPORTED:
            status, why = "unsupported", UNSUPPORTED[op]
        elif op in ATEN and op in tests:
            status, why = "supported", NOTES.get(op, "")
        elif op in by_torch or (op in decomposed and op not in ATEN):
            status, why = "decomposed", "torch rewrites it into supported ops"
            tests[op] = by_torch.get(op, "")
        elif op in ATEN:
            status, why = "supported", NOTES.get(op, "")
        else:
            status, why = "unsupported", ""
        out.append(Row(op, status, why, tests.get(op, ""), op in core))
    return out


def counts(table: list[Row]) -> dict[str, int]:
    """How many core ops have each status (`EXTRA` left out)."""
    core = [r for r in table if r.core]
    return {s: sum(r.status == s for r in core) for s in STATUSES}


def summary(table: list[Row]) -> str:
    """``N core ops: S supported (...)`` with the share of all and of the applicable ones."""
    c = counts(table)
    total = sum(c.values())
    ok = c["supported"] + c["decomposed"]
    applicable = total - c["not applicable"]
    return (
        f"{total} core ATen ops: {ok} supported ({c['supported']} converted by kiln, "
        f"{c['decomposed']} decomposed by torch into supported ops), {c['not applicable']} not "
        f"applicable, {c['unsupported']} unsupported; {100 * ok / total:.1f}% of all, "
        f"{100 * ok / applicable:.1f}% of the applicable ones"
    )


def markdown(table: list[Row], torch_version: str) -> str:
    """The table as the markdown page ``docs/aten_coverage.md``."""
    lines = [
        "# Core ATen coverage of the torch frontend",
        "",
        "Generated by `python -m kiln.relax.frontend.torch.coverage --markdown "
        "docs/aten_coverage.md`",
        f"from torch {torch_version}; `tests/relax/frontend/test_torch_core_errors.py` fails when "
        "it is stale.",
        "Every op is tagged `torch.Tag.core`; each test exports a module that uses it and "
        "compares kiln's result with eager PyTorch.",
        "",
        summary(table) + ".",
        "",
        "| op | status | notes | test |",
        "|---|---|---|---|",
    ]
    extra_started = False
    for r in table:
        if not r.core and not extra_started:
            lines += ["", "Non-core ops torch.export leaves in real models:", "",
                      "| op | status | notes | test |", "|---|---|---|---|"]  # fmt: skip
            extra_started = True
        test = f"`{r.test}`" if r.test else ""
        lines.append(f"| `{r.op}` | {r.status} | {r.why} | {test} |")
    return "\n".join(lines) + "\n"


def _test_root() -> Path:
    return Path(__file__).resolve().parents[4] / "tests" / "relax" / "frontend"


def main(argv: list[str] | None = None) -> int:
    import torch

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--markdown", type=Path, help="write the table to this file")
    args = parser.parse_args(argv)
    root = _test_root()
    table = rows(root if root.is_dir() else None)
    if args.markdown:
        args.markdown.write_text(markdown(table, torch.__version__))
    print(summary(table))
    return 0


if __name__ == "__main__":
    sys.exit(main())
