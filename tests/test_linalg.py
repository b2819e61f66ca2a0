"""Cholesky, triangular solves, cholesky_solve and cholesky_inverse against CPU PyTorch,
batched and broadcast, with gradients and LAPACK's info for matrices that are not
positive definite."""

import pytest
import torch
from helpers import check, no_fallback


def spd(*batch, n=4):
    a = torch.randn(*batch, n, n)
    return a @ a.mT + n * torch.eye(n)


@pytest.mark.parametrize("upper", [False, True])
def test_cholesky(upper):
    a = spd(3, n=5)
    with no_fallback():
        check(lambda t: torch.linalg.cholesky_ex(t, upper=upper), a, atol=1e-5, rtol=1e-5)
        check(lambda t: torch.linalg.cholesky(t, upper=upper), a, atol=1e-5, rtol=1e-5)
        check(lambda t: torch.linalg.cholesky(t).sum(), a[0].clone().requires_grad_(), grad=True, atol=1e-4, rtol=1e-4)


def test_cholesky_info_for_indefinite_matrices():
    a = spd(5, n=6)
    for i, k in enumerate([0, 1, 2, 4, 5]):
        a[i, k, k] = -100.0  # leading minor k + 1 is not positive definite
    a[0] = spd(n=6)
    with no_fallback():
        info = torch.linalg.cholesky_ex(a.to("tpu")).info
    assert info.tolist() == torch.linalg.cholesky_ex(a).info.tolist()
    with pytest.raises(torch.linalg.LinAlgError):
        torch.linalg.cholesky(a.to("tpu"))


@pytest.mark.parametrize("upper", [False, True])
@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("unit", [False, True])
def test_solve_triangular(upper, left, unit):
    a = torch.randn(2, 4, 4).triu() if upper else torch.randn(2, 4, 4).tril()
    a = a + 4 * torch.eye(4)
    rhs = torch.randn(2, 4, 3) if left else torch.randn(2, 3, 4)
    with no_fallback():
        check(
            lambda x, y: torch.linalg.solve_triangular(x, y, upper=upper, left=left, unitriangular=unit),
            a,
            rhs,
            atol=1e-4,
            rtol=1e-4,
        )
        check(
            lambda x, y: torch.triangular_solve(y, x, upper=upper, transpose=unit),
            a,
            torch.randn(2, 4, 3),
            atol=1e-4,
            rtol=1e-4,
        )


def test_cholesky_solve_and_inverse_broadcast():
    a = spd(2, n=4)
    L = torch.linalg.cholesky(a)
    rhs = torch.randn(3, 1, 4, 2)
    with no_fallback():
        for upper in (False, True):
            f = L.mT if upper else L
            check(lambda b, l: torch.cholesky_solve(b, l, upper=upper), rhs, f, atol=1e-4, rtol=1e-4)
            check(lambda l: torch.cholesky_inverse(l, upper=upper), f[0], atol=1e-4, rtol=1e-4)
        check(lambda t: torch.linalg.cholesky(t).sum(), a[1].clone().requires_grad_(), grad=True, atol=1e-4, rtol=1e-4)


def test_cross_broadcasts_along_any_dim():
    with no_fallback():
        check(lambda t: torch.linalg.cross(t, torch.ones(1, 3).to(t.device) * 2), torch.randn(4, 3))
        check(lambda t: torch.cross(t, t.flip(0), dim=1), torch.randn(2, 3, 5))
        check(lambda t: torch.linalg.cross(t, t.roll(1, 0)), torch.randint(-5, 5, (4, 3)))
    with pytest.raises(RuntimeError, match="must have length 3"):
        torch.linalg.cross(torch.randn(2, 4, device="tpu"), torch.randn(2, 4, device="tpu"))
    with pytest.raises(IndexError, match="Dimension out of range"):
        torch.linalg.cross(torch.randn(2, 3, device="tpu"), torch.randn(2, 3, device="tpu"), dim=2)
    with pytest.raises(IndexError, match="no dimensions"):
        torch.linalg.cross(torch.tensor(1.0, device="tpu"), torch.tensor(2.0, device="tpu"))


def test_equal_is_one_read():
    a = torch.randn(5, device="tpu")
    with no_fallback():
        assert torch.equal(a, a.clone()) and torch.equal(a, a.double())
        assert not torch.equal(a, a + 1) and not torch.equal(a, a[:4])
        nan = torch.tensor([float("nan")], device="tpu")
        assert not torch.equal(nan, nan)


@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128])
def test_complex_cholesky_and_triangular_solves(dtype):
    x = torch.complex(torch.randn(2, 4, 4), torch.randn(2, 4, 4)).to(dtype)
    a = x @ x.mH + torch.eye(4, dtype=dtype)
    rhs = torch.complex(torch.randn(2, 4, 3), torch.randn(2, 4, 3)).to(dtype)
    low = torch.linalg.cholesky(a)
    tol = 1e-4 if dtype == torch.complex64 else 1e-10
    with no_fallback():
        check(lambda a: (torch.linalg.cholesky(a), torch.linalg.cholesky(a, upper=True)), a, atol=tol, rtol=tol)
        check(lambda a: torch.linalg.cholesky_ex(a - 10 * torch.eye(4, dtype=dtype, device=a.device)).info, a)
        check(
            lambda l, r: (
                torch.linalg.solve_triangular(l, r, upper=False),
                torch.linalg.solve_triangular(l.mH, r.mT, upper=True, left=False),
                torch.triangular_solve(r, l, upper=False, transpose=True).solution,
            ),
            low,
            rhs,
            atol=tol,
            rtol=tol,
        )
        check(
            lambda l, r: (
                torch.cholesky_solve(r, l),
                torch.cholesky_solve(r, l.mH, upper=True),
                torch.cholesky_inverse(l[0]),
            ),
            low,
            rhs,
            atol=tol,
            rtol=tol,
        )
    if dtype == torch.complex128:
        with no_fallback():
            check(torch.linalg.cholesky, a.requires_grad_(), grad=True, atol=1e-9, rtol=1e-9)
