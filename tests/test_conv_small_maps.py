"""Convolutions whose kernel is about as large as the input (ResNet's last stage: 3x3 kernels
over 2x2 or 1x1 maps) are lowered as dots over gathered kernel taps; they match CPU PyTorch
in values and gradients, including taps that read only padding, groups, dilation, strides,
transposed convolutions and 1-d and 3-d maps."""

import pytest
import torch
import torch.nn.functional as F
from helpers import check, no_fallback

F32 = dict(atol=1e-4, rtol=1e-4)

CONV2D_CASES = [
    # (input shape, weight shape, conv2d keyword arguments)
    ((2, 8, 2, 2), (8, 8, 3, 3), dict(padding=1)),
    ((3, 8, 1, 1), (6, 8, 3, 3), dict(padding=1)),
    ((2, 4, 1, 1), (5, 4, 3, 3), dict(padding=2)),
    ((2, 4, 4, 4), (6, 4, 3, 3), dict(stride=2, padding=1)),
    ((2, 4, 3, 3), (6, 2, 3, 3), dict(padding=2, dilation=2, groups=2)),
    ((2, 4, 1, 3), (4, 4, 3, 3), dict(padding=1)),
    ((2, 4, 2, 2), (4, 1, 3, 3), dict(padding=1, groups=4)),
    # Every output position reads padding only: zeros (plus the bias), zero gradients.
    ((2, 4, 1, 1), (3, 4, 1, 1), dict(stride=3, padding=2)),
]


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("case", CONV2D_CASES, ids=str)
def test_conv2d_small_maps(case, bias):
    torch.manual_seed(0)
    xs, ws, kw = case
    x = torch.randn(xs, requires_grad=True)
    w = torch.randn(ws, requires_grad=True)
    b = torch.randn(ws[0], requires_grad=True) if bias else None
    with no_fallback():
        check(lambda x, w, b: F.conv2d(x, w, b, **kw), x, w, b, grad=True, **F32)


def test_conv1d_and_conv3d_small_maps():
    torch.manual_seed(1)
    x1 = torch.randn(2, 4, 2, requires_grad=True)
    w1 = torch.randn(3, 4, 3, requires_grad=True)
    x3 = torch.randn(1, 2, 2, 2, 2, requires_grad=True)
    w3 = torch.randn(3, 2, 3, 3, 3, requires_grad=True)
    with no_fallback():
        check(lambda x, w: F.conv1d(x, w, padding=1), x1, w1, grad=True, **F32)
        check(lambda x, w: F.conv3d(x, w, padding=1), x3, w3, grad=True, **F32)


@pytest.mark.parametrize("kw", [dict(stride=2, output_padding=1), dict(stride=2, padding=1, output_padding=1)], ids=str)
def test_conv_transpose2d_small_maps(kw):
    torch.manual_seed(2)
    x = torch.randn(2, 4, 1, 1, requires_grad=True)
    w = torch.randn(4, 3, 3, 3, requires_grad=True)
    with no_fallback():
        check(lambda x, w: F.conv_transpose2d(x, w, **kw), x, w, grad=True, **F32)


def test_small_map_conv_bfloat16_and_int():
    torch.manual_seed(3)
    x = torch.randn(2, 8, 2, 2).bfloat16().requires_grad_()
    w = torch.randn(8, 8, 3, 3).bfloat16().requires_grad_()
    xi = torch.randint(-3, 4, (2, 3, 2, 2))
    wi = torch.randint(-3, 4, (4, 3, 3, 3))
    with no_fallback():
        check(lambda x, w: F.conv2d(x, w, padding=1), x, w, grad=True, atol=5e-2, rtol=2e-2)
        check(lambda x, w: F.conv2d(x, w, padding=1), xi, wi)
