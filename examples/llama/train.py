"""Fine-tunes a small Hugging Face `LlamaForCausalLM` (config built here, random weights,
nothing downloaded) on the character data of the minGPT demo, then generates with a static
KV cache, greedy and sampled. The model is Transformers' own code, unchanged:

    python examples/llama/train.py                 # tpu, eager
    python examples/llama/train.py --compile       # training step and decode through torch.compile
    python examples/llama/train.py --device cpu    # the same on CPU PyTorch

Prints the loss falling, training tokens per second, prefill milliseconds and decode
milliseconds per token."""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import torch
import transformers

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "mingpt"))

from data import CharDataset, make_text  # noqa: E402


def build(vocab_size: int, block: int) -> transformers.LlamaForCausalLM:
    """A 4-layer Llama with grouped-query attention (8 query heads, 4 key/value heads)."""
    config = transformers.LlamaConfig(
        vocab_size=vocab_size,
        hidden_size=128,
        intermediate_size=352,
        num_hidden_layers=4,
        num_attention_heads=8,
        num_key_value_heads=4,
        max_position_embeddings=2 * block,
        attn_implementation="sdpa",
        pad_token_id=0,
        bos_token_id=0,
        eos_token_id=None,
    )
    return transformers.LlamaForCausalLM(config)


def train(model, data, device, steps, batch_size, lr, log_every, compile):
    opt = torch.optim.AdamW(model.parameters(), lr=lr)
    forward = torch.compile(model) if compile else model
    gen = torch.Generator().manual_seed(0)
    losses, tokens, t0 = [], 0, time.perf_counter()
    for step in range(steps):
        x, y = data.batch(batch_size, gen)
        x, y = x.to(device), y.to(device)
        logits = forward(input_ids=x).logits
        loss = torch.nn.functional.cross_entropy(logits.flatten(0, 1), y.flatten())
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        tokens += x.numel()
        if step % log_every == 0 or step == steps - 1:
            value = loss.item()
            now = time.perf_counter()
            # Since the last report (the first includes compiling).
            print(f"step {step:4d}  loss {value:.4f}  {tokens / (now - t0):,.0f} tokens/s", flush=True)
            losses.append(value)
            t0, tokens = now, 0
    return losses


def generate(model, data, device, new_tokens, sample, compile):
    """Static-cache generation; returns the text, prefill ms and decode ms per token. With
    `compile` Transformers compiles the decode step (it does so by itself for "tpu" and
    CUDA; `_compile_all_devices` asks it on the CPU too); without it every step is eager."""
    prompt = torch.tensor([[data.stoi[c] for c in "The "]], device=device)
    config = transformers.CompileConfig()
    config._compile_all_devices = compile
    kw = dict(cache_implementation="static", pad_token_id=0, compile_config=config, disable_compile=not compile)
    kw.update(do_sample=True, top_k=10, temperature=0.8) if sample else kw.update(do_sample=False)

    def timed(n):
        start = time.perf_counter()
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
    decode = (total - prefill) / (new_tokens - 1)
    return data.decode(runs[-1][0][0].tolist()), prefill * 1e3, decode * 1e3


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--device", default="tpu")
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--lr", type=float, default=2e-3)
    p.add_argument("--log-every", type=int, default=25)
    p.add_argument("--new-tokens", type=int, default=40)
    p.add_argument("--compile", action="store_true", help="compile the training step and the decode step")
    args = p.parse_args()
    block = 64
    data = CharDataset(make_text(), block)
    torch.manual_seed(0)
    model = build(data.vocab_size, block).to(args.device)
    where = torch.tpu.platform() if args.device.startswith("tpu") else "torch"
    print(f"device {args.device} ({where}), {sum(t.numel() for t in model.parameters()):,} parameters")
    losses = train(model, data, args.device, args.steps, args.batch_size, args.lr, args.log_every, args.compile)
    print(f"loss {losses[0]:.3f} -> {losses[-1]:.3f}")
    model.eval()
    for sample in (False, True):
        torch.manual_seed(0)
        text, prefill, decode = generate(model, data, args.device, args.new_tokens, sample, args.compile)
        kind = "sampled" if sample else "greedy"
        print(f"{kind}: {text!r}  prefill {prefill:.1f} ms, decode {decode:.2f} ms/token")
    if args.device.startswith("tpu"):
        m = torch.tpu.metrics()
        print(f"compiles {m['compiles']}, graph compiles {m['graph_compiles']}, fallbacks {m['fallbacks']}")


if __name__ == "__main__":
    main()
