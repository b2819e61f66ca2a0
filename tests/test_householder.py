"""LAPACK-style Householder ops on tpu against CPU PyTorch: `geqrf`, `linalg.householder_product`
and `ormqr` (real and complex values, gradients, and the CPU's errors)."""

from __future__ import annotations

import pytest
import torch
from helpers import no_fallback


@pytest.fixture(autouse=True)
def _native_only():
    with no_fallback():
        yield


def _close(device_value, cpu_value, tol=1e-5):
    torch.testing.assert_close(device_value.cpu(), cpu_value, atol=tol, rtol=tol)


@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (4, 4), (2, 6, 4)])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.complex64, torch.complex128])
def test_geqrf_gives_lapack_reflectors_and_scales(shape, dtype):
    a = torch.randn(shape, dtype=dtype)
    ref_a, ref_tau = torch.geqrf(a)
    dev_a, dev_tau = torch.geqrf(a.to("tpu"))
    _close(dev_a, ref_a)
    _close(dev_tau, ref_tau)


@pytest.mark.parametrize(("shape", "k"), [((5, 3), 3), ((5, 3), 1), ((4, 4), 4), ((2, 6, 4), 2)])
def test_householder_product_and_its_gradient(shape, k):
    a = torch.randn(shape, dtype=torch.float64, requires_grad=True)
    tau = torch.rand(*shape[:-2], k, dtype=torch.float64, requires_grad=True)
    ref = torch.linalg.householder_product(a, tau)
    da, dt = (t.detach().to("tpu").requires_grad_() for t in (a, tau))
    out = torch.linalg.householder_product(da, dt)
    grad = torch.randn_like(ref)
    ref.backward(grad)
    out.backward(grad.to("tpu"))
    _close(out.detach(), ref.detach(), 1e-10)
    _close(da.grad, a.grad, 1e-10)
    _close(dt.grad, tau.grad, 1e-10)


@pytest.mark.parametrize(
    ("shape", "k", "other", "left", "transpose"),
    [
        ((5, 3), 3, (5, 2), True, False),
        ((5, 3), 3, (4, 5), False, True),
        ((3, 5), 3, (3, 4), True, True),
        ((2, 4, 4), 4, (2, 3, 4), False, False),
    ],
)
def test_ormqr_multiplies_by_the_reflectors_q(shape, k, other, left, transpose):
    a = torch.randn(shape, dtype=torch.float64, requires_grad=True)
    tau = torch.rand(*shape[:-2], k, dtype=torch.float64)
    c = torch.randn(other, dtype=torch.float64, requires_grad=True)
    ref = torch.ormqr(a, tau, c, left, transpose)
    da, dc = a.detach().to("tpu").requires_grad_(), c.detach().to("tpu").requires_grad_()
    out = torch.ormqr(da, tau.to("tpu"), dc, left, transpose)
    grad = torch.randn_like(ref)
    ref.backward(grad)
    out.backward(grad.to("tpu"))
    _close(out.detach(), ref.detach(), 1e-10)
    _close(dc.grad, c.grad, 1e-10)
    _close(da.grad, a.grad, 1e-10)


@pytest.mark.parametrize("transpose", [False, True])
@pytest.mark.parametrize("left", [False, True])
def test_complex_reflectors(left, transpose):
    # Complex scales: `transpose` means the conjugate transpose of Q, as on CPU.
    a = torch.randn(5, 3, dtype=torch.complex128)
    h, tau = torch.geqrf(a)
    c = torch.randn((5, 2) if left else (4, 5), dtype=torch.complex128)
    _close(
        torch.linalg.householder_product(h.to("tpu"), tau.to("tpu")), torch.linalg.householder_product(h, tau), 1e-12
    )
    ref = torch.ormqr(h, tau, c, left, transpose)
    _close(torch.ormqr(h.to("tpu"), tau.to("tpu"), c.to("tpu"), left, transpose), ref, 1e-12)


@pytest.mark.parametrize(
    "call",
    [
        lambda d: torch.geqrf(torch.ones(3, device=d)),
        lambda d: torch.geqrf(torch.ones(3, 3, dtype=torch.int64, device=d)),
        lambda d: torch.linalg.householder_product(torch.randn(3, 5, device=d), torch.rand(2, device=d)),
        lambda d: torch.linalg.householder_product(torch.randn(5, 3, device=d), torch.rand(4, device=d)),
        lambda d: torch.linalg.householder_product(torch.randn(5, 3, device=d), torch.rand(2, 2, device=d)),
        lambda d: torch.linalg.householder_product(torch.randn(2, 5, 3, device=d), torch.rand(3, 2, device=d)),
        lambda d: torch.linalg.householder_product(
            torch.randn(5, 3, device=d), torch.rand(2, device=d, dtype=torch.float64)
        ),
        lambda d: torch.ormqr(torch.randn(5, 3, device=d), torch.rand(2, device=d), torch.randn(4, 5, device=d), False),
        lambda d: torch.ormqr(torch.randn(5, 3, device=d), torch.rand(3, device=d), torch.randn(4, 5, device=d)),
        lambda d: torch.ormqr(torch.randn(5, 3, device=d), torch.rand(3, device=d), torch.randn(2, 5, 2, device=d)),
        lambda d: torch.ormqr(
            torch.randn(5, 3, device=d), torch.rand(3, device=d), torch.randn(5, 2, device=d, dtype=torch.float64)
        ),
    ],
)
def test_bad_arguments_raise_what_cpu_raises(call):
    with pytest.raises(Exception) as cpu:
        call("cpu")
    with pytest.raises(type(cpu.value)) as dev:
        call("tpu")
    assert str(dev.value).split("\n")[0] == str(cpu.value).split("\n")[0]
