"""`torch.compile(model, backend="kiln")`: kiln as a TorchDynamo backend.

    fast = torch.compile(model, backend="kiln")     # no `import kiln`: pyproject.toml's
    with torch.no_grad():                           # `torch_dynamo_backends` entry point
        y = fast(x)                                 # names `kiln_backend`
    fast = torch.compile(model, backend="kiln", options={"num_threads": 2})

Dynamo turns the Python of ``model`` into FX graphs, cutting where it cannot trace (a graph
break: Python runs the code between graphs, eagerly), and hands each graph to `kiln_backend`
with example inputs. Each graph becomes one kiln model (`KilnGraph`):

- **Inference.** A graph that would record gradients (grad mode on and an input, a parameter
  included, that requires grad: call the model under ``torch.no_grad()``) runs eagerly, with a
  warning; so does one kiln cannot run as a pure function: one that mutates an input, returns
  a view of one, takes a size that is no input tensor's dim, or holds non-CPU tensors.
- **Weights are constants.** The module's parameters and buffers (inputs of Dynamo's graphs)
  are frozen into the model, as Inductor's ``freezing`` does; a change in place
  (``load_state_dict``, ``p.copy_(...)``) or a new tensor in their place is seen at the next
  call (tensor identity and version counter) and the graph is compiled again.
- **Dynamic shapes as Dynamo marks them.** A dim Dynamo made symbolic (a size that changed
  between calls, ``dynamic=True``, ``mark_dynamic``) is a symbolic dim of the kiln model; a
  SymInt input is read off the tensor shape it came from. Dynamo's guards decide when to
  compile again (sizes 0 and 1 stay static).
- **No copies.** Tensors cross through DLPack both ways: tvm-ffi takes torch tensors and hands
  back torch tensors. An output that shares memory with an input or another output (kiln
  returns ``x * 1`` as ``x``), or that depends on no input (a folded constant), is cloned: an
  eager graph returns fresh tensors.
- **Cached.** A graph is keyed by its code, its inputs' kinds, dtypes and shapes, the frozen
  tensors' bytes and the torch version (`graph_digest`) in kiln's model cache
  (`kiln.driver.model.compile_keyed`): a process compiling the same graph again loads it
  (with ``KILN_DEBUG=time``, no import phase).

kiln failing to compile a graph (an ATen operator it lacks) is Dynamo's ``BackendCompilerFailed``
with kiln's error; ``torch._dynamo.config.suppress_errors = True`` runs such graphs eagerly.
The conversion: the graph, its frozen tensors as buffers of a wrapper module (`_Frozen`), is
exported with ``torch.export`` (its symbolic dims as ``Dim`` s) and imported as
`kiln.compile` imports any ExportedProgram.
"""

from __future__ import annotations

import hashlib
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from kiln.driver.model import CompiledModel, compile_keyed
from kiln.driver.model_cache import model_key
from kiln.driver.torch_export import import_program
from kiln.errors import KilnError

DIGEST_FORMAT = "kiln-dynamo-graph-1"
"""Changes whenever what `graph_digest` covers changes."""

OPTIONS = ("num_threads", "target")
"""What ``torch.compile(..., options={...})`` may set."""


@dataclass
class GraphPlan:
    """How a Dynamo graph's inputs and outputs map onto a kiln model's (`plan_graph`)."""

    frozen: list[int] = field(default_factory=list)
    """Placeholders that are module state (frozen into the model as constants)."""
    tensors: list[int] = field(default_factory=list)
    """Placeholders passed to the kiln model, in its input order."""
    sizes: dict[int, tuple[int, int]] = field(default_factory=dict)
    """SymInt placeholder -> (position in ``tensors``, axis) of the dim it is."""
    outputs: list[tuple[str, int]] = field(default_factory=list)
    """Per graph output: ("arg", placeholder) passed through, ("kiln", kiln output), or
    ("none", 0)."""
    constant_outputs: set[int] = field(default_factory=set)
    """kiln outputs that depend on no tensor input (cloned: kiln may return a constant)."""
    sequence: type = tuple
    """The type of the graph's output sequence."""
    eager: str | None = None
    """Why the graph runs eagerly (None: kiln runs it)."""


