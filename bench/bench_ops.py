"""The eager hot path and a training step, side by side with CPU PyTorch in one process.

Measures a cached small op (10,000 dependent 4x4 adds), a 256x256 mm and the minGPT
training step (AdamW, batch 8, block 128), and reports the ratio tpu / cpu for each, in the
eager mode selected by TORCH_TPU_DEFER_AND_FUSE. Run: `.venv/bin/python bench/bench_ops.py [--md]`.
"""

from __future__ import annotations

import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples", "mingpt"))

from data import CharDataset, make_text  # noqa: E402
from model import GPT, GPTConfig  # noqa: E402


def chain_add(x: torch.Tensor, n: int) -> torch.Tensor:
    for _ in range(n):
        x = x + 1
    return x


def chain_mm(a: torch.Tensor, b: torch.Tensor, n: int) -> torch.Tensor:
    for _ in range(n):
        a = torch.mm(a, b)
    return a


def timed(fn, device: str, repeats: int) -> float:
    """Median seconds of `fn` over `repeats` runs, after one warm-up run."""
    return torch.tpu.benchmark(fn, device=device, repeats=repeats).median


def bench() -> list[tuple[str, float, float]]:
    rows = []
    n_add = 10_000
    cpu_x = torch.zeros(4, 4)
    tpu_x = cpu_x.to("tpu")
    t_cpu = timed(lambda: chain_add(cpu_x, n_add), "cpu", 5)
    t_tpu = timed(lambda: chain_add(tpu_x, n_add).cpu(), "tpu", 5)
    rows.append(("4x4 add, 10,000 dependent ops (us/op)", t_cpu / n_add * 1e6, t_tpu / n_add * 1e6))

    n_mm = 50
    # An orthogonal factor keeps the chain's values O(1): products of small random matrices
    # underflow to denormals, which slow CPU PyTorch down and make the ratio meaningless.
    a, (b, _) = torch.randn(256, 256), torch.linalg.qr(torch.randn(256, 256))
    ta, tb = a.to("tpu"), b.to("tpu")
    t_cpu = timed(lambda: chain_mm(a, b, n_mm), "cpu", 5)
    t_tpu = timed(lambda: chain_mm(ta, tb, n_mm).cpu(), "tpu", 5)
    rows.append(("256x256 mm (us/op)", t_cpu / n_mm * 1e6, t_tpu / n_mm * 1e6))
    rows.append(("minGPT training step, batch 8 (ms/step)", *mingpt_step_ms()))
    return rows


def mingpt_step_ms() -> tuple[float, float]:
    """Median milliseconds of one minGPT AdamW step on the CPU and on the tpu device."""
    torch.manual_seed(0)
    cfg = GPTConfig(dropout=0.0)
    data = CharDataset(make_text(), cfg.block_size)
    cfg.vocab_size = data.vocab_size
    base = GPT(cfg)
    gen = torch.Generator().manual_seed(0)
    x, y = data.batch(8, gen)
    result = []
    for device in ("cpu", "tpu"):
        model = GPT(cfg)
        model.load_state_dict(base.state_dict())
        model.to(device)
        opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
        xd, yd = x.to(device), y.to(device)

        def step():
            _, loss = model(xd, yd)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            return loss

        step()
        step()
        result.append(timed(lambda: step().item(), device, 5) * 1e3)
    return result[0], result[1]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--md", action="store_true", help="print a Markdown table")
    args = parser.parse_args()
    torch.set_num_threads(torch.get_num_threads())
    rows = bench()
    mode = torch.tpu.eager_mode().name
    if args.md:
        print(f"eager mode {mode}, platform {torch.tpu.platform()}\n")
        print("| benchmark | CPU PyTorch | tpurs | tpurs / CPU |")
        print("|---|---|---|---|")
        for name, c, t in rows:
            print(f"| {name} | {c:.2f} | {t:.2f} | {t / c:.2f} |")
    else:
        print(f"eager mode {mode}")
        for name, c, t in rows:
            print(f"{name}: cpu {c:.2f}  tpu {t:.2f}  ratio {t / c:.2f}")


if __name__ == "__main__":
    main()
