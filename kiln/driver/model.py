"""`kiln.compile` / `kiln.load`: a model object you call with arrays.

    model = kiln.compile(mod)                 # an IRModule of R.functions, "model.onnx", an
                                              # onnx.ModelProto, an ExportedProgram, or a
    model = kiln.compile(net, example_args=(x,))   # torch.nn.Module (kiln.driver.inputs)
    model = kiln.compile(mod, external_codegens=["dnnl"])   # convolutions, matmuls: oneDNN
    model = kiln.compile("bert.onnx", dims={"seq": [32, 128]})  # + fixed-size models for those
                                              # sizes; (lo, hi) for bounds (kiln.driver.dims)
    model = kiln.compile(net, example_args=(x,), dynamic=True)  # torch: dim 0 of every input
    model = kiln.compile(net, example_args=(ids, mask), dims={"batch": 0, "seq": 1})  # axes
                                              # (kiln.driver.torch_export; or dynamic_shapes=)
    y = model(x, w)                           # calls its entry function ("main")
    y = model(x=x, w=w)                       # inputs by name (checked against the model)
    ys = model.run(None, {"x": x, "w": w})    # onnxruntime's run: [numpy arrays] (or names)
    model(x, w, out=buf)                      # results written into the caller's arrays
    fut = model.run_async({"x": x, "w": w})   # a concurrent.futures.Future of run's list
    model.inputs, model.outputs               # names, dtypes, dims (symbolic ones by name)
    model = kiln.compile(mod, num_threads=2)  # its parallel loops on 2 threads at most
    model.set_num_threads(1)                  # (per model: a cap set around each call)
    print(model.profile(x, w))                # per-kernel table: medians of warm calls
    path = model.export("model.so")           # one shared library
    model = kiln.load("model.so")             # in any process: runtime modules only

`compile` runs `kiln.relax.build` (kernels fused and scheduled for ``target``). An ONNX model
compiled before (same bytes, options, target, compiler and kiln) loads from kiln's model cache
instead (`kiln.driver.model_cache`); one compiled now is stored there and loaded back from its
entry (`stored_model`); either way the model's ``path`` is the cached library. A process that
must not load the compiler at all runs an exported library with the runtime alone:
``VirtualMachine(kiln.runtime.load_module(path))``.

Inputs are arranged and checked by `kiln.driver.inputs` (lists and strided arrays copied once);
``out=`` arrays are checked and filled by `bind_outputs` (the VM allocates its results, which
are copied in and freed, so repeated calls do not grow memory). A model runs one call at a
time (`CompiledModel._lock`); `run_async` queues calls on one thread of the model's own.
"""

from __future__ import annotations

import os
import shutil
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from kiln import config
from kiln.driver import model_cache
from kiln.driver.build import build_target
from kiln.driver.dims import DeclaredDims, SizeRouter, fixed_shapes, symbolic_dims
from kiln.driver.inputs import (
    InputSpec,
    arrange_inputs,
    bind_outputs,
    import_model,
    input_specs,
    is_onnx_model,
    is_torch_module,
)
from kiln.driver.model_cache import model_key
from kiln.driver.relax_build import build, model_flags
from kiln.driver.timing import CompileTimer
from kiln.errors import FrontendError, KilnError
from kiln.ir.target import Target
from kiln.runtime import VirtualMachine, load_module
from kiln.runtime.fma_peak import fma_peak_gflops, memory_bandwidth_gbs
from kiln.runtime.ndarray import NDArray
from kiln.runtime.profile import DEFAULT_REPEAT, DEFAULT_WARMUP
from kiln.runtime.tensor import Device
from kiln.runtime.thread_pool import call_threads_function, pool_threads
from kiln.runtime.vm import ProfileReport
from kiln.runtime.vm_export import load_executable, prebuild_runtime
from kiln.runtime.vm_format import Executable, TensorSpec

CHECKED_SHAPES = 64
"""How many distinct input (dtype, shape)s a model remembers as checked (then it starts over)."""


def _shape_key(args: tuple[Any, ...]) -> tuple[Any, ...] | None:
    """The (dtype, shape) of each argument when all are C-contiguous numpy arrays, else None
    (a strided array is copied by `arrange_inputs`)."""
    for a in args:
        if type(a) is not np.ndarray or not a.flags.c_contiguous:
            return None
    return tuple([(a.dtype, a.shape) for a in args])


