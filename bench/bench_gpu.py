"""tpurs on the CUDA PJRT plugin against CUDA PyTorch (run on a machine with an NVIDIA GPU,
`jax-cuda13-pjrt` or `jax-cuda12-pjrt` installed, and torch built for CUDA). The CUDA rows
run in a child process with tpurs not loaded: with a PrivateUse1 device registered, torch's
autograd engine takes it for the accelerator and CUDA backward passes fail its stream
assertion (`opt_ready_stream && opt_parent_stream`, torch 2.11). Rows: a cached small op (10,000 dependent 4x4 adds, us/op), square matrix
products (bf16 8192, f32 4096 at "highest" precision: no TF32 on either side; TFLOP/s from
the median of 10), the minGPT training step (batch 64, block 128, AdamW) and the Llama
training step of `examples/llama` (batch 64 x 64 tokens), each in CUDA eager, CUDA Inductor,
tpurs fused eager and tpurs compiled (ms, median of 5 after 2 warm-ups, loss read back).
Every row is printed as soon as it is measured.
Run: `python bench/bench_gpu.py [--md] [--skip-inductor]`.
"""

from __future__ import annotations

import argparse
import importlib.util
import itertools
import json
import os
import subprocess
import sys

import torch

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples")
sys.path.insert(0, os.path.join(ROOT, "mingpt"))

from data import CharDataset, make_text  # noqa: E402
from model import GPT, GPTConfig  # noqa: E402


def sync(device: str) -> None:
    torch.tpu.synchronize() if device == "tpu" else torch.cuda.synchronize()


def timed(fn, device: str, warmup: int, repeats: int) -> float:
    """Median seconds of `fn`, each run ended by a synchronize of `device`."""
    if device == "tpu":
        return torch.tpu.benchmark(fn, warmup=warmup, repeats=repeats, device="tpu").median
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(repeats)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(repeats)]
    for s, e in zip(starts, ends):
        s.record()
        fn()
        e.record()
    torch.cuda.synchronize()
    return sorted(s.elapsed_time(e) for s, e in zip(starts, ends))[repeats // 2] / 1e3


def small_op_us(device: str) -> float:
    x = torch.zeros(4, 4, device=device)

    def chain():
        y = x
        for _ in range(10_000):
            y = y + 1
        return y.sum().item()

    return timed(chain, device, 1, 5) / 10_000 * 1e6


def mm_tflops(device: str, n: int, dtype: torch.dtype) -> float:
    gen = torch.Generator().manual_seed(0)
    # An orthogonal-ish scale keeps products O(1); results are summed so none is dropped.
    a = (torch.randn(n, n, generator=gen) / n**0.5).to(device=device, dtype=dtype)
    b = (torch.randn(n, n, generator=gen) / n**0.5).to(device=device, dtype=dtype)

    out = torch.empty(n, n, device=device, dtype=dtype)  # kept alive, so every product runs

    def run():
        torch.mm(a, b, out=out)

    seconds = timed(run, device, 2, 10)
    return 2 * n**3 / seconds / 1e12


def mingpt_step(device: str, compiled: bool):
    torch.manual_seed(0)
    cfg = GPTConfig(dropout=0.0)
    data = CharDataset(make_text(), cfg.block_size)
    cfg.vocab_size = data.vocab_size
    model = GPT(cfg).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    forward = torch.compile(model) if compiled else model
    x, y = (t.to(device) for t in data.batch(64, torch.Generator().manual_seed(0)))

    def step() -> float:
        _, loss = forward(x, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return loss.item()

    return step


def llama_step(device: str, compiled: bool):
    spec = importlib.util.spec_from_file_location("example_llama", os.path.join(ROOT, "llama", "train.py"))
    llama = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(llama)
    torch.manual_seed(0)
    data = CharDataset(make_text(), 64)
    model = llama.build(data.vocab_size, 64).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    forward = torch.compile(model) if compiled else model
    x, y = (t.to(device) for t in data.batch(64, torch.Generator().manual_seed(0)))

    def step() -> float:
        logits = forward(input_ids=x).logits
        loss = torch.nn.functional.cross_entropy(logits.flatten(0, 1), y.flatten())
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return loss.item()

    return step


def rows(device: str, skip_inductor: bool):
    """(row, configuration, value) for one side: "cuda" or "tpu"."""
    eager = "CUDA eager" if device == "cuda" else "tpurs fused eager"
    yield "cached 4x4 add (us/op)", eager, small_op_us(device)
    yield "bf16 8192 mm (TFLOP/s)", eager, mm_tflops(device, 8192, torch.bfloat16)
    torch.set_float32_matmul_precision("highest")
    yield "f32 4096 mm, highest (TFLOP/s)", eager, mm_tflops(device, 4096, torch.float32)
    configs = [(eager, False)]
    if device == "tpu" or not skip_inductor:
        configs.append(("CUDA Inductor" if device == "cuda" else "tpurs compiled", True))
    for name, make in (("minGPT train step, batch 64 (ms)", mingpt_step), ("Llama train step, 64x64 (ms)", llama_step)):
        for label, compiled in configs:
            torch._dynamo.reset()
            yield name, label, timed(make(device, compiled), device, 2, 5) * 1e3


def cuda_rows(skip_inductor: bool) -> list:
    """The CUDA side, measured in a child process without tpurs."""
    env = dict(os.environ, TORCH_DEVICE_BACKEND_AUTOLOAD="0")
    cmd = [sys.executable, __file__, "--side", "cuda"] + (["--skip-inductor"] if skip_inductor else [])
    out = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if out.returncode != 0:
        print(out.stderr[-3000:], file=sys.stderr)
    return [json.loads(line) for line in out.stdout.splitlines() if line.startswith("[")]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--md", action="store_true", help="print a Markdown table")
    parser.add_argument("--skip-inductor", action="store_true", help="leave out the CUDA Inductor rows")
    parser.add_argument("--side", choices=["cuda"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.side == "cuda":
        for row in rows("cuda", args.skip_inductor):
            print(json.dumps(row), flush=True)
        return
    cuda = cuda_rows(args.skip_inductor)
    base = {name: value for name, label, value in cuda if label == "CUDA eager"}
    print(
        f"tpurs platform {torch.tpu.platform()}, eager mode {torch.tpu.eager_mode().name}, "
        f"torch {torch.__version__}, {torch.cuda.get_device_name()}",
        flush=True,
    )
    if args.md:
        print("| benchmark | configuration | value | / CUDA eager |\n|---|---|---|---|", flush=True)
    for name, label, value in itertools.chain(cuda, rows("tpu", args.skip_inductor)):
        ratio = value / base[name] if base.get(name) else float("nan")
        if args.md:
            print(f"| {name} | {label} | {value:.2f} | {ratio:.2f} |", flush=True)
        else:
            print(f"{name}: {label} {value:.2f} ({ratio:.2f}x CUDA eager)", flush=True)


if __name__ == "__main__":
    main()
