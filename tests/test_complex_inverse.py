"""The complex inverse trigonometric and hyperbolic functions against CPU PyTorch: C99's
special values (infinite, NaN and signed-zero parts), accuracy near the branch points and
far out, and gradients."""

import itertools

import pytest
import torch
from helpers import check, no_fallback

FUNCTIONS = ("asin", "acos", "atan", "asinh", "acosh", "atanh")
PARTS = (0.0, -0.0, 0.5, -0.5, 1.0, -1.0, 2.0, -2.0, 1e-8, 1e10, -1e30, float("inf"), float("-inf"), float("nan"))
SPECIAL = [complex(a, b) for a, b in itertools.product(PARTS, PARTS)]
# Near the branch points +-1 and +-i, and far out.
NEAR = [p + d for p in (1, -1, 1j, -1j) for d in (1e-3, -1e-6, 1e-9j, -1e-12j, 1e-6 + 1e-6j)]
FAR = [complex(a, b) for a in (1e-20, 3.0, 1e5, 1e12) for b in (1e-20, 0.3, 1e9, 1e15)]


def parts(t: torch.Tensor) -> torch.Tensor:
    return torch.view_as_real(t.cpu())


@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128])
@pytest.mark.parametrize("name", FUNCTIONS)
def test_values_match_cpu(name, dtype):
    torch.manual_seed(0)
    scale = torch.randn(500, 1).exp2() * 3
    random = torch.view_as_complex(torch.randn(500, 2) * scale).tolist()
    z = torch.tensor(SPECIAL + NEAR + FAR + random, dtype=dtype)
    f = getattr(torch, name)
    expected = f(z)
    with no_fallback():
        actual = f(z.to("tpu"))
    assert actual.dtype == dtype
    # Relative to the result's magnitude: a part that is tiny next to the other part may
    # differ in its own last bits (XLA flushes subnormals to zero). CPU's complex128 `acos`
    # is `pi/2 - asin(z)`, which cancels near z = 1 (1e-11 relative where the device's
    # Kahan formula is exact), hence the looser float64 tolerance.
    rtol = 2e-6 if dtype == torch.complex64 else 1e-9
    e, a = parts(expected), parts(actual)
    both_nan = e.isnan() & a.isnan()
    scale = expected.abs().unsqueeze(-1).clamp_min(1e-30)
    close = (e == a) | both_nan | ((e - a).abs() <= rtol * scale)
    assert close.all(), [
        (z[i].item(), expected[i].item(), actual.cpu()[i].item()) for i in (~close.all(-1)).nonzero().flatten()[:5]
    ]
    # Zero parts carry CPU's sign.
    zeros = (e == 0) & (a == 0)
    assert torch.equal(e.signbit()[zeros], a.signbit()[zeros])


@pytest.mark.parametrize("name", FUNCTIONS)
def test_gradients_match_cpu(name):
    z = torch.view_as_complex(torch.randn(16, 2, dtype=torch.float64) * 2).requires_grad_()
    with no_fallback():
        check(getattr(torch, name), z, grad=True, rtol=1e-9, atol=1e-11)
