"""`torch.tpu`: the device module, with the names TorchTPU uses (is_available, device_count,
synchronize, manual_seed, memory statistics, ...). Registered by `tpurs._autoload`."""

from __future__ import annotations

import enum
import struct
from typing import Any

import torch

from . import _core, memory, ops, pallas, profiler  # noqa: F401 (torch.tpu.memory, .ops, .pallas, .profiler)
from .benchmark import Timing, benchmark  # noqa: F401 (torch.tpu names)
from .bucketing import bucket_for, bucketed  # noqa: F401 (torch.tpu names)
from .memory import (  # noqa: F401 (torch.tpu names)
    empty_cache,
    max_memory_allocated,
    max_memory_reserved,
    mem_get_info,
    memory_allocated,
    memory_reserved,
    memory_stats,
    memory_summary,
    reset_accumulated_memory_stats,
    reset_peak_memory_stats,
)
from .precision import Precision, precision  # noqa: F401 (torch.tpu names)
from .streams import Event, Stream, current_stream, default_stream, stream  # noqa: F401 (torch.tpu names)

__all__ = [
    "EagerMode",
    "Precision",
    "precision",
    "Timing",
    "benchmark",
    "bucket_for",
    "bucketed",
    "eager_mode",
    "set_eager_mode",
    "current_device",
    "device",
    "device_count",
    "get_device_name",
    "get_device_properties",
    "get_rng_state",
    "get_amp_supported_dtype",
    "initial_seed",
    "is_available",
    "is_initialized",
    "manual_seed",
    "manual_seed_all",
    "empty_cache",
    "max_memory_allocated",
    "max_memory_reserved",
    "mem_get_info",
    "memory",
    "memory_allocated",
    "memory_reserved",
    "memory_stats",
    "memory_summary",
    "metrics",
    "pallas",
    "platform",
    "profiler",
    "reset_accumulated_memory_stats",
    "reset_metrics",
    "reset_peak_memory_stats",
    "seed",
    "set_device",
    "set_rng_state",
    "synchronize",
]


class EagerMode(enum.IntEnum):
    """How ops are launched (TorchTPU's names)."""

    DEFER_NEVER = 0
    """Strict eager: each op compiled (cached) and launched on its own."""
    DEFER_AND_FUSE = 1
    """Fused eager: ops are deferred and fused into one program until a value is needed."""
    DEFER_NEVER_AND_LAUNCH_BLOCKING = 2
    """Debug eager: op by op, waiting for each launch so errors point at the op."""


def set_eager_mode(mode: EagerMode | str | int) -> None:
    """Selects the eager mode; work deferred so far is launched first."""
    if isinstance(mode, str):
        mode = EagerMode[mode]
    _core.set_eager_mode(int(EagerMode(mode)))


def eager_mode() -> EagerMode:
    """The current eager mode."""
    return EagerMode(_core.eager_mode())


def is_available() -> bool:
    """True when the runtime started and has at least one device."""
    return _core.is_initialized() and _core.device_count() > 0


def is_initialized() -> bool:
    """True once the PJRT client exists."""
    return _core.is_initialized()


def _is_in_bad_fork() -> bool:
    return False


def device_count() -> int:
    """Number of tpu devices (PJRT addressable devices)."""
    return _core.device_count() if _core.is_initialized() else 0


def _index(d: Any = None) -> int:
    if d is None:
        return current_device()
    if isinstance(d, int):
        return d
    d = torch.device(d)
    if d.type != "tpu":
        raise ValueError(f"Expected a tpu device, but got: {d}")
    return current_device() if d.index is None else d.index


def current_device() -> int:
    """Index of the current tpu device (per thread, as torch's device guard keeps it)."""
    return torch.accelerator.current_device_index()


def set_device(d: Any) -> None:
    """Makes `d` the current tpu device."""
    i = _index(d)
    if not 0 <= i < device_count():
        raise RuntimeError(f"Invalid device tpu:{i}: {device_count()} tpu device(s) available")
    torch.accelerator.set_device_index(i)


class device:
    """Context manager that makes a tpu device current."""

    def __init__(self, d: Any):
        self.index = _index(d)
        self.prev = None

    def __enter__(self):
        self.prev = current_device()
        set_device(self.index)
        return self

    def __exit__(self, *exc):
        set_device(self.prev)
        return False


def synchronize(d: Any = None) -> None:
    """Waits for all work launched on the device."""
    _core.synchronize(_index(d))


def platform() -> str:
    """The PJRT platform in use: "tpu", "cuda" or "cpu"."""
    return _core.platform()


def get_device_name(d: Any = None) -> str:
    """A readable name of the device (PJRT platform and device kind)."""
    return f"{_core.platform()}:{_core.device_kind(_index(d))}"


class _DeviceProperties:
    def __init__(self, index: int):
        self.index = index
        self.name = get_device_name(index)
        self.platform = _core.platform()
        self.kind = _core.device_kind(index)

    def __repr__(self) -> str:
        return f"_TpuDeviceProperties(name='{self.name}', platform='{self.platform}', index={self.index})"


def get_device_properties(d: Any = None) -> _DeviceProperties:
    """Properties of the device (name, platform, kind)."""
    return _DeviceProperties(_index(d))


def manual_seed(seed: int) -> None:
    """Seeds the generator of the current device."""
    _core.set_rng_state(current_device(), int(seed) & 0xFFFF_FFFF_FFFF_FFFF, 0)


def manual_seed_all(seed: int) -> None:
    """Seeds the generators of every device."""
    for i in range(device_count()):
        _core.set_rng_state(i, int(seed) & 0xFFFF_FFFF_FFFF_FFFF, 0)


def seed() -> None:
    """Seeds the current device with a random number."""
    manual_seed(torch.randint(0, 2**62, ()).item())


def initial_seed() -> int:
    """The seed of the current device's generator."""
    return _core.rng_state(current_device())[0]


def get_rng_state(d: Any = "tpu") -> torch.Tensor:
    """Generator state of a device as a ByteTensor (seed and offset, 16 bytes)."""
    s, o = _core.rng_state(_index(d))
    return torch.frombuffer(bytearray(struct.pack("<QQ", s, o)), dtype=torch.uint8)


def set_rng_state(state: torch.Tensor, d: Any = "tpu") -> None:
    """Restores a state from `get_rng_state`."""
    s, o = struct.unpack("<QQ", bytes(state.detach().cpu().contiguous().numpy()))
    _core.set_rng_state(_index(d), s, o)


def get_amp_supported_dtype() -> list[torch.dtype]:
    """Dtypes autocast may use on the device."""
    return [torch.bfloat16, torch.float16]


def metrics() -> dict:
    """Counters: op launches, CPU fallbacks per op, compiles, cache hits and misses,
    compile seconds, bytes moved each way."""
    return _core.metrics()


def reset_metrics() -> None:
    """Zeroes the counters of `metrics()`."""
    _core.reset_metrics()


def __getattr__(name: str):
    # `torch.tpu.distributed` imports torch.distributed (and `debug` the dispatch-mode
    # machinery), so only on first use.
    if name in ("distributed", "debug"):
        import importlib

        return importlib.import_module(f"tpurs.{name}")
    raise AttributeError(f"module 'torch.tpu' has no attribute '{name}'")
