"""Hand-built VM programs for the runtime tests, in both execution modes from one description.

No compiler half exists in this layer's tests, so `ProgramBuilder` plays its part in miniature:
a test describes each VM function once (calls, structured if/else, return) and gets either
bytecode (`FuncKind.BYTECODE` + instructions) or compiled mode: C ``__vmtir__`` functions
written with the `kiln.runtime.vm_anylist` helpers, compiled into one library with the kernels.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import kiln
from kiln import tir
from kiln.ir import GlobalVar, IRModule
from kiln.runtime import build_module, metadata_c_source
from kiln.runtime.vm_anylist import (
    ANYLIST_C_HEADER,
    c_any,
    c_call_cpacked,
    c_call_packed,
    c_cpacked_decl,
    c_getitem,
    c_resetitem,
)
from kiln.runtime.vm_format import (
    CONTEXT,
    NONE_ARG,
    VOID_REGISTER,
    Arg,
    Call,
    Executable,
    FuncKind,
    Goto,
    If,
    Instruction,
    Ret,
    VMFunction,
)

MODES = ("bytecode", "compiled")


@dataclass(frozen=True)
class R:
    """A register of the current function."""

    i: int


@dataclass(frozen=True)
class K:
    """A constant-pool entry."""

    i: int


@dataclass(frozen=True)
class Fn:
    """A function-table entry passed as a value (a closure)."""

    name: str


CTX = "ctx"
"""The VM context argument."""


@dataclass
class _Call:
    dst: int | None
    callee: str
    args: tuple[Any, ...]


@dataclass
class _IfElse:
    cond: int
    then: list[Any]
    orelse: list[Any]


@dataclass
class _Ret:
    reg: int


@dataclass
class _Reset:
    reg: int


@dataclass
class FuncBuilder:
    """One VM function: registers 0..n-1 are the parameters, n is compiled mode's result."""

    prog: ProgramBuilder
    name: str
    params: tuple[str, ...]
    body: list[Any] = field(default_factory=list)
    next_reg: int = 0

    def __post_init__(self) -> None:
        self.next_reg = len(self.params) + 1
        self._stack = [self.body]

    def reg(self) -> int:
        self.next_reg += 1
        return self.next_reg - 1

    def call(self, callee: str, *args: Any, void: bool = False, dst: int | None = None) -> int:
        """Call ``callee`` (a packed function, kernel or VM function of the program); the
        result goes to a new register, or to ``dst``, or nowhere (``void``)."""
        self.prog.entry(callee)
        if dst is None and not void:
            dst = self.reg()
        self._stack[-1].append(_Call(dst, callee, args))
        return -1 if dst is None else dst

    def if_else(
        self, cond: int, then: Callable[[FuncBuilder], None], orelse: Callable[[FuncBuilder], None]
    ) -> None:
        node = _IfElse(cond, [], [])
        self._stack[-1].append(node)
        for branch, fill in ((node.then, then), (node.orelse, orelse)):
            self._stack.append(branch)
            fill(self)
            self._stack.pop()

    def reset(self, reg: int) -> None:
        self.prog.entry("vm.builtin.null_value")
        self._stack[-1].append(_Reset(reg))

    def ret(self, reg: int) -> None:
        self._stack[-1].append(_Ret(reg))


class ProgramBuilder:
    """A function table, constants and VM functions; `build` makes an executable in a mode."""

    def __init__(self, kernels: IRModule | None = None) -> None:
        self.kernels = kernels
        self.kernel_names = (
            [gv.name_hint for gv in kernels.functions] if kernels is not None else []
        )
        self.table: dict[str, FuncKind] = {}
        self.constants: list[Any] = []
        self.functions: list[FuncBuilder] = []

    def entry(self, name: str) -> None:
        if name in self.table:
            return
        if name in self.kernel_names:
            self.table[name] = FuncKind.KERNEL
        elif any(f.name == name for f in self.functions):
            self.table[name] = FuncKind.BYTECODE
        else:
            self.table[name] = FuncKind.PACKED

    def const(self, value: Any) -> K:
        self.constants.append(value)
        return K(len(self.constants) - 1)

    def func(self, name: str, params: tuple[str, ...]) -> FuncBuilder:
        fb = FuncBuilder(self, name, params)
        self.functions.append(fb)
        self.table[name] = FuncKind.BYTECODE
        return fb

    def _order(self) -> list[str]:
        return list(self.table)

    def build(self, mode: str) -> Executable:
        """The executable in ``mode`` (its library: the kernels, plus C for compiled mode)."""
        names = self._order()
        index = {n: i for i, n in enumerate(names)}
        vm_kind = FuncKind.VMTIR if mode == "compiled" else FuncKind.BYTECODE
        by_name = {f.name: f for f in self.functions}
        entries: list[VMFunction] = []
        code: list[Instruction] = []
        for name in names:
            kind = self.table[name]
            fb = by_name.get(name)
            if fb is None:
                entries.append(VMFunction(name, kind))
                continue
            start = len(code)
            if mode == "bytecode":
                code += _bytecode(fb.body, index, len(fb.params))
            entries.append(VMFunction(name, vm_kind, fb.params, fb.next_reg, start, len(code)))
        library = self._library(mode, index)
        return Executable(tuple(entries), tuple(code), tuple(self.constants), library)

    def _library(self, mode: str, index: dict[str, int]) -> Any:
        kernel_src = ""
        if self.kernels is not None:
            kernel_src = kiln.build(self.kernels).inspect_source().split("\n/* kiln metadata:")[0]
        if mode == "bytecode":
            if self.kernels is None:
                return None
            return build_module(kernel_src + metadata_c_source(self.kernel_names))
        parts = [kernel_src, ANYLIST_C_HEADER]
        parts += [c_cpacked_decl(k) for k in self.kernel_names]
        parts += [_c_function(fb, index, self.table) for fb in self.functions]
        exposed = self.kernel_names + ["__vmtir__" + fb.name for fb in self.functions]
        return build_module("\n".join(parts) + metadata_c_source(exposed))


