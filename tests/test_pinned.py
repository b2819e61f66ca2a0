"""Pinned host memory and `non_blocking=True` uploads, with CUDA's semantics: `pin_memory()`
gives page-aligned memory that `is_pinned()` recognises, a non-blocking copy from it returns
while the upload runs and holds the source until the device has read it, and every other
copy stays synchronous. Values are checked against the CPU source."""

from __future__ import annotations

import gc

import pytest
import torch
from helpers import no_fallback


def test_pin_memory_gives_page_aligned_pinned_memory():
    t = torch.randn(1000, 3)
    p = t.pin_memory()
    assert p.is_pinned() and not t.is_pinned()
    assert p.device.type == "cpu" and torch.equal(p, t)
    assert p.untyped_storage().data_ptr() % 4096 == 0
    assert p[10:].is_pinned(), "a view of a pinned tensor is pinned"
    assert torch.empty(0).pin_memory().is_pinned() is False  # nothing to pin, as on CUDA
    assert torch.empty(5, pin_memory=True).is_pinned()
    with pytest.raises(RuntimeError, match="Only dense CPU tensors can be pinned"):
        torch.empty(5, device="tpu", pin_memory=True)  # CUDA's message


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int64, torch.bool])
def test_non_blocking_upload_of_pinned_memory(dtype):
    t = torch.randn(257, 33).to(dtype)
    p = t.pin_memory()
    with no_fallback():
        d = p.to("tpu", non_blocking=True)
        doubled = d + d if dtype != torch.bool else d
    torch.testing.assert_close(d.cpu(), t)
    torch.testing.assert_close(doubled.cpu(), t + t if dtype != torch.bool else t)


@pytest.mark.parametrize(
    "copy",
    [
        lambda p: p[:, 1:5].to("tpu", non_blocking=True),  # a strided view of pinned memory
        lambda p: p[7:20].to("tpu", non_blocking=True),  # an offset view
        lambda p: p.to("tpu", torch.float64, non_blocking=True),  # a cast on the way
        lambda p: torch.zeros(3, 40, 8, device="tpu")[1].copy_(p[:40, :8], non_blocking=True),
        lambda p: torch.zeros(40, 8, device="tpu").copy_(p[0, :8], non_blocking=True),  # broadcast
    ],
)
def test_non_blocking_copies_of_every_shape_land(copy):
    t = torch.randn(64, 8)
    p = t.pin_memory()
    got = copy(p)
    expected = copy(t).cpu()  # pageable memory: the synchronous path
    torch.testing.assert_close(got.cpu(), expected)


def test_the_source_stays_alive_until_the_upload_is_done():
    uploads = []
    sources = []
    # Over the CPU plugin's 100 KiB limit for copying during the call, under glibc's
    # threshold for returning memory to the system: a source released early is reused by the
    # next allocation (a build that did so failed a few of these 40 uploads).
    for i in range(40):
        t = torch.full((60000,), float(i))
        sources.append(t)
        uploads.append(t.pin_memory().to("tpu", non_blocking=True))  # the pinned copy is dropped
        gc.collect()
        torch.empty(60000, pin_memory=True).fill_(-1.0)
    torch.tpu.synchronize()
    for t, d in zip(sources, uploads):
        assert torch.equal(d.cpu(), t)


def test_uploads_are_counted_and_writes_after_synchronize_do_not_reach_the_device():
    torch.tpu.synchronize()
    before = torch.tpu.metrics()["bytes_to_device"]
    p = torch.ones(1024).pin_memory()
    d = p.to("tpu", non_blocking=True)
    torch.tpu.synchronize()
    p.fill_(5.0)
    assert torch.tpu.metrics()["bytes_to_device"] == before + 4096
    assert torch.equal(d.cpu(), torch.ones(1024))


def test_dataloader_pin_memory_feeds_a_training_loop_as_on_the_cpu():
    torch.manual_seed(0)
    data = torch.utils.data.TensorDataset(torch.randn(96, 16), torch.randint(0, 4, (96,)))
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))
    models = {"cpu": model, "tpu": __import__("copy").deepcopy(model).to("tpu")}
    losses: dict[str, list[float]] = {}
    for device, m in models.items():
        opt = torch.optim.SGD(m.parameters(), lr=0.1)
        loader = torch.utils.data.DataLoader(data, batch_size=32, pin_memory=device == "tpu")
        losses[device] = []
        for x, y in loader:
            if device == "tpu":
                assert x.is_pinned() and y.is_pinned()
            x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
            loss = torch.nn.functional.cross_entropy(m(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses[device].append(loss.item())
    torch.testing.assert_close(losses["tpu"], losses["cpu"], rtol=1e-5, atol=1e-5)
