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
  callable over tpu tensors that fuses with the ops around it (`tpurs.stablehlo`).
- `splash_sdpa(q, k, v, *, scale, is_causal, local_window_size, ...)`: TorchTPU's fused
  attention entry point, `[B, H, L, E]` like `scaled_dot_product_attention`; it runs the
  device's fused attention rule (grouped-query heads read in place, log-sum-exp saved for
  the backward). `local_window_size=w` lets query `i` see keys `i - w` to `i`. The block
  size and layout arguments of TorchTPU's Pallas kernel are accepted and do not change
  tpurs' lowering."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

from .stablehlo import stablehlo  # noqa: F401 (torch.tpu.ops.stablehlo)

__all__ = ["ragged_dot", "ragged_dot_weight_grad", "splash_sdpa", "stablehlo"]

# TorchTPU's Pallas tuning arguments of splash_sdpa (accepted, not used by tpurs' rule).
_SPLASH_TUNING = frozenset(
    {
        "block_q",
        "block_kv",
        "block_dkv",
        "block_kv_compute",
        "block_q_dkv",
        "block_kv_dkv",
        "block_kv_dkv_compute",
        "block_q_dq",
        "block_kv_dq",
        "use_fused_bwd_kernel",
        "use_vmap_bwd",
        "q_layout",
        "k_layout",
        "v_layout",
    }
)


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


def splash_sdpa(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    *,
    scale: float | None = None,
    is_causal: bool = True,
    local_window_size: int | None = None,
    enable_gqa: bool = False,
    **tuning,
) -> torch.Tensor:
    """Fused attention (TorchTPU's name): `scaled_dot_product_attention` on the fused rule."""
    unknown = set(tuning) - _SPLASH_TUNING
    if unknown:
        raise TypeError(f"splash_sdpa() got unexpected keyword arguments {sorted(unknown)}")
    mask = None
    if local_window_size is not None:
        if local_window_size < 0:
            raise ValueError(f"splash_sdpa: local_window_size must be >= 0, got {local_window_size}")
        rows = torch.arange(q.shape[-2], device=q.device).unsqueeze(1)
        cols = torch.arange(k.shape[-2], device=q.device)
        mask = (cols <= rows) & (cols >= rows - local_window_size)
    # Grouped-query heads are what enable_gqa is for; TorchTPU keeps the flag for its API.
    gqa = enable_gqa or q.shape[-3] != k.shape[-3]
    with sdpa_kernel([SDPBackend.FLASH_ATTENTION]):
        return F.scaled_dot_product_attention(
            q, k, v, attn_mask=mask, is_causal=is_causal and mask is None, scale=scale, enable_gqa=gqa
        )
