"""Trains the character-level GPT on the tpu device (or any device) and prints the loss
and tokens per second. `python examples/mingpt/train.py --steps 300` (eager);
`--compile` runs the model through `torch.compile`; `--device cpu` for comparison."""

from __future__ import annotations

import argparse
import os
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from data import CharDataset, make_text  # noqa: E402
from model import GPT, GPTConfig  # noqa: E402


def train(
    device: str,
    steps: int,
    batch_size: int,
    dropout: float,
    lr: float,
    log_every: int,
    seed: int = 0,
    compile: bool = False,
):
    """Runs `steps` AdamW steps (the model through `torch.compile` when `compile`); returns
    the model, the data set and the list of losses (floats)."""
    torch.manual_seed(seed)
    cfg = GPTConfig(dropout=dropout)
    data = CharDataset(make_text(), cfg.block_size)
    cfg.vocab_size = data.vocab_size
    model = GPT(cfg)  # initialised on the CPU so every device starts from the same weights
    model.to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=lr)
    forward = torch.compile(model) if compile else model
    gen = torch.Generator().manual_seed(seed)
    losses = []
    t0 = time.perf_counter()
    tokens = 0
    for step in range(steps):
        x, y = data.batch(batch_size, gen)
        x, y = x.to(device), y.to(device)
        _, loss = forward(x, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        tokens += x.numel()
        if log_every and (step % log_every == 0 or step == steps - 1):
            value = loss.item()
            now = time.perf_counter()
            rate = tokens / (now - t0)  # since the last report (the first includes compiling)
            t0, tokens = now, 0
            print(f"step {step:4d}  loss {value:.4f}  {rate:,.0f} tokens/s", flush=True)
            losses.append(value)
        elif not log_every:
            losses.append(loss.item())
    return model, data, losses


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--device", default="tpu")
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--dropout", type=float, default=0.1)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--log-every", type=int, default=25)
    p.add_argument("--compile", action="store_true", help="run the model through torch.compile")
    args = p.parse_args()
    print(f"device {args.device} ({torch.tpu.platform() if args.device.startswith('tpu') else 'torch'})")
    model, data, losses = train(
        args.device, args.steps, args.batch_size, args.dropout, args.lr, args.log_every, compile=args.compile
    )
    model.eval()
    prompt = torch.tensor([[data.stoi["T"]]], device=args.device)
    sample = model.generate(prompt, 60)[0].tolist()
    print("sample:", data.decode(sample).replace("\n", " | "))
    print(f"loss {losses[0]:.3f} -> {losses[-1]:.3f}")
    if args.device.startswith("tpu"):
        m = torch.tpu.metrics()
        print(
            f"compiles {m['compiles']}, graph compiles {m['graph_compiles']}, "
            f"cache hits {m['compile_cache_hits']}, fallbacks {m['fallbacks']}"
        )


if __name__ == "__main__":
    main()
