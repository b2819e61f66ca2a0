"""Peak host memory of loading a safetensors checkpoint into FSDP2 shards, per rank, against
the checkpoint's size: `tpurs.distributed.load_safetensors` (each rank reads its slices from
the memory-mapped files) next to the plain way (every rank reads the whole checkpoint with
`safetensors.torch.load_file`, every tensor read). Each way runs in its own torchrun, so one
cannot reuse memory the other freed. Peaks are Linux's VmHWM, reset before the load, minus the
resident size before it. On the CPU plugin the device's memory is host memory, so the
sharded figure includes the rank's shards themselves.
Run: `.venv/bin/python bench/bench_sharded_load.py [--ranks 2] [--mib 256]` (starts torchrun).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile

LAYERS, ROWS = 8, 2048


def _status(field: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    raise KeyError(field)


def peak_extra(fn) -> int:
    """Bytes the process's resident set grew to at most while `fn` ran."""
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # resets VmHWM to the current resident size
    before = _status("VmRSS")
    fn()
    return _status("VmHWM") - before


def worker(path: str, mib: int, mode: str) -> None:
    import torch
    import torch.distributed as dist
    import torch.nn as nn
    from safetensors.torch import load_file, save_file
    from torch.distributed.fsdp import fully_shard
    from tpurs.distributed import load_safetensors

    dist.init_process_group("tpu")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.tpu.set_device(int(os.environ["LOCAL_RANK"]))
    cols = mib * (1 << 20) // (LAYERS * ROWS * 4)
    if rank == 0:
        g = torch.Generator().manual_seed(0)
        save_file({f"{i}.weight": torch.randn(ROWS, cols, generator=g) for i in range(LAYERS)}, path)
    dist.barrier()
    model = nn.Sequential(*[nn.Linear(cols, ROWS, bias=False) for _ in range(LAYERS)]).to("tpu")
    for layer in model:
        fully_shard(layer)
    fully_shard(model)
    torch.tpu.synchronize()
    report = None

    def sharded():
        nonlocal report
        report = load_safetensors(model, path)
        torch.tpu.synchronize()

    def whole():
        # safetensors maps the file lazily: summing touches every byte, as a real use would.
        torch.stack([t.sum() for t in load_file(path).values()]).sum().item()

    peak = peak_extra(sharded if mode == "sharded" else whole)
    read = report.bytes_read if report else os.path.getsize(path)
    mib_of = lambda b: b / (1 << 20)  # noqa: E731
    print(
        f"{mode} load, rank {rank}/{world}: checkpoint {mib_of(os.path.getsize(path)):.0f} MiB, "
        f"read {mib_of(read):.0f} MiB, peak extra host memory {mib_of(peak):.0f} MiB",
        flush=True,
    )
    dist.destroy_process_group()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--ranks", type=int, default=2)
    parser.add_argument("--mib", type=int, default=256)
    parser.add_argument("--worker", metavar="PATH")
    parser.add_argument("--mode", choices=["sharded", "whole"], default="sharded")
    args = parser.parse_args()
    if args.worker:
        worker(args.worker, args.mib, args.mode)
        return
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={args.ranks}"]
        cmd += [__file__, "--worker", os.path.join(tmp, "model.safetensors"), "--mib", str(args.mib)]
        for mode in ("sharded", "whole"):
            subprocess.run([*cmd, "--mode", mode], check=True)


if __name__ == "__main__":
    main()