def kiln_backend(
    gm: torch.fx.GraphModule,
    example_inputs: Sequence[Any],
    options: Mapping[str, Any] | None = None,
) -> Callable[..., Any]:
    """The TorchDynamo backend (module docstring): a callable running ``gm`` with kiln, or
    ``gm.forward`` itself for a graph kiln does not run (with a warning saying why)."""
    opts = dict(options or {})
    unknown = sorted(set(opts) - set(OPTIONS))
    if unknown:
        raise KilnError(
            f"torch.compile(backend='kiln') takes options {', '.join(OPTIONS)}; got {unknown}"
        )
    plan = plan_graph(gm, example_inputs)
    if plan.eager is None:
        compiled = KilnGraph(gm, plan, opts)
        plan.eager = compiled.prepare(list(example_inputs))
        if plan.eager is None:
            return compiled
    _warn_eager(plan.eager)
    return gm.forward


def _warn_eager(reason: str) -> None:
    # NOTE: one message per reason; Python's warning filter shows each once per call site
    warnings.warn(f"kiln runs this graph eagerly: {reason}", stacklevel=3)


def plan_graph(gm: torch.fx.GraphModule, example_inputs: Sequence[Any]) -> GraphPlan:
    """The `GraphPlan` of ``gm`` (``eager`` set when kiln cannot run it)."""
    plan = GraphPlan()
    nodes = [n for n in gm.graph.nodes if n.op == "placeholder"]
    plan.eager = _grad_or_device(example_inputs)
    for i, (node, value) in enumerate(zip(nodes, example_inputs)):
        if isinstance(value, torch.Tensor):
            (plan.frozen if _is_state(node, value) else plan.tensors).append(i)
    for i, (node, value) in enumerate(zip(nodes, example_inputs)):
        if not isinstance(value, torch.Tensor):
            where = _size_source(node, [nodes[k] for k in plan.tensors])
            if where is None:
                plan.eager = plan.eager or f"input {node.name!r} ({value!r}) is not a tensor dim"
            else:
                plan.sizes[i] = where
    _plan_outputs(gm, nodes, plan)
    return plan


def _grad_or_device(example_inputs: Sequence[Any]) -> str | None:
    tensors = [t for t in example_inputs if isinstance(t, torch.Tensor)]
    if torch.is_grad_enabled() and any(t.requires_grad for t in tensors):
        return (
            "it records gradients (grad mode is on and an input or parameter requires grad); "
            "kiln compiles inference graphs: call the model under torch.no_grad()"
        )
    devices = sorted({str(t.device) for t in tensors if t.device.type != "cpu"})
    if devices:
        return f"kiln's torch backend runs CPU tensors; the graph has tensors on {devices}"
    return None


def _is_state(node: torch.fx.Node, value: torch.Tensor) -> bool:
    """Whether placeholder ``node`` is a parameter or buffer of a module (Dynamo's source for
    it goes through a module's ``_parameters`` or ``_buffers``)."""
    if isinstance(value, torch.nn.Parameter):
        return True
    arg = node.meta.get("grapharg")
    source = getattr(arg, "source", None)
    while source is not None:
        if getattr(source, "member", None) in ("_parameters", "_buffers"):
            return True
        if "ParamBuffer" in type(source).__name__:
            return True
        source = getattr(source, "base", None)
    return False


def _plain_symbol(size: Any) -> Any:
    expr = getattr(getattr(size, "node", None), "expr", None)
    return expr if expr is not None and getattr(expr, "is_Symbol", False) else None


def _size_source(node: torch.fx.Node, tensors: list[torch.fx.Node]) -> tuple[int, int] | None:
    """(position in ``tensors``, axis) of the dim SymInt placeholder ``node`` is, or None."""
    sym = _plain_symbol(node.meta.get("example_value"))
    if sym is None:
        return None
    for k, t in enumerate(tensors):
        for axis, size in enumerate(getattr(t.meta.get("example_value"), "shape", ())):
            if _plain_symbol(size) == sym:
                return k, axis
    return None


