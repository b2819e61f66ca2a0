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


def _allocate_here():
    return torch.randn(64, 64, device="tpu")


def test_memory_history_names_the_python_stack_of_each_live_storage(tmp_path):
    import pickle

    from torch.cuda import _memory_viz

    torch.tpu.memory._record_memory_history(max_entries=100)
    try:
        x = _allocate_here()
        y = x * 2  # a table op's result is recorded too
        address = y.untyped_storage().data_ptr()
        del y
        snapshot = torch.tpu.memory._snapshot()
    finally:
        torch.tpu.memory._record_memory_history(None)
    (segment,) = [s for s in snapshot["segments"] if s["address"] == x.untyped_storage().data_ptr()]
    assert segment["total_size"] == 64 * 64 * 4 and segment["device"] == 0
    top = segment["blocks"][0]["frames"][0]
    assert (top["name"], top["filename"]) == ("_allocate_here", __file__)
    assert all(s["address"] != address for s in snapshot["segments"]), "freed storages are not live"
    actions = [(e["action"], e["addr"]) for e in snapshot["device_traces"][0]]
    assert ("alloc", address) in actions and ("free_completed", address) in actions
    # torch's own viewers read it as a CUDA snapshot
    assert "Summary of segments" in _memory_viz.segsum(snapshot)
    assert "entries" in _memory_viz.trace(snapshot)
    path = tmp_path / "snapshot.pickle"
    torch.tpu.memory._record_memory_history()
    try:
        z = torch.ones(8, device="tpu")
        torch.tpu.memory._dump_snapshot(str(path))
    finally:
        torch.tpu.memory._record_memory_history(None)
    dumped = pickle.loads(path.read_bytes())
    assert any(s["address"] == z.untyped_storage().data_ptr() for s in dumped["segments"])
    # stopped: nothing is recorded and the history is cleared
    torch.ones(8, device="tpu")
    assert torch.tpu.memory._snapshot() == {"segments": [], "device_traces": [[]] * torch.tpu.device_count()}
    with pytest.raises(ValueError):
        torch.tpu.memory._record_memory_history("everything")
