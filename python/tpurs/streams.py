"""`torch.tpu.Stream`, `Event`, `current_stream` and `stream`, the names that FSDP2 and other
stream-aware code ask of a device module.

A tpu device runs its programs in one order: each launch waits, inside PJRT, for the
buffers it reads, so there is one stream per device and every stream object of a device
names it. Waits between streams and events therefore hold already; synchronising a stream
or an event waits for everything launched on its device."""

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

    def synchronize(self) -> None:
        torch.tpu.synchronize(self.device)

    def query(self) -> bool:
        self.synchronize()
        return True

    def record_event(self, event: Event | None = None) -> Event:
        event = event if event is not None else Event()
        event.record(self)
        return event


class Event(torch.Event):
    """An event on the device's one stream; `synchronize` waits for the device."""

    def __new__(cls, enable_timing: bool = False, blocking: bool = False, interprocess: bool = False):
        if enable_timing:
            raise NotImplementedError("torch.tpu.Event: timing events are not supported")
        return super().__new__(cls, device=_device())

    def synchronize(self) -> None:
        torch.tpu.synchronize(self.device)

    def query(self) -> bool:
        self.synchronize()
        return True


def current_stream(device: Any = None) -> Stream:
    return Stream(device)


def default_stream(device: Any = None) -> Stream:
    return Stream(device)


@contextlib.contextmanager
def stream(s: Stream | None):
    """Runs the block on `s`, which on a tpu device is the one stream already in use."""
    yield s
