"""Trains a DLRM-style recommendation model (Naumov et al., 2019) on synthetic click data:
dense features through a bottom MLP, multi-hot sparse features through `nn.EmbeddingBag`
tables (sum pooling over bags given by offsets), pairwise dot-product interactions and a
top MLP predicting the click. Labels come from a hidden model of the same inputs, so the
loss has something to learn; nothing is downloaded.

    python examples/dlrm/train.py                 # tpu, eager
    python examples/dlrm/train.py --compile       # the model through torch.compile
    python examples/dlrm/train.py --device cpu    # the same on CPU PyTorch

Prints the loss falling, samples per second and, at the end, held-out accuracy."""

from __future__ import annotations

import argparse
import time

import torch
from torch import nn


def mlp(sizes: list[int], last_activation: bool) -> nn.Sequential:
    layers: list[nn.Module] = []
    for i, (a, b) in enumerate(zip(sizes, sizes[1:])):
        layers.append(nn.Linear(a, b))
        if i < len(sizes) - 2 or last_activation:
            layers.append(nn.ReLU())
    return nn.Sequential(*layers)


class DLRM(nn.Module):
    def __init__(self, dense: int, table_sizes: list[int], dim: int, bottom: list[int], top: list[int]):
        super().__init__()
        self.bottom = mlp([dense, *bottom, dim], last_activation=True)
        self.tables = nn.ModuleList(nn.EmbeddingBag(n, dim, mode="sum") for n in table_sizes)
        features = len(table_sizes) + 1
        rows, cols = torch.tril_indices(features, features, offset=-1)
        self.register_buffer("rows", rows, persistent=False)
        self.register_buffer("cols", cols, persistent=False)
        self.top = mlp([dim + len(rows), *top, 1], last_activation=False)

    def forward(self, dense: torch.Tensor, indices: list[torch.Tensor], offsets: list[torch.Tensor]) -> torch.Tensor:
        x = self.bottom(dense)
        pooled = [table(i, o) for table, i, o in zip(self.tables, indices, offsets)]
        feats = torch.stack([x, *pooled], dim=1)  # (batch, features, dim)
        dots = torch.bmm(feats, feats.transpose(1, 2))[:, self.rows, self.cols]
        return self.top(torch.cat([x, dots], dim=1)).squeeze(1)


class ClickData:
    """Dense features ~ N(0, 1); table `t` gets `hots[t]` ids per sample (a fixed pooling
    factor keeps shapes static, so each program compiles once); the click is drawn from a
    hidden logistic model of the dense features and per-id scores."""

    def __init__(self, dense: int, table_sizes: list[int], hots: list[int], seed: int = 0):
        gen = torch.Generator().manual_seed(seed)
        self.w_dense = torch.randn(dense, generator=gen) / 2
        self.id_scores = [torch.randn(n, generator=gen) / 2 for n in table_sizes]
        self.dense, self.table_sizes, self.hots = dense, table_sizes, hots

    def batch(self, n: int, gen: torch.Generator):
        dense = torch.randn(n, self.dense, generator=gen)
        logit = dense @ self.w_dense
        indices, offsets = [], []
        for size, scores, hot in zip(self.table_sizes, self.id_scores, self.hots):
            ids = torch.randint(size, (n * hot,), generator=gen)
            logit = logit + scores[ids].view(n, hot).sum(1)
            indices.append(ids)
            offsets.append(torch.arange(0, n * hot, hot))
        clicks = torch.bernoulli(torch.sigmoid(logit), generator=gen)
        return dense, indices, offsets, clicks


def to(device, dense, indices, offsets, clicks):
    return dense.to(device), [i.to(device) for i in indices], [o.to(device) for o in offsets], clicks.to(device)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--device", default="tpu")
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--batch-size", type=int, default=256)
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--log-every", type=int, default=50)
    p.add_argument("--compile", action="store_true", help="compile the model's forward (and its backward)")
    args = p.parse_args()
    tables = [1000, 500, 2000, 100]
    data = ClickData(dense=13, table_sizes=tables, hots=[1, 2, 3, 4])
    torch.manual_seed(0)
    model = DLRM(13, tables, dim=16, bottom=[64, 32], top=[64, 32]).to(args.device)
    forward = torch.compile(model) if args.compile else model
    opt = torch.optim.Adagrad(model.parameters(), lr=args.lr)
    where = torch.tpu.platform() if args.device.startswith("tpu") else "torch"
    print(f"device {args.device} ({where}), {sum(t.numel() for t in model.parameters()):,} parameters")
    gen = torch.Generator().manual_seed(1)
    losses, samples, t0 = [], 0, time.perf_counter()
    for step in range(args.steps):
        dense, indices, offsets, clicks = to(args.device, *data.batch(args.batch_size, gen))
        loss = nn.functional.binary_cross_entropy_with_logits(forward(dense, indices, offsets), clicks)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        samples += args.batch_size
        if step % args.log_every == 0 or step == args.steps - 1:
            value = loss.item()
            now = time.perf_counter()
            # Since the last report (the first includes compiling).
            print(f"step {step:4d}  loss {value:.4f}  {samples / (now - t0):,.0f} samples/s", flush=True)
            losses.append(value)
            t0, samples = now, 0
    print(f"loss {losses[0]:.3f} -> {losses[-1]:.3f}")
    with torch.no_grad():
        dense, indices, offsets, clicks = to(args.device, *data.batch(4096, torch.Generator().manual_seed(2)))
        right = ((model(dense, indices, offsets) > 0).float() == clicks).float().mean().item()
    print(f"held-out accuracy {right:.2%}")
    if args.device.startswith("tpu"):
        m = torch.tpu.metrics()
        print(f"compiles {m['compiles']}, graph compiles {m['graph_compiles']}, fallbacks {m['fallbacks']}")


if __name__ == "__main__":
    main()
