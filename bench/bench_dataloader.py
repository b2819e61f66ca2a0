"""A training loop fed by a `DataLoader`, side by side in one process: CPU eager, and tpurs
with pageable batches (`pin_memory=False`, blocking uploads) and with pinned batches
(`pin_memory=True`, `non_blocking=True` uploads that run while the host goes on). The model
is small (a 3072-256-10 MLP, SGD) and each batch large (256 x 3072 float32, 3 MiB) so the
upload is a visible part of a step. One epoch of 16 batches per timed run, the losses summed
on the device and read once at its end; medians of 5 runs after a warm-up, ms per step.
Run: `.venv/bin/python bench/bench_dataloader.py [--md]`.
"""

from __future__ import annotations

import argparse

import torch

BATCH, FEATURES, STEPS, WORKERS = 256, 3072, 16, 1


def epoch_runner(device: str, pinned: bool):
    torch.manual_seed(0)
    data = torch.utils.data.TensorDataset(torch.randn(BATCH * STEPS, FEATURES), torch.randint(0, 10, (BATCH * STEPS,)))
    loader = torch.utils.data.DataLoader(
        data, batch_size=BATCH, pin_memory=pinned, num_workers=WORKERS, persistent_workers=WORKERS > 0
    )
    model = torch.nn.Sequential(torch.nn.Linear(FEATURES, 256), torch.nn.ReLU(), torch.nn.Linear(256, 10)).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)

    def epoch() -> float:
        total = torch.zeros((), device=device)
        for x, y in loader:
            x, y = x.to(device, non_blocking=pinned), y.to(device, non_blocking=pinned)
            loss = torch.nn.functional.cross_entropy(model(x), y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            total += loss.detach()
        return total.item()

    return epoch


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--md", action="store_true", help="print a markdown table")
    args = parser.parse_args()
    rows = [
        ("CPU eager", "cpu", False),
        ("tpurs, pageable batches", "tpu", False),
        ("tpurs, pinned + non_blocking", "tpu", True),
    ]
    results = []
    for name, device, pinned in rows:
        run = epoch_runner(device, pinned)
        ms = torch.tpu.benchmark(run, warmup=1, repeats=5, device=device).median / STEPS * 1e3
        results.append((name, ms))
    base = results[0][1]
    if args.md:
        print("| DataLoader training step (ms) | value | / CPU eager |\n|---|---|---|")
    for name, ms in results:
        print(
            f"| {name} | {ms:.2f} | {ms / base:.2f} |" if args.md else f"{name:32s} {ms:8.2f} ms/step  {ms / base:.2f}x"
        )


if __name__ == "__main__":
    main()
