"""`torch.compile` for the tpu device.

Dynamo captures a graph, aot_autograd turns it into functional ATen forward and backward
graphs (decomposing only ops that have no Rust rule), and each graph is handed to the Rust
graph driver, which lowers every node with the same rule eager mode uses into one
StableHLO program. At call time the graph runs as one op, `torch.ops.tpurs.graph`: one
dispatcher call, one cached executable, no Python or dispatcher work per node.

`backend="tpu"` names this backend (entry point `torch_dynamo_backends`); a plain
`torch.compile(model)` reaches it too when the graph's inputs are on tpu (see
`_register._route_inductor`), while CPU and CUDA graphs keep Inductor.
"""

from __future__ import annotations

import functools
import operator
import os
import warnings
from pathlib import Path
from typing import Any, Callable

import torch
from torch._dynamo.backends.common import aot_autograd
from torch._functorch.aot_autograd import make_boxed_func
from torch._subclasses.fake_tensor import unset_fake_temporarily

from . import _core
from ._dtypes import DTYPE_CODES as _DTYPE_CODES

__all__ = ["tpu_backend", "graphs_on_tpu"]

_MEMORY_FORMATS = {
    torch.contiguous_format: 0,
    torch.preserve_format: 1,
    torch.channels_last: 2,
    torch.channels_last_3d: 3,
}
# Schema kinds whose numbers are runtime values of the op (`Scalar`, or a number passed
# where a tensor is expected): they become 0-d values, as the bridge does in eager mode.
_NUMBER_KINDS = ("NumberType", "TensorType")


class Unsupported(Exception):
    """The graph cannot be lowered as a whole; it then runs op by op in eager mode."""


@functools.cache
def _rule_names() -> frozenset[str]:
    return frozenset(_core.op_names())


def graphs_on_tpu(example_inputs: list[Any]) -> bool:
    """True when any example input of a graph is a tpu tensor."""
    return any(isinstance(t, torch.Tensor) and t.device.type == "tpu" for t in example_inputs)


def _table_name(name: str, overload: str) -> str:
    return name if overload == "default" else f"{name}.{overload}"


class _Call:
    """How a functional ATen node runs: the table entry, the schema its arguments follow,
    and the arguments it writes when the entry is an `out=` or in-place variant."""

    def __init__(self, target: Any):
        # tpurs' own ops in a graph: external StableHLO functions (torch.tpu.ops.stablehlo).
        if not isinstance(target, torch._ops.OpOverload) or target.namespace not in ("aten", "prims", "tpurs"):
            raise Unsupported(f"{target} is not an ATen op")
        schema = target._schema
        name = schema.name.split("::", 1)[1]
        full = _table_name(name, target._overloadname)
        if target.namespace != "aten":
            full = f"{target.namespace}::{full}"
        if schema.is_mutable:
            raise Unsupported(f"aten.{full} mutates its arguments")
        self.writes: list[tuple[int, int, bool]] = []
        self.functional_args = [a.name for a in schema.arguments]
        if full in _rule_names():
            self.name, self.schema = full, schema
        elif not self._out_variant(target, name) and not self._inplace_variant(target, name):
            raise Unsupported(f"no lowering rule for aten.{full}")

    def _out_variant(self, target: Any, name: str) -> bool:
        packet = target.overloadpacket
        for overload in packet.overloads():
            full = _table_name(name, overload)
            if full not in _rule_names():
                continue
            schema = getattr(packet, overload)._schema
            outs = [i for i, a in enumerate(schema.arguments) if a.is_out]
            rest = [a.name for a in schema.arguments if not a.is_out]
            if outs and len(outs) == len(target._schema.returns) and rest == self.functional_args:
                self.name, self.schema = full, schema
                self.writes = [(i, -1, True) for i in outs]
                return True
        return False

    def _inplace_variant(self, target: Any, name: str) -> bool:
        packet = getattr(torch.ops.aten, name + "_", None)
        overload = target._overloadname
        if packet is None or overload not in packet.overloads():
            return False
        full = _table_name(name + "_", overload)
        schema = getattr(packet, overload)._schema
        if full not in _rule_names() or [a.name for a in schema.arguments] != self.functional_args:
            return False
        self.name, self.schema = full, schema
        self.writes = [(0, -1, False)]
        return True

    def args(self, node: torch.fx.Node, env: dict) -> list:
        """The node's arguments in the entry's schema order, defaults filled in, `out=`
        arguments as placeholders for the node's results."""
        given = dict(zip(self.functional_args, node.args))
        given.update(node.kwargs)
        out, k = [], 0
        for a in self.schema.arguments:
            if a.is_out:
                out.append(("o", k))
                k += 1
                continue
            if a.name in given:
                v = given[a.name]
            elif a.has_default_value():
                v = a.default_value
            else:
                v = None
            out.append(_encode(v, _kind(a.type), env))
        return out


