"""lgamma and digamma against CPU PyTorch: positive and negative arguments, the poles,
infinities, integer inputs and gradients (digamma is lgamma's derivative)."""

import torch
from helpers import check, no_fallback

POINTS = torch.tensor([0.001, 0.1, 0.5, 1.0, 1.5, 2.0, 2.5, 3.7, 10.0, 55.5, 1e4, -0.5, -1.5, -2.3, -7.9, -100.25])


def test_lgamma():
    with no_fallback():
        check(torch.lgamma, POINTS, atol=1e-4, rtol=1e-5)
        check(torch.lgamma, torch.tensor([0.0, -1.0, -3.0, float("inf"), float("-inf"), float("nan")]))
        check(torch.lgamma, torch.arange(1, 8))
        check(lambda t: torch.lgamma(t).sum(), (POINTS.abs() + 0.2).requires_grad_(), grad=True, atol=1e-4, rtol=1e-4)


def test_digamma():
    with no_fallback():
        check(torch.digamma, POINTS, atol=1e-4, rtol=1e-4)
        check(torch.digamma, torch.tensor([0.0, -1.0, -3.0, float("inf"), float("nan")]))
        check(torch.special.digamma, torch.arange(1, 8), atol=1e-5, rtol=1e-5)
