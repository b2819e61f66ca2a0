"""Bounded dynamic shapes: a growing sequence dimension padded up to a few sizes (buckets)
with a mask, so a model called at many lengths compiles one program per bucket instead of
one per length (`torch.tpu.bucketed`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch

from . import _core

__all__ = ["Bucketed", "bucket_for", "bucketed"]

# The smallest default bucket: shorter sequences cost no more padded to it.
_SMALLEST = 16


def bucket_for(length: int, buckets: Sequence[int] | None = None) -> int:
    """The bucket a sequence of `length` pads to: the smallest of `buckets` that holds it,
    or by default the next of 16, 24, 32, 48, 64, 96, ... (two sizes per power of two, so
    padding at most doubles a length's work and lengths up to 4096 use 17 buckets)."""
    if length < 0:
        raise ValueError(f"bucket_for: length must be non-negative, got {length}")
    if buckets is not None:
        fits = [b for b in buckets if b >= length]
        if not fits:
            raise ValueError(f"bucket_for: length {length} exceeds the largest bucket {max(buckets)}")
        return min(fits)
    size = _SMALLEST
    while size < length:
        size = size * 3 // 2 if size & (size - 1) == 0 else size * 4 // 3
    return size


class Bucketed:
    """`fn` called with its sequence dimension padded up to a bucket; see `bucketed`."""

    def __init__(
        self,
        fn: Callable,
        buckets: Sequence[int] | None,
        dim: int,
        pad_value: int | float,
        mask: str | None,
    ) -> None:
        if buckets is not None and (not buckets or any(int(b) <= 0 for b in buckets)):
            raise ValueError(f"bucketed: buckets must be positive sizes, got {buckets}")
        self.fn = fn
        self.buckets = None if buckets is None else sorted(int(b) for b in buckets)
        self.dim = dim
        self.pad_value = pad_value
        self.mask = mask

    def __getattr__(self, name: str) -> Any:
        # Attributes the wrapper does not have (a model's `config`, `eval`, ...) are the model's.
        return getattr(self.__dict__["fn"], name)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        first = next((a for a in (*args, *kwargs.values()) if isinstance(a, torch.Tensor)), None)
        if first is None:
            raise ValueError("bucketed: the call has no tensor argument to take the sequence length from")
        if first.dim() <= self.dim:
            raise ValueError(f"bucketed: the first tensor argument has {first.dim()} dims, no dim {self.dim}")
        length = first.shape[self.dim]
        size = bucket_for(length, self.buckets)
        if self.mask is not None and kwargs.get(self.mask) is None:
            kwargs[self.mask] = torch.ones(first.shape[: self.dim + 1], dtype=torch.long, device=first.device)
        padded_args = [self._pad(a, length, size, self.pad_value) for a in args]
        padded_kwargs = {
            k: self._pad(v, length, size, 0 if k == self.mask else self.pad_value) for k, v in kwargs.items()
        }
        # In fused eager the padding (whose shapes follow the length) and the model's work
        # would join one program, compiled anew for every length: launch them apart.
        _core.flush()
        out = self.fn(*padded_args, **padded_kwargs)
        _core.flush()
        return self._crop(out, length, size)

    def _pad(self, value: Any, length: int, size: int, fill: int | float) -> Any:
        """A tensor whose sequence dimension has `length` entries, padded to `size` with `fill`
        (0 for floating tensors); anything else unchanged."""
        if not isinstance(value, torch.Tensor) or value.dim() <= self.dim or value.shape[self.dim] != length:
            return value
        if size == length:
            return value
        shape = list(value.shape)
        shape[self.dim] = size - length
        fill = fill if not value.is_floating_point() else 0
        return torch.cat([value, value.new_full(shape, fill)], self.dim)

    def _crop(self, value: Any, length: int, size: int) -> Any:
        """Outputs with the padded size in the sequence dimension cut back to `length`."""
        if isinstance(value, torch.Tensor):
            if size != length and value.dim() > self.dim and value.shape[self.dim] == size:
                return value.narrow(self.dim, 0, length)
            return value
        if isinstance(value, (tuple, list)):
            items = [self._crop(v, length, size) for v in value]
            return type(value)(*items) if hasattr(value, "_fields") else type(value)(items)
        if isinstance(value, dict):
            # Transformers' ModelOutput is a dict of its fields and is rebuilt from them.
            return type(value)(**{k: self._crop(v, length, size) for k, v in value.items()})
        return value


def bucketed(
    fn: Callable,
    buckets: Sequence[int] | None = None,
    *,
    dim: int = 1,
    pad_value: int | float = 0,
    mask: str | None = "attention_mask",
) -> Bucketed:
    """Wraps a model (or any callable) whose first tensor argument has a sequence dimension
    `dim` that grows between calls, such as greedy generation without a KV cache.

    Each call pads every tensor argument whose dimension `dim` has the call's length up to
    `bucket_for(length, buckets)` (integer tensors with `pad_value`, floating ones with 0),
    passes `mask` (by default `attention_mask`, made of ones when the caller gives none)
    padded with zeros, and cuts outputs with the padded size in `dim` back to the length.
    Compiled (`torch.compile`) or fused eager, the model then compiles one program per
    bucket rather than one per length; each padded key is masked out and, in a causal
    model, padded positions come after every real one, so real positions see exactly what
    they would unpadded. Outputs that hold the padding elsewhere (a KV cache, attention
    maps) are not cut: call the model with `use_cache=False`, or use a static cache."""
    return Bucketed(fn, buckets, dim, pad_value, mask)
