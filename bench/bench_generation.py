"""Greedy generation over growing lengths without a KV cache (the whole sequence each step,
a host read per step as a stopping check makes), 64 new tokens after a 16-token prompt, with
a Hugging Face `LlamaForCausalLM` (4 layers, hidden 256, random weights), side by side in one
process: CPU eager, CPU Inductor (`torch.compile`, which makes the length dynamic), tpurs fused
eager and tpurs compiled, both through `torch.tpu.bucketed` (lengths padded to 16, 24, 32,
48, 64, 96). Reports the first run (it compiles; the disk cache is off, so it is a cold
process's), the median of 3 warm runs, their ratio to CPU eager's, and the programs compiled.
Run: `.venv/bin/python bench/bench_generation.py [--md]`.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

os.environ["TORCH_TPU_TIER3_COMPILATION_CACHE_ROOT"] = ""  # every program compiles here

import torch  # noqa: E402
import transformers  # noqa: E402

NEW_TOKENS = 64


def build() -> torch.nn.Module:
    config = transformers.LlamaConfig(
        vocab_size=1024,
        hidden_size=256,
        intermediate_size=512,
        num_hidden_layers=4,
        num_attention_heads=8,
        num_key_value_heads=4,
        max_position_embeddings=128,
    )
    torch.manual_seed(0)
    return transformers.LlamaForCausalLM(config).eval()


def greedy(model, prompt: torch.Tensor) -> torch.Tensor:
    ids = prompt
    with torch.no_grad():
        for _ in range(NEW_TOKENS):
            token = model(ids, use_cache=False).logits[:, -1].argmax(-1, keepdim=True)
            token.max().item()
            ids = torch.cat([ids, token], 1)
    return ids


def run(device: str, compiled: bool, prompt: torch.Tensor) -> tuple[float, float, int, int, torch.Tensor]:
    torch._dynamo.reset()
    model = build().to(device)
    model = torch.compile(model) if compiled else model
    if device == "tpu":
        model = torch.tpu.bucketed(model)
    before = torch.tpu.metrics()
    start = time.perf_counter()
    out = greedy(model, prompt.to(device))
    first = time.perf_counter() - start
    after = torch.tpu.metrics()
    warm = []
    for _ in range(3):
        start = time.perf_counter()
        greedy(model, prompt.to(device))
        warm.append(time.perf_counter() - start)
    programs = after["compiles"] - before["compiles"]
    graphs = after["graph_compiles"] - before["graph_compiles"]
    return first, statistics.median(warm), programs, graphs, out.cpu()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--md", action="store_true", help="print a markdown table")
    args = parser.parse_args()
    prompt = torch.randint(3, 1024, (1, 16), generator=torch.Generator().manual_seed(0))
    rows = [
        ("CPU eager", "cpu", False),
        ("CPU Inductor", "cpu", True),
        # Compiled first: a later run reuses the glue programs (cat, padding) of an earlier one.
        ("tpurs compiled, bucketed", "tpu", True),
        ("tpurs fused eager, bucketed", "tpu", False),
    ]
    results = [(name, *run(device, compiled, prompt)) for name, device, compiled in rows]
    base = results[0][2]
    reference = results[0][5]
    if args.md:
        print(
            "| greedy, 64 tokens, growing length | first run (s) | warm (ms) | warm / CPU eager "
            "| programs compiled | graphs compiled | tokens equal CPU |\n|---|---|---|---|---|---|---|"
        )
    for name, first, warm, programs, graphs, out in results:
        same = torch.equal(out, reference)
        tpu = name.startswith("tpurs")
        counts = (str(programs), str(graphs)) if tpu else ("-", "-")
        if args.md:
            print(f"| {name} | {first:.1f} | {warm * 1e3:.0f} | {warm / base:.2f} | {' | '.join(counts)} | {same} |")
        else:
            print(
                f"{name:30s} first {first:6.1f} s  warm {warm * 1e3:8.0f} ms  {warm / base:.2f}x  "
                f"programs {counts[0]:>4s}  graphs {counts[1]:>3s}  tokens equal {same}"
            )


if __name__ == "__main__":
    main()
