"""kiln as an ONNX backend (``onnx.backend.base.Backend``), so ONNX's own backend test suite runs
against it:

    import onnx.backend.test
    from kiln.relax.frontend.onnx import backend
    tests = onnx.backend.test.BackendTest(backend.KilnBackend, __name__)

`KilnBackend.prepare` imports the model (`from_onnx`), compiles it with `kiln.relax.build`
(C target, ``exec_mode`` keyword: ``"compiled"`` by default) and returns a `KilnBackendRep`
whose ``run(inputs)`` returns the outputs as numpy arrays, in the graph's output order.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from kiln import relax
from kiln.errors import FrontendError, InputNeededAtCompileTimeError
from kiln.relax.frontend.common import ident
from kiln.relax.frontend.onnx.importer import MAX_OPSET, from_onnx, load_model

try:  # NOTE: onnx is optional; without it the module still imports (for documentation tools)
    from onnx.backend.base import Backend, BackendRep
except ImportError:  # pragma: no cover - exercised only without onnx
    Backend = object  # type: ignore[assignment,misc]
    BackendRep = object  # type: ignore[assignment,misc]


def as_numpy(value: Any) -> tuple[np.ndarray, ...]:
    """VM results (a tensor or nested tuples of tensors) as a flat tuple of numpy arrays."""
    if isinstance(value, (tuple, list)):
        return tuple(a for v in value for a in as_numpy(v))
    return (value.numpy() if hasattr(value, "numpy") else np.asarray(value),)


class KilnBackendRep(BackendRep):
    """A compiled ONNX model: ``run(inputs)`` with inputs in graph order (or a name mapping).

    Inputs that decide shapes (a Reshape target given as an input...) are bound when ``run``
    first sees them, and the model is compiled for their values (once per distinct value).
    """

    def __init__(self, model: Any, exec_mode: str = "compiled", name: str | None = None) -> None:
        self.model = model
        self.exec_mode = exec_mode
        self.name = name
        self.input_names = runtime_inputs(model)
        self.bound: list[str] = []
        self._compiled: dict[Any, Any] = {}
        try:
            self._compile({})
        except InputNeededAtCompileTimeError as e:
            self.bound = list(e.inputs)  # compiled when run() gives the values

    def _key(self, values: dict[str, np.ndarray]) -> Any:
        items = [(n, values[n]) for n in self.bound]
        return tuple((n, v.dtype.str, v.shape, v.tobytes()) for n, v in items)

    def _compile(self, values: dict[str, np.ndarray]) -> Any:
        key = self._key(values)
        if key not in self._compiled:
            mod, bound = import_binding(self.model, values, self.name)
            self.bound = sorted(bound)
            key = self._key(values)
            exe = relax.build(mod, "c", self.exec_mode)
            self._compiled[key] = relax.VirtualMachine(exe)["main"]
        return self._compiled[key]

    def run(self, inputs: Any, **kwargs: Any) -> tuple[np.ndarray, ...]:
        by_name = self._by_name(inputs)
        fn = self._compile(by_name)
        args = [by_name[n] for n in self.input_names if n not in self.bound]
        return as_numpy(fn(*args))

    def _by_name(self, inputs: Any) -> dict[str, np.ndarray]:
        if isinstance(inputs, dict):
            missing = [n for n in self.input_names if n not in inputs]
            if missing:
                raise FrontendError(f"inputs {missing} are missing")
            items = [inputs[n] for n in self.input_names]
        else:
            items = list(inputs) if isinstance(inputs, (list, tuple)) else [inputs]
        if len(items) != len(self.input_names):
            raise FrontendError(
                f"the model takes {len(self.input_names)} input(s) "
                f"({', '.join(self.input_names)}), got {len(items)}"
            )
        return {n: np.asarray(a, order="C") for n, a in zip(self.input_names, items)}


def import_binding(
    model: Any, values: dict[str, np.ndarray], name: str | None = None
) -> tuple[Any, set[str]]:
    """`from_onnx` binding the inputs that decide shapes to ``values`` (which must hold every
    input the import asks for); the module and the names bound."""
    bind: dict[str, np.ndarray] = {}
    while True:
        try:
            return from_onnx(model, name=name, bind_inputs=bind), set(bind)
        except InputNeededAtCompileTimeError as e:
            new = [n for n in e.inputs if n not in bind]
            if not new or any(n not in values for n in new):
                raise
            bind.update({n: values[n] for n in new})


def runtime_inputs(model: Any) -> list[str]:
    """The graph inputs that are not initializers, in order."""
    inits = {t.name for t in model.graph.initializer}
    return [i.name for i in model.graph.input if i.name not in inits]


class KilnBackend(Backend):
    """The ONNX backend API over `from_onnx` + `kiln.relax.build` (CPU only)."""

    @classmethod
    def prepare(cls, model: Any, device: str = "CPU", **kwargs: Any) -> KilnBackendRep:
        if not cls.supports_device(device):
            raise FrontendError(f"kiln's ONNX backend runs on the CPU, not {device!r}")
        proto = load_model(model)
        return KilnBackendRep(proto, kwargs.get("exec_mode", "compiled"), kwargs.get("name"))

    @classmethod
    def run_model(
        cls, model: Any, inputs: Any, device: str = "CPU", **kwargs: Any
    ) -> tuple[np.ndarray, ...]:
        return cls.prepare(model, device, **kwargs).run(inputs)

    @classmethod
    def run_node(
        cls,
        node: Any,
        inputs: Any,
        device: str = "CPU",
        outputs_info: Any = None,
        **kwargs: Any,
    ) -> tuple[np.ndarray, ...]:
        model = node_model(node, inputs, kwargs.get("opset_version"))
        return cls.run_model(model, [a for a in inputs if a is not None], device)

    @classmethod
    def supports_device(cls, device: str) -> bool:
        return str(device).upper().startswith("CPU")


def node_model(node: Any, inputs: Sequence[Any], opset: int | None = None) -> Any:
    """A one-node model whose inputs are typed after the given arrays."""
    from onnx import helper

    infos = []
    for name, arr in zip(node.input, inputs):
        if not name or arr is None:
            continue
        a = np.asarray(arr)
        elem = helper.np_dtype_to_tensor_dtype(a.dtype)
        infos.append(helper.make_tensor_value_info(name, elem, a.shape))
    outs = [helper.make_empty_tensor_value_info(o) for o in node.output if o]
    graph = helper.make_graph([node], ident(node.op_type or "node"), infos, outs)

    version = opset or min(MAX_OPSET, _default_opset())
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", version)])


def _default_opset() -> int:
    import onnx.defs

    return int(onnx.defs.onnx_opset_version())


prepare = KilnBackend.prepare
run_model = KilnBackend.run_model
run_node = KilnBackend.run_node
supports_device = KilnBackend.supports_device