def _plan_outputs(gm: torch.fx.GraphModule, nodes: list[torch.fx.Node], plan: GraphPlan) -> None:
    """Fill ``plan.outputs``/``constant_outputs``/``sequence`` (``eager`` for outputs kiln
    cannot give: non-tensors, views of inputs)."""
    results = gm.graph.output_node().args[0]
    plan.sequence = type(results) if isinstance(results, (tuple, list)) else tuple
    items = list(results) if isinstance(results, (tuple, list)) else [results]
    dynamic = {nodes[i] for i in plan.tensors}
    inputs = {_storage(n) for n in nodes} - {None}
    for item in items:
        if item is None:
            plan.outputs.append(("none", 0))
        elif isinstance(item, torch.fx.Node) and item.op == "placeholder":
            plan.outputs.append(("arg", nodes.index(item)))
        elif isinstance(item, torch.fx.Node) and isinstance(
            item.meta.get("example_value"), torch.Tensor
        ):
            if _storage(item) in inputs:
                plan.eager = plan.eager or f"output {item.name!r} is a view of an input"
            k = sum(1 for kind, _ in plan.outputs if kind == "kiln")
            if not _depends_on(item, dynamic):
                plan.constant_outputs.add(k)
            plan.outputs.append(("kiln", k))
        else:
            plan.eager = plan.eager or f"output {item!r} is not a tensor"


def _storage(node: torch.fx.Node) -> Any:
    from torch.multiprocessing.reductions import StorageWeakRef

    value = node.meta.get("example_value")
    if not isinstance(value, torch.Tensor):
        return None
    try:
        return StorageWeakRef(value.untyped_storage())
    except Exception:  # NOTE: a tensor without storage (sparse, nested) aliases nothing
        return None


def _depends_on(node: torch.fx.Node, inputs: set[torch.fx.Node]) -> bool:
    seen, stack = set(), [node]
    while stack:
        n = stack.pop()
        if n in inputs:
            return True
        if n not in seen:
            seen.add(n)
            stack.extend(n.all_input_nodes)
    return False


class _Frozen(torch.nn.Module):
    """The graph as torch.export takes it: frozen tensors as buffers, the tensor inputs as
    arguments, SymInt inputs read off their shapes, only kiln's outputs returned."""

    def __init__(self, gm: torch.fx.GraphModule, plan: GraphPlan, args: Sequence[Any]) -> None:
        super().__init__()
        self.gm = gm
        self.plan = plan
        self.count = len(args)
        for k, i in enumerate(plan.frozen):
            self.register_buffer(f"frozen_{k}", args[i].detach())

    def forward(self, *xs: torch.Tensor) -> tuple[torch.Tensor, ...]:
        args: list[Any] = [None] * self.count
        for k, i in enumerate(self.plan.frozen):
            args[i] = getattr(self, f"frozen_{k}")
        for x, i in zip(xs, self.plan.tensors):
            args[i] = x
        for i, (k, axis) in self.plan.sizes.items():
            args[i] = xs[k].shape[axis]
        out = self.gm(*args)
        out = out if isinstance(out, (tuple, list)) else (out,)
        return tuple(o for o, (kind, _) in zip(out, self.plan.outputs) if kind == "kiln")


