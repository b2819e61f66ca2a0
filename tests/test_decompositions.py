"""Ops that run on the device through torch's own decompositions (`tpurs/decompositions.py`)
match CPU PyTorch with no CPU fallback: values and, where the backward decomposes too,
gradients."""

import pytest
import torch
import torch.nn.functional as F
from helpers import check, no_fallback


def test_losses_and_their_gradients():
    x = torch.randn(6, 5, requires_grad=True)
    t = torch.randn(6, 5)
    p = torch.rand(6, 5, requires_grad=True)
    with no_fallback():
        check(lambda a, b: F.smooth_l1_loss(a, b, beta=0.5), x, t, grad=True)
        check(lambda a, b: F.huber_loss(a, b, delta=0.7, reduction="sum"), x, t, grad=True)
        check(lambda a, b: F.binary_cross_entropy(a, b), p, torch.rand(6, 5), grad=True, atol=1e-5, rtol=1e-5)
        check(lambda a, y: F.multi_margin_loss(a, y), x.detach(), torch.tensor([0, 4, 2, 1, 3, 0]))
        check(lambda a, y: F.multilabel_margin_loss(a, y), x.detach(), torch.tensor([[0, 3, -1, 0, 0]] * 6))


@pytest.mark.parametrize(
    ("p", "margin", "weighted", "reduction"),
    [(1, 1.0, False, "mean"), (2, 0.5, True, "sum"), (1, 2.0, True, "none")],
)
def test_multi_margin_loss_gradient(p, margin, weighted, reduction):
    x = torch.randn(6, 5, dtype=torch.float64, requires_grad=True)
    y = torch.tensor([0, 4, 2, 1, 3, 0])
    w = torch.rand(5, dtype=torch.float64) if weighted else None
    with no_fallback():
        check(
            lambda a, t, w: F.multi_margin_loss(a, t, p=p, margin=margin, weight=w, reduction=reduction),
            x,
            y,
            w,
            grad=True,
        )
        check(lambda a, t: F.multi_margin_loss(a, t, p=p), x[0], torch.tensor(3), grad=True)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_multilabel_margin_loss_gradient(reduction):
    x = torch.randn(6, 5, dtype=torch.float64, requires_grad=True)
    # Targets end at the first -1; repeated targets count once per slot, as on the CPU.
    y = torch.tensor(
        [[0, 3, -1, 0, 0], [1, 1, 2, -1, 4], [4, 3, 2, 1, 0], [-1, 0, 0, 0, 0], [2, -1, 3, 3, 3], [0, 0, -1, 1, 1]]
    )
    with no_fallback():
        check(lambda a, t: F.multilabel_margin_loss(a, t, reduction=reduction), x, y, grad=True)
        check(lambda a, t: F.multilabel_margin_loss(a, t), x[0], torch.tensor([3, 0, -1, 2, 2]), grad=True)


def test_sgn_gradient_of_real_input_is_zeros():
    # autograd builds it with _efficientzerotensor, which gives plain zeros on the device.
    x = torch.randn(4, requires_grad=True)
    with no_fallback():
        check(lambda a: torch.sgn(a) * 3, x, grad=True)


def test_unfold_fold_and_their_gradients():
    x = torch.randn(2, 3, 6, 5, requires_grad=True)
    with no_fallback():
        check(lambda a: F.unfold(a, kernel_size=(2, 3), padding=1, stride=(2, 1)), x, grad=True)
        cols = torch.randn(2, 3 * 4, 12, requires_grad=True)
        check(lambda c: F.fold(c, output_size=(4, 5), kernel_size=2, stride=(1, 1), padding=0), cols, grad=True)


@pytest.mark.parametrize("mode", ["bilinear", "nearest", "bicubic"])
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align_corners", [False, True])
def test_grid_sample(mode, padding_mode, align_corners):
    x = torch.randn(2, 3, 5, 7)
    grid = torch.rand(2, 4, 6, 2) * 2.4 - 1.2  # some points outside [-1, 1]
    with no_fallback():
        check(
            lambda a, g: F.grid_sample(a, g, mode=mode, padding_mode=padding_mode, align_corners=align_corners),
            x,
            grid,
            atol=1e-5,
            rtol=1e-5,
        )


def test_elementwise_and_reductions():
    x = torch.randn(4, 5)
    with no_fallback():
        check(torch.sinc, torch.cat([x.flatten(), torch.zeros(2)]))
        check(torch.aminmax, x)
        check(lambda a: torch.aminmax(a, dim=1, keepdim=True), x)
        check(torch.count_nonzero, torch.tensor([[0.0, 1.0], [2.0, 0.0]]))
        check(lambda a: torch.count_nonzero(a, dim=0), torch.tensor([[0.0, 1.0], [2.0, 0.0]]))
        check(lambda a: torch.renorm(a, p=2, dim=0, maxnorm=1.0), x)
        check(lambda a: F.channel_shuffle(a, 2), torch.randn(2, 4, 3, 3))


def test_bicubic_forward():
    with no_fallback():
        check(
            lambda a: F.interpolate(a, scale_factor=1.7, mode="bicubic", align_corners=False),
            torch.randn(1, 2, 5, 6),
            atol=1e-5,
            rtol=1e-5,
        )
