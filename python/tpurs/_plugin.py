"""Finds the PJRT plugin to load: an explicit path, then libtpu, then a CUDA plugin, then
the CPU plugin package tpurs depends on."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

_CUDA_PACKAGES = ("jax_plugins.xla_cuda13", "jax_plugins.xla_cuda12")
_CPU_PACKAGE = "fastatomstruct_xla_cpu"


def _package_file(package: str, filename: str) -> str | None:
    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    for location in spec.submodule_search_locations:
        candidate = Path(location) / filename
        if candidate.exists():
            return str(candidate)
    return None


def find_plugin() -> str:
    """The plugin path: `TPURS_PJRT_PLUGIN`, libtpu, a CUDA plugin, or the CPU plugin."""
    explicit = os.environ.get("TPURS_PJRT_PLUGIN")
    if explicit:
        return explicit
    found = _package_file("libtpu", "libtpu.so")
    if found:
        return found
    for package in _CUDA_PACKAGES:
        found = _package_file(package, "xla_cuda_plugin.so")
        if found:
            return found
    found = _package_file(_CPU_PACKAGE, "libpjrt_cpu.so")
    if found:
        return found
    return "<no PJRT plugin found>"
