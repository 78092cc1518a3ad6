"""The oneDNN (``dnnl``) external codegen: ``conv2d`` and ``matmul`` / ``linear`` with a bias, ReLU
and residual-add epilogue, as calls of oneDNN's C API.

oneDNN comes from the optional extra ``kiln[dnnl]``: the ``onednn-cpu-gomp`` wheel (``libdnnl.so``,
built with GNU OpenMP like kiln's own kernels) and ``onednn-devel-cpu-gomp`` (headers); `paths`
finds them in the installed distributions. NOTE: the newer ``onednn`` wheel is a SYCL build whose
CPU engine needs an OpenCL CPU runtime found through environment variables, so kiln uses the
OpenMP build.

`patterns()` gives the chains `PartitionForCompiler("dnnl")` matches (float32, constant shapes,
NCHW/OIHW ``conv2d`` with ``groups=1``, 2-D ``matmul`` whose weight may be a ``permute_dims``);
`codegen(func)` turns one partitioned function into C (`kiln.relax.backend.dnnl_c`) that is
compiled and linked by kiln's toolchain with `flags()`.
"""

from __future__ import annotations

import importlib.metadata as md
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kiln.errors import KilnError
from kiln.relax.analysis.chain_pattern import ChainPattern
from kiln.relax.backend.codegen import CSource, register_codegen, register_patterns
from kiln.relax.backend.dnnl_c import HELPERS
from kiln.relax.binding import Binding
from kiln.relax.expr import Call, Function, SeqExpr, Var
from kiln.relax.struct_info import TensorStructInfo

NAME = "dnnl"
EXTRA = "kiln[dnnl]"
_LIB_DIST, _DEV_DIST = "onednn-cpu-gomp", "onednn-devel-cpu-gomp"


# -- the library -------------------------------------------------------------------------------
def paths() -> tuple[Path, Path] | None:
    """(include directory, library directory) of the installed oneDNN, or None."""
    try:
        lib_files = md.distribution(_LIB_DIST).files or []
        dev = md.distribution(_DEV_DIST)
    except md.PackageNotFoundError:
        return None
    lib = next((f for f in lib_files if f.name == "libdnnl.so"), None)
    header = next((f for f in dev.files or [] if str(f).endswith("oneapi/dnnl/dnnl.h")), None)
    if lib is None or header is None:
        return None
    inc = Path(str(dev.locate_file(header))).resolve().parent.parent.parent
    libdir = Path(str(md.distribution(_LIB_DIST).locate_file(lib))).resolve().parent
    return inc, libdir


def require() -> tuple[Path, Path]:
    """`paths`, or a `KilnError` naming the extra to install."""
    found = paths()
    if found is None:
        raise KilnError(
            f"the dnnl backend needs oneDNN, which is not installed: pip install '{EXTRA}' "
            f"(the {_LIB_DIST} and {_DEV_DIST} wheels)"
        )
    return found


def flags() -> tuple[str, ...]:
    """Compiler and linker flags for C that calls oneDNN."""
    inc, libdir = require()
    # NOTE: --no-as-needed keeps libdnnl although it is named before the source that uses it.
    return (f"-I{inc}", f"-L{libdir}", "-Wl,--no-as-needed", "-ldnnl", f"-Wl,-rpath,{libdir}")


# -- what a partitioned function computes ------------------------------------------------------
@dataclass
class Plan:
    """One oneDNN primitive: an anchor, its operands (parameter indices) and its epilogue."""

    kind: str  # "conv2d" or "matmul"
    src: int
    weights: int
    transpose_weights: bool = False
    bias: int | None = None
    post: list[tuple[str, int]] = field(default_factory=list)  # ("relu", -1) / ("add", param)
    attrs: Any = None
    shapes: list[tuple[int, ...]] = field(default_factory=list)  # params then the output


