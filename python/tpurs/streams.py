"""`torch.tpu.Stream`, `Event`, `current_stream` and `stream`, the names that FSDP2 and other
stream-aware code ask of a device module.

A tpu device runs its programs in one order: each launch waits, inside PJRT, for the
buffers it reads, so there is one stream per device and every stream object of a device
names it. Waits between streams and events therefore hold already; synchronising a stream
or an event waits for everything launched on its device. A timing event
(`enable_timing=True`) waits for the device when it is recorded and stamps the time, so
`start.elapsed_time(end)` is the milliseconds the work between the two took to finish.
The device guard in the C++ bridge does this, so `torch.Event("tpu")`, `torch.Stream("tpu")`
and `torch.accelerator` behave the same."""

from __future__ import annotations

import contextlib
from typing import Any

import torch


def _device(d: Any = None) -> torch.device:
    from .device import _index

    return torch.device("tpu", _index(d))


class Stream(torch.Stream):
    """The device's one stream (`priority` is accepted and has nothing to order)."""

    def __new__(cls, device: Any = None, priority: int = 0, **kwargs):
        return super().__new__(cls, device=_device(device), priority=priority)

    def record_event(self, event: Event | None = None) -> Event:
        event = event if event is not None else Event()
        event.record(self)
        return event


class _EventType(type(torch.Event)):
    def __instancecheck__(cls, obj: Any) -> bool:
        return isinstance(obj, torch.Event) and obj.device.type == "tpu"


class Event(torch.Event, metaclass=_EventType):
    """An event on the device's one stream; `synchronize` waits for the device.

    Made as a plain `torch.Event`: its `elapsed_time` accepts no subclass as the other event.
    """

    def __new__(cls, enable_timing: bool = False, blocking: bool = False, interprocess: bool = False):
        if interprocess:
            raise NotImplementedError("torch.tpu.Event: interprocess events are not supported")
        return torch.Event(_device(), enable_timing=enable_timing, blocking=blocking)


def current_stream(device: Any = None) -> Stream:
    return Stream(device)


def default_stream(device: Any = None) -> Stream:
    return Stream(device)


@contextlib.contextmanager
def stream(s: Stream | None):
    """Runs the block on `s`, which on a tpu device is the one stream already in use."""
    yield s
