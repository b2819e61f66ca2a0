"""`torch.tpu.ops`: kernels under TorchTPU's names.

- `ragged_dot(lhs, rhs, group_sizes)`: the grouped matmul of mixture-of-experts layers
  (JAX's `ragged_dot`). `lhs` is `[m, k]` with its rows in consecutive groups of
  `group_sizes[g]` rows, `rhs` is `[g, k, n]`; the rows of group `g` are multiplied by
  `rhs[g]`, rows past the last group give zeros. It is `torch._grouped_mm` over the groups'
  cumulative ends, which tpurs lowers natively: the sizes stay on the device (no host read,
  no new program when they change), autograd and `torch.compile` work as for any ATen op.
- `ragged_dot_weight_grad(lhs, grad, group_sizes)`: the `rhs` gradient of `ragged_dot`,
  `[g, k, n]` with `out[g] = lhs[rows of g].T @ grad[rows of g]` (a ragged contraction,
  `torch._grouped_mm` of `lhs.T` and `grad`).
- `stablehlo(text)`: a StableHLO module written outside tpurs (entry point `@main`) as a
  callable over tpu tensors that fuses with the ops around it (`tpurs.stablehlo`)."""

from __future__ import annotations

import torch

from .stablehlo import stablehlo  # noqa: F401 (torch.tpu.ops.stablehlo)

__all__ = ["ragged_dot", "ragged_dot_weight_grad", "stablehlo"]


def ragged_dot(lhs: torch.Tensor, rhs: torch.Tensor, group_sizes: torch.Tensor) -> torch.Tensor:
    """Grouped matmul: `out[r] = lhs[r] @ rhs[g]` for the rows `r` of group `g`."""
    return torch._grouped_mm(lhs, rhs, offs=_group_ends("ragged_dot", group_sizes))


def ragged_dot_weight_grad(lhs: torch.Tensor, grad: torch.Tensor, group_sizes: torch.Tensor) -> torch.Tensor:
    """`out[g] = lhs[r].T @ grad[r]` over the rows `r` of group `g`: `[m, k]`, `[m, n]` -> `[g, k, n]`."""
    return torch._grouped_mm(lhs.t(), grad, offs=_group_ends("ragged_dot_weight_grad", group_sizes))


def _group_ends(op: str, group_sizes: torch.Tensor) -> torch.Tensor:
    if group_sizes.dim() != 1 or group_sizes.dtype not in (torch.int32, torch.int64):
        raise TypeError(f"{op}: group_sizes must be a 1-d integer tensor, got {group_sizes.dtype}")
    return group_sizes.cumsum(0, dtype=torch.int32)
