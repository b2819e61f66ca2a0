"""all_reduce latency and bandwidth, side by side in one process, ranks as threads:
CPU PyTorch's gloo on CPU tensors (the baseline), tpurs ranks over the devices of this
process (one PJRT all_reduce program across them), and tpurs' torchrun path (gloo on host
copies of tpu tensors, with the signature handshake). Sizes from 8 B to 64 MiB of float32;
medians per call, ratios against gloo. The CPU plugin's devices share this host's cores, so
the figures measure the software path, not an interconnect.
Run: `.venv/bin/python bench/bench_allreduce.py [--ranks 2] [--md]`.
"""

from __future__ import annotations

import argparse
import os
import statistics
import threading
import time
from datetime import timedelta

_parser = argparse.ArgumentParser()
_parser.add_argument("--ranks", type=int, default=2)
_parser.add_argument("--md", action="store_true", help="print a Markdown table")
ARGS = _parser.parse_args()
os.environ.setdefault("TPURS_CPU_DEVICES", str(ARGS.ranks))

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
from tpurs.distributed import host, spawn  # noqa: E402

SIZES = [8, 4 << 10, 256 << 10, 4 << 20, 64 << 20]
TIMEOUT = timedelta(seconds=120)


def repeats(nbytes: int) -> int:
    return 5 if nbytes >= 16 << 20 else 20


def timed_loop(rank: int, gate: threading.Barrier, call, nbytes: int) -> float | None:
    """Median seconds of `call()`, every rank starting each call together; rank 0 reports."""
    call()
    times = []
    for _ in range(repeats(nbytes)):
        gate.wait()
        t0 = time.perf_counter()
        call()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) if rank == 0 else None


def in_threads(world: int, body) -> list:
    results: list = [None] * world
    threads = [threading.Thread(target=lambda r=r: results.__setitem__(r, body(r))) for r in range(world)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results


def gloo_cpu(world: int, nbytes: int) -> float:
    store, gate = dist.HashStore(), threading.Barrier(world)

    def body(rank: int):
        pg = dist.ProcessGroupGloo(store, rank, world, TIMEOUT)
        x = torch.full((nbytes // 4,), 0.5)
        return timed_loop(rank, gate, lambda: pg.allreduce([x]).wait(), nbytes)

    return in_threads(world, body)[0]


def tpurs_host_path(world: int, nbytes: int) -> float:
    store, gate = dist.HashStore(), threading.Barrier(world)

    def body(rank: int):
        transport = host.Transport(store, rank, world, TIMEOUT)
        x = torch.full((nbytes // 4,), 0.5, device=f"tpu:{rank}")
        return timed_loop(rank, gate, lambda: transport.all_reduce(x, "sum"), nbytes)

    return in_threads(world, body)[0]


def tpurs_devices(world: int, nbytes: int) -> float:
    gate = threading.Barrier(world)

    def body(rank: int):
        dist.init_process_group("tpu", rank=rank, world_size=world)
        x = torch.full((nbytes // 4,), 0.5, device=f"tpu:{rank}")

        def call():
            dist.all_reduce(x)
            torch.tpu.synchronize()

        return timed_loop(rank, gate, call, nbytes)

    return spawn(body, nprocs=world)[0]


def main() -> None:
    world = ARGS.ranks
    rows = []
    for nbytes in SIZES:
        base = gloo_cpu(world, nbytes)
        rows.append((nbytes, base, tpurs_devices(world, nbytes), tpurs_host_path(world, nbytes)))
    head = f"{world} ranks (threads), platform {torch.tpu.platform()}; us per all_reduce (GB/s of buffer)"
    if ARGS.md:
        print(head + "\n")
        print("| size | gloo, CPU tensors | tpurs devices (PJRT) | ratio | tpurs torchrun path (gloo) | ratio |")
        print("|---|---|---|---|---|---|")
    else:
        print(head)
    for nbytes, base, dev, hostp in rows:
        cells = [f"{t * 1e6:.0f} ({nbytes / t / 1e9:.2f})" for t in (base, dev, hostp)]
        if ARGS.md:
            print(f"| {nbytes} B | {cells[0]} | {cells[1]} | {dev / base:.2f} | {cells[2]} | {hostp / base:.2f} |")
        else:
            print(
                f"{nbytes:>9} B  gloo {cells[0]}  devices {cells[1]} x{dev / base:.2f}  host {cells[2]} x{hostp / base:.2f}"
            )


if __name__ == "__main__":
    main()
