"""`torch.tpu.pallas.jax_op`: a JAX function (Pallas kernels included, where the plugin runs
them) as a differentiable torch op on tpu tensors.

    @torch.tpu.pallas.jax_op
    def gelu_tanh(x):
        return jax.nn.gelu(x, approximate=True)

    y = gelu_tanh(torch.randn(8, 16, device="tpu", requires_grad=True))

For each set of input shapes and dtypes the function is exported (`jax.export`) to
StableHLO once, and its gradient (`jax.vjp`) when a backward first needs it; both run
through tpurs' own PJRT client as `torch.tpu.ops.stablehlo` functions, so they fuse with
the ops around them and work under `torch.compile`. JAX is needed only to export: it is
imported on first use. Inputs are tensors; the function returns an array or a tuple of
arrays. Integer and bool inputs are constants for the gradient.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import torch

from .stablehlo import StableHLOFunction, bracket_end

__all__ = ["jax_op"]

_LOCATION = re.compile(r"\s+loc\(")

Key = tuple[tuple[tuple[int, ...], torch.dtype], ...]


def _jax():
    try:
        import jax
    except ImportError as e:
        raise ImportError("torch.tpu.pallas.jax_op needs JAX: pip install jax") from e
    return jax


def _exported_text(fn: Callable, specs: list) -> str:
    """StableHLO text of `fn` exported for `specs`, without debug locations."""
    jax = _jax()
    text = jax.export.export(jax.jit(fn, keep_unused=True))(*specs).mlir_module()
    text = "\n".join(line for line in text.splitlines() if not line.startswith("#loc"))
    kept, i = [], 0
    while (m := _LOCATION.search(text, i)) is not None:  # `loc(...)` may nest parentheses
        kept.append(text[i : m.start()])
        i = bracket_end(text, m.end() - 1, "(", ")")
    return "".join(kept) + text[i:]


def _is_float(dtype: torch.dtype) -> bool:
    return dtype.is_floating_point or dtype.is_complex


class _JaxOp:
    def __init__(self, fn: Callable):
        self.fn = fn
        self.forwards: dict[Key, StableHLOFunction] = {}
        self.backwards: dict[Key, StableHLOFunction] = {}

    def __call__(self, *inputs: torch.Tensor):
        key: Key = tuple((tuple(t.shape), t.dtype) for t in inputs)
        outs = _Apply.apply(self, key, *inputs)
        return outs[0] if len(outs) == 1 else outs

    def _specs(self, key: Key) -> list:
        jax = _jax()
        return [jax.ShapeDtypeStruct(shape, jax.numpy.dtype(str(dtype).removeprefix("torch."))) for shape, dtype in key]

    def forward(self, key: Key) -> StableHLOFunction:
        if key not in self.forwards:
            f = StableHLOFunction(_exported_text(self._tupled, self._specs(key)))
            if f.params != list(key):
                raise TypeError(
                    f"jax_op: JAX exported {self.fn.__name__} for {f.params}, not the inputs' "
                    f"{list(key)} (64-bit types need jax.config.update('jax_enable_x64', True))"
                )
            self.forwards[key] = f
        return self.forwards[key]

    def backward(self, key: Key) -> StableHLOFunction:
        """Inputs then output cotangents -> the cotangents of the float inputs."""
        if key not in self.backwards:
            jax = _jax()
            n, wrt = len(key), [i for i, (_, d) in enumerate(key) if _is_float(d)]
            results = self.forward(key).results

            def pullback(*args):
                inputs, cotangents = list(args[:n]), tuple(args[n:])

                def of_floats(*floats):
                    for i, x in zip(wrt, floats):
                        inputs[i] = x
                    return self._tupled(*inputs)

                _, vjp = jax.vjp(of_floats, *[args[i] for i in wrt])
                return vjp(cotangents)

            specs = self._specs(key) + self._specs(tuple(results))
            self.backwards[key] = StableHLOFunction(_exported_text(pullback, specs))
        return self.backwards[key]

    def _tupled(self, *inputs):
        out = self.fn(*inputs)
        return tuple(out) if isinstance(out, (tuple, list)) else (out,)


class _Apply(torch.autograd.Function):
    @staticmethod
    def forward(ctx, op: _JaxOp, key: Key, *inputs: torch.Tensor):
        ctx.op, ctx.key = op, key
        ctx.save_for_backward(*inputs)
        outs = op.forward(key)(*inputs)
        outs = outs if isinstance(outs, tuple) else (outs,)
        ctx.mark_non_differentiable(*[o for o in outs if not _is_float(o.dtype)])
        return outs

    @staticmethod
    def backward(ctx, *grads: torch.Tensor):
        inputs = ctx.saved_tensors
        results = ctx.op.forward(ctx.key).results
        device = inputs[0].device
        grads = [g if g is not None else torch.zeros(s, dtype=d, device=device) for g, (s, d) in zip(grads, results)]
        found = ctx.op.backward(ctx.key)(*inputs, *grads)
        found = iter(found if isinstance(found, tuple) else (found,))
        return (None, None, *[next(found) if _is_float(t.dtype) else None for t in inputs])


def jax_op(fn: Callable) -> Callable:
    """`fn` (a JAX function of arrays) as a differentiable op on tpu tensors."""
    op = _JaxOp(fn)

    def call(*inputs: torch.Tensor):
        return op(*inputs)

    # A name FX can print (a lambda's cannot be).
    call.__name__ = call.__qualname__ = "jax_op_" + re.sub(r"\W", "_", getattr(fn, "__name__", "fn"))
    call.__doc__ = fn.__doc__

    # torch.compile records the call as one node instead of tracing into JAX; aot_autograd
    # then sees its torch.ops.tpurs.stablehlo calls (exporting on fake inputs' shapes).
    return torch._dynamo.allow_in_graph(call)
