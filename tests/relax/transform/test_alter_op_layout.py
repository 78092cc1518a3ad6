"""AlterOpLayout (+ FoldConstant) in the relax pipeline: a conv net runs channel-blocked with
layout transforms at the model's boundary only, its weights packed once at compile time, the
bias / activation / residual epilogue inside the conv kernel's register tile; constant matmul
weights become prepacked panels; runtime weights and non-CPU targets are left alone. Numerics
against numpy through `kiln.compile`."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import kiln
from kiln import relax, tir
from kiln.driver import default_relax_pipeline
from kiln.ir import IRModule, Target
from kiln.ir.transform import PassContext, Sequential
from kiln.ir.visitor import pre_order_nodes
from kiln.relax import op as O
from kiln.relax.expr import Call, Constant, Function
from kiln.relax.transform import AlterOpLayout, FoldConstant, Normalize
from kiln.tir import PrimFunc
from kiln.tir.expr import const_product
from kiln.tir.stmt import BufferStore, DeclBuffer, For
from tests.relax.op.cases import np_conv2d

RNG = np.random.default_rng(7)
C = 32
W1 = (RNG.standard_normal((C, 16, 3, 3)) / 12).astype("float32")
B1 = RNG.standard_normal((1, C, 1, 1)).astype("float32")
W2 = (RNG.standard_normal((C, C, 3, 3)) / 17).astype("float32")
B2 = RNG.standard_normal((1, C, 1, 1)).astype("float32")
X = RNG.standard_normal((1, 16, 14, 14)).astype("float32")


def conv_net(batch: Any = 1) -> IRModule:
    """conv -> bias -> relu -> conv -> bias -> + residual -> relu -> max_pool, weights constant;
    ``batch`` an int or a symbolic `kiln.tir` variable."""
    x = relax.Var("x", relax.TensorStructInfo([batch, 16, 14, 14], "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            h = bb.emit(O.nn.conv2d(x, relax.const(W1), padding=1))
            h = bb.emit(O.nn.relu(bb.emit(O.add(h, relax.const(B1)))))
            g = bb.emit(O.add(bb.emit(O.nn.conv2d(h, relax.const(W2), padding=1)), relax.const(B2)))
            g = bb.emit(O.nn.relu(bb.emit(O.add(g, h))))
            out = bb.emit_output(bb.emit(O.nn.max_pool2d(g, (2, 2), (2, 2))))
        bb.emit_func_output(out)
    return bb.get()


def conv_net_ref(x: np.ndarray) -> np.ndarray:
    h = np.maximum(np_conv2d(x, W1, pad=(1, 1, 1, 1)) + B1, 0)
    g = np.maximum(np_conv2d(h, W2, pad=(1, 1, 1, 1)) + B2 + h, 0)
    return g.reshape(len(x), C, 7, 2, 7, 2).max(axis=(3, 5))


AVX512 = Target("c -mcpu=skylake-avx512")
"""The target whose blocks the layout tests spell out (32 float channels: two 16-lane vectors),
whatever the machine: the pass only reads the target; kernels built from its output run on any
x86 CPU (test_blocks_follow_the_targets_vector_width covers AVX2's blocks)."""


def until(mod: IRModule, last: str, target: Target = AVX512) -> IRModule:
    """``mod`` after the default CPU pipeline's passes for ``target`` up to the first named
    ``last``."""
    passes = default_relax_pipeline(target)
    names = [p.name for p in passes]
    return Sequential(passes[: names.index(last) + 1])(mod, PassContext())


def calls(mod: IRModule, op: str) -> list[Call]:
    main = mod["main"]
    assert isinstance(main, Function)
    return [
        n
        for n in pre_order_nodes(main.body)
        if isinstance(n, Call) and getattr(n.op, "name", None) == op
    ]


def lowered_callees(mod: IRModule) -> list[str]:
    """The kernels the lowered ``main`` calls, in order."""
    return [c.args[0].name_hint for c in calls(mod, "relax.call_lowered")]  # type: ignore[union-attr]


def test_conv_net_is_blocked_between_its_boundaries_only() -> None:
    graph = until(conv_net(), "alter-op-layout")
    graph = FoldConstant()(graph)
    transforms = calls(graph, "relax.layout_transform")
    assert [(c.attrs["src_layout"], c.attrs["dst_layout"]) for c in transforms] == [
        ("NCHW", "NCHW16c"),  # the input, once
        ("NCHW32c", "NCHW"),  # the output, once
    ]
    convs = calls(graph, "relax.nn.conv2d")
    assert [c.attrs["data_layout"] for c in convs] == ["NCHW16c", "NCHW32c"]
    # the weights are blocked constants now: packed here, at compile time, never per call
    weights = [c.args[1] for c in convs]
    assert all(isinstance(w, Constant) for w in weights)
    w1 = weights[0].data  # type: ignore[union-attr]
    assert w1.shape == (1, 1, 3, 3, 16, 32)
    np.testing.assert_array_equal(w1[0, 0, 1, 2, 5, 7], W1[7, 5, 1, 2])
    pool = calls(graph, "relax.nn.max_pool2d")
    assert pool[0].attrs["layout"] == "NCHW32c"


def test_conv_net_lowers_to_fused_blocked_kernels_and_matches_numpy() -> None:
    lowered = until(conv_net(), "lower-te")
    assert lowered_callees(lowered) == [
        "default_fused_layout_transform",
        "default_fused_conv2d_add_relu",
        "default_fused_conv2d_add_add_relu",
        "default_fused_max_pool2d",
        "default_fused_layout_transform_1",
    ]
    model = kiln.compile(conv_net())
    got = model(X).numpy()
    assert got.shape == (1, C, 7, 7)  # the model's layout
    np.testing.assert_allclose(got, conv_net_ref(X), rtol=2e-3, atol=1e-4)


def _store_reads(store: BufferStore) -> set[str]:
    from kiln.tir.expr import BufferLoad

    return {n.buffer.name for n in pre_order_nodes(store.value) if isinstance(n, BufferLoad)}


def test_bias_relu_residual_are_applied_in_the_register_tile() -> None:
    """The second conv's kernel writes its output once, from the accumulator tile (a buffer of
    one tile, allocated inside the tile loop), adding bias and residual and clamping there: no
    second pass over the output."""
    lowered = until(conv_net(), "lower-te")
    prim = lowered[lowered.get_global_var("default_fused_conv2d_add_add_relu")]
    assert isinstance(prim, PrimFunc)
    out = prim.buffer_map[prim.params[-1]]
    stores = [n for n in pre_order_nodes(prim.body) if isinstance(n, BufferStore)]
    to_out = [s for s in stores if s.buffer is out]
    assert len(to_out) == 1
    reads = _store_reads(to_out[0])
    residual = prim.buffer_map[prim.params[0]].name
    assert {"conv2d_nchwc_acc", residual} <= reads and len(reads) == 3  # acc, bias, residual
    assert "max" in str(to_out[0].value).lower()
    # the accumulator is one register tile (th x tw pixels x a 32-channel block), declared in
    # the innermost loop that holds it, and that loop's body also holds the output's store
    acc = next(s.buffer for s in stores if s.buffer.name == "conv2d_nchwc_acc")
    assert const_product(acc.shape) <= 14 * 32
    holders = [f for f in pre_order_nodes(prim.body) if isinstance(f, For) and _declares(f, acc)]
    innermost = holders[-1]
    assert not any(
        isinstance(g, For) and _declares(g, acc) for g in pre_order_nodes(innermost.body)
    )
    assert any(n is to_out[0] for n in pre_order_nodes(innermost.body))


def _declares(stmt: Any, buf: Any) -> bool:
    return any(isinstance(d, DeclBuffer) and d.buffer is buf for d in pre_order_nodes(stmt))


def test_constant_matmul_weight_is_prepacked_once() -> None:
    w = RNG.standard_normal((48, 80)).astype("float32")
    b = RNG.standard_normal((80,)).astype("float32")
    x = relax.Var("x", relax.TensorStructInfo([6, 48], "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            y = bb.emit(O.matmul(x, relax.const(w)))
            out = bb.emit_output(bb.emit(O.nn.relu(bb.emit(O.add(y, relax.const(b))))))
        bb.emit_func_output(out)
    mod = bb.get()
    graph = FoldConstant()(until(mod, "alter-op-layout"))
    assert not calls(graph, "relax.matmul") and not calls(graph, "relax.layout_transform")
    (packed,) = calls(graph, "relax.matmul_packed")
    panels = packed.args[1]
    assert isinstance(panels, Constant) and panels.data.shape[1] == 48
    cols = panels.data.shape[2]
    np.testing.assert_array_equal(panels.data[1, 3, 2], w[3, cols + 2])
    xv = RNG.standard_normal((6, 48)).astype("float32")
    got = kiln.compile(mod)(xv).numpy()
    np.testing.assert_allclose(got, np.maximum(xv @ w + b, 0), rtol=2e-3, atol=1e-4)


@pytest.mark.parametrize("rows", [1, 7, 30])
def test_a_symbolic_token_count_keeps_the_prepacked_weight(rows: int) -> None:
    # a language model's matmuls: x [batch, seq, K] with symbolic batch and seq
    w = RNG.standard_normal((48, 80)).astype("float32")
    b, s = tir.SizeVar("batch", "int64"), tir.SizeVar("seq", "int64")
    x = relax.Var("x", relax.TensorStructInfo([b, s, 48], "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            out = bb.emit_output(bb.emit(O.nn.relu(bb.emit(O.matmul(x, relax.const(w))))))
        bb.emit_func_output(out)
    mod = bb.get()
    graph = FoldConstant()(until(mod, "alter-op-layout"))
    assert not calls(graph, "relax.matmul") and len(calls(graph, "relax.matmul_packed")) == 1
    xv = RNG.standard_normal((2, rows, 48)).astype("float32")
    got = kiln.compile(mod)(xv).numpy()
    np.testing.assert_allclose(got, np.maximum(xv @ w, 0), rtol=2e-3, atol=1e-4)


def test_a_channel_concat_of_blocked_values_stays_blocked() -> None:
    """DenseNet's block: convolutions' outputs (whole blocks of channels) joined over the
    channels, scaled and shifted (batch norm), ReLU, then a convolution: everything stays
    blocked (the only layout transforms are the model's input and output; measured DenseNet-121
    on one Zen 3 core: 189 -> 87 ms with the concat kernel's per-operand copies)."""
    x = relax.Var("x", relax.TensorStructInfo([1, 16, 14, 14], "float32"))
    w3 = (RNG.standard_normal((C, 3 * C, 1, 1)) / 9).astype("float32")
    scale = RNG.standard_normal((1, 3 * C, 1, 1)).astype("float32")
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            h = bb.emit(O.nn.conv2d(x, relax.const(W1), padding=1))
            g = bb.emit(O.nn.conv2d(h, relax.const(W2), padding=1))
            cat = bb.emit(O.concat([h, g, h], axis=1))
            act = bb.emit(O.nn.relu(bb.emit(O.multiply(cat, relax.const(scale)))))
            out = bb.emit_output(bb.emit(O.nn.conv2d(act, relax.const(w3))))
        bb.emit_func_output(out)
    mod = bb.get()
    graph = until(mod, "alter-op-layout")
    transforms = [
        (c.attrs["src_layout"], c.attrs["dst_layout"])
        for c in calls(graph, "relax.layout_transform")
        if not isinstance(c.args[0], Constant)
    ]
    assert transforms == [("NCHW", "NCHW16c"), ("NCHW32c", "NCHW")]
    (cat_call,) = calls(graph, "relax.concat")
    assert cat_call.attrs["axis"] == 1 and cat_call.struct_info_.ndim == 5
    got = kiln.compile(mod)(X).numpy()
    h = np_conv2d(X, W1, pad=(1, 1, 1, 1))
    joined = np.concatenate([h, np_conv2d(h, W2, pad=(1, 1, 1, 1)), h], 1)
    want = np_conv2d(np.maximum(joined * scale, 0), w3)
    np.testing.assert_allclose(got, want, rtol=2e-3, atol=1e-3)


def test_a_linear_over_nhwc_images_takes_the_packed_kernel() -> None:
    """ConvNeXt's and Swin's Linear layers read ``[N, H, W, C]``: rank 4 keeps the prepacked
    weight too (measured on ConvNeXt-T, one Zen 3 core: 242 -> 186 ms)."""
    w = RNG.standard_normal((24, 40)).astype("float32")
    x = relax.Var("x", relax.TensorStructInfo([2, 5, 7, 24], "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            out = bb.emit_output(bb.emit(O.matmul(x, relax.const(w))))
        bb.emit_func_output(out)
    mod = bb.get()
    graph = FoldConstant()(until(mod, "alter-op-layout"))
    assert not calls(graph, "relax.matmul") and len(calls(graph, "relax.matmul_packed")) == 1
    xv = RNG.standard_normal((2, 5, 7, 24)).astype("float32")
    got = kiln.compile(mod)(xv).numpy()
    np.testing.assert_allclose(got, xv @ w, rtol=2e-3, atol=1e-4)


def _conv_with(weight: Any, x: relax.Var, params: list[relax.Var]) -> IRModule:
    bb = relax.BlockBuilder()
    with bb.function("main", params):
        with bb.dataflow():
            y = bb.emit(O.nn.conv2d(x, weight, padding=1))
            out = bb.emit_output(bb.emit(O.nn.softmax(bb.emit(O.nn.relu(y)), axis=1)))
        bb.emit_func_output(out)
    return bb.get()


def test_runtime_weights_stay_nchw_and_unblocked_consumers_read_nchw() -> None:
    x = relax.Var("x", relax.TensorStructInfo([1, 16, 14, 14], "float32"))
    w = relax.Var("w", relax.TensorStructInfo([C, 16, 3, 3], "float32"))
    runtime = Normalize()(_conv_with(w, x, [x, w]))
    assert AlterOpLayout(AVX512)(runtime)["main"] is runtime["main"]
    # a constant weight: blocked conv and relu, back to NCHW once for the softmax over C
    const = AlterOpLayout(AVX512)(Normalize()(_conv_with(relax.const(W1), x, [x])))
    transforms = calls(const, "relax.layout_transform")
    assert [(c.attrs["src_layout"], c.attrs["dst_layout"]) for c in transforms] == [
        ("NCHW", "NCHW16c"),
        ("OIHW", "OIHW16i32o"),
        ("NCHW32c", "NCHW"),
    ]
    (relu,) = calls(const, "relax.nn.relu")
    assert relu.struct_info_.ndim == 5  # type: ignore[union-attr]
    got = kiln.compile(const)(X).numpy()
    z = np.maximum(np_conv2d(X, W1, pad=(1, 1, 1, 1)), 0)
    e = np.exp(z - z.max(axis=1, keepdims=True))
    np.testing.assert_allclose(got, e / e.sum(axis=1, keepdims=True), rtol=2e-3, atol=1e-5)


@pytest.mark.parametrize("target", ["cuda"])
def test_other_targets_are_left_alone(target: str) -> None:
    mod = Normalize()(conv_net())
    assert AlterOpLayout(Target(target))(mod)["main"] is mod["main"]


def test_blocks_follow_the_targets_vector_width() -> None:
    """Blocks of up to two vectors: the second conv's input in 16 channels with AVX2, 32 with
    AVX-512; the first conv's 16 input channels in one block of 16 on both (a block divides
    its channels)."""
    mod = Normalize()(conv_net())
    for target, blocks in [
        ("c -mcpu=haswell", ["NCHW16c", "NCHW16c"]),
        ("c -mcpu=skylake-avx512", ["NCHW16c", "NCHW32c"]),
    ]:
        graph = AlterOpLayout(Target(target))(mod)
        assert [c.attrs["data_layout"] for c in calls(graph, "relax.nn.conv2d")] == blocks


def _acc_tiles(prim: PrimFunc) -> list[Any]:
    """The register-tile accumulators of ``prim`` (buffers of the x86 NCHWc kernel)."""
    stores = [n for n in pre_order_nodes(prim.body) if isinstance(n, BufferStore)]
    return [s.buffer for s in stores if s.buffer.name == "conv2d_nchwc_acc"]


@pytest.mark.parametrize(
    ("exec_mode", "target"),
    [("compiled", "c"), ("bytecode", "c"), ("compiled", "c -mcpu=haswell")],
)
def test_symbolic_batch_runs_the_blocked_kernels(exec_mode: str, target: str) -> None:
    """A batch that is a shape variable changes nothing: the same blocked graph, the same
    register-tiled conv kernels (one tile buffer, no symbolic extent), numerics at two batch
    sizes (AVX2 code too)."""
    n = tir.Var("n", "int64")
    lowered = until(conv_net(n), "lower-te")
    assert lowered_callees(lowered) == lowered_callees(until(conv_net(), "lower-te"))
    for name in ("default_fused_conv2d_add_relu", "default_fused_conv2d_add_add_relu"):
        prim = lowered[lowered.get_global_var(name)]
        assert isinstance(prim, PrimFunc)
        (acc,) = {id(b): b for b in _acc_tiles(prim)}.values()
        assert const_product(acc.shape) is not None and const_product(acc.shape) <= 14 * 32
    model = kiln.compile(conv_net(n), target, exec_mode=exec_mode)
    for batch in (1, 3):
        x = RNG.standard_normal((batch, 16, 14, 14)).astype("float32")
        np.testing.assert_allclose(model(x).numpy(), conv_net_ref(x), rtol=2e-3, atol=1e-4)


def test_symbolic_batch_onnx_cnn_is_blocked_and_matches_onnxruntime() -> None:
    """The bundled ONNX CNN (``batch`` symbolic): its convolutions (dense and depthwise) and its
    max pool run blocked, and it matches onnxruntime at batch 1 and 3 in both exec modes."""
    pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    from kiln.examples.models.cnn_onnx import cnn_onnx_model
    from kiln.relax.frontend.onnx import from_onnx

    model = cnn_onnx_model()
    graph = FoldConstant()(until(from_onnx(model), "alter-op-layout"))
    batch = graph["main"].params[0].struct_info_.dims[0]  # type: ignore[union-attr]
    assert isinstance(batch, tir.Var)
    layouts = [c.attrs["data_layout"] for c in calls(graph, "relax.nn.conv2d")]
    assert len(layouts) == 4 and all(layout.startswith("NCHW") and layout[4:] for layout in layouts)
    assert calls(graph, "relax.nn.max_pool2d")[0].attrs["layout"] != "NCHW"
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    for exec_mode in ("compiled", "bytecode"):
        compiled = kiln.compile(model, exec_mode=exec_mode)
        for batch in (1, 3):
            x = RNG.standard_normal((batch, 3, 32, 32)).astype("float32")
            (want,) = session.run(None, {"image": x})
            got = compiled(image=x).numpy()
            np.testing.assert_allclose(got, want, rtol=2e-3, atol=2e-3, err_msg=exec_mode)
