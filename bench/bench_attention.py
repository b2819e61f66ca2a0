"""`F.scaled_dot_product_attention` forward and backward, side by side in one process: CPU
PyTorch with its own backend choice (flash) and with the math path, and tpurs fused eager
with the fused rule (the device's default) and with the math path (`sdpa_kernel`). Causal,
float32; the gradients are summed and read back so that no work is dropped. Median of 7
after 2 warm-ups; ratios are value / CPU PyTorch's default.
Run: `.venv/bin/python bench/bench_attention.py [--md]`.
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

SHAPES = [  # batch, query heads, key/value heads, tokens, head size
    (8, 8, 8, 128, 64),
    (4, 8, 2, 256, 64),
    (1, 8, 8, 1024, 64),
]


def step_ms(device: str, backend: SDPBackend, shape: tuple[int, ...]) -> float:
    batch, heads, kv_heads, tokens, head = shape
    gen = torch.Generator().manual_seed(0)
    make = lambda h: torch.randn(batch, h, tokens, head, generator=gen).to(device).requires_grad_()  # noqa: E731
    q, k, v = make(heads), make(kv_heads), make(kv_heads)

    def step() -> None:
        with sdpa_kernel([backend]):
            out = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=kv_heads != heads)
        grads = torch.autograd.grad(out.sum(), (q, k, v))
        sum(g.sum() for g in grads).item()

    for _ in range(2):
        step()
    times = []
    for _ in range(7):
        start = time.perf_counter()
        step()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--md", action="store_true", help="print a Markdown table")
    args = parser.parse_args()
    runs = [
        ("CPU PyTorch (flash)", "cpu", SDPBackend.FLASH_ATTENTION),
        ("CPU PyTorch math", "cpu", SDPBackend.MATH),
        ("tpurs fused rule", "tpu", SDPBackend.FLASH_ATTENTION),
        ("tpurs math", "tpu", SDPBackend.MATH),
    ]
    if args.md:
        print("| shape (B, H, Hkv, L, E) | runs on | ms | / CPU PyTorch |\n|---|---|---|---|")
    for shape in SHAPES:
        base = None
        for name, device, backend in runs:
            ms = step_ms(device, backend, shape)
            base = base or ms
            if args.md:
                print(f"| {shape} | {name} | {ms:.2f} | {ms / base:.2f} |")
            else:
                print(f"{str(shape):22s} {name:22s} {ms:8.2f} ms  {ms / base:.2f}x")


if __name__ == "__main__":
    main()
