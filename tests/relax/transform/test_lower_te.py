"""LowerTE: the six call forms of seed 001 (primitive global / local / inline functions called once
or many times, Compiler functions through a registered codegen, Extern functions, PrimFuncs,
calls already lowered, plain calls), the structural cache, shape functions for dynamic results,
and numerics of lowered modules against numpy."""

# ruff: noqa: F841 - names in R scripts are script variables, not Python locals

from __future__ import annotations

import numpy as np
import pytest

from kiln.ir import GlobalVar, IRModule, assert_structural_equal
from kiln.relax import Call, Function, SeqExpr, TensorStructInfo, Var, VarBinding
from kiln.relax.analysis.well_formed import verify_module
from kiln.relax.binding import BindingBlock
from kiln.relax.op import add
from kiln.relax.transform import FuseOps, LowerTE
from kiln.script import from_source
from kiln.script import ir as I
from kiln.script import relax as R
from kiln.script import tir as T
from kiln.tir import PrimFunc
from tests.relax.transform.lowered import build, run
from tests.vm.harness import machine


def body_call(mod: IRModule, name: str = "main", k: int = 0) -> Call:
    """The value of binding ``k`` of function ``name``."""
    func = mod[name]
    bindings = [b for blk in func.body.blocks for b in blk.bindings]
    return bindings[k].value


def lower(mod: IRModule) -> IRModule:
    out = LowerTE("test", "c")(mod)
    verify_module(out)
    return out


def _a() -> np.ndarray:
    return np.arange(35, dtype="float32").reshape(5, 7) / 7


@I.ir_module
class GlobalPrimitive:
    @R.function(private=True)
    def add_prim(x: R.Tensor((5, 7), "float32"), y: R.Tensor((5, 7), "float32")) -> R.Tensor(
        (5, 7), "float32"
    ):
        R.func_attr({"Primitive": 1})
        z = R.add(x, y)
        return z

    @R.function
    def main(a: R.Tensor((5, 7), "float32")) -> R.Tensor((5, 7), "float32"):
        cls = GlobalPrimitive
        b = cls.add_prim(a, a)
        c = cls.add_prim(b, a)
        return c


def test_lower_global_primitive_called_twice() -> None:
    mod = lower(GlobalPrimitive)
    for k, first in enumerate(["a", "b"]):
        call = body_call(mod, k=k)
        assert call.op.name == "relax.call_lowered"
        assert call.args[0].name_hint == "test_fused_add"
        assert [f.name_hint for f in call.args[1].fields] == [first, "a"]
        assert call.attrs["func_attrs"]["Primitive"] == 1
        assert [g.name_hint for g in call.attrs["all_prim_fn_vars"]] == ["test_fused_add"]
        assert "prim_shape_fn_var" not in call.attrs
    assert isinstance(mod["test_fused_add"], PrimFunc)
    assert mod["test_fused_add"].get_attr("target") == "c"
    assert "add_prim" not in mod  # lowered, and nothing calls it any more
    np.testing.assert_allclose(run(mod, "main", _a()), 3 * _a())


@I.ir_module
class LocalPrimitive:
    @R.function
    def main(a: R.Tensor((5, 7), "float32")) -> R.Tensor((5, 7), "float32"):
        @R.function
        def f(x: R.Tensor((5, 7), "float32"), y: R.Tensor((5, 7), "float32")) -> R.Tensor(
            (5, 7), "float32"
        ):
            R.func_attr({"Primitive": 1})
            z = R.add(x, y)
            return z

        b = f(a, a)
        c = f(b, a)
        return c


def test_lower_local_primitive_called_twice_and_the_binding_goes() -> None:
    mod = lower(LocalPrimitive)
    assert [gv.name_hint for gv in mod.get_global_vars()] == ["main", "test_fused_add"]
    calls = [body_call(mod, k=k) for k in range(2)]
    assert all(c.op.name == "relax.call_lowered" for c in calls)
    assert all(c.args[0].name_hint == "test_fused_add" for c in calls)
    assert mod["test_fused_add"].span == LocalPrimitive["main"].body.blocks[0].bindings[0].span
    np.testing.assert_allclose(run(mod, "main", _a()), 3 * _a())


def test_lower_inline_primitive() -> None:
    sinfo = TensorStructInfo([5, 7], "float32")
    x, y, a, b = Var("x", sinfo), Var("y", sinfo), Var("a", sinfo), Var("b", sinfo)
    z = Var("z", sinfo)
    prim_body = SeqExpr((BindingBlock((VarBinding(z, add(x, y)),)),), z)
    prim = Function((x, y), prim_body, sinfo, attrs={"Primitive": 1})
    main = Function(
        (a,), SeqExpr((BindingBlock((VarBinding(b, Call(prim, (a, a))),)),), b), sinfo
    ).with_attr("global_symbol", "main")
    mod = lower(IRModule({"main": main}))
    call = body_call(mod)
    assert call.op.name == "relax.call_lowered"
    assert call.args[0].name_hint == "test_fused_add"
    assert call.struct_info.dims[0].value == 5
    np.testing.assert_allclose(run(mod, "main", _a()), 2 * _a())