def _flat(result: Any) -> list[Any]:
    """A call's result as the flat list of its tensors (a nested tuple in order)."""
    if isinstance(result, tuple):
        return [leaf for item in result for leaf in _flat(item)]
    return [result]


class CompiledModel:
    """A VM executable and the machine running it; calling it calls the entry function.

    ``inputs`` / ``outputs`` describe the entry function (names, dtypes, dims): given, or
    read from the signature the executable records (an exported library carries it); None
    when neither knows."""

    def __init__(
        self,
        executable: Executable,
        device: Device | None = None,
        entry: str = "main",
        inputs: list[InputSpec] | None = None,
    ):
        self.executable = executable
        sig = executable.signature(entry)
        if inputs is None and sig is not None:
            inputs = list(sig.inputs)
        self.inputs = inputs
        self.outputs: list[TensorSpec] | None = None if sig is None else list(sig.outputs)
        self.vm = VirtualMachine(executable, device)
        if entry not in self.vm:
            raise KilnError(
                f"the model has no function {entry!r} to call; its functions are "
                f"{', '.join(self.vm.names) or 'none'}"
            )
        self.entry = entry
        self._call = self.vm[entry]
        self.path: Path | None = None
        """The library the model was loaded from (`kiln.load`, or kiln.compile's cache)."""
        self.sizes: SizeRouter | None = None
        """The declared dims (``dims=``): bounds checked per call, bucket models picked."""
        self._checked: dict[tuple[Any, ...], Any] = {}
        """Positional ndarray inputs' (dtype, shape)s that passed the checks -> the function
        to call (the entry, or the bucket model's): see `_dispatch`."""
        self._lock = threading.Lock()
        """Held for each call. NOTE: the VM keeps per-machine state between calls (memoized
        results, profile records), so one model runs one call at a time; use one model per
        thread (kiln.load the library again) to run calls side by side."""
        self._executor: ThreadPoolExecutor | None = None
        """The thread `run_async` calls run on, started by the first."""
        self._threads: int | None = None
        """The threads this model's parallel loops use (`set_num_threads`); None: the pool's."""
        self._cap_threads: Any = None

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """The entry function's result for these inputs; with ``out=[arrays]`` (a keyword,
        unless the model has an input named ``out``) the results are written into those arrays
        and they are returned (one array, or a tuple of them): see `run`."""
        if "out" in kwargs and "out" not in self._call.params:
            out = kwargs.pop("out")
            with self._lock:
                arrays = bind_outputs(_flat(self._compute(args, kwargs)), out, self.outputs)
            return arrays[0] if len(arrays) == 1 else tuple(arrays)
        with self._lock:
            return self._compute(args, kwargs)

    def set_num_threads(self, n: int | None) -> None:
        """Run this model's parallel loops on at most ``n`` threads (the caller included; None:
        all of the process's pool, `kiln.config.pool_threads`). The cap is set around each call
        on the calling thread, so models with different settings keep theirs in one process.
        NOTE: the pool is shared: ``n`` above its size gets the pool's size, and loops kiln
        emits as OpenMP regions (bodies that may raise) are not capped."""
        if n is not None and (isinstance(n, bool) or not isinstance(n, int) or n < 1):
            raise KilnError(f"num_threads must be a positive int or None, got {n!r}")
        if n is not None and self._cap_threads is None:
            self._cap_threads = call_threads_function()
            if self._cap_threads is None:
                raise KilnError(
                    "num_threads needs kiln's thread pool with per-call caps; the process's "
                    "pool came from a model exported by an older kiln: re-export it"
                )
        self._threads = n

    @property
    def num_threads(self) -> int | None:
        """The cap `set_num_threads` set (None: the whole pool)."""
        return self._threads

    def _compute(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if self._threads is None:
            return self._dispatch(args, kwargs)
        before = self._cap_threads(self._threads)
        try:
            return self._dispatch(args, kwargs)
        finally:
            self._cap_threads(before)

    def _dispatch(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        # NOTE: the input checks and the bucket pick depend only on the inputs' dtypes and
        # shapes, so a call whose (dtype, shape)s passed before goes straight to the function
        # picked then: 3.5 us of a 24 us call of a bucketed GPT-2 at 1x8 (one thread).
        key = None if kwargs else _shape_key(args)
        if key is not None:
            fn = self._checked.get(key)
            if fn is not None:
                return fn(*args)
        values = arrange_inputs(self._call.params, args, kwargs, self.inputs)
        fn = self._call
        if self.sizes is not None:
            bucket = self.sizes.pick(values)
            if bucket is not None:
                fn = bucket._call
        if key is not None and len(values) == len(self._call.params):
            if len(self._checked) >= CHECKED_SHAPES:
                self._checked.clear()
            self._checked[key] = fn
        return fn(*values)

    def run(
        self, output_names: Sequence[str] | None, feeds: Mapping[str, Any], out: Any = None
    ) -> list[Any]:
        """onnxruntime's ``InferenceSession.run``: the outputs named in ``output_names`` (all
        for None, in `outputs` order) for the inputs ``feeds`` ({name: array}), as a list of
        fresh numpy arrays; with ``out`` (one preallocated numpy array per chosen output) the
        results are copied into those arrays and the very same arrays come back."""
        if not isinstance(feeds, Mapping):
            raise FrontendError(
                f"model.run takes its inputs as a dict {{name: array}}, got {type(feeds).__name__}"
            )
        picks = self._output_indices(output_names)
        specs = None if self.outputs is None else [self.outputs[k] for k in picks]
        with self._lock:
            results = _flat(self._compute((), dict(feeds)))
            if picks and max(picks) >= len(results):
                raise KilnError(
                    f"the model returned {len(results)} result(s), but its signature lists "
                    f"{len(self.outputs or ())} output(s)"
                )
            chosen = [results[k] for k in picks] if output_names is not None else results
            if out is not None:
                return bind_outputs(chosen, out, specs)
        return [r.numpy() if isinstance(r, NDArray) else r for r in chosen]

    def run_async(
        self,
        feeds: Mapping[str, Any],
        callback: Callable[[Future[list[Any]]], object] | None = None,
        *,
        output_names: Sequence[str] | None = None,
        out: Any = None,
    ) -> Future[list[Any]]:
        """`run` on the model's own thread: a ``concurrent.futures.Future`` of its list of
        outputs (its ``result()`` raises what `run` would have). ``callback(future)`` runs
        when it is done. NOTE: a model runs one call at a time (calls from several threads
        wait for each other, see `_lock`), so queued async calls run in order."""
        if self._executor is None:
            self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="kiln-model")
        future = self._executor.submit(self.run, output_names, feeds, out)
        if callback is not None:
            future.add_done_callback(callback)
        return future

    def _output_indices(self, names: Sequence[str] | None) -> list[int]:
        """The positions of the outputs ``names`` (None: all the signature lists)."""
        known = [] if self.outputs is None else [o.name for o in self.outputs]
        if names is None:
            return list(range(len(known)))
        if isinstance(names, str):
            names = [names]
        picks = []
        for name in names:
            if name not in known:
                have = ", ".join(known) if known else "none recorded (pass None for all)"
                raise FrontendError(f"the model has no output {name!r}; its outputs are {have}")
            picks.append(known.index(name))
        return picks

    def __getitem__(self, name: str) -> Any:
        """Another function of the model, by name."""
        return self.vm[name]

    @property
    def exec_mode(self) -> str:
        return self.executable.exec_mode

    def profile(
        self, *args: Any, repeat: int = DEFAULT_REPEAT, warmup: int = DEFAULT_WARMUP, **kwargs: Any
    ) -> ProfileReport:
        """Where the entry function's time goes, per kernel (print it): ``warmup`` calls, then
        the medians of ``repeat`` profiled ones (`kiln.runtime.VirtualMachine.profile`), with
        each kernel's share of the FMA peak of the threads it runs on (`fma_peak_gflops`) and of
        its roofline bound with the memory bandwidth measured on them (`memory_bandwidth_gbs`)."""
        values = arrange_inputs(self._call.params, args, kwargs, self.inputs)
        bucket = None if self.sizes is None else self.sizes.pick(values)
        with self._lock:
            vm = (bucket or self).vm
            report = vm.profile(self.entry, *values, repeat=repeat, warmup=warmup)
        threads = pool_threads()
        return report.with_bounds(fma_peak_gflops() * threads, memory_bandwidth_gbs(threads))

    def export(self, path: str | os.PathLike[str]) -> Path:
        """Write the model as one shared library (load it back with `kiln.load`)."""
        if self.path is not None:  # loaded from such a library: copy it
            dest = Path(path)
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(self.path, dest)
            return dest
        return self.executable.export_library(path)

    def __repr__(self) -> str:
        return f"<kiln model {self.entry}({', '.join(self._call.params)}), {self.exec_mode} mode>"


def compile(  # noqa: A001 - the public name kiln.compile
    obj: Any,
    target: str | Target = "c",
    exec_mode: str = "compiled",
    *,
    entry: str = "main",
    device: Device | None = None,
    example_args: Any = None,
    external_codegens: Sequence[str] = (),
    dims: dict[str, Any] | None = None,
    dynamic: bool = False,
    num_threads: int | None = None,
    **options: Any,
) -> CompiledModel:
    """Compile a model for ``target`` and load it (see the module docstring). ``options`` go to
    the frontend: ``shape_dict``/``dtype_dict``/``opset`` for ONNX, ``dynamic_shapes`` for
    torch; the subgraphs that the external codegens named in ``external_codegens`` support go
    to them; ``dims`` declares sizes of symbolic dims (`kiln.driver.dims`: a list of sizes is
    buckets, a (low, high) tuple bounds) and, for a torch module, which axes are dynamic (an
    int: that axis of every input, named by the key); ``dynamic=True`` is ``dims={"batch": 0}``
    (`kiln.driver.torch_export`); ``num_threads`` caps the model's threads
    (`CompiledModel.set_num_threads`)."""
    if num_threads is not None:
        model = compile(obj, target, exec_mode, entry=entry, device=device,
                        example_args=example_args, external_codegens=external_codegens,
                        dims=dims, dynamic=dynamic, **options)  # fmt: skip
        model.set_num_threads(num_threads)
        return model
    if dynamic or dims is not None:
        dims = _dynamic_axes(obj, example_args, dims, dynamic, options)
    if dims is not None:
        declared = DeclaredDims.parse(dims)
        again = dict(entry=entry, device=device, example_args=example_args)
        again.update(external_codegens=external_codegens, **options)
        model = compile(obj, target, exec_mode, **again)

        def fixed(shapes: dict[str, Any]) -> CompiledModel:
            return compile(obj, target, exec_mode, **{**again, "shape_dict": shapes})

        model.sizes = size_router(model, declared, obj, options, fixed)
        return model
    return compile_keyed(
        lambda: import_model(obj, example_args, **options),
        lambda tgt: model_key(obj, tgt, exec_mode, entry, external_codegens, options),
        target, exec_mode, entry=entry, device=device, external_codegens=external_codegens,
    )  # fmt: skip


Importer = Callable[[], "tuple[Any, dict[str, tuple[int, int | None]]]"]
"""Makes a model's relax `IRModule` and its torch ranges (`kiln.driver.inputs.import_model`)."""


def compile_keyed(
    importer: Importer,
    keyer: Callable[[Target], str | None],
    target: str | Target = "c",
    exec_mode: str = "compiled",
    *,
    entry: str = "main",
    device: Device | None = None,
    external_codegens: Sequence[str] = (),
) -> CompiledModel:
    """The model ``importer`` makes, built for ``target``, through the model cache under the key
    ``keyer(target)`` gives (None: not cached). `compile` and the TorchDynamo backend
    (`kiln.driver.dynamo`, which keys a graph by its own digest) share it; ``KILN_DEBUG=time``
    prints its phases (a cache hit has no "import")."""
    timer = CompileTimer() if config.load().time_passes else None
    clock = timer or CompileTimer()
    tgt = build_target(target)
    with clock.phase("cache key"):
        key = keyer(tgt)
    with clock.phase("cache lookup + load"):
        hit = cached_model(key, device, entry)
    if hit is None:
        if key is not None:  # NOTE: the export for the model cache needs them (see the commit)
            prebuild_runtime(model_flags(tgt))
        with clock.phase("import"):
            mod, ranges = importer()
        ex = build(mod, tgt, exec_mode, external_codegens=external_codegens, timer=timer)
        with clock.phase("cache store + load"):
            hit = stored_model(key, ex, input_specs(mod, entry), device, entry)
        hit.sizes = range_router(hit, ranges)
    if timer is not None:
        print(timer.table(), file=sys.stderr)
    return hit


TORCH_RANGE = "the range torch.export traced it for"
"""Where the bounds of a torch program's dims come from, in the call-time error."""


def range_router(
    model: CompiledModel, ranges: dict[str, tuple[int, int | None]]
) -> SizeRouter | None:
    """A `SizeRouter` checking the torch ranges of ``model``'s symbolic dims at each call (None
    when every range allows every size)."""
    known = symbolic_dims(model.inputs)
    bounds = {n: r for n, r in ranges.items() if n in known and (r[0] > 0 or r[1] is not None)}
    if not bounds:
        return None
    return SizeRouter(model.inputs or [], DeclaredDims().with_ranges(bounds, TORCH_RANGE), {})


def _dynamic_axes(
    obj: Any, example_args: Any, dims: dict[str, Any] | None, dynamic: bool, options: dict
) -> dict[str, Any] | None:
    """``dims`` less the axes (ints) it names, which with ``dynamic=True`` become a torch
    module's ``dynamic_shapes`` in ``options`` (`kiln.driver.torch_export.apply_shorthand`)."""
    if is_torch_module(obj):
        # NOTE: a function-level import, as in `kiln.driver.inputs` (loads the torch frontend)
        from kiln.driver.torch_export import apply_shorthand

        rest = apply_shorthand(obj, example_args, dims, dynamic, options)
        return None if rest is None else dict(rest)
    if dynamic:
        raise KilnError(
            f"dynamic=True marks dim 0 of a torch module's inputs dynamic; a "
            f"{type(obj).__name__} keeps the dims it has (give dims= bounds or buckets)"
        )
    for name, value in (dims or {}).items():
        if isinstance(value, int) and not isinstance(value, bool):
            raise KilnError(
                f"dims={{{name!r}: {value!r}}}: an int is an axis, which marks a torch module's "
                "inputs dynamic; for this model give a list of sizes (buckets, e.g. [16, 32, "
                "64]) or a (low, high) tuple (bounds, e.g. (1, 512))"
            )
    return dims


def size_router(
    model: CompiledModel,
    declared: DeclaredDims,
    obj: Any,
    options: dict[str, Any],
    compile_fixed: Any,
) -> SizeRouter:
    """``model``'s `SizeRouter`, with a model compiled by ``compile_fixed(shape_dict)`` for
    every combination of the declared buckets."""
    if model.sizes is not None:  # the torch program's own ranges
        declared = declared.with_ranges(model.sizes.declared.bounds, TORCH_RANGE)
    declared.check_names(model.inputs)
    variants = {}
    if declared.sizes:
        if not is_onnx_model(obj):
            raise KilnError(
                f"dims= buckets ({', '.join(declared.sizes)}) need an ONNX model, which kiln "
                f"imports again with those dims fixed; a {type(obj).__name__} takes bounds "
                "only, e.g. dims={'seq': (1, 512)}"
            )
        base = dict(options.get("shape_dict") or {})
        for sizes in declared.combinations():
            shapes = {**base, **fixed_shapes(model.inputs or [], sizes)}
            variants[tuple(sizes[n] for n in sorted(sizes))] = compile_fixed(shapes)
    return SizeRouter(model.inputs or [], declared, variants)


def stored_model(
    key: str | None,
    exe: Executable,
    inputs: list[InputSpec] | None,
    device: Device | None = None,
    entry: str = "main",
) -> CompiledModel:
    """The model of the freshly built ``exe``: with a ``key``, stored in the model cache and
    loaded back from the entry as a later hit would be (its runtime, kernels and constants the
    entry's: the process builds no runtime of its own, and the constants are not held twice);
    without one, ``exe`` as it is. NOTE: a library built for another CPU (``-march`` not
    native) is stored but not loaded: its runtime would become this process's."""
    if key is not None:
        model_cache.store(key, exe.export_library, inputs)
        model = cached_model(key, device, entry) if "-march=native" in (exe.flags or ()) else None
        if model is not None:
            return model
    return CompiledModel(exe, device, entry, inputs)


def cached_model(
    key: str | None, device: Device | None = None, entry: str = "main"
) -> CompiledModel | None:
    """The model of cache entry ``key`` (`model_key`); None for no key, on a miss or for an
    entry that does not load."""
    if key is None:
        return None
    found = model_cache.lookup(key)
    if found is None:
        return None
    path, inputs = found
    try:
        exe = load_executable(load_module(path))
    except KilnError:
        return None  # NOTE: a corrupt entry is compiled again and replaced
    model = CompiledModel(exe, device, entry, inputs)
    model.path = path
    return model


def load(
    path: str | os.PathLike[str],
    device: Device | None = None,
    entry: str = "main",
    num_threads: int | None = None,
) -> CompiledModel:
    """A model exported with `CompiledModel.export` (or `Executable.export_library`);
    ``num_threads`` as for `compile`."""
    if not Path(path).is_file():
        raise KilnError(f"kiln.load: no file {str(path)!r}")
    model = CompiledModel(load_executable(load_module(path)), device, entry)
    model.path = Path(path)
    model.set_num_threads(num_threads)
    return model
