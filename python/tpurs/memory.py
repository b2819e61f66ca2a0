"""`torch.tpu` memory statistics with CUDA's names. They read the device allocator that the
bridge registers with torch (so `torch.accelerator.memory_*` report the same numbers): every
storage is one PJRT buffer and nothing is cached, so reserved memory equals allocated memory
and `empty_cache` has nothing to release."""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

import torch

__all__ = [
    "empty_cache",
    "max_memory_allocated",
    "max_memory_reserved",
    "mem_get_info",
    "memory_allocated",
    "memory_reserved",
    "memory_stats",
    "memory_summary",
    "reset_accumulated_memory_stats",
    "reset_peak_memory_stats",
]


def _index(d: Any) -> int:
    from .device import _index as index

    return index(d)


def memory_stats(device: Any = None) -> OrderedDict[str, Any]:
    """Allocator statistics of the device, keyed as `torch.cuda.memory_stats` keys them
    (`allocated_bytes.all.current`, `allocation.all.peak`, ...)."""
    return torch.accelerator.memory_stats(_index(device))


def memory_allocated(device: Any = None) -> int:
    """Bytes held by live tensors on the device."""
    return torch.accelerator.memory_allocated(_index(device))


def max_memory_allocated(device: Any = None) -> int:
    """Most bytes held at once since start or `reset_peak_memory_stats`."""
    return torch.accelerator.max_memory_allocated(_index(device))


def memory_reserved(device: Any = None) -> int:
    """Bytes the allocator holds from the device (equal to `memory_allocated`: no caching)."""
    return torch.accelerator.memory_reserved(_index(device))


def max_memory_reserved(device: Any = None) -> int:
    """Peak of `memory_reserved`."""
    return torch.accelerator.max_memory_reserved(_index(device))


def mem_get_info(device: Any = None) -> tuple[int, int]:
    """(free, total) bytes of the device: the plugin's limit, or for the CPU plugin the host's
    available and total memory."""
    return torch.accelerator.get_memory_info(_index(device))


def empty_cache() -> None:
    """Releases cached memory: there is none (freed storages return to the plugin at once)."""
    torch.accelerator.empty_cache()


def reset_peak_memory_stats(device: Any = None) -> None:
    """Sets the peaks to the current values."""
    torch.accelerator.reset_peak_memory_stats(_index(device))


def reset_accumulated_memory_stats(device: Any = None) -> None:
    """Zeroes the totals allocated and freed."""
    torch.accelerator.reset_accumulated_memory_stats(_index(device))


def memory_summary(device: Any = None) -> str:
    """A table of the device's memory statistics, as `torch.cuda.memory_summary` prints."""
    index = _index(device)
    stats = memory_stats(index)
    free, total = mem_get_info(index)
    rows = [("Allocated memory", "allocated_bytes", True), ("Allocations", "allocation", False)]
    lines = [
        f"tpu:{index} memory summary ({torch.tpu.platform()} plugin)",
        f"{'':<18}{'current':>14}{'peak':>14}{'allocated':>14}{'freed':>14}",
    ]
    for title, key, is_bytes in rows:
        values = [stats.get(f"{key}.all.{k}", 0) for k in ("current", "peak", "allocated", "freed")]
        cells = [_bytes(v) if is_bytes else str(v) for v in values]
        lines.append(f"{title:<18}" + "".join(f"{c:>14}" for c in cells))
    lines.append(f"Device memory: {_bytes(free)} free of {_bytes(total)}")
    return "\n".join(lines)


def _bytes(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)
