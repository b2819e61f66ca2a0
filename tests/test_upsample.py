"""F.interpolate (nearest, nearest-exact, linear, bilinear, trilinear; sizes and scale
factors, align_corners) and its gradients against CPU PyTorch."""

import pytest
import torch
import torch.nn.functional as F
from helpers import check, no_fallback

SHAPES = {1: (2, 3, 5), 2: (2, 3, 5, 4), 3: (1, 2, 3, 4, 5)}
LINEAR = {1: "linear", 2: "bilinear", 3: "trilinear"}


@pytest.mark.parametrize("dims", [1, 2, 3])
@pytest.mark.parametrize("mode", ["nearest", "nearest-exact", "linear"])
@pytest.mark.parametrize("how", [{"scale_factor": 2}, {"scale_factor": 1.7}, {"size": 3}, {"size": 11}])
def test_interpolate(dims, mode, how):
    x = torch.randn(SHAPES[dims], requires_grad=True)
    name = LINEAR[dims] if mode == "linear" else mode
    corners = [False, True] if mode == "linear" else [None]
    with no_fallback():
        for align in corners:
            check(lambda t: F.interpolate(t, mode=name, align_corners=align, **how), x, grad=True)


def test_nearest_on_integers():
    img = torch.randint(0, 255, (1, 3, 4, 6), dtype=torch.uint8)
    with no_fallback():
        check(lambda t: F.interpolate(t, scale_factor=2, mode="nearest"), img)


@pytest.mark.parametrize("channels", [3, 5])
@pytest.mark.parametrize(
    "mode, antialias",
    [("bilinear", False), ("bilinear", True), ("bicubic", True)],
    ids=["bilinear", "aa", "bicubic_aa"],
)
@pytest.mark.parametrize("align_corners", [False, True])
@pytest.mark.parametrize("channels_last", [False, True])
def test_uint8_images_resize_as_cpu_bit_for_bit(channels, mode, antialias, align_corners, channels_last):
    # CPU's own uint8 kernel: int16 fixed-point weights, a width pass then a height pass,
    # each rounded and clamped to a byte. Results equal CPU's exactly, not within 1.
    torch.manual_seed(0)
    img = torch.randint(0, 256, (2, channels, 23, 31), dtype=torch.uint8)
    if channels_last:
        img = img.contiguous(memory_format=torch.channels_last)
    sizes = [dict(size=(40, 17)), dict(size=(7, 62)), dict(size=(23, 12)), dict(scale_factor=0.37)]
    with no_fallback():
        for kw in sizes:
            want = F.interpolate(img, mode=mode, antialias=antialias, align_corners=align_corners, **kw)
            got = F.interpolate(img.to("tpu"), mode=mode, antialias=antialias, align_corners=align_corners, **kw)
            assert got.dtype == torch.uint8
            assert torch.equal(got.cpu(), want), kw
            fmt = torch.channels_last if channels_last else torch.contiguous_format
            assert got.is_contiguous(memory_format=fmt) == want.is_contiguous(memory_format=fmt)


def test_integer_images_other_than_uint8_are_refused_as_on_cpu():
    img = torch.randint(0, 255, (1, 3, 4, 6), dtype=torch.int16)
    for device in ("cpu", "tpu"):
        with pytest.raises(RuntimeError, match="not implemented for 'Short'"):
            F.interpolate(img.to(device), scale_factor=2, mode="bilinear")


def test_upsample_in_a_compiled_unet_block():
    torch._dynamo.reset()
    conv = torch.nn.Conv2d(3, 3, 3, padding=1)

    def block(x):
        return conv(F.interpolate(x, scale_factor=2, mode="bilinear")).relu().mean()

    x = torch.randn(2, 3, 8, 8)
    expected = block(x)
    conv.to("tpu")
    with no_fallback():
        out = torch.compile(block)(x.to("tpu"))
    torch.testing.assert_close(out.cpu(), expected, atol=1e-5, rtol=1e-5)
    torch._dynamo.reset()


@pytest.mark.parametrize("mode", ["nearest", "nearest-exact", "bilinear"])
def test_infinite_inputs_reach_only_their_outputs(mode):
    # Each output reads only its source elements: an interpolation-matrix product spread
    # one infinite input as NaN (0 * inf) over every output of its row.
    x = torch.randn(1, 2, 3, 4)
    x[0, 0, 0, 0], x[0, 1, 2, 1] = float("inf"), -float("inf")
    with no_fallback():
        check(lambda t: F.interpolate(t, scale_factor=2, mode=mode), x)
        check(lambda t: F.interpolate(t, size=(5, 7), mode=mode), x)


@pytest.mark.parametrize("mode", ["nearest", "nearest-exact", "bilinear"])
@pytest.mark.parametrize("how", [{"scale_factor": 2}, {"size": (5, 7)}])
def test_infinite_gradients_reach_only_what_was_read(mode, how):
    # A finite gradient goes through one product with the tap matrix; one holding inf takes
    # scatter-adds as CPU does (the product spread 0 * inf = NaN over the whole row).
    x = torch.randn(1, 2, 3, 4)
    g = torch.randn(F.interpolate(x, **how, mode=mode).shape)
    g[0, 0, 1, 1], g[0, 1, -1, 2] = float("inf"), -float("inf")
    for grad in (g, g.abs()):  # with and without non-finite values
        cpu = x.clone().requires_grad_()
        F.interpolate(cpu, **how, mode=mode).backward(grad)
        dev = x.to("tpu").requires_grad_()
        with no_fallback():
            F.interpolate(dev, **how, mode=mode).backward(grad.to("tpu"))
        torch.testing.assert_close(dev.grad.cpu(), cpu.grad, equal_nan=True)
