"""Shared test helpers: run the same function on CPU and on the tpu device and compare
values, dtypes, shapes and gradients against CPU PyTorch."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from typing import Any, Callable

import torch
import torch.utils._pytree as pytree

DEVICE = "tpu"


def run_python(code: str, **env) -> subprocess.CompletedProcess:
    """Runs `code` in a fresh Python process with `env` added to the environment (a value of
    None removes that variable)."""
    e = {k: v for k, v in dict(os.environ, **env).items() if v is not None}
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=e, timeout=300)


def to_device(tree: Any, device: str = DEVICE) -> Any:
    """Copies every tensor leaf to `device`, keeping `requires_grad` (as new leaves)."""

    def move(x):
        if isinstance(x, torch.Tensor):
            y = x.detach().to(device)
            return y.requires_grad_(x.requires_grad)
        return x

    return pytree.tree_map(move, tree)


def clone_tree(tree: Any) -> Any:
    return to_device(tree, "cpu")


def assert_same(actual: Any, expected: Any, atol: float = 1e-5, rtol: float = 1.3e-6, check_stride: bool = False):
    """Asserts tpu results equal CPU results: same structure, dtype, shape and values."""
    a_leaves, a_spec = pytree.tree_flatten(actual)
    e_leaves, e_spec = pytree.tree_flatten(expected)
    assert a_spec == e_spec, f"structure differs: {a_spec} vs {e_spec}"
    for a, e in zip(a_leaves, e_leaves):
        if isinstance(e, torch.Tensor):
            assert isinstance(a, torch.Tensor), f"expected a tensor, got {type(a)}"
            assert a.device.type == DEVICE, f"result on {a.device}, expected the tpu device"
            assert a.dtype == e.dtype, f"dtype {a.dtype} != {e.dtype}"
            assert a.shape == e.shape, f"shape {tuple(a.shape)} != {tuple(e.shape)}"
            if check_stride:
                assert a.stride() == e.stride(), f"stride {a.stride()} != {e.stride()}"
            torch.testing.assert_close(a.cpu(), e, atol=atol, rtol=rtol, equal_nan=True)
        else:
            assert a == e, f"{a} != {e}"


def check(
    fn: Callable,
    *args: Any,
    grad: bool = False,
    atol: float = 1e-5,
    rtol: float = 1.3e-6,
    check_stride: bool = False,
    **kwargs: Any,
):
    """Runs `fn` on CPU tensors and on tpu copies and compares results; with `grad=True`
    also compares the gradients of every input that requires grad."""
    cpu_args, cpu_kwargs = clone_tree((args, kwargs))
    dev_args, dev_kwargs = to_device((args, kwargs))
    expected = fn(*cpu_args, **cpu_kwargs)
    actual = fn(*dev_args, **dev_kwargs)
    assert_same(actual, expected, atol=atol, rtol=rtol, check_stride=check_stride)
    if grad:
        e_out = [t for t in pytree.tree_leaves(expected) if isinstance(t, torch.Tensor) and t.requires_grad]
        a_out = [t for t in pytree.tree_leaves(actual) if isinstance(t, torch.Tensor) and t.requires_grad]
        assert e_out, "grad=True but no output requires grad"
        gen = torch.Generator().manual_seed(0)
        cots = [torch.randn(t.shape, generator=gen, dtype=t.dtype) for t in e_out]
        torch.autograd.backward(e_out, cots)
        torch.autograd.backward(a_out, to_device(cots))
        e_in = [
            t for t in pytree.tree_leaves((cpu_args, cpu_kwargs)) if isinstance(t, torch.Tensor) and t.requires_grad
        ]
        a_in = [
            t for t in pytree.tree_leaves((dev_args, dev_kwargs)) if isinstance(t, torch.Tensor) and t.requires_grad
        ]
        assert e_in, "grad=True but no input requires grad"
        for a, e in zip(a_in, e_in):
            assert (a.grad is None) == (e.grad is None), "gradient presence differs"
            if e.grad is not None:
                assert_same(a.grad, e.grad, atol=atol, rtol=rtol)
    return actual


def fallbacks() -> dict:
    """CPU fallbacks so far, per op."""
    return dict(torch.tpu.metrics()["fallbacks"])


@contextlib.contextmanager
def no_fallback():
    """Fails if any op inside the block ran on the CPU fallback."""
    before = fallbacks()
    yield
    after = fallbacks()
    new = {k: v - before.get(k, 0) for k, v in after.items() if v != before.get(k, 0)}
    assert not new, f"ops fell back to the CPU: {new}"


FLOAT_DTYPES = [torch.float32, torch.bfloat16, torch.float16]
ALL_DTYPES = FLOAT_DTYPES + [torch.int64, torch.int32, torch.int8, torch.uint8, torch.bool]


def sample(shape, dtype, grad=False):
    """Random test data of `dtype`: normal floats, small signed (or unsigned) ints, bools."""
    if dtype == torch.bool:
        return torch.rand(shape) > 0.5
    if dtype.is_floating_point:
        return torch.randn(shape).to(dtype).requires_grad_(grad)
    lo = 0 if dtype == torch.uint8 else -5
    return torch.randint(lo, 6, shape, dtype=dtype)


def tol(dtype):
    """Comparison tolerances: loose for the 16-bit float types, the defaults otherwise."""
    return dict(atol=1e-2, rtol=1e-2) if dtype in (torch.bfloat16, torch.float16) else {}
