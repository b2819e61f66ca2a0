"""The ResNet, DLRM and UNet examples train on the device as on CPU PyTorch: the same losses and
parameters after a few steps, with no CPU fallback (ResNet and UNet in float64, ResNet in channels_last too);
the Qwen example's two models generate CPU's greedy tokens."""

import copy
import importlib.util
from pathlib import Path

import pytest
import torch
from helpers import no_fallback

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def load(name, script="train.py"):
    spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES / name / script)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def move(x, device):
    return [move(t, device) for t in x] if isinstance(x, list) else x.to(device)


def train(model, opt_fn, batches, loss_fn, device, memory_format=torch.contiguous_format):
    model = copy.deepcopy(model).to(device, memory_format=memory_format)
    opt = opt_fn(model.parameters())
    losses = []
    for inputs, target in batches:
        inputs = [move(x, device) for x in inputs]
        loss = loss_fn(model(*inputs), target.to(device))
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses, {k: v.detach().cpu() for k, v in model.state_dict().items()}


def assert_parity(model, opt_fn, batches, loss_fn, tol, **kw):
    cpu_losses, cpu_state = train(model, opt_fn, batches, loss_fn, "cpu", **kw)
    with no_fallback():
        losses, state = train(model, opt_fn, batches, loss_fn, "tpu", **kw)
    torch.testing.assert_close(torch.tensor(losses), torch.tensor(cpu_losses), atol=tol, rtol=tol)
    for k in cpu_state:
        torch.testing.assert_close(state[k], cpu_state[k], atol=tol, rtol=tol, msg=lambda m, k=k: f"{k}: {m}")


@pytest.mark.parametrize("memory_format", [torch.contiguous_format, torch.channels_last])
def test_resnet18_matches_cpu(memory_format):
    torchvision = pytest.importorskip("torchvision")
    example = load("resnet")
    data = example.SyntheticImages(10, 32)
    gen = torch.Generator().manual_seed(0)
    batches = []
    for _ in range(2):
        x, y = data.batch(4, gen)
        batches.append(([x.double().contiguous(memory_format=memory_format)], y))
    torch.manual_seed(0)
    # In float64: batch norm over batches of 4 at 1x1 resolution amplifies float32 rounding
    # into 1e-3 parameter differences after two steps on either device; float64 leaves only
    # the lowering's own errors.
    model = torchvision.models.resnet18(num_classes=10).double()
    opt = lambda p: torch.optim.SGD(p, lr=0.01, momentum=0.9)  # noqa: E731
    assert_parity(model, opt, batches, torch.nn.functional.cross_entropy, 1e-9, memory_format=memory_format)


def test_dlrm_matches_cpu():
    example = load("dlrm")
    tables = [100, 50, 200]
    data = example.ClickData(dense=13, table_sizes=tables, hots=[1, 2, 3])
    gen = torch.Generator().manual_seed(0)
    batches = []
    for _ in range(3):
        dense, indices, offsets, clicks = data.batch(32, gen)
        batches.append(([dense, indices, offsets], clicks))
    torch.manual_seed(0)
    model = example.DLRM(13, tables, dim=8, bottom=[16], top=[16])

    opt = lambda p: torch.optim.Adagrad(p, lr=0.05)  # noqa: E731
    bce = torch.nn.functional.binary_cross_entropy_with_logits
    assert_parity(model, opt, batches, bce, 1e-4)


def test_unet_denoiser_matches_cpu():
    pytest.importorskip("diffusers")
    example = load("unet")
    gen = torch.Generator().manual_seed(0)
    batches = []
    for _ in range(2):
        clean = example.discs(2, 16, gen).double()
        noise = torch.randn(clean.shape, generator=gen, dtype=torch.float64)
        t = torch.randint(0, 1000, (2,), generator=gen)
        batches.append(([clean + noise, t], noise))
    torch.manual_seed(0)
    model = example.build(16).double()

    class Denoiser(torch.nn.Module):
        def __init__(self, unet):
            super().__init__()
            self.unet = unet

        def forward(self, x, t):
            return self.unet(x, t).sample

    # SGD rather than AdamW: Adam normalises rounding noise in near-zero gradients into
    # full-size steps on either device.
    opt = lambda p: torch.optim.SGD(p, lr=0.01, momentum=0.9)  # noqa: E731
    assert_parity(Denoiser(model), opt, batches, torch.nn.functional.mse_loss, 1e-8)


@pytest.mark.parametrize("kind", ["qwen3", "qwen3_moe"])
def test_qwen_generation_matches_cpu(kind):
    pytest.importorskip("transformers")
    example = load("qwen", "generate.py")
    cpu = example.build(kind)
    prompt = torch.randint(2, 512, (1, 8), generator=torch.Generator().manual_seed(0))
    with no_fallback():
        tokens, prefill, decode = example.generate(copy.deepcopy(cpu).to("tpu"), prompt.to("tpu"), 5, compile=False)
    with torch.no_grad():
        expected = cpu.generate(prompt, max_new_tokens=5, do_sample=False, pad_token_id=0)
    assert torch.equal(tokens, expected)
    assert prefill > 0 and decode > 0