def test_equal_primitives_share_one_prim_func_and_different_ones_do_not() -> None:
    @I.ir_module
    class Module:
        @R.function
        def main(a: R.Tensor((5, 7), "float32"), h: R.Tensor((5, 7), "float16")):
            with R.dataflow():
                b = R.add(a, a)
                s = R.nn.softmax(b)
                c = R.add(s, s)  # the same as b's group: one PrimFunc
                t = R.nn.softmax(c)
                d = R.add(h, h)  # another dtype: another PrimFunc
                R.output(t, d)
            return (t, d)

    fused = FuseOps()(Module)
    assert sum(1 for _, f in fused.items() if f.get_attr("Primitive")) == 5
    mod = lower(fused)
    prims = sorted(gv.name_hint for gv, f in mod.items() if isinstance(f, PrimFunc))
    assert prims == ["test_fused_add", "test_fused_add_1", "test_fused_softmax"]
    names = [body_call(mod, k=k).args[0].name_hint for k in range(5)]
    assert names == ["test_fused_add", "test_fused_softmax"] * 2 + ["test_fused_add_1"]
    assert not any(f.get_attr("Primitive") for _, f in mod.items())


def test_lower_primitive_with_dynamic_result_calls_its_shape_function() -> None:
    @I.ir_module
    class Module:
        @R.function(private=True)
        def dyn(x: R.Tensor(("n", 7), "float32")) -> R.Tensor(ndim=2, dtype="float32"):
            R.func_attr({"Primitive": 1})
            y = R.exp(x)
            z = R.add(y, x)
            return z

        @R.function
        def main(a: R.Tensor(("m", 7), "float32")) -> R.Tensor(ndim=2, dtype="float32"):
            cls = Module
            b = cls.dyn(a)
            return b

    mod = lower(Module)
    call = body_call(mod)
    assert call.attrs["prim_shape_fn_var"].name_hint == "shape_func_exp_add"
    assert list(call.attrs["prim_shape_fn_states"]) == [2]
    assert isinstance(mod["shape_func_exp_add"], PrimFunc)
    x = np.linspace(-1, 1, 21, dtype="float32").reshape(3, 7)
    np.testing.assert_allclose(run(mod, "main", x), np.exp(x) + x, rtol=1e-6)


def test_a_variable_no_parameter_binds_is_passed_as_tir_vars() -> None:
    # the matmul group's parameter is (n * 2, 2): n is not a dim of it, so the call passes it
    @I.ir_module
    class Module:
        @R.function
        def main(x: R.Tensor(("n", 4), "float32"), w: R.Tensor((2, 3), "float32")):
            n = T.int64()
            with R.dataflow():
                a = R.reshape(x, R.shape([n * 2, 2]))
                b = R.nn.relu(R.matmul(a, w))
                R.output(b)
            return b

    mod = lower(FuseOps()(Module))
    call = body_call(mod, k=1)
    assert call.args[0].name_hint == "test_fused_matmul_relu"
    (n,) = mod["main"].params[0].struct_info.dims[:1]
    assert len(call.args) == 3 and list(call.args[2].values) == [n]
    assert_structural_equal(from_source(mod.script()), mod)
    rng = np.random.default_rng(0)
    w = rng.standard_normal((2, 3)).astype("float32")
    for rows in (1, 5):
        x = rng.standard_normal((rows, 4)).astype("float32")
        want = np.maximum(x.reshape(rows * 2, 2) @ w, 0)
        np.testing.assert_allclose(run(mod, "main", x, w), want, rtol=1e-5, atol=1e-6)
        for mode in ("bytecode", "compiled"):
            got = machine(Module, mode)["main"](x, w).numpy()
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, err_msg=mode)


# -- Compiler, Extern and PrimFunc callees ----------------------------------------------------
def _compiler_module(codegen: str, symbol: str = "test_add") -> IRModule:
    @I.ir_module
    class Module:
        @R.function(private=True)
        def ext(x: R.Tensor((5, 7), "float32"), y: R.Tensor((5, 7), "float32")) -> R.Tensor(
            (5, 7), "float32"
        ):
            R.func_attr({"Primitive": 1, "Compiler": "CODEGEN", "global_symbol": "SYMBOL"})
            z = R.add(x, y)
            return z

        @R.function
        def main(a: R.Tensor((5, 7), "float32")) -> R.Tensor((5, 7), "float32"):
            cls = Module
            b = cls.ext(a, a)
            c = cls.ext(b, a)
            return c

    text = Module.script().replace("CODEGEN", codegen).replace("SYMBOL", symbol)
    return from_source(text)


