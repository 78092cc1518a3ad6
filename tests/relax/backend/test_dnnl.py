"""The oneDNN (dnnl) external codegen: partitioning, generated C compiled by kiln's toolchain and
called through tvm-ffi, numerics against numpy, and the error without the kiln[dnnl] extra."""

# ruff: noqa: F841 - names in R scripts are script variables, not Python locals

from __future__ import annotations

import numpy as np
import pytest

from kiln.errors import KilnError
from kiln.relax.analysis.well_formed import verify_module
from kiln.relax.backend import dnnl
from kiln.relax.transform import FuseOps, LowerTE, PartitionForCompiler
from kiln.script import ir as I
from kiln.script import relax as R
from tests.relax.transform.lowered import build, run

needs_onednn = pytest.mark.skipif(dnnl.paths() is None, reason="needs kiln[dnnl] (oneDNN)")


@I.ir_module
class ConvNet:
    @R.function
    def main(
        x: R.Tensor((2, 8, 10, 10), "float32"),
        w: R.Tensor((8, 8, 3, 3), "float32"),
        b: R.Tensor((1, 8, 1, 1), "float32"),
        w2: R.Tensor((4, 8, 3, 3), "float32"),
        fw: R.Tensor((10, 80), "float32"),
        fb: R.Tensor((10,), "float32"),
        m: R.Tensor((80, 10), "float32"),
    ):
        with R.dataflow():
            c = R.nn.conv2d(x, w, padding=1)
            a = R.add(c, b)
            y = R.nn.relu(a)
            z = R.add(y, x)
            d = R.nn.conv2d(z, w2, strides=2, padding=(1, 0, 0, 1), dilation=(1, 2))
            f = R.reshape(d, R.shape([2, 80]))
            h = R.linear(f, fw, fb)
            o = R.nn.relu(h)
            p = R.matmul(f, m)
            q = R.add(p, o)
            R.output(q)
        return q


def _conv(x, w, stride=1, pad=(1, 1, 1, 1), dil=(1, 1)):
    top, left, bottom, right = pad
    xp = np.pad(x, ((0, 0), (0, 0), (top, bottom), (left, right)))
    o, _, kh, kw = w.shape
    oh = (xp.shape[2] - dil[0] * (kh - 1) - 1) // stride + 1
    ow = (xp.shape[3] - dil[1] * (kw - 1) - 1) // stride + 1
    out = np.zeros((x.shape[0], o, oh, ow), "float64")
    for i in range(kh):
        for j in range(kw):
            patch = xp[:, :, i * dil[0] :, j * dil[1] :][
                :, :, : oh * stride : stride, : ow * stride : stride
            ]
            out += np.einsum("nchw,oc->nohw", patch, w[:, :, i, j])
    return out


def _inputs():
    rng = np.random.default_rng(3)
    shapes = [(2, 8, 10, 10), (8, 8, 3, 3), (1, 8, 1, 1), (4, 8, 3, 3), (10, 80), (10,), (80, 10)]
    return [rng.standard_normal(s).astype("float32") * 0.3 for s in shapes]


def _reference(x, w, b, w2, fw, fb, m):
    z = np.maximum(_conv(x, w) + b, 0) + x
    f = _conv(z, w2, 2, (1, 0, 0, 1), (1, 2)).reshape(2, 80)
    return f @ m + np.maximum(f @ fw.T + fb, 0)


@needs_onednn
def test_dnnl_partition_of_a_conv_linear_model_matches_numpy() -> None:
    mod = PartitionForCompiler("dnnl")(ConvNet)
    verify_module(mod)
    ext = {gv.name_hint: f.get_attr("Composite") for gv, f in mod.items() if f.get_attr("Compiler")}
    assert ext == {
        "dnnl_conv2d_add_relu_add": "dnnl.conv2d_add_relu_add",
        "dnnl_conv2d": "dnnl.conv2d",
        # longest chain first: q = add(p, relu(linear)) takes p as its residual
        "dnnl_permute_dims_matmul_add_relu_add": "dnnl.permute_dims_matmul_add_relu_add",
        "dnnl_matmul": "dnnl.matmul",
    }
    low = LowerTE("net")(FuseOps()(mod))
    verify_module(low)
    sources = low.get_attr("external_mods")
    assert sorted(s.symbol for s in sources) == sorted(ext)
    assert all("dnnl_primitive_execute" in s.source and "-ldnnl" in s.flags for s in sources)
    got = run(low, "main", *_inputs())
    np.testing.assert_allclose(got, _reference(*_inputs()), rtol=1e-4, atol=1e-4)


@needs_onednn
def test_dnnl_entry_checks_its_arguments() -> None:
    low = LowerTE("net")(PartitionForCompiler("dnnl")(ConvNet))
    lib = build(low)
    x, w, b = _inputs()[:3]
    out = np.zeros_like(x)
    lib["dnnl_conv2d_add_relu_add"](x, w, b, out)
    np.testing.assert_allclose(out, np.maximum(_conv(x, w) + b, 0) + x, rtol=1e-4, atol=1e-4)
    with pytest.raises(ValueError, match="dnnl_conv2d_add_relu_add: argument .* wrong shape"):
        lib["dnnl_conv2d_add_relu_add"](x[:1], w, b, out)
    with pytest.raises(TypeError, match="not float32"):
        lib["dnnl_conv2d_add_relu_add"](x.astype("float64"), w, b, out)


@needs_onednn
def test_unsupported_calls_are_not_partitioned() -> None:
    @I.ir_module
    class Module:
        @R.function
        def main(x: R.Tensor((1, 4, 6, 6), "float32"), w: R.Tensor((4, 2, 3, 3), "float32")):
            with R.dataflow():
                c = R.nn.conv2d(x, w, groups=2)
                h = R.astype(x, "float16")
                g = R.matmul(h, h)
                R.output(c, g)
            return (c, g)

    assert PartitionForCompiler("dnnl")(Module) is Module


def test_partitioning_for_dnnl_without_onednn_names_the_extra(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(dnnl, "paths", lambda: None)
    with pytest.raises(KilnError, match=r"pip install 'kiln\[dnnl\]'"):
        PartitionForCompiler("dnnl")(ConvNet)
