"""Expressions of CodeGenC: types, literals, arithmetic, casts, vectors, buffer loads, intrinsics.

`CExprEmitter` turns a TIR expression into a C expression string. It is the expression half of
`CodeGenC` (statements and functions are in `c.py`); a dialect subclass (CUDA) overrides the type
tables, the class attributes and individual ``expr_<Node>`` / ``call_<op>`` methods.

Conventions of the emitted C:
- every compound expression is parenthesized, so callers never think about precedence;
- scalars map to ``<stdint.h>`` types, ``bool``, ``float`` and ``double``; vectors map to GCC
  vector-extension typedefs (``float32x8``); bool vectors are 32-bit lane masks (-1/0);
- storage-only floats (float16, bfloat16, fp8) are ``float`` values rounded after every
  operation and ``uint16_t``/``uint8_t`` in memory (see `c_prelude`);
- float min/max propagate NaN (`min_max`); on vectors they are compares and a bit blend
  (`blend_min_max`); operations GCC vectors lack
  (select, calls of scalar C functions, gathers) run lane
  by lane inside a GNU statement expression, which GCC vectorizes;
- math builtins and floor division arrive lowered (`kiln.tir.transform.LowerIntrin`): the
  emitter prints the C calls and operators it is given, and rejects what was not lowered.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from typing import Any, Callable, ClassVar

from kiln.codegen.c_prelude import Prelude, storage_float_suffix
from kiln.errors import CodegenError
from kiln.ir.deep import DeepWalker, descend
from kiln.ir.dtype import DataType
from kiln.ir.function import GlobalVar
from kiln.ir.op import Op
from kiln.tir import expr as E
from kiln.tir.buffer import Buffer
from kiln.tir.type import PointerType, PrimType, TupleType

SCALAR_C_TYPES: dict[str, str] = {
    "bool": "bool",
    "int8": "int8_t",
    "int16": "int16_t",
    "int32": "int32_t",
    "int64": "int64_t",
    "uint1": "bool",
    "int1": "bool",
    "uint8": "uint8_t",
    "uint16": "uint16_t",
    "uint32": "uint32_t",
    "uint64": "uint64_t",
    "float32": "float",
    "float64": "double",
    "handle": "void*",
    "void": "void",
}


class CExprEmitter(DeepWalker, ABC):
    """Expression printing for C-like targets (see module docstring)."""

    BINOPS: ClassVar[dict[type, str]] = {
        E.Add: "+",
        E.Sub: "-",
        E.Mul: "*",
        E.EQ: "==",
        E.NE: "!=",
        E.LT: "<",
        E.LE: "<=",
        E.GT: ">",
        E.GE: ">=",
    }
    SCALAR_TYPES: ClassVar[dict[str, str]] = SCALAR_C_TYPES
    STORAGE_FLOAT_C: ClassVar[dict[int, str]] = {16: "uint16_t", 8: "uint8_t"}
    VECTOR_TYPEDEF: ClassVar[str] = "typedef {elem} {name} __attribute__((vector_size({size})));"
    BLEND_VECTORS: ClassVar[bool] = True
    """Vector min/max print as a compare and a bit blend of GCC vectors (`blend_min_max`)."""

    prelude: Prelude

    def __init__(self) -> None:
        self.prelude = Prelude()
        self._temp_counter = 0
        self._expr_dispatch: dict[type, Callable[[Any], str]] = {}
        self.load_mask: tuple[str, frozenset[E.Var]] | None = None
        """While a masked vector store's value is emitted: (C name of the lane mask, data
        pointers whose vector loads must skip inactive lanes)."""

    # -- hooks implemented by CodeGenC --------------------------------------------------------
    @abstractmethod
    def var_name(self, v: E.Var) -> str:
        """Implemented by the concrete subclass."""

    def temp(self, hint: str = "t") -> str:
        """A fresh C name for a temporary inside a statement expression."""
        self._temp_counter += 1
        return f"kiln_{hint}{self._temp_counter}"

    # -- types ------------------------------------------------------------------------------
    def type_of(self, dtype: DataType) -> str:
        """The C type of *values* of ``dtype``."""
        if dtype.lanes > 1:
            return self.vector_type(dtype)
        if storage_float_suffix(dtype) is not None:
            return "float"
        key = str(dtype)
        if key not in self.SCALAR_TYPES:
            raise CodegenError(f"the C backend has no type for {dtype}")
        return self.SCALAR_TYPES[key]

    def storage_type(self, dtype: DataType) -> str:
        """The C type of ``dtype`` elements *in memory*."""
        if dtype.lanes == 1 and storage_float_suffix(dtype) is not None:
            return self.STORAGE_FLOAT_C[dtype.bits]
        return self.type_of(dtype)

    def vector_type(self, dtype: DataType) -> str:
        """The GCC vector typedef for ``dtype`` (declared in the prelude on first use)."""
        elem = dtype.element_of()
        if storage_float_suffix(elem) is not None:
            raise CodegenError(f"vectors of {elem} are not supported by the C backend")
        if elem.is_bool or elem.bits == 1:
            elem = DataType("int", 32)
        name = f"{elem}x{dtype.lanes}"
        size = max(1, elem.bits // 8) * dtype.lanes
        if size & (size - 1):
            raise CodegenError(f"vector {dtype}: GCC vectors need a power-of-two byte size")
        text = self.VECTOR_TYPEDEF.format(elem=self.type_of(elem), name=name, size=size)
        return self.prelude.need_typedef(name, text)

    def unaligned_vector_type(self, dtype: DataType) -> str:
        """A vector typedef with element alignment, for loads/stores at any element offset."""
        base = self.vector_type(dtype)
        name = f"kiln_{base}_u"
        align = max(1, dtype.element_of().bits // 8)
        text = f"typedef {base} {name} __attribute__((aligned({align})));"
        return self.prelude.need_typedef(name, text)

    def c_type(self, ty: PrimType | PointerType | TupleType) -> str:
        """The C type of a TIR type (typed pointers become ``T*``)."""
        if isinstance(ty, PointerType):
            elem = ty.element_type
            inner = self.storage_type(elem.dtype) if isinstance(elem, PrimType) else "void"
            if isinstance(elem, PrimType) and elem.dtype.is_void:
                inner = "void"
            return f"{self.pointer_qualifier(ty.scope)}{inner}*"
        if isinstance(ty, TupleType):
            if ty.fields:
                raise CodegenError(f"the C backend cannot return a tuple type {ty}")
            return "void"
        return self.type_of(ty.dtype)

    def pointer_qualifier(self, scope: str) -> str:
        """Address-space qualifier for a pointer into ``scope`` memory (CUDA: shared...)."""
        return ""

    # -- dispatch ---------------------------------------------------------------------------
    def expr(self, e: E.PrimExpr) -> str:
        fn = self._expr_dispatch.get(type(e))
        if fn is None:
            fn = getattr(self, f"expr_{type(e).__name__}", None)
            if fn is None:
                raise CodegenError(f"the C backend cannot emit expression {type(e).__name__}")
            self._expr_dispatch[type(e)] = fn
        return descend(self, fn, e)

    # -- leaves -----------------------------------------------------------------------------
    def expr_Var(self, v: E.Var) -> str:
        return self.var_name(v)

    expr_SizeVar = expr_Var

    def expr_IntImm(self, e: E.IntImm) -> str:
        dt, v = e.dtype, e.value
        if dt.is_bool or dt.bits == 1:
            return "true" if v else "false"
        if dt.is_handle:
            return "NULL" if v == 0 else f"((void*){v})"
        if dt == "int32" and -(2**31) < v < 2**31:
            return str(v) if v >= 0 else f"({v})"
        if dt.is_int and dt.bits == 64 and v == -(2**63):
            return "INT64_MIN"
        if dt.is_int and v == -(2 ** (dt.bits - 1)):
            return f"(({self.type_of(dt)})({v + 1} - 1))"
        suffix = "LL" if dt.is_int else "ULL"
        return f"(({self.type_of(dt)}){v}{suffix})"

    def expr_FloatImm(self, e: E.FloatImm) -> str:
        v = e.value
        if math.isnan(v):
            lit = "NAN"
        elif math.isinf(v):
            lit = "INFINITY" if v > 0 else "(-INFINITY)"
        else:
            lit = repr(v)
            if e.dtype.bits != 64:
                lit += "f"
            if v < 0 or lit.startswith("-"):
                lit = f"({lit})"
        if e.dtype.bits == 64:
            return f"((double){lit})" if lit in ("NAN", "INFINITY", "(-INFINITY)") else lit
        return self.round_storage_float(e.dtype, lit)

    def expr_StringImm(self, e: E.StringImm) -> str:
        return c_string(e.value)

    # -- arithmetic -------------------------------------------------------------------------
    def binary(self, e: E.BinaryOp, op: str) -> str:
        a, b = self.expr(e.a), self.expr(e.b)
        return self.round_storage_float(e.dtype, f"({a} {op} {b})")

    def round_storage_float(self, dtype: DataType, code: str) -> str:
        """``code`` (a float) rounded to ``dtype`` when that is a storage-only float type."""
        if storage_float_suffix(dtype) is None:
            return code
        suffix = self.prelude.need_storage_float(dtype)
        return f"kiln_round_{suffix}({code})"

    def expr_Add(self, e: E.BinaryOp) -> str:
        return self.binary(e, "+")

    def expr_Sub(self, e: E.BinaryOp) -> str:
        return self.binary(e, "-")

    def expr_Mul(self, e: E.BinaryOp) -> str:
        return self.binary(e, "*")

    def expr_Div(self, e: E.BinaryOp) -> str:
        return self.binary(e, "/")

    def expr_Mod(self, e: E.BinaryOp) -> str:
        if e.dtype.is_float:
            raise self.unlowered("a float % (fmod)")
        return self.binary(e, "%")

    def expr_FloorDiv(self, e: E.BinaryOp) -> str:
        raise self.unlowered("floordiv")

    def expr_FloorMod(self, e: E.BinaryOp) -> str:
        raise self.unlowered("floormod")

    def unlowered(self, what: str) -> CodegenError:
        """The error for IR that `LowerIntrin` rewrites and the emitter does not print."""
        return CodegenError(
            f"{what} reached the C emitter: run the LowerIntrin pass first (kiln.build does; it "
            "turns math builtins and floor division into C operations and calls)"
        )

    def expr_Min(self, e: E.BinaryOp) -> str:
        return self.min_max(e, "<")

    def expr_Max(self, e: E.BinaryOp) -> str:
        return self.min_max(e, ">")

    def min_max(self, e: E.BinaryOp, op: str) -> str:
        """``a op b ? a : b`` (``op``: ``>`` for max, ``<`` for min), and for floats NaN where
        either operand is NaN, as numpy's ``maximum``/``minimum`` and onnxruntime's ``Max``/
        ``Min``: ``(a op b) | (a != a) ? a : b`` (a NaN ``b`` fails the comparison: ``b``).
        NOTE: this is the one place that gives TIR ``Max``/``Min`` their NaN semantics, so relu,
        clip, max/min reductions and pools and softmax's row maximum propagate NaN. C's
        ``fmaxf``/``fminf`` (and x86 ``maxps`` alone) return the other operand instead. The
        ``a != a`` test costs one more compare per vector and keeps GCC 12 vectorizing the
        helper inside a pool's masked, strided loop (testing ``b == b`` instead did not); it
        needs no fast-math flag, and ``-ffinite-math-only`` would fold it away."""
        nan = e.dtype.element_of().is_float
        blend = self.blend_min_max(e, op, nan)
        if blend is not None:
            return blend
        test = f"((a {op} b) | (a != a))" if nan else f"a {op} b"
        kind = "max" if op == ">" else "min"
        return self.helper_call(e, kind, f"return {test} ? a : b;")

    def blend_min_max(self, e: E.BinaryOp, op: str, nan: bool) -> str | None:
        """`min_max` on two vectors of a native type as compares and a blend of the bits, or
        None where that does not apply (scalars, storage-only floats, bools).
        NOTE: the lane-by-lane helper loop is not vectorized by GCC inside some unrolled nests
        (a 3x3 max pool ran as scalar ``vmaxss``); the blend compiles to ``vcmpps`` and
        ``vpblendmd`` (AVX-512) everywhere, with the same result for every input."""
        elem = e.dtype.element_of()
        if not self.BLEND_VECTORS or e.dtype.lanes == 1 or e.a.dtype.lanes != e.dtype.lanes:
            return None
        if e.b.dtype.lanes != e.dtype.lanes or elem.is_bool or elem.bits == 1:
            return None
        if storage_float_suffix(elem) is not None:
            return None
        vt = self.type_of(e.dtype)
        mt = self.type_of(DataType("int", elem.bits, e.dtype.lanes))
        a, b, m = self.temp(), self.temp(), self.temp()
        test = f"({a} {op} {b}) | ({a} != {a})" if nan else f"({a} {op} {b})"
        mask = f"{mt} {m} = {test};"
        blend = f"({vt})((({mt}){a} & {m}) | (({mt}){b} & ~{m}))"
        return f"({{ {vt} {a} = {self.expr(e.a)}; {vt} {b} = {self.expr(e.b)}; {mask} {blend}; }})"

    def blend_select(self, e: E.Select) -> str | None:
        """A vector select as a blend of the bits by its condition's mask, or None where that
        does not apply: the condition must be lane-wise compares of vectors whose elements are
        as wide as the result's (a mask of the same type; `_mask_bits`), both values vectors.
        NOTE: the lane-by-lane loop stays scalar in GCC's -O2 output: SiLU's clamps in a conv's
        epilogue ran 3x slower than the separate kernel."""
        elem = e.dtype.element_of()
        if not self.BLEND_VECTORS or elem.is_bool or storage_float_suffix(elem) is not None:
            return None
        if any(v.dtype.lanes != e.dtype.lanes for v in (e.true_value, e.false_value)):
            return None
        if _mask_bits(e.condition, e.dtype.lanes) != elem.bits:
            return None
        vt = self.type_of(e.dtype)
        mt = self.type_of(DataType("int", elem.bits, e.dtype.lanes))
        a, b, m = self.temp(), self.temp(), self.temp()
        binds = f"{vt} {a} = {self.expr(e.true_value)}; {vt} {b} = {self.expr(e.false_value)};"
        mask = f"{mt} {m} = ({mt})({self.expr(e.condition)});"
        return f"({{ {binds} {mask} ({vt})((({mt}){a} & {m}) | (({mt}){b} & ~{m})); }})"

    def helper_call(self, e: E.BinaryOp, kind: str, body: str) -> str:
        """A call of the per-type helper ``kiln_<kind>_<dtype>(a, b)`` (lane-wise on vectors)."""
        elem = e.dtype.element_of()
        ctype = self.type_of(elem)
        name = f"kiln_{kind}_{elem}"
        code = body.replace("T ", ctype + " ")
        text = f"static inline {ctype} {name}({ctype} a, {ctype} b) {{ {code} }}"
        self.prelude.need_function(name, text)
        if e.dtype.lanes > 1:
            return self.lanewise(e.dtype, lambda a, b: f"{name}({a}, {b})", e.a, e.b)
        return self.round_storage_float(e.dtype, f"{name}({self.expr(e.a)}, {self.expr(e.b)})")

    def compare(self, e: E.BinaryOp) -> str:
        return f"({self.expr(e.a)} {self.BINOPS[type(e)]} {self.expr(e.b)})"

    expr_EQ = expr_NE = expr_LT = expr_LE = expr_GT = expr_GE = compare

    def expr_And(self, e: E.BinaryOp) -> str:
        op = "&" if e.dtype.lanes > 1 else "&&"
        return f"({self.expr(e.a)} {op} {self.expr(e.b)})"

    def expr_Or(self, e: E.BinaryOp) -> str:
        op = "|" if e.dtype.lanes > 1 else "||"
        return f"({self.expr(e.a)} {op} {self.expr(e.b)})"

    def expr_Not(self, e: E.Not) -> str:
        return f"(~{self.expr(e.a)})" if e.dtype.lanes > 1 else f"(!{self.expr(e.a)})"

    def expr_Select(self, e: E.Select) -> str:
        if e.dtype.lanes > 1:
            blend = self.blend_select(e)
            if blend is not None:
                return blend
            fmt = lambda c, t, f: f"({c} ? {t} : {f})"  # noqa: E731
            return self.lanewise(e.dtype, fmt, e.condition, e.true_value, e.false_value)
        cond, t, f = self.expr(e.condition), self.expr(e.true_value), self.expr(e.false_value)
        return f"({cond} ? {t} : {f})"

    def expr_Cast(self, e: E.Cast) -> str:
        src, dst = e.value.dtype, e.dtype
        value = self.expr(e.value)
        if dst.lanes > 1:
            if dst.element_of().is_bool or src.element_of().is_bool:
                conv = "(({} != 0) ? -1 : 0)" if dst.element_of().is_bool else "({} != 0)"
                return self.lanewise(dst, lambda x: conv.format(x), e.value)
            return f"__builtin_convertvector({value}, {self.type_of(dst)})"
        if dst.is_bool:
            return f"({value} != 0)"
        if storage_float_suffix(dst) is not None:
            return self.round_storage_float(dst, f"((float){value})")
        return f"(({self.type_of(dst)}){value})"

    def expr_Let(self, e: E.Let) -> str:
        name = self.bind_var(e.var)
        value, body = self.expr(e.value), self.expr(e.body)
        return f"({{ {self.declare(e.var, name)} = {value}; {body}; }})"

    @abstractmethod
    def bind_var(self, v: E.Var) -> str:
        """Implemented by the concrete subclass."""

    def declare(self, v: E.Var, name: str) -> str:
        """``<type> <name>`` for a variable (typed pointers keep their element type)."""
        return f"{self.c_type(v.type_annotation or PrimType(v.dtype))} {name}"

    # -- vectors ----------------------------------------------------------------------------
    def expr_Ramp(self, e: E.Ramp) -> str:
        vt = self.type_of(e.dtype)
        iota = "{" + ", ".join(str(i) for i in range(e.lanes)) + "}"
        base, stride = self.expr(e.base), self.expr(e.stride)
        scaled = f"(({vt}){iota})" if E.is_const_int(e.stride, 1) else f"(({vt}){iota} * {stride})"
        return f"({scaled} + {base})"

    def expr_Broadcast(self, e: E.Broadcast) -> str:
        vt = self.type_of(e.dtype)
        t = self.temp()
        inner = self.type_of(e.value.dtype)
        if e.value.dtype.is_bool:
            return self.lanewise(e.dtype, lambda x: f"({x} ? -1 : 0)", e.value)
        elems = ", ".join([t] * e.lanes)
        return f"({{ {inner} {t} = {self.expr(e.value)}; ({vt}){{{elems}}}; }})"

    def lanewise(self, dtype: DataType, fmt: Callable[..., str], *operands: E.PrimExpr) -> str:
        """``fmt`` applied lane by lane; scalar operands are used as they are in every lane."""
        vt = self.type_of(dtype)
        binds, args = [], []
        lane = self.temp("l")
        for op in operands:
            t = self.temp()
            binds.append(f"__auto_type {t} = {self.expr(op)};")
            args.append(f"{t}[{lane}]" if op.dtype.lanes > 1 else t)
        r = self.temp("r")
        loop = f"for (int {lane} = 0; {lane} < {dtype.lanes}; ++{lane}) {r}[{lane}] = {fmt(*args)};"
        return f"({{ {' '.join(binds)} {vt} {r}; {loop} {r}; }})"

    # -- memory -----------------------------------------------------------------------------
    def buffer_pointer(self, buf: Buffer) -> str:
        """The buffer's data pointer, cast to its element type when the variable's type differs."""
        data = self.expr(buf.data)
        want = self.storage_type(buf.dtype)
        ty = buf.data.type_annotation
        have = self.c_type(ty) if isinstance(ty, PointerType) else "void*"
        return data if have == f"{want}*" else f"(({want}*){data})"

    def flat_index(self, buf: Buffer, indices: tuple[E.PrimExpr, ...], what: str) -> E.PrimExpr:
        if len(indices) != 1 or (
            buf.elem_offset is not None and not E.is_const_int(buf.elem_offset, 0)
        ):
            raise CodegenError(
                f"{what} of buffer {buf.name!r} has {len(indices)} indices: the C backend needs "
                "flat 1-D accesses; run the FlattenBuffer pass first (kiln.build does)"
            )
        return indices[0]

    def expr_BufferLoad(self, e: E.BufferLoad) -> str:
        buf = e.buffer
        index = self.flat_index(buf, e.indices, "load")
        ptr = self.buffer_pointer(buf)
        if index.dtype.lanes == 1:
            return self.from_storage(buf.dtype, f"{ptr}[{self.expr(index)}]")
        if buf.dtype.is_bool:  # bytes in memory, -1/0 lane masks in registers
            return self.lanewise(e.dtype, lambda i: f"({ptr}[{i}] ? -1 : 0)", index)
        if self.load_mask is not None and buf.data in self.load_mask[1]:
            mask, idx, r, k = self.load_mask[0], self.temp("i"), self.temp("r"), self.temp("l")
            head = f"__auto_type {idx} = {self.expr(index)}; {self.type_of(e.dtype)} {r};"
            lane = f"{r}[{k}] = {mask}[{k}] ? {ptr}[{idx}[{k}]] : 0;"
            loop = f"for (int {k} = 0; {k} < {e.dtype.lanes}; ++{k}) {lane}"
            return f"({{ {head} {loop} {r}; }})"
        if isinstance(index, E.Ramp) and E.is_const_int(index.stride, 1):
            vt = self.unaligned_vector_type(e.dtype)
            return f"(*({vt}*)({ptr} + {self.expr(index.base)}))"
        return self.lanewise(e.dtype, lambda i: f"{ptr}[{i}]", index)

    def from_storage(self, dtype: DataType, code: str) -> str:
        """A value read from memory as ``code`` (storage-only floats are widened)."""
        if storage_float_suffix(dtype) is None:
            return code
        suffix = self.prelude.need_storage_float(dtype)
        return f"kiln_{suffix}_to_f32({code})"

    def to_storage(self, dtype: DataType, code: str) -> str:
        if storage_float_suffix(dtype) is None:
            return code
        suffix = self.prelude.need_storage_float(dtype)
        return f"kiln_f32_to_{suffix}({code})"

    # -- calls ------------------------------------------------------------------------------
    def expr_Call(self, e: E.Call) -> str:
        if isinstance(e.op, GlobalVar):
            return self.call_global(e)
        short = e.op.name[4:] if e.op.name.startswith("tir.") else e.op.name
        if e.op.get_attr("math"):
            raise self.unlowered(f"the math builtin {e.op.name!r}")
        handler = getattr(self, f"call_{short}", None)
        if handler is None:
            raise CodegenError(f"the C backend does not support the intrinsic {e.op.name!r}")
        return handler(e)

    @abstractmethod
    def call_global(self, e: E.Call) -> str:
        """Implemented by the concrete subclass."""

    def call_if_then_else(self, e: E.Call) -> str:
        c, t, f = e.args
        if e.dtype.lanes > 1 and c.dtype.lanes > 1:
            return self.expr_Select(E.Select(c, t, f))
        return f"({self.expr(c)} ? {self.expr(t)} : {self.expr(f)})"

    def call_vector_all(self, e: E.Call) -> str:
        """``tir.vector_all(mask)``: 1 when every lane of the boolean vector is set."""
        mask = e.args[0]
        if mask.dtype.lanes == 1:
            return f"({self.expr(mask)} != 0)"
        m, r, lane = self.temp("m"), self.temp("r"), self.temp("l")
        loop = (
            f"for (int {lane} = 0; {lane} < {mask.dtype.lanes}; ++{lane}) {r} &= {m}[{lane}] != 0;"
        )
        return f"({{ __auto_type {m} = {self.expr(mask)}; int {r} = 1; {loop} {r}; }})"

    def call_likely(self, e: E.Call) -> str:
        return f"__builtin_expect(!!{self.expr(e.args[0])}, 1)"

    def call_reinterpret(self, e: E.Call) -> str:
        src, dst = e.args[0].dtype, e.dtype
        if src.itemsize != dst.itemsize:
            raise CodegenError(f"reinterpret: {src} and {dst} differ in size")
        value = self.expr(e.args[0])
        s_t, d_t = self.storage_type(src), self.storage_type(dst)
        src_val = self.to_storage(src, value)
        if src.lanes == 1 and dst.lanes == 1:
            # NOTE: memcpy through stack temporaries made GCC's vectorizer give up on the
            # enclosing loop ("data ref analysis failed ... ref-all"): 6-8x slower. Type punning
            # through a union is defined in C (C11 6.5.2.3) and stays in registers.
            union = f"union {{ {s_t} a; {d_t} b; }}"
            return self.from_storage(dst, f"(({union}){{ .a = {src_val} }}).b")
        a, r = self.temp(), self.temp()
        back = self.from_storage(dst, r)
        return f"({{ {s_t} {a} = {src_val}; {d_t} {r}; memcpy(&{r}, &{a}, sizeof({r})); {back}; }})"

    def call_isnullptr(self, e: E.Call) -> str:
        return f"({self.expr(e.args[0])} == NULL)"

    def call_address_of(self, e: E.Call) -> str:
        load = e.args[0]
        if not isinstance(load, E.BufferLoad):
            raise CodegenError("address_of expects a buffer load")
        index = self.flat_index(load.buffer, load.indices, "address_of")
        base = index.base if isinstance(index, E.Ramp) else index
        return f"({self.buffer_pointer(load.buffer)} + {self.expr(base)})"

    def call_prefetch(self, e: E.Call) -> str:
        """``tir.prefetch(buf[i])``: GCC's read prefetch of the element's cache line, kept in all
        cache levels. NOTE: the address is formed in integer arithmetic, since ``i`` may lie past
        the buffer's end (prefetching the next row of the last row), where pointer arithmetic
        would be undefined."""
        load = e.args[0]
        if not isinstance(load, E.BufferLoad):
            raise CodegenError("prefetch expects a buffer load")
        index = self.flat_index(load.buffer, load.indices, "prefetch")
        base = index.base if isinstance(index, E.Ramp) else index
        size = load.buffer.dtype.itemsize
        offset = f"(uintptr_t)({self.expr(base)}) * {size}"
        addr = f"(uintptr_t){self.buffer_pointer(load.buffer)} + {offset}"
        return f"__builtin_prefetch((const void*)({addr}), 0, 3)"

    def call_tvm_access_ptr(self, e: E.Call) -> str:
        ann, data, offset = e.args[0], e.args[1], e.args[2]
        return f"(({self.storage_type(ann.dtype)}*){self.expr(data)} + {self.expr(offset)})"

    def call_handle_add_byte_offset(self, e: E.Call) -> str:
        return f"((void*)((char*){self.expr(e.args[0])} + {self.expr(e.args[1])}))"

    def call_bitwise_and(self, e: E.Call) -> str:
        return f"({self.expr(e.args[0])} & {self.expr(e.args[1])})"

    def call_bitwise_or(self, e: E.Call) -> str:
        return f"({self.expr(e.args[0])} | {self.expr(e.args[1])})"

    def call_bitwise_xor(self, e: E.Call) -> str:
        return f"({self.expr(e.args[0])} ^ {self.expr(e.args[1])})"

    def call_bitwise_not(self, e: E.Call) -> str:
        return f"(~{self.expr(e.args[0])})"

    def call_shift_left(self, e: E.Call) -> str:
        return f"({self.expr(e.args[0])} << {self.expr(e.args[1])})"

    def call_shift_right(self, e: E.Call) -> str:
        return f"({self.expr(e.args[0])} >> {self.expr(e.args[1])})"

    def call_popcount(self, e: E.Call) -> str:
        fn = "__builtin_popcountll" if e.args[0].dtype.bits == 64 else "__builtin_popcount"
        return f"(({self.type_of(e.dtype)}){fn}({self.expr(e.args[0])}))"


def c_string(text: str) -> str:
    """``text`` as a C string literal (escapes quotes, backslashes and non-printables)."""
    out = []
    for ch in text:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif 32 <= ord(ch) < 127:
            out.append(ch)
        else:
            out.extend(f"\\{b:03o}" for b in ch.encode())
    return '"' + "".join(out) + '"'


def is_op(e: Any, name: str) -> bool:
    """True if ``e`` is a call of the builtin ``tir.<name>``."""
    return isinstance(e, E.Call) and isinstance(e.op, Op) and e.op.name == f"tir.{name}"


def _mask_bits(cond: E.PrimExpr, lanes: int) -> int | None:
    """The element width of the mask C's vector extensions give ``cond`` (a compare of two
    ``lanes``-lane vectors, or ``&``/``|``/``!`` of such masks), None when it is not one."""
    if isinstance(cond, E.CMP_OPS):
        a, b = cond.a, cond.b
        if a.dtype.lanes != lanes or b.dtype.lanes != lanes:
            return None
        return a.dtype.element_of().bits
    if isinstance(cond, (E.And, E.Or)):
        bits = _mask_bits(cond.a, lanes)
        return bits if bits == _mask_bits(cond.b, lanes) else None
    if isinstance(cond, E.Not):
        return _mask_bits(cond.a, lanes)
    return None
