"""tpurs: a native PyTorch device ("tpu") whose ops are lowered to StableHLO in Rust and
run through PJRT. `import torch` loads it (entry point `torch.backends`); so does
`import tpurs`."""

from __future__ import annotations

import os

import torch

from . import _core
from ._register import autoload

__all__ = ["device_module", "platform"]


def platform() -> str:
    """The PJRT platform in use ("tpu", "cuda" or "cpu")."""
    return _core.platform()


autoload()  # a no-op when torch's entry point already ran it
device_module = torch.tpu

if os.environ.get("TPURS_DEBUG_COMPARE"):
    from .debug import _check_whole_script

    _check_whole_script()
