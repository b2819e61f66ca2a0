"""torch.distributed on tpu (`torch.tpu.distributed`): the "tpu" process-group backend,
`spawn` (one thread per device in this process, the collectives running as PJRT programs
across the devices), TorchTPU's launch helpers, and `load_safetensors` (checkpoints read
straight into shards)."""

from __future__ import annotations

import os
import socket
import threading

import torch
import torch.distributed as dist

from . import in_process
from .backend import TpuBackend, create
from .safetensors_load import LoadReport, load_safetensors

__all__ = [
    "LoadReport",
    "TpuBackend",
    "load_safetensors",
    "register",
    "set_tpu_launch_env",
    "spawn",
    "topology_aware_mesh",
]


def register() -> None:
    """Registers the "tpu" backend with c10d (the `torch.distributed.backends` entry point
    calls this the first time a process group names it)."""
    if "TPU" not in dist.Backend._plugins:
        dist.Backend.register_backend("tpu", create, extended_api=True, devices=["tpu"])


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def spawn(fn, args: tuple = (), nprocs: int | None = None) -> list:
    """Runs `fn(rank, *args)` for `nprocs` ranks (default: every device), each in its own
    thread with `tpu:rank` as its current device, and returns their results; the first
    exception raised by a rank is re-raised. Like `torch.multiprocessing.spawn`, each rank
    calls `init_process_group("tpu", rank=rank, world_size=nprocs)` itself (MASTER_ADDR and
    MASTER_PORT are set if missing). torch.distributed's state is per thread meanwhile."""
    from torch.testing._internal.distributed.multi_threaded_pg import (
        _install_threaded_pg,
        _uninstall_threaded_pg,
    )

    n = nprocs or torch.tpu.device_count()
    if n > torch.tpu.device_count():
        raise ValueError(
            f"spawn: {n} ranks need {n} devices, {torch.tpu.device_count()} available "
            "(TPURS_CPU_DEVICES sets the CPU plugin's device count)"
        )
    register()
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", str(_free_port()))
    session = in_process.new_session()
    results: list = [None] * n
    errors: list = [None] * n

    def run(rank: int) -> None:
        in_process.enter(session)
        torch.tpu.set_device(rank)
        try:
            results[rank] = fn(rank, *args)
        except BaseException as e:
            errors[rank] = e
        finally:
            if dist.is_initialized():
                dist.destroy_process_group()

    _install_threaded_pg()
    # c10d's registry of group names becomes per thread too.
    torch._C._distributed_c10d._set_thread_isolation_mode(True)
    try:
        threads = [threading.Thread(target=run, args=(r,), name=f"tpu-rank-{r}") for r in range(n)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        torch._C._distributed_c10d._set_thread_isolation_mode(False)
        _uninstall_threaded_pg()
        in_process.end_session(session)
    for rank, e in enumerate(errors):
        if e is not None:
            raise RuntimeError(f"rank {rank} failed: {e}") from e
    return results


def set_tpu_launch_env(nproc_per_node: int | None = None) -> None:
    """TorchTPU's launch helper: makes each process of a `torchrun`/`mp.spawn` launch see
    `nproc_per_node` devices so that rank r uses `tpu:LOCAL_RANK`. Call before `import torch`
    initialises the device (or set TPURS_CPU_DEVICES yourself)."""
    if nproc_per_node is not None:
        os.environ.setdefault("TPURS_CPU_DEVICES", str(nproc_per_node))


def topology_aware_mesh(mesh_shape: tuple[int, ...] | None = None, mesh_dim_names=None):
    """A `DeviceMesh` over the ranks of the default group, shaped `mesh_shape` (default 1-D).
    Ranks are laid out in device order, which on one host is the interconnect order."""
    from torch.distributed.device_mesh import init_device_mesh

    shape = tuple(mesh_shape) if mesh_shape else (dist.get_world_size(),)
    return init_device_mesh("tpu", shape, mesh_dim_names=mesh_dim_names)
