"""`torch.tpu.Precision` and `torch.tpu.precision(mode)`, TorchTPU's names for the StableHLO
precision of float32 matrix products and convolutions: a local override of
`torch.set_float32_matmul_precision`, which tpurs maps to the same three settings
(HIGHEST = "highest", HIGH = "high", DEFAULT = "medium"; a TPU runs DEFAULT as one bfloat16
pass)."""

from __future__ import annotations

import contextlib
import enum
from typing import Iterator

import torch

__all__ = ["Precision", "precision"]


class Precision(enum.Enum):
    """The StableHLO `precision_config` of float32 dots and convolutions."""

    DEFAULT = "medium"
    HIGH = "high"
    HIGHEST = "highest"


@contextlib.contextmanager
def precision(mode: Precision) -> Iterator[None]:
    """Runs the block's float32 matrix products and convolutions (eager, fused or compiled
    while the block runs) at `mode`, then restores `torch.get_float32_matmul_precision()`."""
    if not isinstance(mode, Precision):
        raise ValueError(f"expected one of Precision.DEFAULT, Precision.HIGH or Precision.HIGHEST, got {mode!r}")
    previous = torch.get_float32_matmul_precision()
    torch.set_float32_matmul_precision(mode.value)
    try:
        yield
    finally:
        torch.set_float32_matmul_precision(previous)
