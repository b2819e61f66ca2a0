"""`torch.tpu.debug`: a numerics debugger. Every ATen op a function runs on the device also
runs on the CPU, fed copies of the same inputs, and the first op whose device result differs
from the CPU's beyond tolerance is reported with the Python line that called it, its input
shapes and its worst elements.

    report = torch.tpu.debug.compare(model, x)   # runs model(x) once, op by op
    print(report)                                # "all 143 ops agree" or the first divergence

Because each op gets the device's own inputs, an error does not spread: the report names the
op that computes wrongly, not every op downstream of it. `TPURS_DEBUG_COMPARE=1` checks a
whole script (a summary is printed at exit); `TPURS_DEBUG_COMPARE=raise` stops at the first
divergence with a `NumericsError`.

Every op is run twice and its inputs read to the host, so a checked run is much slower than
a normal one: this is for finding a wrong value, not for training. Ops whose results are
random (dropout, `rand`) or unset (`empty`) are not compared.
"""

from __future__ import annotations

import atexit
import copy
import os
import traceback
from dataclasses import dataclass, field
from typing import Any, Callable

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten, tree_map

__all__ = ["Divergence", "NumericsError", "Report", "compare", "CompareMode"]

# Results that differ between two correct runs: random draws and uninitialised memory.
_NOT_COMPARED = (
    "aten::empty",
    "aten::empty_like",
    "aten::empty_strided",
    "aten::new_empty",
    "aten::new_empty_strided",
    "aten::rand",
    "aten::randn",
    "aten::randint",
    "aten::randperm",
    "aten::bernoulli",
    "aten::uniform_",
    "aten::normal",
    "aten::normal_",
    "aten::exponential_",
    "aten::geometric_",
    "aten::log_normal_",
    "aten::cauchy_",
    "aten::random_",
    "aten::multinomial",
    "aten::native_dropout",
    "aten::dropout",
    "aten::rrelu_with_noise",
)

_PACKAGE_DIRS = (os.path.dirname(os.path.abspath(__file__)), os.path.dirname(os.path.abspath(torch.__file__)))


class NumericsError(RuntimeError):
    """An op's device result differs from the CPU's (`TPURS_DEBUG_COMPARE=raise`)."""


@dataclass
class Divergence:
    """One op whose device result differs from the CPU's."""

    op: str
    index: int  # position of the op among those compared
    output: int  # which output of the op
    shapes: list[tuple[int, ...]]
    dtype: torch.dtype
    max_abs_error: float
    mismatched: int
    numel: int
    worst: list[tuple[tuple[int, ...], float, float]]  # (index, device value, CPU value)
    stack: str  # where the op was called (the user's frames)

    def __str__(self) -> str:
        lines = [
            f"op #{self.index} {self.op} (output {self.output}, {self.dtype}, inputs {self.shapes}): "
            f"{self.mismatched} of {self.numel} elements differ, max |tpu - cpu| = {self.max_abs_error:.4g}",
        ]
        for idx, got, want in self.worst:
            lines.append(f"  at {list(idx)}: tpu {got!r}, cpu {want!r}")
        if self.stack:
            lines.append("called from:")
            lines.append(self.stack.rstrip())
        return "\n".join(lines)


@dataclass
class Report:
    """What `compare` found."""

    ops_checked: int = 0
    divergences: list[Divergence] = field(default_factory=list)
    result: Any = None

    @property
    def ok(self) -> bool:
        return not self.divergences

    @property
    def first(self) -> Divergence | None:
        return self.divergences[0] if self.divergences else None

    def __str__(self) -> str:
        if self.ok:
            return f"torch.tpu.debug: all {self.ops_checked} ops agree with the CPU"
        head = f"torch.tpu.debug: {len(self.divergences)} of {self.ops_checked} ops differ from the CPU; first:"
        return head + "\n" + str(self.first)


def _tolerance(dtype: torch.dtype, rtol: float | None, atol: float | None) -> tuple[float, float]:
    default = {
        torch.float16: (1e-3, 1e-5),
        torch.bfloat16: (1.6e-2, 1e-5),
        torch.float32: (1.3e-6, 1e-5),
        torch.float64: (1e-7, 1e-7),
    }.get(dtype, (0.0, 0.0))
    return (default[0] if rtol is None else rtol, default[1] if atol is None else atol)


