"""`torch.tpu.profiler`: TorchTPU's profiler configuration for `torch.profiler.profile`.

    from torch.tpu.profiler import TpuProfilerConfig
    with torch.profiler.profile(activities=[CPU, PrivateUse1],
                                experimental_config=TpuProfilerConfig(run_dir="traces")):
        ...

The levels choose what the device records: `device_tracer_level=0` leaves out program runs
and copies (and launches are not awaited for their spans), `host_tracer_level=0` leaves out
compiles. `run_dir` also writes the device's spans as a Chrome trace file there
(`tpurs.<pid>.<ns>.trace.json`); without it, `TORCH_TPU_PROFILER_OUTPUT_DIR` is used when set.
"""

from __future__ import annotations

import os
import pathlib
from collections.abc import Mapping

import torch

__all__ = ["TpuProfilerConfig"]

# tpurs knows no experimental options yet; with checking on, any key is refused.
_KNOWN_EXPERIMENTAL: frozenset[str] = frozenset()
_STABLE_KEYS = frozenset(
    {"host_tracer_level", "device_tracer_level", "python_tracer_level", "run_dir", "check_experimental_options"}
)


def _level(name: str, value: int, top: int) -> str:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= top:
        raise ValueError(f"TpuProfilerConfig: {name} must be an int from 0 to {top}, got {value!r}")
    return f"{name}:{value}"


class TpuProfilerConfig(torch.profiler._ExperimentalConfig):
    """Profiler options for the tpu device, with TorchTPU's names and defaults."""

    def __init__(
        self,
        *,
        host_tracer_level: int = 2,
        device_tracer_level: int = 1,
        python_tracer_level: int = 0,
        run_dir: str | os.PathLike[str] | None = None,
        experimental_options: Mapping[str, int | bool | str] | None = None,
        check_experimental_options: bool = True,
    ):
        if python_tracer_level not in (0, False):
            # Python frames come from torch's own tracer, which this config cannot switch on.
            raise ValueError(
                "TpuProfilerConfig: python_tracer_level is not supported on tpurs; "
                "pass with_stack=True to torch.profiler.profile for Python frames"
            )
        for key in experimental_options or {}:
            if key in _STABLE_KEYS:
                raise ValueError(f"Experimental option key cannot clash with stable option: {key!r}")
            if ":" in key or "," in key:
                raise ValueError(f"Experimental option keys cannot contain ':' or ',': {key!r}")
            if check_experimental_options and key not in _KNOWN_EXPERIMENTAL:
                raise ValueError(f"TpuProfilerConfig: unknown experimental option {key!r}")
        parts = [
            _level("host_tracer_level", host_tracer_level, 3),
            _level("device_tracer_level", device_tracer_level, 1),
            _level("python_tracer_level", python_tracer_level, 1),
        ]
        run_dir = run_dir if run_dir is not None else os.environ.get("TORCH_TPU_PROFILER_OUTPUT_DIR")
        if run_dir:
            path = pathlib.Path(run_dir).as_posix()
            if "," in path:
                raise ValueError(f"TpuProfilerConfig: run_dir cannot contain ',': {path!r}")
            parts.append(f"run_dir:{path}")
        self.host_tracer_level = host_tracer_level
        self.device_tracer_level = device_tracer_level
        self.python_tracer_level = python_tracer_level
        self.run_dir = pathlib.Path(run_dir) if run_dir else None
        super().__init__(custom_profiler_config=",".join(parts))