def _dims(e: Any) -> tuple[int, ...] | None:
    s = getattr(e, "struct_info_", None)
    if not isinstance(s, TensorStructInfo) or s.dims is None or str(s.dtype) != "float32":
        return None
    if not all(hasattr(d, "value") for d in s.dims):
        return None
    return tuple(d.value for d in s.dims)


def _anchor_ok(call: Call) -> bool:
    name = call.op.name
    if name == "relax.nn.conv2d":
        a = call.attrs
        return (
            a["groups"] == 1
            and (a["data_layout"], a["kernel_layout"]) == ("NCHW", "OIHW")
            and a["out_dtype"] in (None, "float32")
        )
    return name == "relax.matmul" and call.attrs.get("out_dtype") in (None, "float32")


def _is_bias(kind: str, bias: tuple[int, ...], out: tuple[int, ...]) -> bool:
    if kind == "conv2d":
        return bias in ((1, out[1], 1, 1), (out[1], 1, 1))
    return bias in ((out[1],), (1, out[1]))


def plan_chain(bindings: list[Binding], index: dict[int, int]) -> Plan | None:
    """The plan of a matched chain, or None when oneDNN (or this codegen) cannot run it;
    ``index`` maps each free operand (by ``id``) to its parameter position."""
    calls = [b.value for b in bindings]
    if not all(isinstance(c, Call) and _dims(c) is not None for c in calls):
        return None
    k, transpose = 0, False
    if calls[0].op.name == "relax.permute_dims":
        axes = calls[0].attrs.get("axes")
        if _dims(calls[0].args[0]) is None or len(_dims(calls[0].args[0]) or ()) != 2:
            return None
        if axes not in (None, (1, 0)) or calls[1].args[1] is not bindings[0].var:
            return None
        k, transpose = 1, True
    anchor = calls[k]
    if not _anchor_ok(anchor) or any(_dims(a) is None for a in anchor.args):
        return None
    kind = "conv2d" if anchor.op.name == "relax.nn.conv2d" else "matmul"
    if kind == "matmul" and any(len(_dims(a) or ()) != 2 for a in anchor.args):
        return None
    weights = calls[0].args[0] if transpose else anchor.args[1]
    if id(anchor.args[0]) not in index or id(weights) not in index:
        return None
    plan = Plan(kind, index[id(anchor.args[0])], index[id(weights)], transpose, attrs=anchor.attrs)
    out = _dims(anchor)
    assert out is not None
    for prev, b in zip(bindings[k:], bindings[k + 1 :]):
        if not _epilogue(plan, b.value, prev.var, out, index):
            return None
    return plan


def _epilogue(plan: Plan, call: Call, prev: Var, out: tuple[int, ...], index: dict) -> bool:
    if call.op.name == "relax.nn.relu":
        plan.post.append(("relu", -1))
        return True
    if call.op.name != "relax.add":
        return False
    others = [a for a in call.args if a is not prev]
    if len(others) != 1 or id(others[0]) not in index:
        return False
    other, dims = others[0], _dims(others[0])
    if dims is None:
        return False
    if plan.bias is None and not plan.post and _is_bias(plan.kind, dims, out):
        plan.bias = index[id(other)]
        return True
    if dims == out:
        plan.post.append(("add", index[id(other)]))
        return True
    return False


def _check(bindings: list[Binding]) -> bool:
    free: dict[int, int] = {}
    inside = {id(b.var) for b in bindings}
    for b in bindings:
        for a in b.value.args if isinstance(b.value, Call) else ():
            if id(a) not in inside and isinstance(a, Var) or getattr(a, "data", None) is not None:
                free.setdefault(id(a), len(free))
    return plan_chain(bindings, free) is not None


