"""tvm-ffi entries made from MakePackedAPI: each check, its exception type and its message."""

from __future__ import annotations

import numpy as np
import pytest

import kiln
from kiln import tir
from kiln.ir import GlobalVar, IRModule
from kiln.runtime import Module, build_module, metadata_c_source
from tests.codegen.helpers import f32, loop, prim_func


def _copy2d(A: tir.Buffer, B: tir.Buffer) -> tir.Stmt:
    return loop(4, lambda i: loop(128, lambda j: tir.BufferStore(B, A[i, j], (i, j)), name="j"))


def _sym(A: tir.Buffer, B: tir.Buffer, C: tir.Buffer) -> tir.Stmt:
    n = A.shape[0]
    return loop(n, lambda i: tir.BufferStore(C, A[i] + B[i] + B[i + n], (i,)))


def _strided(A: tir.Buffer, B: tir.Buffer) -> tir.Stmt:
    return loop(4, lambda i: loop(4, lambda j: tir.BufferStore(B, A[i, j], (i * 4 + j,)), name="j"))


def _scalars(x: tir.Var, A: tir.Buffer, s: tir.Var, flag: tir.Var) -> tir.Stmt:
    value = tir.Select(flag, s * f32(2), s)
    return loop(x, lambda i: tir.BufferStore(A, value, (i,)))


def _strided_func() -> tir.PrimFunc:
    """A buffer with declared strides (s0, 1): views with any row stride are accepted."""
    a_h, b_h = tir.Var("A", "handle"), tir.Var("B", "handle")
    A = tir.decl_buffer((4, 4), "float32", "A", strides=(tir.Var("s0"), 1))
    B = tir.decl_buffer((16,), "float32", "B")
    return tir.PrimFunc(
        (a_h, b_h), _strided(A, B), buffer_map={a_h: A, b_h: B}, attrs={"global_symbol": "strided"}
    )


def _scalars_func() -> tir.PrimFunc:
    """The buffer's dimension is the scalar parameter x itself."""
    x, s, flag = tir.Var("x"), tir.Var("s", "float32"), tir.Var("flag", "bool")
    a_h = tir.Var("A", "handle")
    A = tir.decl_buffer((x,), "float32", "A")
    return tir.PrimFunc(
        (x, a_h, s, flag),
        _scalars(x, A, s, flag),
        buffer_map={a_h: A},
        attrs={"global_symbol": "scalars"},
    )


def _module() -> IRModule:
    n = tir.SizeVar("n")
    sym_args = {"A": ((n,), "float32"), "B": ((n * 2,), "float32"), "C": ((n,), "float32")}
    copy_args = {"A": ((4, 128), "float32"), "B": ((4, 128), "float32")}
    funcs = {
        "copy2d": prim_func("copy2d", copy_args, _copy2d),
        "sym": prim_func("sym", sym_args, _sym),
        "strided": _strided_func(),
        "scalars": _scalars_func(),
    }
    return IRModule({GlobalVar(k): v for k, v in funcs.items()})


@pytest.fixture(scope="module")
def built() -> Module:
    return kiln.build(_module())


def _raises(kind: type[Exception], text: str, fn: object, *args: object) -> None:
    with pytest.raises(kind) as info:
        fn(*args)  # type: ignore[operator]
    assert text in str(info.value), str(info.value)


def test_good_calls(built: Module) -> None:
    a = np.random.rand(4, 128).astype("float32")
    b = np.zeros_like(a)
    built["copy2d"](a, b)
    np.testing.assert_array_equal(a, b)
    x, y, z = np.ones(5, "float32"), np.arange(10, dtype="float32"), np.zeros(5, "float32")
    built["sym"](x, y, z)
    np.testing.assert_array_equal(z, 1 + y[:5] + y[5:])
    built["sym"](np.ones(0, "float32"), np.ones(0, "float32"), np.ones(0, "float32"))
    out = np.zeros(3, "float32")
    built["scalars"](3, out, 1.5, True)
    np.testing.assert_array_equal(out, 3.0)
    built["scalars"](3, out, 2, False)  # an int where a float belongs is converted
    np.testing.assert_array_equal(out, 2.0)


def test_declared_strides_accept_views(built: Module) -> None:
    big = np.arange(32, dtype="float32").reshape(4, 8)
    b = np.zeros(16, "float32")
    built["strided"](big[:, 2:6], b)
    np.testing.assert_array_equal(b.reshape(4, 4), big[:, 2:6])
    _raises(
        ValueError,
        "strided: argument A.strides[1] expected 1, got 2",
        built["strided"],
        big[:, ::2],
        b,
    )


def test_count_kind_dtype_ndim(built: Module) -> None:
    f = built["copy2d"]
    a = np.zeros((4, 128), "float32")
    _raises(TypeError, "copy2d: expected 2 arguments (A, B), got 1", f, a)
    _raises(TypeError, "copy2d: expected 2 arguments (A, B), got 3", f, a, a, a)
    _raises(TypeError, "copy2d: argument B expected a tensor, got None", f, a, None)
    _raises(TypeError, "copy2d: argument A expected a tensor, got float", f, 1.0, a)
    _raises(TypeError, "copy2d: argument A expected a tensor, got int", f, 3, a)
    _raises(TypeError, "copy2d: argument A expected a tensor, got str", f, "A", a)
    _raises(
        TypeError,
        "copy2d: argument B.dtype expected float32, got float64",
        f,
        a,
        a.astype("float64"),
    )
    _raises(
        TypeError, "copy2d: argument B.dtype expected float32, got int32", f, a, a.astype("int32")
    )
    _raises(ValueError, "copy2d: argument A.ndim expected 2, got 3", f, a[None], a)


