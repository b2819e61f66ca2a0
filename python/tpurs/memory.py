"""`torch.tpu` memory statistics with CUDA's names. They read the device allocator that the
bridge registers with torch (so `torch.accelerator.memory_*` report the same numbers): every
storage is one PJRT buffer and nothing is cached, so reserved memory equals allocated memory
and `empty_cache` has nothing to release."""

from __future__ import annotations

import atexit
import ctypes
import pickle
import sys
import threading
import time
import traceback
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

# `_record_memory_history` / `_snapshot` with CUDA's names and snapshot format (what
# `torch.cuda._memory_viz` reads): each storage is one segment holding one block.
_HOOK_TYPE = ctypes.CFUNCTYPE(None, ctypes.c_int32, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int32)
_lock = threading.Lock()
_live: dict[int, dict] = {}  # address -> block of a storage allocated while recording
_trace: list[dict] = []  # alloc / free_completed events, when recording "all"
_settings = {"trace": False, "max_entries": sys.maxsize, "hooked": False}


def _frames() -> list[dict]:
    """The Python stack of the allocation, innermost first, without this module's frames."""
    stack = traceback.extract_stack()[:-2]
    return [{"filename": f.filename, "line": f.lineno or 0, "name": f.name} for f in reversed(stack)]


def _on_memory_event(event: int, address: int | None, nbytes: int, device: int) -> None:
    try:
        address = address or 0
        with _lock:
            if event == 1:
                frames = _frames()
                _live[address] = {"device": device, "size": nbytes, "frames": frames}
                entry = {"action": "alloc", "addr": address, "size": nbytes, "device": device, "frames": frames}
            else:
                block = _live.pop(address, None)
                if block is None:
                    return  # allocated before recording started
                entry = {"action": "free_completed", "addr": address, "size": block["size"], "device": block["device"]}
                entry["frames"] = block["frames"]
            if _settings["trace"]:
                entry["time_us"] = time.time_ns() // 1000
                entry["stream"] = 0
                _trace.append(entry)
                del _trace[: max(0, len(_trace) - _settings["max_entries"])]
    except Exception:  # an exception must not cross into the C++ allocator
        pass


_hook = _HOOK_TYPE(_on_memory_event)  # kept alive for the process: the bridge may call it


def _set_hook(on: bool) -> None:
    from . import _build

    bridge = ctypes.CDLL(str(_build.bridge_path()), mode=ctypes.RTLD_GLOBAL)
    bridge.tpurs_set_memory_hook.argtypes = [_HOOK_TYPE]
    bridge.tpurs_set_memory_hook(_hook if on else _HOOK_TYPE())
    _settings["hooked"] = on


def _record_memory_history(
    enabled: str | None = "all",
    context: str | None = "all",
    stacks: str = "all",
    max_entries: int = sys.maxsize,
    device: Any = None,
    clear_history: bool = False,
) -> None:
    """Records the Python stack of every tpu allocation from now on (`enabled="state"`: of
    the live ones; `"all"`: also a trace of allocations and frees, the last `max_entries`);
    `enabled=None` stops. `_snapshot()` reads it. Costs a stack walk per allocation while on.
    The stacks are Python's only (`stacks` and `context` are accepted for CUDA's signature)."""
    if enabled not in (None, "state", "all"):
        raise ValueError(f"enabled must be None, 'state' or 'all', not {enabled!r}")
    with _lock:
        if clear_history or enabled is None:
            _trace.clear()
        if enabled is None:
            _live.clear()
        _settings["trace"] = enabled == "all"
        _settings["max_entries"] = max_entries
    _set_hook(enabled is not None)


def _snapshot(device: Any = None) -> dict:
    """The live storages allocated while history was recorded, as
    `torch.cuda.memory._snapshot()` describes segments (one block each, with the stack that
    allocated it), and the recorded trace per device."""
    with _lock:
        live = dict(_live)
        trace = list(_trace)
    segments = []
    for address, block in sorted(live.items()):
        size = block["size"]
        segments.append(
            {
                "device": block["device"],
                "address": address,
                "total_size": size,
                "allocated_size": size,
                "active_size": size,
                "requested_size": size,
                "stream": 0,
                "segment_type": "large",
                "segment_pool_id": (0, 0),
                "is_expandable": False,
                "frames": block["frames"],
                "blocks": [
                    {
                        "address": address,
                        "size": size,
                        "requested_size": size,
                        "state": "active_allocated",
                        "frames": block["frames"],
                    }
                ],
            }
        )
    devices = torch.tpu.device_count()
    traces = [[e for e in trace if e["device"] == d] for d in range(devices)]
    return {"segments": segments, "device_traces": traces}


def _dump_snapshot(filename: str = "dump_snapshot.pickle") -> None:
    """Pickles `_snapshot()` into `filename` (for pytorch.org/memory_viz)."""
    with open(filename, "wb") as f:
        pickle.dump(_snapshot(), f)


@atexit.register
def _unhook() -> None:
    # Frees during interpreter shutdown must not call back into Python.
    if _settings["hooked"]:
        _set_hook(False)


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
