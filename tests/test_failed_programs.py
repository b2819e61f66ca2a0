"""A program that fails on the device never yields zeros: running out of device memory raises
`torch.OutOfMemoryError` (what CUDA raises) with the requested size, and in fused eager every
tensor the failed batch would have produced raises when read; the device goes on working."""

import pytest
import torch

HUGE = (1 << 20, 1 << 20, 4)  # 16 TiB of float32: more than any machine has


def test_failed_fused_batch_raises_for_every_output():
    old = torch.tpu.eager_mode()
    torch.tpu.set_eager_mode("DEFER_AND_FUSE")
    try:
        x = torch.ones(4, device="tpu")
        torch.tpu.synchronize()
        y = x + 1  # recorded in the same batch as the failing op
        big = x.expand(*HUGE).contiguous()
        with pytest.raises(torch.OutOfMemoryError, match="17592186044416 bytes"):
            y.cpu()
        for lost in (y, big[0, 0]):
            with pytest.raises(RuntimeError, match="no values: the program that computes it failed"):
                lost.cpu()
        with pytest.raises(RuntimeError, match="no values"):
            (y * 2).cpu()  # using a lost tensor raises too
        y.fill_(3.0)  # a whole write gives it values again
        assert y.tolist() == [3.0] * 4
        assert (x + 1).tolist() == [2.0] * 4
    finally:
        torch.tpu.set_eager_mode(old)


def test_out_of_memory_raises_at_the_op_in_strict_eager():
    old = torch.tpu.eager_mode()
    torch.tpu.set_eager_mode("DEFER_NEVER")
    try:
        x = torch.ones(4, device="tpu")
        with pytest.raises(torch.OutOfMemoryError):
            x.expand(*HUGE).contiguous()
        assert (x * 2).sum().item() == 8.0
    finally:
        torch.tpu.set_eager_mode(old)
