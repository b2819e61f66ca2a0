"""A mixture-of-experts block at decode, side by side in one process: Hugging Face's
`Qwen3MoeSparseMoeBlock` (unchanged; 16 experts, top-2, hidden 512, expert width 256) on a
batch of 64 tokens, with its experts run by Transformers' eager loop (one `torch.where` per
expert: a host read and a data-dependent shape each) or by its "grouped_mm" experts
(`torch._grouped_mm`, which tpurs lowers natively as `torch.tpu.ops.ragged_dot` does: no host
read), on CPU PyTorch and on tpurs (fused eager, and the grouped_mm block compiled). Every
step routes fresh random tokens, as decode does, so the experts' token counts change from
step to step (one row repeats the same tokens: the loop's programs are then all compiled in
the warm-up, leaving its host reads). Median of 10 after 3 warm-ups; ratios are value /
tpurs eager loop.
Run: `.venv/bin/python bench/bench_moe.py [--md]`.
"""

from __future__ import annotations

import argparse
import copy

import torch
import transformers
from transformers.models.qwen3_moe.modeling_qwen3_moe import Qwen3MoeSparseMoeBlock

TOKENS = 64


def block() -> Qwen3MoeSparseMoeBlock:
    config = transformers.Qwen3MoeConfig(
        hidden_size=512, moe_intermediate_size=256, num_experts=16, num_experts_per_tok=2, norm_topk_prob=True
    )
    torch.manual_seed(0)
    moe = Qwen3MoeSparseMoeBlock(config)
    for p in moe.parameters():
        torch.nn.init.normal_(p, std=0.05)
    return moe.eval()


def step_fn(moe, device: str, experts: str, compiled: bool, fixed: bool = False):
    moe = copy.deepcopy(moe).to(device)
    moe.experts.config._experts_implementation = experts
    forward = torch.compile(moe, fullgraph=True) if compiled else moe
    gen = torch.Generator().manual_seed(1)
    batches = [torch.randn(TOKENS, 1, 512, generator=gen).to(device) for _ in range(16)]
    state = {"i": 0}

    @torch.no_grad()
    def step():
        x = batches[0 if fixed else state["i"] % len(batches)]
        state["i"] += 1
        return forward(x).sum().item()

    return step


def bench() -> list[tuple[str, float]]:
    moe = block()
    rows = []
    for label, device, experts, compiled, fixed in (
        ("CPU eager loop", "cpu", "eager", False, False),
        ("CPU grouped_mm", "cpu", "grouped_mm", False, False),
        ("tpurs eager loop", "tpu", "eager", False, False),
        ("tpurs eager loop, same tokens", "tpu", "eager", False, True),
        ("tpurs grouped_mm", "tpu", "grouped_mm", False, False),
        ("tpurs grouped_mm compiled", "tpu", "grouped_mm", True, False),
    ):
        torch._dynamo.reset()
        step = step_fn(moe, device, experts, compiled, fixed)
        timing = torch.tpu.benchmark(step, warmup=3, repeats=10, device=device)
        rows.append((label, timing.median * 1e3))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--md", action="store_true", help="print a Markdown table")
    args = parser.parse_args()
    rows = bench()
    loop = dict(rows)["tpurs eager loop"]
    if args.md:
        print(f"platform {torch.tpu.platform()}, torch {torch.__version__}\n")
        print(f"| MoE block, {TOKENS}-token decode step (ms) | value | / tpurs eager loop |")
        print("|---|---|---|")
    for label, ms in rows:
        if args.md:
            print(f"| {label} | {ms:.2f} | {ms / loop:.3f} |")
        else:
            print(f"{label:30s} {ms:9.2f} ms   {ms / loop:.3f} of the tpurs eager loop")


if __name__ == "__main__":
    main()
