"""Trains the small Llama-style model on the tpu device across processes, with its
parameters sharded by FSDP2 or its layers split by tensor parallelism:

    torchrun --nproc-per-node 2 examples/distributed/train_llama.py --parallel fsdp
    torchrun --nproc-per-node 2 examples/distributed/train_llama.py --parallel tp

FSDP2 shards every block and the root (`--bf16` computes in bfloat16, reduces in float32)
and gives each rank its own batches. Tensor parallelism splits attention heads and the
feed-forward width over the ranks (column-wise in, row-wise out), with the norms, the
embedding output and the residual stream sharded along the sequence (sequence parallel);
every rank sees the same batch. `--compile` (FSDP2 only) compiles each block
(`block.compile()`, before sharding, as torchtitan does): FSDP2's hooks stay eager between the
compiled blocks. Tensor-parallel blocks hold collectives, which compiled graphs cannot lower yet."""

from __future__ import annotations

import argparse
import os
import sys
import time

import torch
import torch.distributed as dist
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard
from torch.distributed.tensor import Replicate, Shard
from torch.distributed.tensor.parallel import (
    ColwiseParallel,
    PrepareModuleInput,
    RowwiseParallel,
    SequenceParallel,
    parallelize_module,
)

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "mingpt"))

from data import CharDataset, make_text  # noqa: E402
from llama import Llama, LlamaConfig  # noqa: E402


def shard_fsdp(model: Llama, mesh, bf16: bool) -> None:
    policy = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32) if bf16 else None
    kwargs = {"mesh": mesh, "mp_policy": policy} if policy else {"mesh": mesh}
    for layer in model.layers:
        fully_shard(layer, **kwargs)
    fully_shard(model, **kwargs)


def split_tensor_parallel(model: Llama, mesh) -> None:
    parallelize_module(
        model,
        mesh,
        {
            "tok_embeddings": RowwiseParallel(input_layouts=Replicate(), output_layouts=Shard(1)),
            "norm": SequenceParallel(),
            "output": ColwiseParallel(input_layouts=Shard(1), output_layouts=Replicate()),
        },
    )
    for layer in model.layers:
        parallelize_module(
            layer,
            mesh,
            {
                "attention_norm": SequenceParallel(),
                "attention": PrepareModuleInput(
                    input_layouts=(Shard(1), None, None), desired_input_layouts=(Replicate(), None, None)
                ),
                "attention.wq": ColwiseParallel(),
                "attention.wk": ColwiseParallel(),
                "attention.wv": ColwiseParallel(),
                "attention.wo": RowwiseParallel(output_layouts=Shard(1)),
                "ffn_norm": SequenceParallel(),
                "feed_forward": PrepareModuleInput(input_layouts=(Shard(1),), desired_input_layouts=(Replicate(),)),
                "feed_forward.w1": ColwiseParallel(),
                "feed_forward.w3": ColwiseParallel(),
                "feed_forward.w2": RowwiseParallel(output_layouts=Shard(1)),
            },
        )


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--parallel", choices=["fsdp", "tp"], default="fsdp")
    p.add_argument("--steps", type=int, default=100)
    p.add_argument("--batch-size", type=int, default=8)
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--log-every", type=int, default=10)
    p.add_argument("--bf16", action="store_true", help="FSDP2 mixed precision: bfloat16 compute")
    p.add_argument("--compile", action="store_true", help="torch.compile each transformer block (FSDP2)")
    args = p.parse_args()
    if args.compile and args.parallel == "tp":
        p.error("--compile works with --parallel fsdp only: compiled graphs cannot hold collectives yet")

    dist.init_process_group("tpu")
    rank, world = dist.get_rank(), dist.get_world_size()
    device = torch.device("tpu", int(os.environ.get("LOCAL_RANK", 0)))
    torch.tpu.set_device(device)
    mesh = init_device_mesh("tpu", (world,))

    torch.manual_seed(0)  # the same initial weights on every rank
    cfg = LlamaConfig()
    data = CharDataset(make_text(), cfg.max_seq_len)
    cfg.vocab_size = data.vocab_size
    if args.parallel == "tp":
        for name, n in (("n_heads", cfg.n_heads), ("n_kv_heads", cfg.n_kv_heads), ("hidden_dim", cfg.hidden_dim)):
            if n % world:
                raise SystemExit(f"tensor parallelism over {world} ranks needs {name} ({n}) divisible by {world}")
    model = Llama(cfg).to(device)
    if args.compile:
        for layer in model.layers:
            layer.compile()
    if args.parallel == "fsdp":
        shard_fsdp(model, mesh, args.bf16)
    else:
        split_tensor_parallel(model, mesh)
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr)
    # FSDP2 ranks each train on their own batches; tensor-parallel ranks share one batch.
    gen = torch.Generator().manual_seed(1 + (rank if args.parallel == "fsdp" else 0))

    if rank == 0:
        print(f"{args.parallel} over {world} ranks on {torch.tpu.platform()}", flush=True)
    t0, tokens = time.perf_counter(), 0
    for step in range(args.steps):
        x, y = data.batch(args.batch_size, gen)
        _, loss = model(x.to(device), y.to(device))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        tokens += x.numel() * (world if args.parallel == "fsdp" else 1)
        if step % args.log_every == 0 or step == args.steps - 1:
            mean = loss.detach().clone()
            dist.all_reduce(mean, op=dist.ReduceOp.AVG)
            rate = tokens / (time.perf_counter() - t0)
            if rank == 0:
                print(f"step {step:4d}  loss {mean.item():.4f}  {rate:,.0f} tokens/s", flush=True)
            t0, tokens = time.perf_counter(), 0
    if rank == 0 and args.compile:
        print(f"graph compiles {torch.tpu.metrics()['graph_compiles']}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
