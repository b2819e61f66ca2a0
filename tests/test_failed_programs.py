"""A program that fails on the device never yields zeros: running out of device memory raises
`torch.OutOfMemoryError` (what CUDA raises) with the requested size, at the next host wait in
fused eager. A failed fused batch is run again op by op: the tensors of the ops before the
failing one keep their values, those of the failing op and of ops fed by it raise when read;
the device goes on working."""

import pytest
import torch

HUGE = (1 << 20, 1 << 20, 4)  # 16 TiB of float32: more than any machine has


def test_failed_fused_batch_loses_only_the_failing_op_and_what_it_feeds():
    old = torch.tpu.eager_mode()
    torch.tpu.set_eager_mode("DEFER_AND_FUSE")
    try:
        x = torch.ones(4, device="tpu")
        torch.tpu.synchronize()
        y = x + 1  # recorded in the same batch, before the failing op
        big = x.expand(*HUGE).contiguous()
        fed = big[0, 0] * 2  # fed by the failing op
        z = y * 3  # after it, not fed by it
        with pytest.raises(torch.OutOfMemoryError, match="17592186044416 bytes"):
            y.cpu()  # the flush this read starts raises the batch's error, as CUDA does
        assert y.tolist() == [2.0] * 4
        assert z.tolist() == [6.0] * 4
        for lost in (big[0, 0], fed):
            with pytest.raises(RuntimeError, match="no values: the program that computes it failed"):
                lost.cpu()
        with pytest.raises(RuntimeError, match="no values"):
            (fed * 2).cpu()  # using a lost tensor raises too
        fed.fill_(3.0)  # a whole write gives it values again
        assert fed.tolist() == [3.0] * 4
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
