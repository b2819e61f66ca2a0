"""`torch.tpu.benchmark`: times a callable the way the benchmarks in `bench/` do: warm-up
runs first (they compile), then timed runs each ending in a device synchronize, reported as
the median with the number of new programs (compiled, or loaded from the disk cache) during
the timed runs: a steady loop needs none; more means shapes or batches keep changing."""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass
from typing import Any, Callable

import torch

__all__ = ["Timing", "benchmark"]


@dataclass
class Timing:
    """Seconds of each timed run, their median, and compiles during the timed runs."""

    times: list[float]
    compiles: int

    @property
    def median(self) -> float:
        return statistics.median(self.times)

    def __str__(self) -> str:
        return f"{self.median * 1e3:.3f} ms median of {len(self.times)} runs, {self.compiles} compiles while timed"


def _compiles() -> int:
    """Programs compiled or loaded from the disk cache (each is a program not seen before)."""
    m = torch.tpu.metrics()
    return m["compiles"] + m["tier2_hits"] + m["tier3_hits"]


def benchmark(
    fn: Callable, *args: Any, warmup: int = 1, repeats: int = 10, device: str = "tpu", **kwargs: Any
) -> Timing:
    """Times `fn(*args, **kwargs)`: `warmup` untimed runs, then `repeats` timed runs, each
    followed by a synchronize of `device` (nothing for "cpu"), so that launched work is
    counted where it runs."""
    sync = torch.tpu.synchronize if torch.device(device).type == "tpu" else (lambda: None)
    for _ in range(warmup):  # ended like the timed runs, so they compile the same programs
        fn(*args, **kwargs)
        sync()
    before = _compiles()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn(*args, **kwargs)
        sync()
        times.append(time.perf_counter() - t0)
    return Timing(times, _compiles() - before)