_ADD_TWICE_C = r"""
#include <tvm/ffi/c_api.h>
#include <dlpack/dlpack.h>
static DLTensor* test_ext_tensor(const TVMFFIAny* a) {
  if (a->type_index == kTVMFFITensor) return (DLTensor*)((char*)a->v_obj + sizeof(TVMFFIObject));
  return (DLTensor*)a->v_ptr;
}
TVM_FFI_DLL_EXPORT int __tvm_ffi_SYMBOL(void* self, const TVMFFIAny* args, int32_t n,
                                        TVMFFIAny* result) {
  const float* x = (const float*)test_ext_tensor(&args[0])->data;
  const float* y = (const float*)test_ext_tensor(&args[1])->data;
  float* z = (float*)test_ext_tensor(&args[2])->data;
  for (int i = 0; i < 35; ++i) z[i] = x[i] + 2.0f * y[i];  /* not add: proves this code ran */
  return 0;
}
"""


def test_lower_compiler_function_calls_codegen_once_and_links_its_c(
    codegen_log: list[str],
) -> None:
    mod = lower(_compiler_module("test_pass_lower_te"))
    assert codegen_log == ["test_add"]  # one function, called twice: one codegen call
    call = body_call(mod)
    assert call.op.name == "relax.call_lowered"
    assert call.args[0].name_hint == "test_add"
    fa = call.attrs["func_attrs"]
    assert (fa["Primitive"], fa["Compiler"], fa["global_symbol"]) == (
        1,
        "test_pass_lower_te",
        "test_add",
    )
    assert list(call.attrs["all_prim_fn_vars"]) == []
    ext = mod["test_add"]
    assert isinstance(ext, Function) and dict(ext.attrs) == {"Extern": 1}
    assert "ext" not in mod
    (source,) = mod.get_attr("external_mods")
    assert source.symbol == "test_add" and source.compiler == "test_pass_lower_te"
    a = _a()
    np.testing.assert_allclose(run(mod, "main", a), (a + 2 * a) + 2 * a)


@pytest.fixture
def codegen_log():
    from kiln.relax.backend import register_codegen, unregister_codegen

    log: list[str] = []

    def codegen(func: Function) -> str:
        log.append(func.global_symbol)
        return _ADD_TWICE_C.replace("SYMBOL", func.global_symbol)

    register_codegen("test_pass_lower_te", codegen)
    yield log
    unregister_codegen("test_pass_lower_te")


def test_codegen_returning_none_keeps_the_extern_function(codegen_log: list[str]) -> None:
    from kiln.relax.backend import register_codegen

    register_codegen("test_pass_lower_te", lambda f: None, override=True)
    mod = lower(_compiler_module("test_pass_lower_te"))
    assert mod.get_attr("external_mods") is None
    assert dict(mod["test_add"].attrs) == {"Extern": 1}


@I.ir_module
class ExternCall:
    @R.function
    def my_add(x: R.Tensor((5, 7), "float32"), y: R.Tensor((5, 7), "float32")) -> R.Tensor(
        (5, 7), "float32"
    ):
        R.func_attr({"Extern": 1})
        z = R.add(x, y)
        return z

    @R.function
    def main(a: R.Tensor((5, 7), "float32")) -> R.Tensor((5, 7), "float32"):
        cls = ExternCall
        b = cls.my_add(a, a)
        return b


def test_lower_extern_call() -> None:
    mod = lower(ExternCall)
    call = body_call(mod)
    assert call.op.name == "relax.call_lowered"
    assert call.args[0].name_hint == "my_add"
    assert [f.name_hint for f in call.args[1].fields] == ["a", "a"]
    assert call.attrs["func_attrs"]["Extern"] == 1
    assert list(call.attrs["all_prim_fn_vars"]) == []
    assert mod["my_add"] is ExternCall["my_add"]


@I.ir_module
class ExternDynamic:
    @R.function
    def my_dyn(x: R.Tensor((5, 7), "float32"), y: R.Tensor((5, 7), "float32")) -> R.Tensor(
        ndim=2, dtype="float32"
    ):
        R.func_attr({"Extern": 1})
        z = R.add(x, y)
        return z

    @R.function
    def main(a: R.Tensor((5, 7), "float32")) -> R.Tensor(ndim=2, dtype="float32"):
        cls = ExternDynamic
        b = cls.my_dyn(a, a)
        return b


