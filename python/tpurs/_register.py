"""Registers the tpu device with torch: renames PrivateUse1, starts the Rust runtime,
loads the C++ bridge and installs `torch.tpu`. Called from the `torch.backends` entry point
while torch is still importing, so it must not need anything from `tpurs/__init__.py`."""

from __future__ import annotations

import atexit
import ctypes
import os
import sys
import types
import warnings

import torch

from . import _core
from ._plugin import find_plugin

_loaded = False
_failure: str | None = None
_refusals = None  # the fallback kernel that reports `_failure`, kept alive


def _cpu_devices() -> int | None:
    """Devices the CPU plugin exposes: TPURS_CPU_DEVICES, else one per local rank under
    torchrun (so that rank r finds `tpu:LOCAL_RANK`), else 1."""
    value = os.environ.get("TPURS_CPU_DEVICES") or os.environ.get("LOCAL_WORLD_SIZE")
    return int(value) if value else 1


def _quiet_plugin_logs() -> None:
    """The plugin logs through absl to stderr (INFO lines at start, warnings when a cached
    program is loaded); off unless `TPURS_LOG_LEVEL` (0 info, 1 warning, 2 error) asks for
    them. Must run before the plugin is loaded."""
    level = os.environ.get("TPURS_LOG_LEVEL", "3")
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", level)


def autoload() -> None:
    """torch's `torch.backends` entry point: registers the tpu device. A failure (no plugin,
    no compiler for the bridge, an unsupported torch) must not break `import torch`: it warns
    once, CPU PyTorch keeps working, and any op on tpu raises a RuntimeError saying why."""
    global _failure
    if _loaded or _failure is not None:
        return
    try:
        load()
    except Exception as e:  # noqa: BLE001 - whatever failed, torch itself must still import
        _failure = str(e)
        warnings.warn(f"tpurs: the tpu device is unavailable: {_failure}", RuntimeWarning, stacklevel=2)
        _refuse_device()


def load() -> None:
    """Registers the tpu device with torch; raises if it cannot."""
    global _loaded
    _loaded = True
    torch.utils.rename_privateuse1_backend("tpu")
    _quiet_plugin_logs()
    _core.init(find_plugin(), _cpu_devices())

    from . import _build, device

    bridge = ctypes.CDLL(str(_build.bridge_path()), mode=ctypes.RTLD_GLOBAL)
    bridge.tpurs_bridge_init.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
    api, runtime = ctypes.c_void_p(_core.c_api_address()), ctypes.c_void_p(_core.runtime_address())
    if bridge.tpurs_bridge_init(api, runtime) != 0:
        raise RuntimeError("tpurs: the C++ bridge refused the runtime's API table (version mismatch)")
    torch._register_device_module("tpu", device)
    # `from torch.tpu.profiler import ...` as with TorchTPU: torch.tpu is a module, not a package.
    for name in ("memory", "ops", "pallas", "profiler"):
        sys.modules[f"torch.tpu.{name}"] = getattr(device, name)
    torch.utils.generate_methods_for_privateuse1_backend(
        for_tensor=True, for_module=True, for_packed_sequence=True, for_storage=True
    )
    device.set_eager_mode(_mode_from_env())
    from . import decompositions, repeat, runs

    decompositions.install()
    repeat.install()
    runs.install()
    # An optimizer step ends a training step: end the fused batch there too, so that every
    # step replays the same programs.
    from torch.optim.optimizer import register_optimizer_step_post_hook

    register_optimizer_step_post_hook(_end_batch)
    _route_inductor()
    atexit.register(_drain_autograd_device_thread)


def _refuse_device() -> None:
    """After a failed load: `torch.tpu.is_available()` is False, and every op on the device
    or other `torch.tpu` call raises the reason instead of torch's "could not run ...
    PrivateUse1"."""
    global _refusals
    if torch._C._get_privateuse1_backend_name() != "tpu":
        torch.utils.rename_privateuse1_backend("tpu")

    def refuse(op, *args, **kwargs):
        raise RuntimeError(f"tpurs: the tpu device is unavailable ({op}): {_failure}")

    _refusals = torch.library.Library("_", "IMPL")
    _refusals.fallback(refuse, "PrivateUse1")
    if not hasattr(torch, "tpu"):
        stub = types.ModuleType("torch.tpu")
        stub.is_available = lambda: False
        stub.device_count = lambda: 0
        stub.__getattr__ = _refuse_attribute
        torch._register_device_module("tpu", stub)


def _refuse_attribute(name: str):
    if name.startswith("__"):
        raise AttributeError(name)
    raise RuntimeError(f"tpurs: the tpu device is unavailable (torch.tpu.{name}): {_failure}")


def _end_batch(*_) -> None:
    # Inside a compiled step the graph ends where the step ends; nothing to flush.
    if not torch.compiler.is_compiling():
        _core.flush()


def _drain_autograd_device_thread() -> None:
    """At exit, before the interpreter finalizes: torch's autograd thread for the device can
    drop a finished backward's state (which holds a Python context object) after the caller
    has returned. If that happens during finalization, taking the GIL ends the thread with
    pthread_exit inside a noexcept frame and the process aborts ("terminate called without an
    active exception"). One more backward through that thread, started without a Python
    object in its state, completes only after the thread has dropped the previous one."""
    x = torch.empty((), device="tpu", requires_grad=True)
    seed = torch.empty((), device="tpu")
    # The engine itself, not `backward()`, which stashes a context in the state; gradients
    # accumulate into `x.grad` rather than come back through the task (as Python objects).
    engine = torch.autograd.Variable._execution_engine
    engine.run_backward((x.view(()),), (seed,), False, False, (), False, True)


def _route_inductor() -> None:
    """A plain `torch.compile(model)` (Inductor) hands graphs whose inputs are on tpu to the
    tpurs backend, as TorchTPU's selector does; every other graph still goes to Inductor."""
    wrapper = getattr(torch, "_TorchCompileInductorWrapper", None)
    if wrapper is None or getattr(wrapper.__call__, "_tpurs_routed", False):
        return
    inductor_call = wrapper.__call__

    def __call__(self, model_, inputs_, **kwargs):
        from . import compile

        if compile.graphs_on_tpu(inputs_):
            return compile.tpu_backend(model_, inputs_)
        return inductor_call(self, model_, inputs_, **kwargs)

    __call__._tpurs_routed = True
    wrapper.__call__ = __call__


def _mode_from_env() -> int:
    """TorchTPU's variables: TORCH_TPU_LAUNCH_BLOCKING=1, TORCH_TPU_DEFER_AND_FUSE=0/1."""
    if os.environ.get("TORCH_TPU_LAUNCH_BLOCKING") == "1":
        return 2
    return 0 if os.environ.get("TORCH_TPU_DEFER_AND_FUSE", "1") == "0" else 1