def _kind(ty: Any) -> Any:
    """A schema argument type as a kind name, or ("list", element kind)."""
    kind = ty.kind()
    if kind == "OptionalType":
        return _kind(ty.getElementType())
    if kind == "ListType":
        return ("list", _kind(ty.getElementType()))
    return kind


def _number(v: bool | int | float) -> tuple:
    if isinstance(v, bool):
        return ("s", (11, v))
    if isinstance(v, int):
        return ("s", (4, v))
    return ("s", (7, float(v)))


def _encode(v: Any, kind: Any, env: dict) -> Any:
    """One argument in the encoding `tpurs._core.register_graph` reads."""
    if v is None:
        return None
    if isinstance(kind, tuple):
        elem = kind[1]
        items = list(v)
        if elem in ("IntType", "SymIntType"):
            return ("il", [int(x) for x in items])
        if elem == "FloatType":
            return ("fl", [float(x) for x in items])
        if elem == "BoolType":
            return ("bl", [bool(x) for x in items])
        return ("l", [_encode(x, elem, env) for x in items])
    if isinstance(v, torch.fx.Node):
        ref = env.get(v)
        if not isinstance(ref, int):
            raise Unsupported(f"argument {v} is not a tensor of the graph")
        return ("t", ref)
    if isinstance(v, torch.dtype):
        if v not in _DTYPE_CODES:
            raise Unsupported(f"dtype {v}")
        return ("dt", _DTYPE_CODES[v])
    if isinstance(v, torch.memory_format):
        return ("i", _MEMORY_FORMATS[v])
    if isinstance(v, torch.layout):
        return ("i", 0)
    if isinstance(v, torch.device):
        return ("i", v.index or 0)
    if isinstance(v, (bool, int, float)):
        if kind in _NUMBER_KINDS:
            return _number(v)
        if kind == "FloatType":
            return ("f", float(v))
        if isinstance(v, bool) or kind == "BoolType":
            return ("b", bool(v))
        if isinstance(v, int):
            return ("i", v)
        raise Unsupported(f"float {v} for a {kind} argument")
    if isinstance(v, str):
        return ("str", v)
    raise Unsupported(f"argument {v!r} of kind {kind}")


def _tensor_type(t: Any) -> tuple[int, list[int]]:
    if not isinstance(t, torch.Tensor) or t.dtype not in _DTYPE_CODES:
        raise Unsupported(f"graph input {type(t).__name__} is not a supported tensor")
    try:
        return _DTYPE_CODES[t.dtype], [int(s) for s in t.shape]
    except TypeError as e:  # symbolic sizes
        raise Unsupported("dynamic shapes") from e


def _strided(t: Any) -> bool:
    return isinstance(t, torch.Tensor) and not t.is_contiguous()


