"""elu/celu/selu, softplus, logsigmoid, mish, hardsigmoid, hardswish, logit, hard/soft
shrink, xlogy, logaddexp(2) and rsub against CPU PyTorch, forward and backward, with the
branch points (0, +-3, the shrink thresholds, infinities) in the data."""

import copy

import pytest
import torch
import torch.nn.functional as F
from helpers import check, no_fallback

EDGES = torch.tensor([-4.0, -3.0, -1.0, -0.5, 0.0, 0.5, 1.0, 3.0, 4.0, 25.0])

ACTIVATIONS = {
    "elu": lambda x: F.elu(x, alpha=1.3),
    "celu": lambda x: F.celu(x, alpha=0.7),
    "selu": F.selu,
    "softplus": lambda x: F.softplus(x, beta=2.0, threshold=10.0),
    "logsigmoid": F.logsigmoid,
    "mish": F.mish,
    "hardsigmoid": F.hardsigmoid,
    "hardswish": F.hardswish,
    "hardshrink": lambda x: F.hardshrink(x, 0.5),
    "softshrink": lambda x: F.softshrink(x, 0.5),
}


def data(dtype=torch.float32):
    x = torch.cat([torch.randn(30) * 3, EDGES]).to(dtype)
    return x.reshape(5, 8).requires_grad_()


@pytest.mark.parametrize("name", list(ACTIVATIONS))
def test_activation_forward_backward(name):
    with no_fallback():
        check(ACTIVATIONS[name], data(), grad=True, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("name", ["elu", "softplus", "hardswish", "mish"])
def test_activation_bfloat16(name):
    with no_fallback():
        check(ACTIVATIONS[name], data(torch.bfloat16).detach(), atol=2e-2, rtol=2e-2)


def test_elu_backward_from_result_and_inplace():
    with no_fallback():
        check(lambda x: F.elu(x * 1, inplace=True), data(), grad=True)
        check(lambda x: torch.ops.aten.elu_backward(torch.ones_like(x), 1.0, 1.0, 1.0, True, F.elu(x)), data().detach())


def test_logit():
    x = torch.tensor([[-0.1, 0.0, 0.05, 0.3, 0.5, 0.9, 1.0, 1.2]]).requires_grad_()
    with no_fallback():
        check(lambda t: torch.logit(t, eps=0.1), x, grad=True)
        check(lambda t: torch.logit(t, eps=0.6), x.detach())
        check(lambda t: torch.logit(t.clamp(0.01, 0.99)), x, grad=True)
        check(lambda t: torch.logit(t), x.detach())


def test_unsupported_dtype_raises_like_cpu():
    for device in ("cpu", "tpu"):
        with pytest.raises(NotImplementedError):
            F.elu(torch.arange(3, device=device))


def test_xlogy():
    x = torch.tensor([0.0, 0.0, 1.0, 2.0, -1.0, 3.0])
    y = torch.tensor([0.0, float("nan"), 2.0, 0.5, 3.0, float("inf")])
    with no_fallback():
        check(torch.xlogy, x, y)
        check(lambda a: torch.xlogy(a, 2.0), x)
        check(lambda b: torch.xlogy(3, b), y)
        check(torch.xlogy, torch.arange(4), torch.arange(1, 5))
        check(lambda a, b: torch.xlogy(a, b).sum(), x.abs().requires_grad_(), y.abs() + 1, grad=True)


@pytest.mark.parametrize("op", [torch.logaddexp, torch.logaddexp2])
def test_logaddexp(op):
    inf = float("inf")
    a = torch.tensor([0.0, 1.0, -100.0, inf, -inf, inf, 3.0])
    b = torch.tensor([0.0, 2.0, -101.0, inf, -inf, -inf, -inf])
    with no_fallback():
        check(op, a, b)
        check(op, torch.randn(3, 4, requires_grad=True), torch.randn(4), grad=True)


def test_rsub():
    x, y = torch.randn(3, 4), torch.randn(4)
    with no_fallback():
        check(lambda a, b: torch.rsub(a, b, alpha=2), x, y)
        check(lambda a: torch.rsub(a, 3.5), x)
        check(lambda a: 1 - a, torch.arange(5))


def test_glu_and_prelu_with_gradients():
    with no_fallback():
        check(lambda t: torch.nn.functional.glu(t, dim=1), torch.randn(3, 6, 2))
        check(lambda t: torch.nn.functional.glu(t).sum(), torch.randn(4, 8).requires_grad_(), grad=True)
        prelu = torch.nn.PReLU(3)
        prelu.weight.data = torch.tensor([0.1, -0.5, 2.0])
        check(lambda t: copy.deepcopy(prelu).to(t.device)(t), torch.randn(2, 3, 4))
        check(
            lambda t: copy.deepcopy(prelu).to(t.device)(t).square().sum(),
            torch.randn(2, 3, 4).requires_grad_(),
            grad=True,
        )
    with pytest.raises(RuntimeError, match="Halving dimension must be even"):
        torch.nn.functional.glu(torch.randn(3, 5, device="tpu"))
