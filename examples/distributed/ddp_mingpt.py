"""Data-parallel training of the minGPT demo on the tpu device with
DistributedDataParallel, one process per device, each rank on its own batches:

    torchrun --nproc-per-node 2 examples/distributed/ddp_mingpt.py --steps 200

`--compile` wraps the compiled model: `DDP(torch.compile(model))`."""

from __future__ import annotations

import argparse
import os
import sys
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "mingpt"))

from data import CharDataset, make_text  # noqa: E402
from model import GPT, GPTConfig  # noqa: E402


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--dropout", type=float, default=0.1)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--log-every", type=int, default=25)
    p.add_argument("--compile", action="store_true", help="DDP over torch.compile(model)")
    args = p.parse_args()

    dist.init_process_group("tpu")
    rank, world = dist.get_rank(), dist.get_world_size()
    device = torch.device("tpu", int(os.environ.get("LOCAL_RANK", 0)))
    torch.tpu.set_device(device)

    torch.manual_seed(0)  # the same initial weights on every rank (DDP checks them)
    cfg = GPTConfig(dropout=args.dropout)
    data = CharDataset(make_text(), cfg.block_size)
    cfg.vocab_size = data.vocab_size
    model = GPT(cfg).to(device)
    model = DDP(torch.compile(model) if args.compile else model)
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr)
    gen = torch.Generator().manual_seed(1 + rank)

    if rank == 0:
        print(f"DDP over {world} ranks on {torch.tpu.platform()}", flush=True)
    t0, tokens = time.perf_counter(), 0
    for step in range(args.steps):
        x, y = data.batch(args.batch_size, gen)
        _, loss = model(x.to(device), y.to(device))
        opt.zero_grad(set_to_none=True)
        loss.backward()  # gradients are averaged over the ranks here
        opt.step()
        tokens += x.numel() * world
        if step % args.log_every == 0 or step == args.steps - 1:
            mean = loss.detach().clone()
            dist.all_reduce(mean, op=dist.ReduceOp.AVG)
            rate = tokens / (time.perf_counter() - t0)
            if rank == 0:
                print(f"step {step:4d}  loss {mean.item():.4f}  {rate:,.0f} tokens/s", flush=True)
            t0, tokens = time.perf_counter(), 0
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
