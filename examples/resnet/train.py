"""Trains torchvision's ResNet (unchanged, random initial weights) on synthetic images:
ten classes, each a fixed random colour pattern seen through fresh noise and a random shift,
so the loss has something to learn and nothing is downloaded.

    python examples/resnet/train.py                        # ResNet-18 on tpu, eager
    python examples/resnet/train.py --channels-last        # NHWC activations and weights
    python examples/resnet/train.py --arch resnet50 --steps 20
    python examples/resnet/train.py --compile              # the training step through torch.compile
    python examples/resnet/train.py --device cpu           # the same on CPU PyTorch

Prints the loss falling, images per second and, at the end, held-out accuracy."""

from __future__ import annotations

import argparse
import time

import torch
import torchvision


class SyntheticImages:
    """`classes` patterns of shape (3, size, size); a sample is its class's pattern rolled by
    up to 4 pixels plus unit noise."""

    def __init__(self, classes: int, size: int, seed: int = 0):
        gen = torch.Generator().manual_seed(seed)
        # Smooth patterns: low-resolution noise upsampled, so that convolutions can find them.
        coarse = torch.randn(classes, 3, size // 8, size // 8, generator=gen)
        self.patterns = torch.nn.functional.interpolate(coarse, size=(size, size), mode="bilinear")
        self.classes = classes

    def batch(self, n: int, gen: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
        labels = torch.randint(self.classes, (n,), generator=gen)
        shifts = torch.randint(-4, 5, (2,), generator=gen).tolist()
        images = self.patterns[labels].roll(shifts, dims=(2, 3))
        return images + torch.randn(images.shape, generator=gen), labels


def train(model, data, device, steps, batch_size, lr, log_every, compile, channels_last):
    opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9, weight_decay=5e-4)
    step_fn = torch.compile(model) if compile else model
    gen = torch.Generator().manual_seed(1)
    fmt = torch.channels_last if channels_last else torch.contiguous_format
    losses, images, t0 = [], 0, time.perf_counter()
    for step in range(steps):
        x, y = data.batch(batch_size, gen)
        x, y = x.to(device, memory_format=fmt), y.to(device)
        loss = torch.nn.functional.cross_entropy(step_fn(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        images += batch_size
        if step % log_every == 0 or step == steps - 1:
            value = loss.item()
            now = time.perf_counter()
            # Since the last report (the first includes compiling).
            print(f"step {step:4d}  loss {value:.4f}  {images / (now - t0):,.1f} images/s", flush=True)
            losses.append(value)
            t0, images = now, 0
    return losses


@torch.no_grad()
def accuracy(model, data, device, batches, batch_size, channels_last):
    model.eval()
    gen = torch.Generator().manual_seed(2)
    fmt = torch.channels_last if channels_last else torch.contiguous_format
    right = total = 0
    for _ in range(batches):
        x, y = data.batch(batch_size, gen)
        pred = model(x.to(device, memory_format=fmt)).argmax(1).cpu()
        right += int((pred == y).sum())
        total += len(y)
    model.train()
    return right / total


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--device", default="tpu")
    p.add_argument("--arch", default="resnet18", choices=["resnet18", "resnet34", "resnet50"])
    p.add_argument("--image-size", type=int, default=32)
    p.add_argument("--steps", type=int, default=60)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--log-every", type=int, default=10)
    p.add_argument("--channels-last", action="store_true")
    p.add_argument("--compile", action="store_true", help="compile the model's forward (and its backward)")
    args = p.parse_args()
    data = SyntheticImages(10, args.image_size)
    torch.manual_seed(0)
    model = getattr(torchvision.models, args.arch)(num_classes=10)
    if args.channels_last:
        model = model.to(memory_format=torch.channels_last)
    model = model.to(args.device)
    where = torch.tpu.platform() if args.device.startswith("tpu") else "torch"
    print(f"device {args.device} ({where}), {args.arch}, {sum(t.numel() for t in model.parameters()):,} parameters")
    losses = train(
        model,
        data,
        args.device,
        args.steps,
        args.batch_size,
        args.lr,
        args.log_every,
        args.compile,
        args.channels_last,
    )
    print(f"loss {losses[0]:.3f} -> {losses[-1]:.3f}")
    print(f"held-out accuracy {accuracy(model, data, args.device, 4, args.batch_size, args.channels_last):.2%}")
    if args.device.startswith("tpu"):
        m = torch.tpu.metrics()
        print(f"compiles {m['compiles']}, graph compiles {m['graph_compiles']}, fallbacks {m['fallbacks']}")


if __name__ == "__main__":
    main()
