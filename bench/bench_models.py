"""Hugging Face Llama (the `examples/llama` model: 4 layers, hidden 128, grouped-query
attention, 746k parameters) side by side in one process: CPU eager, CPU Inductor, tpurs
fused eager and tpurs compiled. Rows: an AdamW training step (batch 16, 64 tokens, loss read
back; median of 5 after 2 warm-ups) and static-cache greedy decode (ms per token, from the
difference of a 1-token and a 40-token generation, medians of 3 after warm-up). Ratios are
value / CPU eager (below 1: tpurs is faster).
Run: `.venv/bin/python bench/bench_models.py [--md]`.
"""

from __future__ import annotations

import argparse
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(HERE, "..", "examples", "llama"), os.path.join(HERE, "..", "examples", "mingpt")]

from data import CharDataset, make_text  # noqa: E402
from train import build, generate  # noqa: E402

BLOCK = 64


def train_step(device: str, compiled: bool):
    torch.manual_seed(0)
    data = CharDataset(make_text(), BLOCK)
    model = build(data.vocab_size, BLOCK).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    forward = torch.compile(model) if compiled else model
    x, y = (t.to(device) for t in data.batch(16, torch.Generator().manual_seed(0)))

    def step() -> float:
        logits = forward(input_ids=x).logits
        loss = torch.nn.functional.cross_entropy(logits.flatten(0, 1), y.flatten())
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return loss.item()

    return step


def decode_ms(device: str, compiled: bool) -> float:
    torch.manual_seed(0)
    data = CharDataset(make_text(), BLOCK)
    model = build(data.vocab_size, BLOCK).to(device).eval()
    return generate(model, data, device, 40, sample=False, compile=compiled)[2]


def bench() -> list[tuple[str, str, float]]:
    rows = []
    for label, device, compiled in (
        ("CPU eager", "cpu", False),
        ("CPU Inductor", "cpu", True),
        ("tpurs fused eager", "tpu", False),
        ("tpurs compiled", "tpu", True),
    ):
        # Each configuration compiles afresh (dynamo would otherwise mark shapes dynamic
        # after seeing the same code on another device).
        torch._dynamo.reset()
        step = torch.tpu.benchmark(train_step(device, compiled), warmup=2, repeats=5, device=device)
        rows.append(("Llama train step (ms)", label, step.median * 1e3))
        rows.append(("Llama static-cache decode (ms/token)", label, decode_ms(device, compiled)))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--md", action="store_true", help="print a Markdown table")
    args = parser.parse_args()
    rows = bench()
    cpu_eager = {name: value for name, where, value in rows if where == "CPU eager"}
    if args.md:
        print(f"platform {torch.tpu.platform()}, torch {torch.__version__}\n")
        print("| benchmark | runs on | value | / CPU eager |")
        print("|---|---|---|---|")
    for name, where, value in rows:
        ratio = value / cpu_eager[name]
        if args.md:
            print(f"| {name} | {where} | {value:.2f} | {ratio:.2f} |")
        else:
            print(f"{name:40s} {where:20s} {value:10.2f}   {ratio:.2f} of CPU eager")


if __name__ == "__main__":
    main()
