"""Graph mode side by side with CPU PyTorch in one process: the minGPT and ResNet-18
training steps in CPU eager, CPU Inductor (`torch.compile` on CPU), tpurs eager and tpurs
compiled; the
first compiled step of a new process with a cold and a warm tier-3 cache; and a 2048x2048
float32 matmul. Medians after warm-up; ratios against CPU eager.
Run: `.venv/bin/python bench/bench_compile.py [--md]`.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "examples", "mingpt"))

from data import CharDataset, make_text  # noqa: E402
from model import GPT, GPTConfig  # noqa: E402
from resnet import ResNet18  # noqa: E402


def median_seconds(fn, repeats: int = 5, warmup: int = 2) -> float:
    return torch.tpu.benchmark(fn, warmup=warmup, repeats=repeats).median


def mingpt_step(device: str, compiled: bool):
    """A minGPT AdamW step (batch 8, block 128) whose loss is read back each call."""
    torch.manual_seed(0)
    cfg = GPTConfig(dropout=0.0)
    data = CharDataset(make_text(), cfg.block_size)
    cfg.vocab_size = data.vocab_size
    x, y = data.batch(8, torch.Generator().manual_seed(0))
    model = GPT(cfg).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    forward = torch.compile(model) if compiled else model
    x, y = x.to(device), y.to(device)

    def step() -> float:
        _, loss = forward(x, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return loss.item()

    return step


def resnet_step(device: str, compiled: bool):
    """A ResNet-18 SGD step on synthetic 64x64 images (batch 8), loss read back."""
    torch.manual_seed(0)
    model = ResNet18().to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    forward = torch.compile(model) if compiled else model
    x = torch.randn(8, 3, 64, 64).to(device)
    y = torch.randint(0, 10, (8,)).to(device)

    def step() -> float:
        loss = torch.nn.functional.cross_entropy(forward(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return loss.item()

    return step


def with_mode(mode: str, make):
    """`make()` run with the tpu eager mode `mode`, restored afterwards."""
    before = torch.tpu.eager_mode()
    torch.tpu.set_eager_mode(mode)
    try:
        return make()
    finally:
        torch.tpu.set_eager_mode(before)


def first_compiled_step(cache_root: str) -> float:
    """Seconds of the first compiled minGPT step in a new process using `cache_root`."""
    code = (
        "import sys, time, json; sys.path.insert(0, %r); from bench_compile import mingpt_step; "
        "import torch; step = mingpt_step('tpu', True); t = time.perf_counter(); step(); "
        "print(json.dumps(time.perf_counter() - t))" % HERE
    )
    env = dict(os.environ, TORCH_TPU_TIER3_COMPILATION_CACHE_ROOT=cache_root)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def matmul_gflops(device: str, n: int = 2048, chain: int = 8) -> float:
    """GFLOP/s of a chain of n x n matmuls by an orthogonal matrix (values stay O(1), so no
    denormals slow the CPU down), the result read back."""
    q, _ = torch.linalg.qr(torch.randn(n, n))
    a, q = torch.randn(n, n).to(device), q.to(device)

    def run():
        x = a
        for _ in range(chain):
            x = x @ q
        return x.sum().item()

    return 2 * n**3 * chain / median_seconds(run, repeats=3, warmup=1) / 1e9


def bench() -> list[tuple[str, str, float]]:
    rows = []
    cpu = median_seconds(mingpt_step("cpu", False)) * 1e3
    rows.append(("minGPT train step (ms)", "CPU eager", cpu))
    rows.append(("minGPT train step (ms)", "CPU Inductor", median_seconds(mingpt_step("cpu", True)) * 1e3))
    rows.append(("minGPT train step (ms)", "tpurs fused eager", median_seconds(mingpt_step("tpu", False)) * 1e3))
    rows.append(("minGPT train step (ms)", "tpurs compiled", median_seconds(mingpt_step("tpu", True)) * 1e3))
    name = "ResNet-18 train step, batch 8, 64x64 (ms)"
    rows.append((name, "CPU eager", median_seconds(resnet_step("cpu", False), repeats=3) * 1e3))
    rows.append((name, "CPU Inductor", median_seconds(resnet_step("cpu", True), repeats=3) * 1e3))
    for label, mode, compiled in (
        ("tpurs strict eager", "DEFER_NEVER", False),
        ("tpurs fused eager", "DEFER_AND_FUSE", False),
        ("tpurs compiled", "DEFER_AND_FUSE", True),
    ):
        seconds = with_mode(mode, lambda: median_seconds(resnet_step("tpu", compiled), repeats=3))
        rows.append((name, label, seconds * 1e3))
    with tempfile.TemporaryDirectory() as root:
        rows.append(("first compiled step, new process (s)", "tier 3 cold", first_compiled_step(root)))
        rows.append(("first compiled step, new process (s)", "tier 3 warm", first_compiled_step(root)))
    rows.append(("2048x2048 f32 matmul (GFLOP/s)", "CPU PyTorch", matmul_gflops("cpu")))
    rows.append(("2048x2048 f32 matmul (GFLOP/s)", "tpurs", matmul_gflops("tpu")))
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
        ratio = f"{value / cpu_eager[name]:.2f}" if name in cpu_eager else ""
        if args.md:
            print(f"| {name} | {where} | {value:.2f} | {ratio} |")
        else:
            print(f"{name}  {where}: {value:.2f}  {ratio}")


if __name__ == "__main__":
    main()