def _user_stack() -> str:
    """The caller's innermost frames, without torch's and tpurs' own."""
    frames = [f for f in traceback.extract_stack() if not f.filename.startswith(_PACKAGE_DIRS)]
    return "".join(traceback.format_list(frames[-3:]))


class CompareMode(TorchDispatchMode):
    """Runs every op on the device and on the CPU and records the ops that disagree."""

    def __init__(self, rtol: float | None = None, atol: float | None = None, raise_first: bool = False):
        super().__init__()
        self.rtol, self.atol, self.raise_first = rtol, atol, raise_first
        self.report = Report()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        flat, _ = tree_flatten((args, kwargs))
        on_device = any(isinstance(t, torch.Tensor) and t.device.type == "tpu" for t in flat)
        name = func._schema.name
        if not on_device or name.startswith(_NOT_COMPARED) or not name.startswith("aten::"):
            return func(*args, **kwargs)
        # Copies first: an in-place op would change its device inputs.
        cpu_args, cpu_kwargs = tree_map(_to_cpu, (args, kwargs))
        out = func(*args, **kwargs)
        try:
            expected = func(*cpu_args, **cpu_kwargs)
        except Exception:  # noqa: BLE001 (the CPU refuses what the device accepted: not a value to compare)
            return out
        self.report.ops_checked += 1
        got_flat, _ = tree_flatten(out)
        want_flat, _ = tree_flatten(expected)
        for k, (got, want) in enumerate(zip(got_flat, want_flat)):
            if isinstance(got, torch.Tensor) and isinstance(want, torch.Tensor):
                d = self._check(name, k, got, want, flat)
                if d is not None:
                    self.report.divergences.append(d)
                    if self.raise_first:
                        raise NumericsError(str(d))
                    break
        return out

    def _check(self, name: str, k: int, got: torch.Tensor, want: torch.Tensor, inputs: list) -> Divergence | None:
        shapes = [tuple(t.shape) for t in inputs if isinstance(t, torch.Tensor)]
        where = (name, self.report.ops_checked, k, shapes)
        return _check(where, got, want, self.rtol, self.atol, _user_stack)


def _check(where: tuple, got: torch.Tensor, want: torch.Tensor, rtol, atol, stack: Callable[[], str]):
    """The divergence of a device result from the CPU's, or None when they agree. `where` is
    (op name, op number, output number, input shapes)."""
    got = got.detach().cpu()
    want = want.detach()
    if got.shape != want.shape or got.dtype != want.dtype:
        name, *rest = where
        where = (f"{name} (tpu gives {tuple(got.shape)} {got.dtype}, cpu {tuple(want.shape)} {want.dtype})", *rest)
        return Divergence(*where, got.dtype, float("inf"), got.numel(), got.numel(), [], stack())
    if got.is_complex() or got.numel() == 0:
        return None
    rtol, atol = _tolerance(got.dtype, rtol, atol)
    close = torch.isclose(got, want, rtol=rtol, atol=atol, equal_nan=True) if got.is_floating_point() else got == want
    if bool(close.all()):
        return None
    err = (got.double() - want.double()).abs().nan_to_num(nan=float("inf"))
    err = torch.where(close, torch.zeros_like(err), err)
    mismatched = int((~close).sum())
    worst = []
    for flat_index in err.flatten().topk(min(3, mismatched)).indices.tolist():
        idx = tuple(int(i) for i in torch.unravel_index(torch.tensor(flat_index), got.shape))
        worst.append((idx, got[idx].item(), want[idx].item()))
    return Divergence(*where, got.dtype, float(err.max()), mismatched, got.numel(), worst, stack())


def _to_cpu(x: Any) -> Any:
    if isinstance(x, torch.Tensor) and x.device.type == "tpu":
        return x.detach().cpu().requires_grad_(x.requires_grad)
    if isinstance(x, torch.device) and x.type == "tpu":
        return torch.device("cpu")
    return x


def compare(
    fn: Callable,
    *args: Any,
    rtol: float | None = None,
    atol: float | None = None,
    compiled: bool = False,
    **kwargs: Any,
) -> Report:
    """Runs `fn(*args, **kwargs)` with every ATen op checked against the CPU; returns the
    report (`report.ok`, `report.first`, `report.result` holds what `fn` returned).
    `rtol`/`atol` override the per-dtype tolerances (float32: 1.3e-6 / 1e-5, as
    `torch.testing.assert_close`).

    `compiled=True` checks `torch.compile(fn)` instead: each graph (forward and backward)
    runs as one tpurs program that also returns every intermediate value, and each node is
    then run on the CPU from the device's values of its inputs and compared (the report names
    the node's op and the source line Dynamo recorded for it)."""
    if compiled:
        return _compare_compiled(fn, args, kwargs, rtol, atol)
    mode = CompareMode(rtol=rtol, atol=atol)
    with mode:
        mode.report.result = fn(*args, **kwargs)
    return mode.report