def _dynamic_shapes(gm: torch.fx.GraphModule, plan: GraphPlan) -> Any:
    """torch.export's ``dynamic_shapes`` for `_Frozen`: each plain symbolic dim of a tensor
    input as a ``Dim`` named after Dynamo's symbol (one per symbol), with Dynamo's range; a
    dim that is an expression of symbols as ``Dim.AUTO`` (export works out the relation)."""
    nodes = [n for n in gm.graph.nodes if n.op == "placeholder"]
    dims: dict[Any, Any] = {}
    specs = []
    for i in plan.tensors:
        spec = {}
        for axis, size in enumerate(nodes[i].meta["example_value"].shape):
            if not isinstance(size, torch.SymInt):
                continue
            sym = _plain_symbol(size)
            spec[axis] = torch.export.Dim.AUTO if sym is None else dims.get(sym)
            if sym is not None and spec[axis] is None:
                spec[axis] = dims[sym] = _dim(str(sym), size)
        specs.append(spec or None)
    return (tuple(specs),) if dims or any(specs) else None


def _dim(name: str, size: torch.SymInt) -> Any:
    """``Dim(name)`` with the range Dynamo's shape environment gives the symbol."""
    node = size.node
    r = node.shape_env.var_to_range.get(node.expr)
    lo = max(int(r.lower), 0) if r is not None else 0
    hi = int(r.upper) if r is not None and r.upper < (1 << 62) else None
    return torch.export.Dim(name, min=lo) if hi is None else torch.export.Dim(name, min=lo, max=hi)


def graph_digest(gm: torch.fx.GraphModule, plan: GraphPlan, args: Sequence[Any]) -> str:
    """sha256 over what defines the kiln model of ``gm``: the torch version, the graph's code
    and module tree, each input's kind, dtype and shape (symbols by name), and the bytes of
    every frozen tensor and of the graph's own tensors (attributes, submodules' state)."""
    h = hashlib.sha256(f"{DIGEST_FORMAT}\ntorch {torch.__version__}\n".encode())
    h.update(gm.code.encode())
    h.update(repr(gm).encode())
    nodes = [n for n in gm.graph.nodes if n.op == "placeholder"]
    kinds = {**dict.fromkeys(plan.frozen, "frozen"), **dict.fromkeys(plan.tensors, "input")}
    for i, node in enumerate(nodes):
        value = node.meta.get("example_value")
        shape = [str(d) for d in getattr(value, "shape", ())]
        h.update(f"{kinds.get(i, 'size')} {getattr(value, 'dtype', value)} {shape}\n".encode())
    for i in plan.frozen:
        _hash_tensor(h, args[i])
    for name, t in sorted(gm.state_dict(keep_vars=True).items()):
        h.update(name.encode())
        _hash_tensor(h, t)
    for node in gm.graph.nodes:
        if node.op == "get_attr":
            value = _attr(gm, str(node.target))
            if isinstance(value, torch.Tensor):
                _hash_tensor(h, value)
    return h.hexdigest()


def _attr(gm: torch.nn.Module, target: str) -> Any:
    value: Any = gm
    for part in target.split("."):
        value = getattr(value, part, None)
    return value


def _hash_tensor(h: Any, t: torch.Tensor) -> None:
    t = t.detach()
    h.update(f"{t.dtype} {tuple(t.shape)}\n".encode())
    flat = t.contiguous().reshape(-1)
    if flat.numel():
        h.update(memoryview(flat.view(torch.uint8).numpy()))


