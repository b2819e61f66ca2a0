"""Trains Diffusers' `UNet2DModel` (unchanged; a small config built here, random weights)
as a DDPM denoiser on synthetic 32x32 images (soft coloured discs at random places, so there
is something to learn and nothing is downloaded), then samples a few images with a DDIM
scheduler.

    python examples/unet/train.py                 # tpu, eager
    python examples/unet/train.py --compile       # the UNet through torch.compile
    python examples/unet/train.py --device cpu    # the same on CPU PyTorch

Prints the loss falling, images per second, and the sampling time per denoising step."""

from __future__ import annotations

import argparse
import time

import diffusers
import torch


def build(size: int) -> diffusers.UNet2DModel:
    return diffusers.UNet2DModel(
        sample_size=size,
        in_channels=3,
        out_channels=3,
        layers_per_block=1,
        block_out_channels=(32, 64, 64),
        down_block_types=("DownBlock2D", "AttnDownBlock2D", "DownBlock2D"),
        up_block_types=("UpBlock2D", "AttnUpBlock2D", "UpBlock2D"),
        norm_num_groups=8,
    )


def discs(n: int, size: int, gen: torch.Generator) -> torch.Tensor:
    """`n` images in [-1, 1]: one soft disc each, random centre, radius and colour."""
    ys, xs = torch.meshgrid(torch.arange(size), torch.arange(size), indexing="ij")
    centre = torch.rand(n, 2, 1, 1, generator=gen) * size
    radius = 4 + torch.rand(n, 1, 1, generator=gen) * size / 4
    dist = ((ys - centre[:, 0]) ** 2 + (xs - centre[:, 1]) ** 2).sqrt()
    mask = torch.sigmoid((radius - dist) * 2).unsqueeze(1)
    colour = torch.rand(n, 3, 1, 1, generator=gen) * 2 - 1
    return mask * colour + (1 - mask) * -0.8


def train(model, device, steps, batch_size, size, lr, log_every, compile):
    scheduler = diffusers.DDPMScheduler(num_train_timesteps=1000)
    opt = torch.optim.AdamW(model.parameters(), lr=lr)
    forward = torch.compile(model) if compile else model
    gen = torch.Generator().manual_seed(1)
    losses, images, t0 = [], 0, time.perf_counter()
    for step in range(steps):
        clean = discs(batch_size, size, gen)
        noise = torch.randn(clean.shape, generator=gen)
        t = torch.randint(0, 1000, (batch_size,), generator=gen)
        noisy = scheduler.add_noise(clean, noise, t)
        pred = forward(noisy.to(device), t.to(device)).sample
        loss = torch.nn.functional.mse_loss(pred, noise.to(device))
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
def sample(model, device, n, size, steps):
    """DDIM sampling from noise; returns the images and seconds per denoising step."""
    scheduler = diffusers.DDIMScheduler(num_train_timesteps=1000)
    scheduler.set_timesteps(steps)
    x = torch.randn(n, 3, size, size, generator=torch.Generator().manual_seed(2)).to(device)
    start = time.perf_counter()
    for t in scheduler.timesteps:
        eps = model(x, t.to(device)).sample
        x = scheduler.step(eps, t, x).prev_sample
    x = x.cpu()
    return x, (time.perf_counter() - start) / steps


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--device", default="tpu")
    p.add_argument("--steps", type=int, default=60)
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--size", type=int, default=32)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--log-every", type=int, default=10)
    p.add_argument("--sample-steps", type=int, default=10)
    p.add_argument("--compile", action="store_true", help="compile the UNet's forward (and its backward)")
    args = p.parse_args()
    torch.manual_seed(0)
    model = build(args.size).to(args.device)
    where = torch.tpu.platform() if args.device.startswith("tpu") else "torch"
    print(f"device {args.device} ({where}), {sum(t.numel() for t in model.parameters()):,} parameters")
    losses = train(model, args.device, args.steps, args.batch_size, args.size, args.lr, args.log_every, args.compile)
    print(f"loss {losses[0]:.3f} -> {losses[-1]:.3f}")
    model.eval()
    sample(model, args.device, 4, args.size, 2)  # warm-up: compiles the sampling programs
    images, per_step = sample(model, args.device, 4, args.size, args.sample_steps)
    print(
        f"sampled {len(images)} images, {per_step * 1e3:.1f} ms per denoising step, range [{images.min():.2f}, {images.max():.2f}]"
    )
    if args.device.startswith("tpu"):
        m = torch.tpu.metrics()
        print(f"compiles {m['compiles']}, graph compiles {m['graph_compiles']}, fallbacks {m['fallbacks']}")


if __name__ == "__main__":
    main()
