"""`torch.tpu.benchmark`: warm-up, synchronized timed runs, compiles counted."""

from __future__ import annotations

import torch


def test_a_steady_loop_compiles_nothing_while_timed():
    x = torch.randn(32, 32, device="tpu")
    t = torch.tpu.benchmark(lambda: (x @ x).relu(), warmup=2, repeats=4)
    assert len(t.times) == 4 and all(s > 0 for s in t.times)
    assert t.compiles == 0
    assert min(t.times) <= t.median <= max(t.times)
    assert "ms median of 4 runs, 0 compiles" in str(t)


def test_changing_shapes_show_up_as_compiles():
    sizes = iter(range(3, 100))

    def new_shape_each_call():
        n = next(sizes)
        return torch.ones(n, device="tpu").add(1).sum()

    t = torch.tpu.benchmark(new_shape_each_call, warmup=1, repeats=3)
    assert t.compiles >= 3


def test_cpu_functions_time_without_a_device_sync():
    t = torch.tpu.benchmark(torch.randn, 8, 8, device="cpu", repeats=3)
    assert len(t.times) == 3 and t.compiles == 0