class _Described:
    """A graph module as the Rust graph driver reads it, and how to call it."""

    def __init__(self, gm: torch.fx.GraphModule, example_inputs: list[Any]):
        env: dict = {}
        self.inputs: list[tuple[int, list[int]]] = []
        # Values eager PyTorch would hold in a non-contiguous layout: the few rules whose
        # results autograd expects to follow the layout (det's LU factors) ask for it.
        self.strided: list[int] = []
        self.sources: list[tuple[str, Any]] = []  # ("arg", i), ("const", tensor) or ("host", node)
        placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
        self.placeholders = {node: i for i, node in enumerate(placeholders)}
        for i, node in enumerate(placeholders):
            val = example_inputs[i] if i < len(example_inputs) else node.meta.get("val")
            if isinstance(val, torch.Tensor) and val.device.type != "tpu" and val.dim() > 0:
                raise Unsupported(f"input {node.name} is on {val.device}")
            self._add_input(node, val, ("arg", i), env)
        # Nodes whose values all live on the CPU and come from CPU values only (an optimizer's
        # step counters and the bias corrections made of them) run on the host at call time:
        # writing them back into their CPU tensors then waits for nothing on the device.
        self.host_nodes: list[torch.fx.Node] = []
        host = set(placeholders)
        for node in gm.graph.nodes:  # in topological order
            cpu = node.op == "call_function" and _on_cpu(node.meta.get("val"))
            if cpu and all(a in host for a in node.all_input_nodes):
                host.add(node)
                self.host_nodes.append(node)
        self.host = set(self.host_nodes)
        for node in self.host_nodes:
            if any(u not in self.host and u.op != "output" for u in node.users):
                self._add_input(node, node.meta["val"], ("host", node), env)
        for node in gm.graph.nodes:
            if node.op == "get_attr":
                # Some torch versions (2.11) keep a tensor made inside the graph as a CPU
                # constant that the graph copies to the device: it goes there once, here.
                const = getattr(gm, node.target)
                if isinstance(const, torch.Tensor) and const.device.type != "tpu":
                    with unset_fake_temporarily():  # compiling runs under aot_autograd's fake mode
                        const = const.to("tpu")
                self._add_input(node, const, ("const", const), env)
        self.nodes: list[tuple] = []
        count = len(self.inputs)
        output = None
        for node in gm.graph.nodes:
            if node in self.host:
                continue
            if node.op == "call_function" and node.target is operator.getitem:
                env[node] = env[node.args[0]][node.args[1]]
            elif node.op == "call_function":
                call = _Call(node.target)
                val = node.meta.get("val")
                vals = list(val) if isinstance(val, (tuple, list)) else [val]
                n = len(vals)
                outs = [_tensor_type(v) for v in vals] if any(w[2] for w in call.writes) else []
                self.strided += [count + k for k, v in enumerate(vals) if _strided(v)]
                self.nodes.append((call.name, call.args(node, env), n, call.writes, outs))
                env[node] = list(range(count, count + n)) if isinstance(val, (tuple, list)) else count
                count += n
            elif node.op == "output":
                output = node.args[0]
            elif node.op not in ("placeholder", "get_attr"):
                raise Unsupported(f"node kind {node.op}")
        self.outputs: list[int] = []
        self.returns: list[tuple[str, int] | None] = []
        for o in output if isinstance(output, (tuple, list)) else [output]:
            self.returns.append(self._return(o, env, placeholders))

    def _add_input(self, node: torch.fx.Node, val: Any, source: tuple, env: dict) -> None:
        env[node] = len(self.inputs)
        if _strided(val):
            self.strided.append(len(self.inputs))
        self.inputs.append(_tensor_type(val))
        self.sources.append(source)

    def _return(self, o: Any, env: dict, placeholders: list) -> tuple[str, int] | None:
        if o is None:
            return None
        if not isinstance(o, torch.fx.Node) or not (isinstance(env.get(o), int) or o in self.host):
            raise Unsupported(f"graph output {o!r}")
        if o in placeholders:
            return ("arg", placeholders.index(o))
        if o in self.host:
            return ("host", o)
        self.outputs.append(env[o])
        # A CPU value computed from device values (`x.sum().cpu()`) is read back, as eager does.
        return ("cpu_value" if _on_cpu(o.meta.get("val")) else "value", len(self.outputs) - 1)


def _dump(kind: str, text: str) -> None:
    root = os.environ.get("TPURS_DUMP_DIR")
    if not root:
        return
    path = Path(root)
    path.mkdir(parents=True, exist_ok=True)
    n = len(list(path.glob("*")))
    (path / f"{n:04d}-{kind}").write_text(text)


def _on_cpu(val: Any) -> bool:
    """Whether a node's value (a tensor or a list of them) lives on the CPU."""
    vals = list(val) if isinstance(val, (tuple, list)) else [val]
    return bool(vals) and all(isinstance(v, torch.Tensor) and v.device.type == "cpu" for v in vals)


def _run_on_host(desc: _Described, args: list[Any]) -> dict:
    """The values of the graph's host nodes for this call, by node."""
    values: dict = {}

    def value(n: torch.fx.Node) -> Any:
        return values[n] if n in values else args[desc.placeholders[n]]

    for node in desc.host_nodes:
        a, kw = torch.fx.node.map_arg((node.args, node.kwargs), value)
        values[node] = node.target(*a, **kw)
    return values


def _runner(desc: _Described, graph_id: int) -> Callable[[list[Any]], list[Any]]:
    sources = desc.sources
    returns = desc.returns
    run_graph = torch.ops.tpurs.graph

    def run(args: list[Any]) -> list[Any]:
        host = _run_on_host(desc, args)
        picks = {"arg": args.__getitem__, "host": host.__getitem__, "const": lambda v: v}
        inputs = [picks[kind](value) for kind, value in sources]
        outs = run_graph(graph_id, inputs) if desc.outputs else []
        picks["value"] = outs.__getitem__
        picks["cpu_value"] = lambda i: outs[i].cpu()
        return [None if r is None else picks[r[0]](r[1]) for r in returns]

    run._boxed_call = True  # type: ignore[attr-defined]
    return run