def patterns() -> list[ChainPattern]:
    """The chains `PartitionForCompiler("dnnl")` looks for, longest first."""
    require()
    tails = [
        ("relax.add", "relax.nn.relu", "relax.add"),
        ("relax.add", "relax.nn.relu"),
        ("relax.nn.relu", "relax.add"),
        ("relax.add", "relax.add"),
        ("relax.add",),
        ("relax.nn.relu",),
        (),
    ]
    heads = [("relax.nn.conv2d",), ("relax.permute_dims", "relax.matmul"), ("relax.matmul",)]
    out = []
    for head in heads:
        for tail in tails:
            ops = (*head, *tail)
            name = "dnnl." + "_".join(op.rsplit(".", 1)[-1] for op in ops)
            out.append(ChainPattern(name, ops, _check))
    return out


# -- the C -------------------------------------------------------------------------------------
def codegen(func: Function) -> CSource:
    """C calling oneDNN for one partitioned function (its ``global_symbol`` is the symbol)."""
    symbol = func.global_symbol
    body = func.body
    if symbol is None or not isinstance(body, SeqExpr):
        raise KilnError("dnnl codegen: expected a function with a global_symbol and a body")
    bindings = [b for blk in body.blocks for b in blk.bindings]
    plan = plan_chain(bindings, {id(p): k for k, p in enumerate(func.params)})
    if plan is None:
        ops = [getattr(getattr(b.value, "op", None), "name", "?") for b in bindings]
        raise KilnError(f"dnnl codegen: cannot run {ops} in oneDNN (see dnnl.patterns())")
    plan.shapes = [_dims(p) or () for p in func.params] + [_dims(bindings[-1].value) or ()]
    return CSource(HELPERS + _function_c(symbol, plan), flags())


def _ints(values: Any) -> str:
    return "{" + ", ".join(str(int(v)) for v in values) + "}"


def _md(var: str, dims: tuple[int, ...], tag: str) -> str:
    return (
        f"  KILN_DNNL_CHECK(fn, dnnl_memory_desc_create_with_tag(&{var}, {len(dims)}, "
        f"(dnnl_dims_t){_ints(dims)}, dnnl_f32, {tag}));"
    )


def _descs(plan: Plan) -> list[str]:
    s, w, o = plan.shapes[plan.src], plan.shapes[plan.weights], plan.shapes[-1]
    plain = {2: "dnnl_ab", 4: "dnnl_abcd"}
    if plan.kind == "conv2d":
        lines = [_md("src_u", s, "dnnl_nchw"), _md("wei_u", w, "dnnl_oihw")]
        lines += [_md("dst_u", o, "dnnl_nchw"), _md("src_a", s, "dnnl_format_tag_any")]
        lines += [_md("wei_a", w, "dnnl_format_tag_any"), _md("dst_a", o, "dnnl_format_tag_any")]
        if plan.bias is not None:
            lines.append(_md("bias_md", (o[1],), "dnnl_a"))
    else:
        logical = (w[1], w[0]) if plan.transpose_weights else w
        tag = "dnnl_ba" if plan.transpose_weights else "dnnl_ab"
        lines = [_md("src_u", s, "dnnl_ab"), _md("wei_u", logical, tag), _md("dst_u", o, "dnnl_ab")]
        lines += [_md("src_a", s, "dnnl_ab"), _md("wei_a", logical, "dnnl_format_tag_any")]
        lines.append(_md("dst_a", o, "dnnl_ab"))
        if plan.bias is not None:
            lines.append(_md("bias_md", (1, o[1]), "dnnl_ab"))
    for k, (what, _) in enumerate(plan.post):
        if what == "add":
            lines.append(_md(f"post_md[{k}]", o, plain[len(o)]))
    return lines