def _compare_compiled(fn: Callable, args: tuple, kwargs: dict, rtol, atol) -> Report:
    from torch._dynamo.backends.common import aot_autograd

    from . import compile as tpu_compile

    report = Report()

    def checking_compiler(gm: torch.fx.GraphModule, example_inputs: list[Any]) -> Callable:
        probe, watched = _returning_intermediates(gm)
        run = tpu_compile._compile_graph(probe, example_inputs)
        n_outputs = len(probe.graph.find_nodes(op="output")[0].args[0]) - len(watched)

        def checked(inputs: list[Any]) -> list[Any]:
            cpu_inputs = [_to_cpu(x) for x in inputs]  # before the program can mutate them
            outs = run(inputs)
            _check_nodes(gm, cpu_inputs, dict(zip(watched, outs[n_outputs:])), report, rtol, atol)
            return outs[:n_outputs]

        checked._boxed_call = True  # type: ignore[attr-defined]
        return checked

    backend = aot_autograd(
        fw_compiler=checking_compiler, bw_compiler=checking_compiler, decompositions=tpu_compile._decompositions
    )
    report.result = torch.compile(fn, backend=backend)(*args, **kwargs)
    return report


def _returning_intermediates(gm: torch.fx.GraphModule) -> tuple[torch.fx.GraphModule, list[str]]:
    """A copy of `gm` that also returns every tensor a node computes (random draws too, so
    that the CPU continues from the device's draw); the names of those nodes."""
    graph = copy.deepcopy(gm.graph)
    watched = [n for n in graph.nodes if n.op == "call_function" and isinstance(n.meta.get("val"), torch.Tensor)]
    output = graph.find_nodes(op="output")[0]
    original = output.args[0]
    original = list(original) if isinstance(original, (tuple, list)) else [original]
    output.args = (tuple(original + watched),)
    return torch.fx.GraphModule(gm, graph), [n.name for n in watched]


def _compared(target: Any) -> bool:
    schema = getattr(target, "_schema", None)
    return schema is not None and schema.name.startswith("aten::") and not schema.name.startswith(_NOT_COMPARED)


def _check_nodes(gm: torch.fx.GraphModule, inputs: list, device_values: dict, report: Report, rtol, atol) -> None:
    """Runs each watched node of `gm` on the CPU from the device's values of its inputs and
    compares its result with the device's."""
    env: dict[str, Any] = {}
    placeholders = iter(inputs)
    for node in gm.graph.nodes:
        if node.op == "placeholder":
            env[node.name] = next(placeholders)
        elif node.op == "get_attr":
            env[node.name] = _to_cpu(getattr(gm, node.target))
        elif node.op == "call_function":
            if node.name in device_values:
                env[node.name] = _to_cpu(device_values[node.name])
            args, kwargs = torch.fx.node.map_arg((node.args, node.kwargs), lambda a: env[a.name])
            args, kwargs = tree_map(_to_cpu, (args, kwargs))
            try:
                expected = node.target(*args, **kwargs)
            except Exception:  # noqa: BLE001 (the CPU refuses it: nothing to compare)
                expected = None
            if node.name not in env:
                env[node.name] = expected
            if node.name in device_values and isinstance(expected, torch.Tensor) and _compared(node.target):
                report.ops_checked += 1
                shapes = [tuple(a.shape) for a in tree_flatten((args, kwargs))[0] if isinstance(a, torch.Tensor)]
                where = (f"{node.target} (node {node.name})", report.ops_checked, 0, shapes)
                d = _check(
                    where, device_values[node.name], expected, rtol, atol, lambda: node.meta.get("stack_trace", "")
                )
                if d is not None:
                    report.divergences.append(d)


def _check_whole_script() -> None:
    """`TPURS_DEBUG_COMPARE=1|raise`: checks every op of the process from here on."""
    setting = os.environ.get("TPURS_DEBUG_COMPARE", "")
    if setting in ("", "0"):
        return
    mode = CompareMode(raise_first=setting == "raise")
    mode.__enter__()
    atexit.register(lambda: print(mode.report, flush=True))
