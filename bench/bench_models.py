"""The examples' models side by side in one process: CPU eager, CPU Inductor, tpurs fused
eager and tpurs compiled. Rows: training steps (loss read back; median of 5 after 2 warm-ups)
of Hugging Face Llama (`examples/llama`: 4 layers, hidden 128, grouped-query attention, 746k
parameters; batch 16 x 64 tokens, AdamW), torchvision ResNet-18 (`examples/resnet`: batch 32,
32x32 synthetic images, SGD), the DLRM of `examples/dlrm` (batch 256, four EmbeddingBag
tables, Adagrad) and Diffusers' UNet2DModel of `examples/unet` (batch 16, 32x32, AdamW); and
static-cache greedy decode (ms per token, from the difference of a 1-token and a 40-token
generation, medians of 3 after warm-up) of Llama and of `examples/qwen`'s Qwen3 and Qwen3-MoE
(32-token prompt, 32 new tokens; the MoE experts as grouped matmuls). Ratios are value / CPU
eager (below 1: tpurs is faster).
Run: `.venv/bin/python bench/bench_models.py [--md] [--only llama|resnet|dlrm|unet|qwen]`.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys

import torch

EXAMPLES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples")
sys.path.insert(0, os.path.join(EXAMPLES, "mingpt"))

from data import CharDataset, make_text  # noqa: E402


def example(name: str, script: str = "train.py"):
    """`examples/<name>/<script>` as a module."""
    spec = importlib.util.spec_from_file_location(f"example_{name}", os.path.join(EXAMPLES, name, script))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


llama, resnet, dlrm, unet = example("llama"), example("resnet"), example("dlrm"), example("unet")
qwen = example("qwen", "generate.py")
BLOCK = 64


def llama_step(device: str, compiled: bool):
    torch.manual_seed(0)
    data = CharDataset(make_text(), BLOCK)
    model = llama.build(data.vocab_size, BLOCK).to(device)
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


def resnet_step(device: str, compiled: bool):
    torch.manual_seed(0)
    model = resnet.torchvision.models.resnet18(num_classes=10).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    forward = torch.compile(model) if compiled else model
    x, y = (t.to(device) for t in resnet.SyntheticImages(10, 32).batch(32, torch.Generator().manual_seed(0)))

    def step() -> float:
        loss = torch.nn.functional.cross_entropy(forward(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return loss.item()

    return step


def dlrm_step(device: str, compiled: bool):
    tables = [1000, 500, 2000, 100]
    data = dlrm.ClickData(dense=13, table_sizes=tables, hots=[1, 2, 3, 4])
    torch.manual_seed(0)
    model = dlrm.DLRM(13, tables, dim=16, bottom=[64, 32], top=[64, 32]).to(device)
    opt = torch.optim.Adagrad(model.parameters(), lr=0.05)
    forward = torch.compile(model) if compiled else model
    dense, indices, offsets, clicks = dlrm.to(device, *data.batch(256, torch.Generator().manual_seed(0)))

    def step() -> float:
        loss = torch.nn.functional.binary_cross_entropy_with_logits(forward(dense, indices, offsets), clicks)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return loss.item()

    return step


def unet_step(device: str, compiled: bool):
    torch.manual_seed(0)
    model = unet.build(32).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    forward = torch.compile(model) if compiled else model
    gen = torch.Generator().manual_seed(0)
    clean = unet.discs(16, 32, gen)
    noise = torch.randn(clean.shape, generator=gen)
    t = torch.randint(0, 1000, (16,), generator=gen)
    noisy, noise, t = (clean + noise).to(device), noise.to(device), t.to(device)

    def step() -> float:
        loss = torch.nn.functional.mse_loss(forward(noisy, t).sample, noise)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return loss.item()

    return step


def decode_ms(device: str, compiled: bool) -> float:
    torch.manual_seed(0)
    data = CharDataset(make_text(), BLOCK)
    model = llama.build(data.vocab_size, BLOCK).to(device).eval()
    return llama.generate(model, data, device, 40, sample=False, compile=compiled)[2]


def qwen_decode_ms(kind: str, device: str, compiled: bool) -> float:
    model = qwen.build(kind).to(device)
    prompt = torch.randint(2, 512, (1, 32), generator=torch.Generator().manual_seed(0))
    return qwen.generate(model, prompt.to(device), 32, compiled)[2]


STEPS = {
    "llama": ("Llama train step (ms)", llama_step),
    "resnet": ("ResNet-18 train step (ms)", resnet_step),
    "dlrm": ("DLRM train step (ms)", dlrm_step),
    "unet": ("UNet2DModel train step (ms)", unet_step),
}


def bench(only: str | None) -> list[tuple[str, str, float]]:
    rows = []
    for label, device, compiled in (
        ("CPU eager", "cpu", False),
        ("CPU Inductor", "cpu", True),
        ("tpurs fused eager", "tpu", False),
        ("tpurs compiled", "tpu", True),
    ):
        # Each configuration compiles afresh (dynamo would otherwise mark shapes dynamic
        # after seeing the same code on another device).
        for model, (name, make_step) in STEPS.items():
            if only in (None, model):
                torch._dynamo.reset()
                step = torch.tpu.benchmark(make_step(device, compiled), warmup=2, repeats=5, device=device)
                rows.append((name, label, step.median * 1e3))
        if only in (None, "llama"):
            torch._dynamo.reset()
            rows.append(("Llama static-cache decode (ms/token)", label, decode_ms(device, compiled)))
        if only in (None, "qwen"):
            for kind, name in (("qwen3", "Qwen3"), ("qwen3_moe", "Qwen3-MoE")):
                torch._dynamo.reset()
                rows.append((f"{name} static-cache decode (ms/token)", label, qwen_decode_ms(kind, device, compiled)))
    return sorted(rows, key=lambda r: r[0])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--md", action="store_true", help="print a Markdown table")
    parser.add_argument("--only", choices=sorted([*STEPS, "qwen"]), help="one model's rows")
    args = parser.parse_args()
    rows = bench(args.only)
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
