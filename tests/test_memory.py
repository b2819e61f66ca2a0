"""Memory statistics through torch's device-allocator interface: `torch.tpu.*` with CUDA's
names and `torch.accelerator.*` read the same counters."""

from __future__ import annotations

import pytest
import torch


def test_allocation_and_free_are_counted_in_both_apis():
    torch.tpu.synchronize()
    base = torch.tpu.memory_stats()
    x = torch.empty(1024, device="tpu")  # 4 KiB
    stats = torch.tpu.memory_stats()
    assert stats["allocated_bytes.all.current"] == base["allocated_bytes.all.current"] + 4096
    assert stats["allocation.all.current"] == base["allocation.all.current"] + 1
    assert stats["allocated_bytes.all.allocated"] >= base["allocated_bytes.all.allocated"] + 4096
    assert torch.accelerator.memory_allocated() == torch.tpu.memory_allocated() == stats["allocated_bytes.all.current"]
    assert torch.tpu.memory_reserved() == torch.tpu.memory_allocated(), "no caching: reserved is allocated"
    assert torch.tpu.max_memory_allocated() >= torch.tpu.memory_allocated()
    del x
    after = torch.tpu.memory_stats()
    assert after["allocated_bytes.all.current"] == base["allocated_bytes.all.current"]
    assert after["allocated_bytes.all.freed"] >= base["allocated_bytes.all.freed"] + 4096


def test_peak_and_accumulated_resets():
    x = torch.empty(4096, device="tpu")
    del x
    assert torch.tpu.max_memory_allocated() >= torch.tpu.memory_allocated() + 16384
    torch.tpu.reset_peak_memory_stats()
    assert torch.tpu.max_memory_allocated() == torch.tpu.memory_allocated()
    assert torch.tpu.max_memory_reserved() == torch.tpu.memory_reserved()
    torch.tpu.reset_accumulated_memory_stats()
    stats = torch.accelerator.memory_stats()
    assert stats["allocated_bytes.all.allocated"] == 0 and stats["allocated_bytes.all.freed"] == 0


def test_device_memory_info_and_summary():
    free, total = torch.tpu.mem_get_info()
    assert 0 < free <= total
    assert torch.accelerator.get_memory_info()[1] == total  # free memory moves between calls
    torch.tpu.empty_cache()  # nothing cached; must not raise
    x = torch.ones(256, device="tpu")
    summary = torch.tpu.memory_summary()
    assert "tpu:0 memory summary" in summary and "Allocated memory" in summary and "free of" in summary
    del x


def test_invalid_device_raises():
    with pytest.raises(RuntimeError, match="Invalid device"):
        torch.tpu.memory_allocated(7)
