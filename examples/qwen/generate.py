"""Generation with Hugging Face `Qwen3ForCausalLM` and `Qwen3MoeForCausalLM` (configs built
here, random weights, nothing downloaded). The models are Transformers' own code, unchanged;
the MoE model's experts run as grouped matrix products (`set_experts_implementation
("grouped_mm")`), which tpurs lowers to its ragged-dot kernel (`torch.tpu.ops.ragged_dot`):

    python examples/qwen/generate.py                 # tpu, eager
    python examples/qwen/generate.py --compile       # the decode step through torch.compile
    python examples/qwen/generate.py --device cpu    # the same on CPU PyTorch

Prints prefill milliseconds and decode milliseconds per token for each model, and checks that
the greedy tokens equal CPU PyTorch's."""

from __future__ import annotations

import argparse
import copy
import statistics
import time

import torch
import transformers

SHARED = dict(
    vocab_size=512,
    hidden_size=128,
    num_hidden_layers=4,
    num_attention_heads=8,
    num_key_value_heads=4,
    head_dim=16,
    max_position_embeddings=256,
    pad_token_id=0,
    bos_token_id=1,
    eos_token_id=None,
    attn_implementation="sdpa",
)


def build(kind: str) -> transformers.PreTrainedModel:
    """A 4-layer dense Qwen3, or a Qwen3-MoE with 8 experts of which each token uses 2."""
    torch.manual_seed(0)
    if kind == "qwen3":
        return transformers.Qwen3ForCausalLM(transformers.Qwen3Config(intermediate_size=352, **SHARED)).eval()
    config = transformers.Qwen3MoeConfig(
        intermediate_size=352, moe_intermediate_size=96, num_experts=8, num_experts_per_tok=2, **SHARED
    )
    model = transformers.Qwen3MoeForCausalLM(config).eval()
    model.set_experts_implementation("grouped_mm")
    return model


def generate(model, prompt, new_tokens, compile):
    """Greedy static-cache generation: the tokens, prefill ms and decode ms per token. With
    `compile` Transformers compiles the decode step (`_compile_all_devices` asks it on the CPU
    too); without it every step is eager."""
    config = transformers.CompileConfig()
    config._compile_all_devices = compile
    kw = dict(
        cache_implementation="static",
        do_sample=False,
        pad_token_id=0,
        compile_config=config,
        disable_compile=not compile,
    )

    def timed(n):
        start = time.perf_counter()
        with torch.no_grad():
            out = model.generate(prompt, max_new_tokens=n, **kw)
        out[0, -1].item()
        return out, time.perf_counter() - start

    # Warm-up: each cache length compiles its programs (cached afterwards), then medians.
    for _ in range(2):
        timed(1)
        timed(new_tokens)
    prefill = statistics.median(timed(1)[1] for _ in range(3))
    runs = [timed(new_tokens) for _ in range(3)]
    total = statistics.median(t for _, t in runs)
    return runs[-1][0].cpu(), prefill * 1e3, (total - prefill) / (new_tokens - 1) * 1e3


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--device", default="tpu")
    p.add_argument("--prompt-length", type=int, default=32)
    p.add_argument("--new-tokens", type=int, default=32)
    p.add_argument("--compile", action="store_true", help="compile the decode step")
    args = p.parse_args()
    where = torch.tpu.platform() if args.device.startswith("tpu") else "torch"
    print(f"device {args.device} ({where})")
    prompt = torch.randint(2, SHARED["vocab_size"], (1, args.prompt_length), generator=torch.Generator().manual_seed(0))
    for kind in ("qwen3", "qwen3_moe"):
        cpu = build(kind)
        model = copy.deepcopy(cpu).to(args.device)
        params = sum(t.numel() for t in model.parameters())
        tokens, prefill, decode = generate(model, prompt.to(args.device), args.new_tokens, args.compile)
        line = f"{kind}: {params:,} parameters, prefill {prefill:.1f} ms, decode {decode:.2f} ms/token"
        if not args.device.startswith("cpu"):
            with torch.no_grad():
                expected = cpu.generate(prompt, max_new_tokens=args.new_tokens, do_sample=False, pad_token_id=0)
            same = torch.equal(tokens, expected)
            line += f", tokens {'equal' if same else 'DIFFER from'} CPU's"
        print(line, flush=True)
    if args.device.startswith("tpu"):
        m = torch.tpu.metrics()
        print(f"compiles {m['compiles']}, graph compiles {m['graph_compiles']}, fallbacks {m['fallbacks']}")


if __name__ == "__main__":
    main()
