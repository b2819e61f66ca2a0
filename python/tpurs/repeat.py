"""`torch.repeat_interleave` with tensor repeats (`aten::repeat_interleave.Tensor`, which the
`self`/`dim` forms call for their indices) on the device: each output position's source is
found by a search in the cumulative repeats. Its length is data: one host read, which also
brings the negative-repeat and `output_size` checks."""

from __future__ import annotations

import torch

_lib: torch.library.Library | None = None


def repeat_interleave(repeats: torch.Tensor, output_size: int | None = None) -> torch.Tensor:
    if repeats.dim() != 1:
        raise RuntimeError("repeat_interleave only accept 1D vector as repeat")
    if repeats.dtype not in (torch.int32, torch.int64):
        raise NotImplementedError(f'"repeat_interleave_cpu" not implemented for {repeats.dtype}')
    if repeats.numel() == 0:
        return torch.empty(0, dtype=repeats.dtype, device=repeats.device)
    ends = repeats.cumsum(0)
    total, smallest = torch.stack([ends[-1], repeats.min()]).tolist()  # the one host read
    if smallest < 0:
        raise RuntimeError("repeats can not be negative")
    if output_size is not None and output_size != total:
        raise RuntimeError("allocated size does not match required size")
    positions = torch.arange(total, dtype=ends.dtype, device=repeats.device)
    return torch.searchsorted(ends, positions, right=True).to(repeats.dtype)


def install() -> None:
    """Registers it as the tpu kernel (once)."""
    global _lib
    if _lib is not None:
        return
    _lib = torch.library.Library("aten", "IMPL")
    _lib.impl("repeat_interleave.Tensor", repeat_interleave, "PrivateUse1")