def _compile_graph(gm: torch.fx.GraphModule, example_inputs: list[Any]) -> Callable:
    """aot_autograd's forward / backward compiler: one program per graph."""
    _dump("aten-graph.py", gm.code)
    try:
        desc = _Described(gm, example_inputs)
        dtype = _DTYPE_CODES[torch.get_default_dtype()]
        precision = torch.get_float32_matmul_precision()
        graph_id, mlir = _core.register_graph(desc.inputs, desc.nodes, desc.outputs, desc.strided, dtype, precision)
    except (Unsupported, NotImplementedError, ValueError, RuntimeError, TypeError) as e:
        return _eager_fallback(gm, e)
    _dump("stablehlo.mlir", mlir)
    return _runner(desc, graph_id)


def _eager_fallback(gm: torch.fx.GraphModule, reason: Exception) -> Callable:
    """Runs a graph that cannot be lowered whole op by op on the device, counted as a
    fallback (`TPURS_FALLBACK=error` raises instead)."""
    if os.environ.get("TPURS_FALLBACK") == "error":
        raise NotImplementedError(
            f"tpurs cannot lower a compiled graph ({reason}) and TPURS_FALLBACK=error"
        ) from reason
    if _core.record_fallback(f"compiled graph: {reason}") == 1:
        warnings.warn(f"tpurs: a compiled graph runs op by op in eager mode: {reason}", stacklevel=3)
    return make_boxed_func(gm.forward)


def _decompositions() -> dict:
    """torch's decompositions for ops without a rule; ops with a rule stay whole."""
    from torch._decomp import decomposition_table

    names = _rule_names()

    def has_rule(op: torch._ops.OpOverload) -> bool:
        if _table_name(op._schema.name.split("::", 1)[1], op._overloadname) in names:
            return True
        try:
            _Call(op)  # its out= or in-place variant has a rule
            return True
        except Unsupported:
            return False

    return {
        op: fn for op, fn in decomposition_table.items() if isinstance(op, torch._ops.OpOverload) and not has_rule(op)
    }


_aot = aot_autograd(fw_compiler=_compile_graph, bw_compiler=_compile_graph, decompositions=_decompositions)


# Input shapes of the last compile of each frame, to name the input behind recompiles.
_last_shapes: dict[int, dict[str, tuple]] = {}


def _warn_on_recompiles(gm: torch.fx.GraphModule, example_inputs: list[Any]) -> None:
    """From the `TPURS_RECOMPILE_WARN`-th (8th, dynamo's own limit) compile of one function
    on, names the inputs whose shapes changed since its previous compile."""
    from torch._guards import CompileContext

    cid = CompileContext.current_compile_id()
    if cid is None or cid.frame_id is None:
        return
    names = [n.name for n in gm.graph.nodes if n.op == "placeholder"]
    shapes = {name: tuple(t.shape) for name, t in zip(names, example_inputs) if isinstance(t, torch.Tensor)}
    before = _last_shapes.get(cid.frame_id, {})
    _last_shapes[cid.frame_id] = shapes
    limit = int(os.environ.get("TPURS_RECOMPILE_WARN", "8"))
    count = (cid.frame_compile_id or 0) + 1
    if count < limit:
        return
    changed = [f"{k}: {before[k]} -> {v}" for k, v in shapes.items() if k in before and before[k] != v]
    warnings.warn(
        f"tpurs: compiled a function {count} times; inputs whose shape changed: "
        f"{', '.join(changed) or 'none (another guard failed)'}. Pad the changing dimension to a "
        "few sizes, or compile with dynamic=False and fewer shapes.",
        stacklevel=2,
    )


@functools.cache
def _static_tpu_shapes() -> None:
    """`dynamic=False` by default for tpu tensors: when a tpu input's shape changes, dynamo
    recompiles for the new shape instead of making the dimension symbolic (a compiled
    program has static shapes). `dynamic=True` and `mark_dynamic` still apply. Installed at
    the first tpu compile, before any recompile can happen."""
    from torch._dynamo import config
    from torch._dynamo.variables import builder

    always_static = builder.tensor_always_has_static_shape

    def tpu_static(tensor: Any, is_tensor: bool, tensor_source: Any) -> tuple:
        static, reason = always_static(tensor, is_tensor, tensor_source)
        if (
            not static
            and config.assume_static_by_default
            and isinstance(tensor, torch.Tensor)
            and tensor.device.type == "tpu"
            and not getattr(tensor, "_dynamo_dynamic_indices", None)
        ):
            return True, None
        return static, reason

    builder.tensor_always_has_static_shape = tpu_static


def tpu_backend(gm: torch.fx.GraphModule, example_inputs: list[Any], **kwargs: Any) -> Callable:
    """The `torch.compile` backend for tpu graphs (`backend="tpu"`)."""
    _static_tpu_shapes()
    _dump("fx-graph.py", gm.code)
    _warn_on_recompiles(gm, example_inputs)
    return _aot(gm, example_inputs, **kwargs)