# ---- bytecode -------------------------------------------------------------------------------


def _arg(a: Any, index: dict[str, int]) -> Arg:
    if isinstance(a, R):
        return Arg.reg(a.i)
    if isinstance(a, K):
        return Arg.const(a.i)
    if isinstance(a, Fn):
        return Arg.func(index[a.name])
    if a is CTX:
        return CONTEXT
    if a is None:
        return NONE_ARG
    return Arg.imm(int(a))


def _bytecode(body: list[Any], index: dict[str, int], nparams: int) -> list[Instruction]:
    out: list[Instruction] = []
    for s in body:
        if isinstance(s, _Call):
            dst = VOID_REGISTER if s.dst is None else s.dst
            out.append(Call(dst, index[s.callee], tuple(_arg(a, index) for a in s.args)))
        elif isinstance(s, _Ret):
            out.append(Ret(s.reg))
        elif isinstance(s, _Reset):
            out.append(Call(s.reg, index["vm.builtin.null_value"], ()))
        else:
            then = _bytecode(s.then, index, nparams)
            orelse = _bytecode(s.orelse, index, nparams)
            out.append(If(s.cond, len(then) + 2))
            out += then
            out.append(Goto(len(orelse) + 1))
            out += orelse
    return out


# ---- compiled mode (C over any-lists) --------------------------------------------------------


def _c_arg(a: Any, index: dict[str, int]) -> str:
    if isinstance(a, R):
        return c_getitem("r", a.i)
    if isinstance(a, K):
        return c_getitem("c", a.i)
    if isinstance(a, Fn):
        return c_getitem("f", index[a.name])
    if a is CTX:
        return c_any("handle", "ctx_ptr")
    if a is None:
        return c_any("none")
    return c_any("int", str(int(a)))


def _c_body(body: list[Any], index: dict[str, int], table: dict[str, FuncKind], n: int) -> str:
    lines: list[str] = []
    for s in body:
        if isinstance(s, _Call):
            args = [_c_arg(a, index) for a in s.args]
            dst = None if s.dst is None else ("r", s.dst)
            kind = table[s.callee]
            if kind is FuncKind.KERNEL:
                lines.append(c_call_cpacked(s.callee, args, dst))
            elif kind is FuncKind.PACKED:
                lines.append(c_call_packed(s.callee, args, dst))
            else:
                callee = [c_any("handle", "ctx_ptr"), c_getitem("f", index[s.callee])]
                lines.append(c_call_packed("vm.builtin.invoke_closure", callee + args, dst))
        elif isinstance(s, _Ret):
            lines.append(c_call_packed("vm.builtin.copy", [c_getitem("r", s.reg)], ("r", n)))
            lines.append("return 0;")
        elif isinstance(s, _Reset):
            lines.append(c_resetitem("r", s.reg))
        else:
            then = _c_body(s.then, index, table, n)
            orelse = _c_body(s.orelse, index, table, n)
            lines.append(f"if ({c_getitem('r', s.cond)}.v_int64 != 0) {{\n{then}\n}} else {{\n")
            lines.append(f"{orelse}\n}}")
    return "\n".join(lines)


def _c_function(fb: FuncBuilder, index: dict[str, int], table: dict[str, FuncKind]) -> str:
    body = _c_body(fb.body, index, table, len(fb.params))
    return f"""
TVM_FFI_DLL_EXPORT int __tvm_ffi___vmtir__{fb.name}(void* self, const TVMFFIAny* args,
                                                   int32_t num_args, TVMFFIAny* result) {{
  void* ctx_ptr = args[0].v_ptr;
  void* r = args[1].v_ptr;
  void* c = args[2].v_ptr;
  void* f = args[3].v_ptr;
  (void)self; (void)num_args; (void)result; (void)c; (void)f; (void)ctx_ptr;
{body}
  return 0;
}}
"""


# ---- kernels --------------------------------------------------------------------------------


def _elementwise(name: str, op: Callable[[Any], Any]) -> tir.PrimFunc:
    n = tir.SizeVar("n")
    a_h, b_h = tir.Var("A", "handle"), tir.Var("B", "handle")
    A = tir.decl_buffer((n,), "float32", "A")
    B = tir.decl_buffer((n,), "float32", "B")
    i = tir.Var("i")
    body = tir.For(i, 0, n, tir.ForKind.SERIAL, tir.BufferStore(B, op(A[i]), (i,)))
    return tir.PrimFunc(
        (a_h, b_h), body, buffer_map={a_h: A, b_h: B}, attrs={"global_symbol": name}
    )


def two_kernels() -> IRModule:
    """``add_one(A, B)``: B = A + 1 and ``mul_two(A, B)``: B = A * 2 over float32[n]."""
    add = _elementwise("add_one", lambda x: x + tir.const(1.0, "float32"))
    mul = _elementwise("mul_two", lambda x: x * tir.const(2.0, "float32"))
    return IRModule({GlobalVar("add_one"): add, GlobalVar("mul_two"): mul})
