"""`VirtualMachine`: run an `Executable` (bytecode or compiled mode) with the same API.

    vm = VirtualMachine(exe, kiln.cpu())          # or VirtualMachine(load_module("model.so"))
    out = vm["main"](x, w)                        # numpy / torch / tvm-ffi tensors in
    out.numpy()                                   # NDArray out (tuples as Python tuples)
    print(vm.profile("main", x, w))               # per-kernel table (medians of warm calls)

The VM itself is C (kiln/runtime/vm_c): ``vm["main"]`` is a tvm-ffi function whose call runs the
bytecode interpreter, or the library's ``__vmtir__main``, without Python in between; the Python
wrapper only converts the result (and, when tvm-ffi cannot convert an argument, bridges or names
it: `_call_bridged`). Function-table entries are resolved when the VM is created:
kernels and ``__vmtir__`` functions from the executable's library, packed functions from the
library or else the global tvm-ffi registry (so Python functions must be registered before).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import tvm_ffi

from kiln.errors import FunctionNotFoundError, KilnError
from kiln.runtime.module import Module
from kiln.runtime.ndarray import NDArray, wrap_result
from kiln.runtime.profile import (
    DEFAULT_REPEAT,
    DEFAULT_WARMUP,
    ProfileReport,
    make_report,
    profile_calls,
)
from kiln.runtime.tensor import (
    STORAGE_DTYPES,
    Device,
    array_tensor,
    cpu,
    name_unconvertible,
    tensor,
)
from kiln.runtime.vm_export import load_executable
from kiln.runtime.vm_format import (
    VMTIR_ENTRY_PREFIX,
    VMTIR_PREFIX,
    DTypeConst,
    Executable,
    FuncKind,
    ShapeConst,
    VMFunction,
    encode,
)
from kiln.runtime.vm_runtime import load_vm_runtime

_CPU = 1
_TENSOR = tvm_ffi.Tensor
_ARRAY = tvm_ffi.Array
_CONVERSION_ERRORS = (BufferError, TypeError, ValueError)


def _library_function(library: Any, name: str) -> tvm_ffi.Function | None:
    if library is None:
        return None
    try:
        return library.get_function(name)
    except (FunctionNotFoundError, AttributeError):  # kiln Module, raw tvm_ffi.Module
        return None


def _resolve(exe: Executable, f: VMFunction) -> tvm_ffi.Function | None:
    """The implementation of one function-table entry (None for bytecode functions)."""
    if f.kind is FuncKind.BYTECODE:
        return None
    lib = exe.library
    symbol = VMTIR_PREFIX + f.name if f.kind is FuncKind.VMTIR else f.name
    found = _library_function(lib, symbol)
    if found is None and f.kind is FuncKind.PACKED:
        found = tvm_ffi.get_global_func(f.name, allow_missing=True)
        if found is None:
            raise KilnError(
                f"executable calls {f.name!r}, which is neither in its library nor a registered "
                "global tvm-ffi function; register it (tvm_ffi.register_global_func) before "
                "creating the VirtualMachine"
            )
    if found is None:
        what = "compiled VM function" if f.kind is FuncKind.VMTIR else "kernel"
        where = "it has no library" if lib is None else f"{getattr(lib, 'path', lib)} lacks it"
        raise KilnError(f"executable needs {what} {symbol!r}, but {where}")
    return found


def _vmtir_entry(exe: Executable, f: VMFunction) -> Any:
    """The address of the unchecked C function of compiled VM function ``f``
    (``__vmtir_entry__<name>()``, see `VMTIR_ENTRY_PREFIX`), or None when the library has none
    (hand-written ``__vmtir__`` code): the VM then calls the checked entry."""
    if f.kind is not FuncKind.VMTIR or exe.library is None:
        return None
    ffi = getattr(exe.library, "ffi_module", exe.library)  # kiln Module or raw tvm_ffi.Module
    try:
        getter = ffi.get_function(VMTIR_ENTRY_PREFIX + f.name)
    except (AttributeError, FunctionNotFoundError):
        return None
    return None if getter is None else getter()


def _constant(c: Any) -> Any:
    """A constant as the VM holds it (tvm-ffi values; numpy arrays zero-copy when possible)."""
    if isinstance(c, ShapeConst):
        return tvm_ffi.Shape(tuple(int(d) for d in c.dims))
    if isinstance(c, DTypeConst):
        return tvm_ffi.dtype(c.name)
    if isinstance(c, np.ndarray) or hasattr(c, "__dlpack__"):
        return tensor(c)
    return c


class VMFunctionCaller:
    """``vm[name]``: call with tensors (numpy, torch, tvm-ffi, `NDArray`) and plain values."""

    __slots__ = ("_vm", "_func", "name", "params")

    def __init__(self, vm: VirtualMachine, func: tvm_ffi.Function, f: VMFunction) -> None:
        self._vm = vm  # keeps the VM (and its library) alive while this caller lives
        self._func = func
        self.name = f.name
        self.params = f.params

    def __call__(self, *args: Any) -> Any:
        try:
            out = self._func(*args)
        except _CONVERSION_ERRORS as e:
            out = self._call_bridged(args, e)
        # NOTE: the common cases inline (a call of wrap_result costs ~50 ns more).
        if type(out) is _TENSOR:
            return NDArray(out)
        return wrap_result(out) if type(out) is _ARRAY else out

    def __repr__(self) -> str:
        return f"<VM function {self.name}({', '.join(self.params)})>"

    def _call_bridged(self, args: tuple[Any, ...], error: BaseException) -> Any:
        """Call again with the numpy arrays tvm-ffi refuses (read-only arrays, ml_dtypes storage
        floats: numpy's DLPack 0.x export raises a `BufferError` that names nothing) passed
        zero-copy through `array_tensor`; re-raise ``error``, naming the argument tvm-ffi cannot
        convert when one is found, when there is nothing to bridge.

        Invariant: the VM never ran when an argument here needed bridging (tvm-ffi converts every
        argument before the call), so calling again runs it once."""
        bridged = [_bridge(a) for a in args]
        if any(b is not None for b in bridged):
            args = tuple(a if b is None else b for a, b in zip(args, bridged))
            try:
                return self._func(*args)
            except _CONVERSION_ERRORS as e:
                error = e
        if isinstance(error, BufferError) or not str(error).startswith(f"{self.name}: "):
            for i, a in enumerate(args):
                label = self.params[i] if i < len(self.params) else f"{i} (counting from 0)"
                name_unconvertible(self.name, f"argument {label}", a, error)
        raise error


def _bridge(value: Any) -> Any:
    """``value`` with its read-only and storage-float numpy arrays (also inside tuples and lists)
    made tvm-ffi tensors on the same memory, or None when it has none."""
    if isinstance(value, np.ndarray):
        if value.flags.writeable and value.dtype.name not in STORAGE_DTYPES:
            return None
        return array_tensor(value)
    if isinstance(value, (tuple, list)):
        items = [_bridge(v) for v in value]
        if all(b is None for b in items):
            return None
        return tuple(v if b is None else b for v, b in zip(value, items))
    return None


class VirtualMachine:
    """Runs an `Executable`, or the executable inside a library written by `export_library`."""

    def __init__(self, exe: Executable | Module, device: Device | None = None) -> None:
        if isinstance(exe, Module):
            exe = load_executable(exe)
        if not isinstance(exe, Executable):
            raise KilnError(
                f"VirtualMachine expects an Executable or a loaded kiln library, got "
                f"{type(exe).__name__}"
            )
        device = cpu() if device is None else device
        if device.dlpack_device_type() != _CPU:
            raise KilnError(f"the kiln VM runs on the CPU only for now, not on {device}")
        self.executable = exe
        self.device = device
        self._handle = _create(exe, device)
        self._index = {f.name: i for i, f in enumerate(exe.functions) if f.name in self.names}
        self._callers: dict[str, VMFunctionCaller] = {}

    def __repr__(self) -> str:
        return f"VirtualMachine({self.exec_mode}, functions={list(self.names)}, {self.device})"

    @property
    def names(self) -> tuple[str, ...]:
        """The VM functions this machine can call."""
        return self.executable.vm_function_names

    @property
    def exec_mode(self) -> str:
        return self.executable.exec_mode

    def __contains__(self, name: object) -> bool:
        return name in self._index

    def __getitem__(self, name: str) -> VMFunctionCaller:
        caller = self._callers.get(name)
        if caller is not None:
            return caller
        index = self._index.get(name)
        if index is None:
            raise FunctionNotFoundError(
                f"the executable has no VM function {name!r}; its functions are "
                f"{', '.join(self.names) or 'none'}"
            )
        func = self._handle("function", index)
        caller = VMFunctionCaller(self, func, self.executable.functions[index])
        self._callers[name] = caller
        return caller

    def profile(
        self, name: str, *args: Any, repeat: int = DEFAULT_REPEAT, warmup: int = DEFAULT_WARMUP
    ) -> ProfileReport:
        """Call ``name`` ``warmup`` times (and for at least `kiln.runtime.profile.WARMUP_S`),
        then profile ``repeat`` calls: each kernel / packed function's time, and the call's, is
        the median over them (`kiln.runtime.profile.profile_calls`); each kernel's row names
        the model nodes it computes, when the executable records them."""
        caller = self[name]
        costs = {k: (f, b) for k, f, b in self.executable.costs}
        nodes = dict(self.executable.nodes)
        dims = self._dims(name, args)

        def profile_one() -> ProfileReport:
            self._handle("profile_start")
            start = time.perf_counter_ns()
            try:
                caller(*args)
            finally:
                elapsed = time.perf_counter_ns() - start
                records = self._handle("profile_stop")
            return make_report(name, self.exec_mode, elapsed, records, costs, dims, nodes)

        return profile_calls(lambda: caller(*args), profile_one, repeat, warmup)

    def _dims(self, name: str, args: tuple[Any, ...]) -> dict[str, int]:
        """The values of the symbolic dims (by name) that ``args`` give function ``name``."""
        dims: dict[str, int] = {}
        sig = next((s for s in self.executable.signatures if s.function == name), None)
        for spec, arg in zip(sig.inputs if sig else (), args):
            shape = getattr(arg, "shape", None)
            if spec.dims is None or shape is None or len(shape) != len(spec.dims):
                continue
            for d, n in zip(spec.dims, shape):
                if isinstance(d, str):
                    dims.setdefault(d, int(n))
        return dims


def _create(exe: Executable, device: Device) -> tvm_ffi.Function:
    names = [f.name for f in exe.functions]
    dups = sorted({n for n in names if names.count(n) > 1})
    if dups:
        raise KilnError(f"the executable's function table lists {', '.join(dups)} twice")
    # NOTE: registers the builtins before packed entries are resolved; a library carrying the
    # runtime (an exported model) provides it when the process has none yet (no compiler needed)
    runtime = load_vm_runtime(exe.library)
    impls = [_resolve(exe, f) for f in exe.functions]
    entries = [_vmtir_entry(exe, f) for f in exe.functions]
    words = encode(exe.instructions)
    code = tvm_ffi.from_dlpack(words) if words.size else None
    meta: list[int] = []
    for f in exe.functions:
        meta += [int(f.kind), len(f.params), f.num_registers, f.start, f.end]
    params = [", ".join(f.params) for f in exe.functions]
    consts = [_constant(c) for c in exe.constants]
    try:
        return runtime.create(code, meta, names, params, impls, consts, device, entries)
    except (ValueError, TypeError, IndexError) as e:
        raise KilnError(f"cannot create a VirtualMachine: {e}") from e