class KilnGraph:
    """A Dynamo graph run by a kiln model (module docstring); called as the graph is."""

    def __init__(self, gm: torch.fx.GraphModule, plan: GraphPlan, options: dict[str, Any]):
        self.gm = gm
        self.plan = plan
        self.options = options
        self.model: CompiledModel | None = None
        self.weights: list[tuple[torch.Tensor, int]] = []
        """The frozen tensors the model holds, and their versions then."""

    def prepare(self, args: list[Any]) -> str | None:
        """Compile (or load from the cache) the model for ``args``; returns why the graph must
        run eagerly instead, or None."""
        tensors = [args[i] for i in self.plan.tensors]
        digest = graph_digest(self.gm, self.plan, args)
        mutates: list[str] = []

        def importer() -> Any:
            ep = self._export(args, tensors)
            mutates.extend(mutated_inputs(ep))
            if mutates:
                raise _Mutates()
            return import_program(ep)

        target = self.options.get("target", "c")
        try:
            self.model = compile_keyed(
                importer, lambda tgt: model_key(None, tgt, "compiled", "main", (), {}, digest),
                target,
            )  # fmt: skip
        except _Mutates:
            return f"it mutates its input(s) {', '.join(sorted(map(str, mutates)))}"
        wanted = sum(1 for kind, _ in self.plan.outputs if kind == "kiln")
        if self.model.outputs is not None and len(self.model.outputs) != wanted:
            return f"kiln's model has {len(self.model.outputs)} outputs, the graph {wanted}"
        if self.options.get("num_threads") is not None:
            self.model.set_num_threads(self.options["num_threads"])
        self.weights = [(args[i], args[i]._version) for i in self.plan.frozen]
        return None

    def _export(self, args: list[Any], tensors: list[torch.Tensor]) -> Any:
        wrapper = _Frozen(self.gm, self.plan, args).eval()
        shapes = _dynamic_shapes(self.gm, self.plan)
        # NOTE: Dynamo calls backends inside its own tracing context; torch.export run there
        # adds its guards to the frame Dynamo is compiling (which then fails its own check)
        with torch._guards.tracing(None), torch.no_grad():
            return torch.export.export(wrapper, tuple(tensors), dynamic_shapes=shapes)

    def __call__(self, *args: Any) -> Any:
        if self.plan.eager is None:
            for (t, version), i in zip(self.weights, self.plan.frozen):
                if args[i] is not t or t._version != version:
                    # NOTE: new weights: a new model (or one from the cache)
                    self.plan.eager = self.prepare(list(args))
                    break
        if self.plan.eager is not None:
            return self.gm(*args)
        assert self.model is not None
        outs = self.model(*[args[i] for i in self.plan.tensors])
        outs = list(outs) if isinstance(outs, tuple) else [outs]
        return self._outputs(args, outs)

    def _outputs(self, args: Sequence[Any], outs: list[Any]) -> Any:
        """The graph's outputs: kiln's as fresh torch tensors (see the module docstring)."""
        taken = {a.data_ptr() for a in args if isinstance(a, torch.Tensor)}
        result = []
        for kind, k in self.plan.outputs:
            if kind == "arg":
                result.append(args[k])
            elif kind == "none":
                result.append(None)
            else:
                t = outs[k] if isinstance(outs[k], torch.Tensor) else torch.from_dlpack(outs[k])
                if k in self.plan.constant_outputs or t.data_ptr() in taken:
                    t = t.clone()
                taken.add(t.data_ptr())
                result.append(t)
        return self.plan.sequence(result)


def mutated_inputs(ep: Any) -> list[str]:
    """The inputs (user inputs, parameters, buffers) an ExportedProgram's ops write to, through
    views of them too. NOTE: torch.export's program keeps in-place ops (its signature lists
    mutations only once decomposed), so the ops' schemas say what each writes."""
    inputs = {n for n in ep.graph.nodes if n.op == "placeholder"}
    found = []
    for node in ep.graph.nodes:
        schema = getattr(node.target, "_schema", None)
        if node.op != "call_function" or schema is None or not schema.is_mutable:
            continue
        values = [
            *node.args,
            *(node.kwargs.get(a.name) for a in schema.arguments[len(node.args) :]),
        ]
        for arg, value in zip(schema.arguments, values):
            written = arg.alias_info is not None and arg.alias_info.is_write
            base = _view_base(value) if written else None
            if base in inputs:
                found.append(base.name)
    return sorted(set(found))


def _view_base(value: Any) -> Any:
    """The node ``value`` is a view of (following ops whose result aliases their first
    argument), or ``value``."""
    while isinstance(value, torch.fx.Node) and value.op == "call_function":
        schema = getattr(value.target, "_schema", None)
        first = schema.arguments[0] if schema is not None and schema.arguments else None
        if first is None or first.alias_info is None or first.alias_info.is_write:
            break
        value = value.args[0]
    return value


class _Mutates(Exception):
    """The exported graph mutates inputs (raised out of the model cache's importer)."""