def test_shapes_and_strides(built: Module) -> None:
    f = built["copy2d"]
    a = np.zeros((4, 128), "float32")
    _raises(ValueError, "copy2d: argument A.shape[1] expected 128, got 64", f, a[:, :64].copy(), a)
    _raises(
        ValueError,
        "copy2d: argument B.shape[0] expected 4, got 8",
        f,
        a,
        np.zeros((8, 128), "float32"),
    )
    _raises(
        ValueError,
        "copy2d: argument A.strides expected a compact row-major layout",
        f,
        np.asfortranarray(a),
        a,
    )
    big = np.zeros((4, 256), "float32")
    _raises(ValueError, "got strides (256, 2) for shape (4, 128)", f, big[:, ::2], a)


def test_symbolic_dims_must_agree(built: Module) -> None:
    f = built["sym"]
    x = np.ones(5, "float32")
    _raises(
        ValueError,
        "sym: argument C.shape[0] expected 5 (n, from A.shape[0]), got 6",
        f,
        x,
        np.ones(10, "float32"),
        np.ones(6, "float32"),
    )
    _raises(ValueError, "sym: argument B.shape[0] expected 10", f, x, np.ones(9, "float32"), x)


def test_scalar_arguments(built: Module) -> None:
    f = built["scalars"]
    out = np.zeros(3, "float32")
    _raises(
        ValueError,
        "scalars: argument A.shape[0] expected 3 (x, from argument x), got 4",
        f,
        3,
        np.zeros(4, "float32"),
        1.0,
        True,
    )
    _raises(
        TypeError,
        "scalars: argument x expected an int (int32), got a tensor",
        f,
        out,
        out,
        1.0,
        True,
    )
    _raises(
        TypeError, "scalars: argument x expected an int (int32), got float", f, 3.0, out, 1.0, True
    )
    _raises(
        TypeError, "scalars: argument s expected a float (float32), got None", f, 3, out, None, True
    )
    _raises(TypeError, "scalars: argument flag expected a bool, got str", f, 3, out, 1.0, "yes")
    _raises(
        ValueError,
        "scalars: argument x = 2**40 does not fit int32",
        f,
        2**40,
        out,
        1.0,
        True,
    )
    _raises(  # the entry's own check, without the Python call path
        ValueError,
        "scalars: argument x = 1099511627776 does not fit int32",
        f.ffi_function,
        2**40,
        out,
        1.0,
        True,
    )


def test_pointer_parameters_take_tensors_pointers_and_none() -> None:
    p, n = tir.Var("p", tir.pointer_to("float32")), tir.Var("n")
    view = tir.decl_buffer((n,), "float32", "P", data=p)
    fill = loop(n, lambda i: tir.BufferStore(view, f32(3), (i,)))
    body = tir.IfThenElse(
        tir.isnullptr(p).astype("bool"), tir.Evaluate(0), tir.DeclBuffer(view, fill)
    )
    f = tir.PrimFunc((p, n), body, attrs={"global_symbol": "fill_ptr"})
    built = kiln.build(f)
    a = np.zeros(4, "float32")
    built["fill_ptr"](a, 4)
    np.testing.assert_array_equal(a, 3)
    built["fill_ptr"](None, 4)  # NULL: the kernel checks it
    _raises(
        TypeError,
        "fill_ptr: argument p expected a pointer or tensor, got float",
        built["fill_ptr"],
        1.0,
        4,
    )


HARNESS = r"""
#include <tvm/ffi/c_api.h>
/* Calls args[0] (a tvm-ffi function) with one raw DLTensor* on device `args[1]`, data `args[2]`. */
int __tvm_ffi_call_raw(void* self, const TVMFFIAny* args, int32_t n, TVMFFIAny* result) {
  static float storage[4];
  int64_t shape[1] = {4};
  DLTensor t;
  TVMFFIAny arg;
  (void)self;
  (void)n;
  t.data = args[2].v_int64 ? storage : NULL;
  t.device.device_type = (DLDeviceType)args[1].v_int64;
  t.device.device_id = 0;
  t.ndim = 1;
  t.dtype.code = kDLFloat;
  t.dtype.bits = 32;
  t.dtype.lanes = 1;
  t.shape = shape;
  t.strides = NULL;
  t.byte_offset = 0;
  arg.type_index = kTVMFFIDLTensorPtr;
  arg.zero_padding = 0;
  arg.v_ptr = &t;
  result->type_index = kTVMFFINone;
  return TVMFFIFunctionCall(args[0].v_obj, &arg, 1, result);
}
"""


def test_raw_dltensor_device_and_null_data() -> None:
    fill = prim_func(
        "fill",
        {"A": ((4,), "float32")},
        lambda A: loop(4, lambda i: tir.BufferStore(A, f32(1), (i,))),
    )
    f = kiln.build(fill)["fill"]
    harness = build_module(HARNESS + metadata_c_source(["call_raw"]), name_hint="harness")
    harness["call_raw"](f, 1, 1)  # a CPU DLTensor* with data: accepted
    _raises(
        ValueError,
        "fill: argument A.device expected cpu, got device type 2",
        harness["call_raw"],
        f,
        2,
        1,
    )
    _raises(
        ValueError,
        "fill: argument A.data expected a non-null pointer, got NULL",
        harness["call_raw"],
        f,
        1,
        0,
    )
