"""Streams and events on tpu with CUDA's semantics: one in-order stream per device, timing
events, and the synchronize calls of torch.Stream, torch.Event and torch.accelerator."""

from __future__ import annotations

import time

import pytest
import torch
from helpers import no_fallback


@pytest.fixture(autouse=True)
def _native_only():
    with no_fallback():
        yield


@pytest.mark.parametrize("make", [torch.tpu.Event, lambda **kw: torch.Event("tpu", **kw)])
def test_timing_events_span_the_time_between_their_records(make):
    start, end = make(enable_timing=True), make(enable_timing=True)
    start.record()
    time.sleep(0.05)
    end.record()
    end.synchronize()
    assert start.elapsed_time(end) >= 49.0  # milliseconds, as CUDA's
    assert end.elapsed_time(start) < 0


def test_a_timing_event_waits_for_the_work_recorded_before_it():
    x = torch.randn(64, 64, device="tpu")
    start, end = torch.tpu.Event(enable_timing=True), torch.tpu.Event(enable_timing=True)
    start.record()
    y = (x @ x).tanh().sum()  # deferred in fused eager until a wait
    launches = torch.tpu.metrics()["op_launches"]
    end.record()
    after_record = torch.tpu.metrics()["op_launches"]
    assert end.query()
    assert start.elapsed_time(end) > 0
    torch.testing.assert_close(y.cpu(), (x.cpu() @ x.cpu()).tanh().sum(), rtol=1e-4, atol=1e-3)
    # The record launched the deferred work; the read found it done.
    assert after_record > launches
    assert torch.tpu.metrics()["op_launches"] == after_record


def test_elapsed_time_needs_two_recorded_timing_events():
    timed, other = torch.tpu.Event(enable_timing=True), torch.tpu.Event(enable_timing=True)
    with pytest.raises(ValueError, match="must be recorded"):
        timed.elapsed_time(other)
    plain_a, plain_b = torch.tpu.Event(), torch.tpu.Event()
    plain_a.record()
    plain_b.record()
    with pytest.raises(ValueError, match="enable_timing=True"):
        plain_a.elapsed_time(plain_b)


def test_tpu_events_are_torch_events_of_the_device():
    event = torch.tpu.Event()
    assert isinstance(event, torch.Event) and isinstance(event, torch.tpu.Event)
    assert event.device.type == "tpu"
    assert not isinstance(torch.Event("cpu"), torch.tpu.Event)
    with pytest.raises(NotImplementedError, match="interprocess"):
        torch.tpu.Event(interprocess=True)


@pytest.mark.parametrize(
    "wait",
    [
        lambda: torch.accelerator.synchronize(),
        lambda: torch.accelerator.current_stream().synchronize(),
        lambda: torch.Stream("tpu").synchronize(),
        lambda: torch.tpu.current_stream().synchronize(),
        lambda: torch.tpu.current_stream().record_event().synchronize(),
        lambda: torch.tpu.current_stream().query(),
    ],
)
def test_every_synchronize_raises_what_the_device_found(wait):
    # A wait is where a device-side index check surfaces, as with torch.tpu.synchronize().
    x = torch.arange(5.0, device="tpu")
    x.index_select(0, torch.tensor([5], device="tpu").add(0))  # an index only the device knows
    with pytest.raises(IndexError, match="index out of range in self"):
        wait()
    torch.tpu.synchronize()  # consumed


def test_streams_name_the_one_stream_of_the_device():
    x = torch.randn(8, device="tpu")
    side = torch.tpu.Stream()
    with torch.tpu.stream(side):
        y = x * 2
    side.wait_stream(torch.tpu.current_stream())
    torch.tpu.current_stream().wait_event(side.record_event())
    x.record_stream(side)  # accepted: the one stream frees nothing early
    torch.accelerator.set_stream(torch.tpu.current_stream())
    assert torch.accelerator.current_stream().device == torch.device("tpu", 0)
    torch.testing.assert_close(y.cpu(), x.cpu() * 2)
