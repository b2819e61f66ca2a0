"""LU with partial pivoting and what is built on it (lu_factor, lu_solve, inv, solve, det,
slogdet) against CPU PyTorch: the same LU and pivots as LAPACK, batched, float64, gradients,
and singular matrices reported through `info` and LinAlgError as on the CPU."""

import pytest
import torch
from helpers import check, no_fallback


def well_conditioned(*shape, dtype=torch.float32):
    a = torch.randn(*shape, dtype=dtype)
    return a + shape[-1] * torch.eye(shape[-1], dtype=dtype) if shape[-1] == shape[-2] else a


@pytest.mark.parametrize("shape", [(5, 5), (6, 4), (4, 6), (3, 5, 5)])
def test_lu_factor_matches_lapack(shape):
    a = torch.randn(*shape)
    with no_fallback():
        check(lambda t: torch.linalg.lu_factor_ex(t), a, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("adjoint", [False, True])
def test_lu_solve(left, adjoint):
    a = well_conditioned(2, 5, 5)
    lu, piv = torch.linalg.lu_factor(a)
    rhs = torch.randn(2, 5, 3) if left else torch.randn(2, 3, 5)
    with no_fallback():
        x = torch.linalg.lu_solve(lu.to("tpu"), piv.to("tpu"), rhs.to("tpu"), left=left, adjoint=adjoint)
    expected = torch.linalg.lu_solve(lu, piv, rhs, left=left, adjoint=adjoint)
    torch.testing.assert_close(x.cpu(), expected, atol=1e-5, rtol=1e-5)


def test_inv_solve_det_slogdet():
    a = well_conditioned(3, 4, 4)
    rhs = torch.randn(3, 4, 2)
    with no_fallback():
        check(torch.linalg.inv, a, atol=1e-5, rtol=1e-5)
        check(lambda t: torch.linalg.solve(t, rhs.to(t.device)), a, atol=1e-5, rtol=1e-5)
        check(lambda t: torch.linalg.solve(t, rhs[..., 0].to(t.device)), a, atol=1e-5, rtol=1e-5)  # vectors
        check(lambda t: torch.linalg.solve(t, rhs.mT.to(t.device), left=False), a, atol=1e-5, rtol=1e-5)
        check(torch.linalg.det, a, atol=1e-4, rtol=1e-5)
        check(torch.linalg.slogdet, torch.randn(3, 4, 4), atol=1e-5, rtol=1e-5)
        check(torch.linalg.det, torch.randn(5, 5, dtype=torch.float64), atol=1e-10, rtol=1e-10)


def test_gradients():
    with no_fallback():
        for fn in (
            lambda t: torch.linalg.det(t).sum(),
            lambda t: torch.linalg.slogdet(t).logabsdet.sum(),
            lambda t: torch.linalg.inv(t).sum(),
            lambda t: torch.linalg.solve(t, torch.ones(4, 2, device=t.device)).sum(),
        ):
            check(fn, well_conditioned(4, 4).requires_grad_(), grad=True, atol=1e-4, rtol=1e-4)


def test_singular_matrices_report_like_the_cpu():
    sing = torch.tensor([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [1.0, 0.0, 1.0]])
    with no_fallback():
        lu, piv, info = torch.linalg.lu_factor_ex(sing.to("tpu"))
        assert info.item() == torch.linalg.lu_factor_ex(sing).info.item() != 0
        torch.testing.assert_close(torch.linalg.det(sing.to("tpu")).cpu(), torch.linalg.det(sing), atol=1e-6, rtol=0)
        assert torch.linalg.inv_ex(sing.to("tpu")).info.item() != 0
    with pytest.raises(torch.linalg.LinAlgError, match="could not be completed"):
        torch.linalg.inv(sing.to("tpu"))


def test_errors_match_the_cpu():
    with pytest.raises(RuntimeError, match="square matrices"):
        torch.linalg.inv(torch.randn(3, 4, device="tpu"))
    with pytest.raises(NotImplementedError):
        torch.linalg.lu_factor(torch.randn(3, 3, device="tpu", dtype=torch.float16))
    with pytest.raises(RuntimeError, match="without pivoting"):
        torch.linalg.lu_factor(torch.randn(3, 3, device="tpu"), pivot=False)


def test_empty_matrices():
    with no_fallback():
        for shape in [(0, 0), (2, 0, 0), (0, 3, 3)]:
            a = torch.randn(*shape)
            check(torch.linalg.inv, a)
            check(torch.linalg.det, a)
            check(torch.linalg.lu_factor_ex, a)
            check(lambda t: torch.linalg.solve(t, torch.ones(*shape[:-1], 2).to(t.device)), a)


def test_lu_and_unpack():
    with no_fallback():
        for shape in [(4, 4), (5, 3), (3, 5), (2, 4, 4)]:
            check(torch.linalg.lu, torch.randn(*shape), atol=1e-5, rtol=1e-5)
        lu, piv = torch.linalg.lu_factor(torch.randn(2, 4, 4))
        for data, pivots in [(True, True), (False, True), (True, False)]:
            got = torch.lu_unpack(lu.to("tpu"), piv.to("tpu"), unpack_data=data, unpack_pivots=pivots)
            for g, e in zip(got, torch.lu_unpack(lu, piv, unpack_data=data, unpack_pivots=pivots)):
                torch.testing.assert_close(g.cpu(), e)


def test_det_gradient_of_a_transposed_layout():
    # PyTorch factors A^T for a contiguous real A and A itself otherwise, and the backward
    # solves with whichever LU the forward returned: the device must make the same choice.
    a = torch.randn(3, 4, 4)
    with no_fallback():
        for f in (torch.linalg.det, lambda t: torch.linalg.slogdet(t)[1]):
            check(lambda t: f(t.mT.contiguous().mT), a.clone().requires_grad_(), grad=True, atol=1e-4, rtol=1e-4)
            check(f, a.clone().requires_grad_(), grad=True, atol=1e-4, rtol=1e-4)


def test_det_gradient_of_a_transposed_layout_under_compile():
    # The graph driver learns each value's layout from the traced graph's metadata.
    a = torch.randn(3, 4, 4, dtype=torch.float64)

    def f(t):
        return torch.linalg.det(t.mT).sum() + torch.linalg.slogdet(t.mT)[1].sum() + torch.linalg.det(t).sum()

    expected = a.clone().requires_grad_()
    f(expected).backward()
    got = a.to("tpu").requires_grad_()
    with no_fallback():
        torch.compile(f, backend="tpu", fullgraph=True)(got).backward()
    torch.testing.assert_close(got.grad.cpu(), expected.grad)


@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128])
def test_complex(dtype):
    # Pivots by |re| + |im| as LAPACK's izamax does, so LU and pivots equal the CPU's.
    a = torch.complex(torch.randn(2, 4, 4), torch.randn(2, 4, 4)).to(dtype)
    rhs = torch.complex(torch.randn(2, 4, 3), torch.randn(2, 4, 3)).to(dtype)
    tol = dict(atol=1e-4, rtol=1e-4)
    with no_fallback():
        check(lambda t: torch.linalg.lu_factor_ex(t), a, **tol)
        check(
            lambda t: (torch.linalg.inv(t), torch.linalg.det(t), torch.linalg.slogdet(t), torch.linalg.lu(t)), a, **tol
        )
        check(lambda t, r: (torch.linalg.solve(t, r), torch.linalg.solve(t, r[..., 0])), a, rhs, **tol)
        check(lambda t, r: torch.linalg.solve(t, r.mT, left=False), a, rhs, **tol)
        for left in (True, False):
            for adjoint in (True, False):
                check(
                    lambda t, r: torch.linalg.lu_solve(
                        *torch.linalg.lu_factor(t), r if left else r.mT, left=left, adjoint=adjoint
                    ),
                    a,
                    rhs,
                    **tol,
                )
        check(lambda t: torch.linalg.det(t).abs(), a.clone().requires_grad_(), grad=True, **tol)
