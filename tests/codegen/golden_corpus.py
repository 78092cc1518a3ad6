"""The golden-C corpus: fixed kernels whose generated C is kept in tests/codegen/golden/.

A refactor that changes the C kiln emits for any of these kernels shows up as a diff to review
(tinygrad's "process replay"). The kernels are lowered for a fixed target (`TARGET`, an AVX2
CPU), so the C is the same on every machine. After an intended change, regenerate with

    python -m tests.codegen.golden_corpus --update

and review ``git diff tests/codegen/golden``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

from kiln import te, tir, topi
from kiln.codegen.build import generate
from kiln.driver import lower
from kiln.ir import IRModule, Target
from kiln.script import from_source
from kiln.topi import x86

TARGET = Target("c -mcpu=haswell")
GOLDEN = Path(__file__).resolve().parent / "golden"
CORPUS_SCRIPTS = Path(__file__).resolve().parents[1] / "script" / "corpus"
F32 = "float32"


def _topi(name: str, make: Callable[[], tuple[list[te.Tensor], list[te.Tensor]]]) -> tir.PrimFunc:
    """Outputs of ``make`` scheduled by the operator library's defaults for `TARGET`."""
    ins, outs = make()
    return te.lower(topi.schedule_for(outs, TARGET), [*ins, *outs], name=name)


def _ph(*shape: int, name: str = "x") -> te.Tensor:
    return te.placeholder(shape, F32, name=name)


def _unary(op: Callable[[te.Tensor], te.Tensor], shape: tuple[int, ...] = (64, 256)) -> Callable:
    def make() -> tuple[list[te.Tensor], list[te.Tensor]]:
        x = _ph(*shape)
        return [x], [op(x)]

    return make


def _fused() -> tuple[list[te.Tensor], list[te.Tensor]]:
    x, a, b = _ph(1 << 16), _ph(1, name="a"), _ph(1, name="b")
    y = topi.relu(topi.add(topi.multiply(x, a), b))
    return [x, a, b], [topi.sum(y)]


def _conv(stride: int, groups: int) -> Callable:
    def make() -> tuple[list[te.Tensor], list[te.Tensor]]:
        x, w = _ph(1, 16, 14, 14), _ph(16, 16 // groups, 3, 3, name="w")
        return [x, w], [topi.nn.conv2d_nchw(x, w, stride, 1, 1, groups)]

    return make


def _packed_matmul() -> tir.PrimFunc:
    a, b = _ph(48, 64, name="A"), _ph(64, 96, name="B")
    c = x86.matmul(a, b, target=TARGET)
    return te.lower(x86.schedule_matmul([c], TARGET), [a, b, c], name="matmul_packed")


def _packed_conv() -> tir.PrimFunc:
    x, w = _ph(1, 16, 28, 28), _ph(32, 16, 3, 3, name="w")
    y = x86.conv2d_nchw(x, w, 1, 1, 1, target=TARGET)
    return te.lower(x86.schedule_conv2d_nchw([y], TARGET), [x, w, y], name="conv2d_packed")


def _symbolic_add() -> tir.PrimFunc:
    n = te.var("n")
    x, y = te.placeholder((n, 8), F32, "x"), te.placeholder((n, 8), F32, "y")
    z = topi.add(x, y)
    return te.lower(topi.schedule_for([z], TARGET), [x, y, z], name="add_dynamic")


def _concat() -> tuple[list[te.Tensor], list[te.Tensor]]:
    """A DenseNet-style concat of eight inputs along the channels, then scale, shift and relu:
    a chain of eight ``if_then_else`` over the channel, whose loop is split per input."""
    xs = [_ph(1, 16 if k == 0 else 2, 4, 4, name=f"x{k}") for k in range(8)]
    s, b = _ph(1, 30, 1, 1, name="s"), _ph(1, 30, 1, 1, name="b")
    y = topi.relu(topi.add(topi.multiply(topi.concatenate(xs, axis=1), s), b))
    return [*xs, s, b], [y]


def _script(file: str) -> IRModule:
    return from_source((CORPUS_SCRIPTS / file).read_text())


def kernels() -> dict[str, Callable[[], tir.PrimFunc | IRModule]]:
    """Name -> builder of every kernel of the corpus."""
    return {
        "matmul": lambda: _topi(
            "matmul",
            lambda: ([a := _ph(32, 64), b := _ph(64, 48, name="w")], [topi.nn.matmul(a, b)]),
        ),
        "matmul_packed": _packed_matmul,
        "dense_bias_relu": lambda: _topi(
            "dense",
            lambda: (
                [x := _ph(8, 64), w := _ph(32, 64, name="w"), c := _ph(32, name="c")],
                [topi.relu(topi.nn.dense(x, w, c))],
            ),
        ),
        "conv2d_3x3": lambda: _topi("conv2d", _conv(1, 1)),
        "conv2d_strided": lambda: _topi("conv2d_s2", _conv(2, 1)),
        "conv2d_depthwise": lambda: _topi("conv2d_dw", _conv(1, 16)),
        "conv2d_packed": _packed_conv,
        "softmax": lambda: _topi("softmax", _unary(lambda x: topi.nn.softmax(x, axis=-1))),
        "log_softmax": lambda: _topi("log_softmax", _unary(lambda x: topi.nn.log_softmax(x))),
        "layer_norm": lambda: _topi(
            "layer_norm",
            lambda: (
                [x := _ph(16, 128), g := _ph(128, name="g"), b := _ph(128, name="b")],
                [topi.nn.layer_norm(x, g, b, axis=[-1])],
            ),
        ),
        "max_pool": lambda: _topi(
            "max_pool", _unary(lambda x: topi.nn.max_pool2d(x, 3, 2, 1), (1, 8, 16, 16))
        ),
        "avg_pool": lambda: _topi(
            "avg_pool", _unary(lambda x: topi.nn.avg_pool2d(x, 2, 2), (1, 8, 16, 16))
        ),
        "global_avg_pool": lambda: _topi("gap", _unary(topi.nn.global_avg_pool2d, (1, 8, 7, 7))),
        "reduce_sum_axis": lambda: _topi("sum_rows", _unary(lambda x: topi.sum(x, axis=1))),
        "fused_relu_sum": lambda: _topi("fused", _fused),
        "gelu": lambda: _topi("gelu", _unary(topi.gelu)),
        "transpose": lambda: _topi("transpose", _unary(lambda x: topi.transpose(x, (1, 0)))),
        "add_dynamic": _symbolic_add,
        "concat_scale_relu": lambda: _topi("concat", _concat),
        "seed000_subroutine": lambda: _script("seed000_subroutine.py"),
        "cpu_reduce_tir": lambda: _script("cpu_reduce.py"),
        "vectors_tir": lambda: _script("vectors.py"),
    }


def emit(name: str) -> str:
    """The C kiln generates for corpus kernel ``name`` and `TARGET`."""
    return generate(lower(kernels()[name](), TARGET), TARGET).source


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--update", action="store_true", help="rewrite tests/codegen/golden/*.golden")
    args = ap.parse_args(argv)
    GOLDEN.mkdir(exist_ok=True)
    changed = []
    for name in kernels():
        path = GOLDEN / f"{name}.golden"
        text = emit(name)
        if not path.exists() or path.read_text() != text:
            changed.append(name)
            if args.update:
                path.write_text(text)
    verb = "rewrote" if args.update else "differ"
    print(f"{len(changed)} of {len(kernels())} kernels {verb}: {', '.join(changed) or '-'}")
    return 0 if args.update or not changed else 1


if __name__ == "__main__":
    sys.exit(main())