def test_lower_extern_with_dynamic_shape() -> None:
    mod = lower(ExternDynamic)
    call = body_call(mod)
    assert call.args[0].name_hint == "my_dyn"
    assert call.attrs["prim_shape_fn_var"].name_hint == "shape_func_add"
    assert call.attrs["func_attrs"]["Extern"] == 1
    assert list(call.attrs["prim_shape_fn_states"]) == [2, 2]
    assert call.attrs["prim_shape_fn_num_inputs"] == 2
    assert call.attrs["prim_shape_fn_num_outputs"] == 1
    assert [g.name_hint for g in call.attrs["all_prim_shape_fn_vars"]] == ["shape_func_add"]
    assert list(call.attrs["all_prim_fn_vars"]) == []
    assert isinstance(mod["my_dyn"], Function) and mod["my_dyn"].get_attr("Extern") == 1
    shape_fn = mod["shape_func_add"]
    assert isinstance(shape_fn, PrimFunc) and shape_fn.get_attr("target") == "c"
    lib = build(mod)
    out = np.zeros(2, "int64")
    lib["shape_func_add"](np.array([5, 7]), np.array([5, 7]), out)
    assert list(out) == [5, 7]


@I.ir_module
class PrimFuncCall:
    @T.prim_func(private=True)
    def twice(x: T.Buffer((5, 7), "float32"), y: T.Buffer((5, 7), "float32")):
        for i, j in T.grid(5, 7):
            y[i, j] = x[i, j] * T.float32(2)

    @R.function
    def main(a: R.Tensor((5, 7), "float32")) -> R.Tensor((5, 7), "float32"):
        cls = PrimFuncCall
        b = cls.twice(a, sinfo_args=R.Tensor((5, 7), "float32"))
        return b


def test_lower_prim_func_call() -> None:
    mod = lower(PrimFuncCall)
    call = body_call(mod)
    assert call.op.name == "relax.call_lowered"
    assert [g.name_hint for g in call.attrs["all_prim_fn_vars"]] == ["twice"]
    np.testing.assert_allclose(run(mod, "main", _a()), 2 * _a())


def test_lowering_twice_changes_nothing_and_plain_calls_stay() -> None:
    @I.ir_module
    class Module:
        @R.function(private=True)
        def helper(x: R.Tensor((5, 7), "float32")) -> R.Tensor((5, 7), "float32"):
            y = R.add(x, x)
            return y

        @R.function
        def main(a: R.Tensor((5, 7), "float32")) -> R.Tensor((5, 7), "float32"):
            cls = Module
            b = cls.helper(a)
            return b

    assert LowerTE("test")(Module) is Module  # a plain function call stays as it is
    once = lower(GlobalPrimitive)
    assert LowerTE("test")(once) is once
    assert LowerTE("other")(lower(ExternCall)).get_attr("external_mods") is None


def test_lowered_module_prints_and_parses_back() -> None:
    for mod in (lower(GlobalPrimitive), lower(LocalPrimitive), lower(ExternCall)):
        assert_structural_equal(from_source(mod.script()), mod)
    assert (
        "R.call_lowered(cls.test_fused_add, (a, a), out_sinfo=" in lower(GlobalPrimitive).script()
    )


def test_debug_2_prints_the_module_after_fuse_ops_and_lower_te(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from kiln.ir.transform import Sequential
    from kiln.relax.function_pass import debug_pass_context

    @I.ir_module
    class Module:
        @R.function
        def main(a: R.Tensor((5, 7), "float32")):
            with R.dataflow():
                b = R.add(a, a)
                R.output(b)
            return b

    monkeypatch.setenv("KILN_DEBUG", "2")
    Sequential([FuseOps(), LowerTE("dbg")])(Module, debug_pass_context())
    err = capsys.readouterr().err
    after_fuse = err.index("# ---- after fuse-ops ----")
    after_lower = err.index("# ---- after lower-te ----")
    assert "def fused_add(" in err[after_fuse:after_lower]
    assert "R.call_lowered(cls.dbg_fused_add" in err[after_lower:]


def test_global_var_names_are_module_names() -> None:
    mod = lower(GlobalPrimitive)
    call = body_call(mod)
    assert isinstance(call.args[0], GlobalVar)
    assert call.args[0] is mod.get_global_var("test_fused_add")


def test_shape_functions_are_for_the_host_whatever_the_target() -> None:
    @I.ir_module
    class Module:
        @R.function(private=True)
        def dyn(x: R.Tensor(("n", 7), "float32")) -> R.Tensor(ndim=2, dtype="float32"):
            R.func_attr({"Primitive": 1})
            y = R.exp(x)
            return y

        @R.function
        def main(a: R.Tensor(("m", 7), "float32")) -> R.Tensor(ndim=2, dtype="float32"):
            cls = Module
            b = cls.dyn(a)
            return b

    mod = LowerTE("gpu", "cuda")(Module)
    assert mod["gpu_fused_exp"].get_attr("target") == "cuda -host=c"
    assert mod["shape_func_exp"].get_attr("target") == "c"