def _post_ops(plan: Plan) -> list[str]:
    lines = ["  KILN_DNNL_CHECK(fn, dnnl_primitive_attr_create(&attr));"]
    lines.append("  KILN_DNNL_CHECK(fn, dnnl_post_ops_create(&po));")
    for k, (what, _) in enumerate(plan.post):
        if what == "relu":
            call = "dnnl_post_ops_append_eltwise(po, dnnl_eltwise_relu, 0.f, 0.f)"
            lines.append(f"  KILN_DNNL_CHECK(fn, {call});")
        else:
            call = f"dnnl_post_ops_append_binary(po, dnnl_binary_add, post_md[{k}])"
            lines.append(f"  KILN_DNNL_CHECK(fn, {call});")
    lines.append("  KILN_DNNL_CHECK(fn, dnnl_primitive_attr_set_post_ops(attr, po));")
    return lines


def _primitive_desc(plan: Plan) -> str:
    bias = "bias_md" if plan.bias is not None else "NULL"
    if plan.kind == "matmul":
        return (
            "  KILN_DNNL_CHECK(fn, dnnl_matmul_primitive_desc_create(&pd, kiln_dnnl_eng, src_a, "
            f"wei_a, {bias}, dst_a, attr));"
        )
    a = plan.attrs
    top, left, bottom, right = a["padding"]
    dil = [d - 1 for d in a["dilation"]]
    return (
        "  KILN_DNNL_CHECK(fn, dnnl_convolution_forward_primitive_desc_create(&pd, kiln_dnnl_eng, "
        f"dnnl_forward_inference, dnnl_convolution_direct, src_a, wei_a, {bias}, dst_a, "
        f"(dnnl_dims_t){_ints(a['strides'])}, (dnnl_dims_t){_ints(dil)}, "
        f"(dnnl_dims_t){_ints((top, left))}, (dnnl_dims_t){_ints((bottom, right))}, attr));"
    )


def _function_c(symbol: str, plan: Plan) -> str:
    p = f"kiln_dnnl_{symbol}"
    n_in = len(plan.shapes) - 1
    n_post = max(1, len(plan.post))
    shapes = "\n".join(
        f"static const int64_t {p}_shape{k}[] = {_ints(s) if s else '{0}'};"
        for k, s in enumerate(plan.shapes)
    )
    init = [
        f"static int {p}_init(void) {{",
        f'  const char* fn = "{symbol}";',
        "  dnnl_memory_desc_t src_u, wei_u, dst_u, src_a, wei_a, dst_a, bias_md = NULL;",
        f"  dnnl_memory_desc_t post_md[{n_post}];",
        "  dnnl_primitive_attr_t attr;",
        "  dnnl_post_ops_t po;",
        "  dnnl_primitive_desc_t pd;",
        "  if (kiln_dnnl_setup(fn) != 0) return -1;",
        *_descs(plan),
        *_post_ops(plan),
        _primitive_desc(plan),
        f"  if ({p}_buf(fn, &{p}.src, src_u, pd, dnnl_query_src_md, 1) != 0) return -1;",
        f"  if ({p}_buf(fn, &{p}.wei, wei_u, pd, dnnl_query_weights_md, 1) != 0) return -1;",
        f"  if ({p}_buf(fn, &{p}.dst, dst_u, pd, dnnl_query_dst_md, 0) != 0) return -1;",
    ]
    if plan.bias is not None:
        init.append(
            f"  KILN_DNNL_CHECK(fn, dnnl_memory_create(&{p}.bias, bias_md, kiln_dnnl_eng, "
            "DNNL_MEMORY_NONE));"
        )
    for k, (what, _) in enumerate(plan.post):
        if what == "add":
            init.append(
                f"  KILN_DNNL_CHECK(fn, dnnl_memory_create(&{p}.post[{k}], post_md[{k}], "
                "kiln_dnnl_eng, DNNL_MEMORY_NONE));"
            )
    init += [
        f"  KILN_DNNL_CHECK(fn, dnnl_primitive_create(&{p}.prim, pd));",
        "  dnnl_primitive_desc_destroy(pd);",
        "  dnnl_primitive_attr_destroy(attr);",
        "  dnnl_post_ops_destroy(po);",
        f"  {p}.ready = 1;",
        "  return 0;",
        "}",
    ]
    return "\n".join([
        f"\n/* oneDNN {plan.kind} for {symbol} (kiln dnnl codegen) */",
        shapes,
        f"static struct {{ int ready; dnnl_primitive_t prim; kiln_dnnl_buf src, wei, dst; "
        f"dnnl_memory_t bias; dnnl_memory_t post[{n_post}]; }} {p};",
        _buf_fn(p),
        *init,
        _entry(symbol, p, plan, n_in),
    ])  # fmt: skip


def _buf_fn(p: str) -> str:
    return f"""static int {p}_buf(const char* fn, kiln_dnnl_buf* b, dnnl_memory_desc_t user,
                           dnnl_primitive_desc_t pd, dnnl_query_t what, int input) {{
  return kiln_dnnl_buf_init(fn, b, user, dnnl_primitive_desc_query_md(pd, what, 0), input);
}}"""


def _entry(symbol: str, p: str, plan: Plan, n_in: int) -> str:
    n = n_in + 1
    checks = "\n".join(
        f"  if (kiln_dnnl_arg(args, {k}, fn, {len(s)}, {p}_shape{k}, &data[{k}]) != 0) return -1;"
        for k, s in enumerate(plan.shapes)
    )
    args = [
        ("DNNL_ARG_SRC", f"{p}.src.inner"),
        ("DNNL_ARG_WEIGHTS", f"{p}.wei.inner"),
        ("DNNL_ARG_DST", f"{p}.dst.inner"),
    ]
    handles = [
        f"  dnnl_memory_set_data_handle({p}.src.user, data[{plan.src}]);",
        f"  dnnl_memory_set_data_handle({p}.wei.user, data[{plan.weights}]);",
        f"  dnnl_memory_set_data_handle({p}.dst.user, data[{n_in}]);",
    ]
    if plan.bias is not None:
        args.append(("DNNL_ARG_BIAS", f"{p}.bias"))
        handles.append(f"  dnnl_memory_set_data_handle({p}.bias, data[{plan.bias}]);")
    for k, (what, idx) in enumerate(plan.post):
        if what == "add":
            args.append((f"DNNL_ARG_ATTR_MULTIPLE_POST_OP({k}) | DNNL_ARG_SRC_1", f"{p}.post[{k}]"))
            handles.append(f"  dnnl_memory_set_data_handle({p}.post[{k}], data[{idx}]);")
    exec_args = "\n".join(
        f"  ea[{k}].arg = {a};\n  ea[{k}].memory = {m};" for k, (a, m) in enumerate(args)
    )
    return f"""
TVM_FFI_DLL_EXPORT int __tvm_ffi_{symbol}(void* self, const TVMFFIAny* args, int32_t num_args,
                                  TVMFFIAny* result) {{
  const char* fn = "{symbol}";
  void* data[{n}];
  dnnl_exec_arg_t ea[{len(args)}];
  (void)self;
  (void)result;
  if (num_args != {n})
    return kiln_dnnl_error("TypeError", fn, "expected (arguments, got)", {n}, num_args);
{checks}
  if (!{p}.ready && {p}_init() != 0) return -1;
{chr(10).join(handles)}
  if (kiln_dnnl_reorder(fn, &{p}.src, 1) != 0) return -1;
  if (kiln_dnnl_reorder(fn, &{p}.wei, 1) != 0) return -1;
{exec_args}
  KILN_DNNL_CHECK(fn, dnnl_primitive_execute({p}.prim, kiln_dnnl_strm, {len(args)}, ea));
  if (kiln_dnnl_reorder(fn, &{p}.dst, 0) != 0) return -1;
  KILN_DNNL_CHECK(fn, dnnl_stream_wait(kiln_dnnl_strm));
  return 0;
}}
"""


register_codegen(NAME, codegen)
register_patterns(NAME, patterns)
