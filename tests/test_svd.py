"""SVD (one-sided Jacobi) against CPU PyTorch: tall, wide, square, batched, float64, complex,
rank-deficient and empty matrices, full and reduced; singular vectors checked up to their
sign or phase (which is not unique), plus orthonormality and reconstruction; what is built
on it (svdvals, pinv, matrix_rank, nuclear and spectral norms, cond, polar) and gradients."""

import pytest
import torch
from helpers import check, no_fallback


def aligned(u, uc, vh, vhc):
    """Flips each singular pair of the device result to the CPU's signs."""
    k = min(u.shape[-1], vh.shape[-2])
    sign = torch.sign((u[..., :k] * uc[..., :k]).sum(-2))
    sign[sign == 0] = 1
    u = u.clone()
    u[..., :k] *= sign.unsqueeze(-2)
    vh = vh.clone()
    vh[..., :k, :] *= sign.unsqueeze(-1)
    return u, vh


def eye_error(q, rows=True):
    g = q @ q.mT if rows else q.mT @ q
    return (g - torch.eye(g.shape[-1], dtype=q.dtype)).abs().max().item()


@pytest.mark.parametrize("full", [False, True])
@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (4, 4), (2, 6, 4), (2, 3, 1, 7), (8, 1), (9, 9)])
def test_svd_matches_lapack(shape, full):
    a = torch.randn(*shape)
    with no_fallback():
        u, s, vh = (t.cpu() for t in torch.linalg.svd(a.to("tpu"), full_matrices=full))
    uc, sc, vhc = torch.linalg.svd(a, full_matrices=full)
    assert (u.shape, s.shape, vh.shape) == (uc.shape, sc.shape, vhc.shape)
    torch.testing.assert_close(s, sc, atol=1e-5, rtol=1e-5)
    assert eye_error(u, rows=False) < 1e-5 and eye_error(vh) < 1e-5
    k = s.shape[-1]
    rebuilt = u[..., :k] @ torch.diag_embed(s) @ vh[..., :k, :]
    torch.testing.assert_close(rebuilt, a, atol=1e-5, rtol=1e-5)
    # The first k singular pairs equal the CPU's up to sign (values are distinct here).
    u, vh = aligned(u, uc, vh, vhc)
    torch.testing.assert_close(u[..., :k], uc[..., :k], atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(vh[..., :k, :], vhc[..., :k, :], atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128])
@pytest.mark.parametrize("full", [False, True])
@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (2, 4, 4), (1, 3)])
def test_complex_svd_matches_lapack(shape, full, dtype):
    a = torch.randn(*shape, dtype=dtype)
    tol = 1e-5 if dtype == torch.complex64 else 1e-12
    with no_fallback():
        u, s, vh = (t.cpu() for t in torch.linalg.svd(a.to("tpu"), full_matrices=full))
        check(torch.linalg.svdvals, a, atol=tol, rtol=tol)
        check(torch.linalg.pinv, a, atol=tol * 10, rtol=tol * 10)
    uc, sc, vhc = torch.linalg.svd(a, full_matrices=full)
    assert (u.shape, s.shape, vh.shape, s.dtype) == (uc.shape, sc.shape, vhc.shape, sc.dtype)
    torch.testing.assert_close(s, sc, atol=tol, rtol=tol)
    k = s.shape[-1]
    eye = torch.eye(k, dtype=dtype).expand(*shape[:-2], k, k)
    torch.testing.assert_close(u[..., :k].mH @ u[..., :k], eye, atol=tol, rtol=tol)
    torch.testing.assert_close(
        u[..., :k] @ torch.diag_embed(s.to(dtype)) @ vh[..., :k, :], a, atol=tol * 10, rtol=tol * 10
    )
    # Each singular pair equals the CPU's up to one unit phase (values are distinct here).
    phase = (uc[..., :k].conj() * u[..., :k]).sum(-2)
    phase = phase / phase.abs()
    torch.testing.assert_close(u[..., :k] * phase.conj().unsqueeze(-2), uc[..., :k], atol=tol * 10, rtol=tol * 10)
    torch.testing.assert_close(vh[..., :k, :] * phase.unsqueeze(-1), vhc[..., :k, :], atol=tol * 10, rtol=tol * 10)


def test_svd_float64():
    a = torch.randn(3, 7, 5, dtype=torch.float64)
    with no_fallback():
        u, s, vh = (t.cpu() for t in torch.linalg.svd(a.to("tpu"), full_matrices=False))
    torch.testing.assert_close(s, torch.linalg.svdvals(a), atol=1e-12, rtol=1e-12)
    torch.testing.assert_close(u @ torch.diag_embed(s) @ vh, a, atol=1e-12, rtol=1e-12)


@pytest.mark.parametrize("full", [False, True])
def test_rank_deficient_and_zero_matrices_keep_orthonormal_vectors(full):
    for a in (torch.randn(7, 2) @ torch.randn(2, 5), torch.randn(3, 6) @ torch.randn(6, 4).mul(0), torch.zeros(4, 6)):
        with no_fallback():
            u, s, vh = (t.cpu() for t in torch.linalg.svd(a.to("tpu"), full_matrices=full))
        torch.testing.assert_close(s, torch.linalg.svdvals(a), atol=1e-5, rtol=1e-5)
        assert eye_error(u, rows=False) < 1e-5 and eye_error(vh) < 1e-5
        k = s.shape[-1]
        torch.testing.assert_close(u[..., :k] @ torch.diag_embed(s) @ vh[..., :k, :], a, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("shape", [(0, 3), (3, 0), (2, 0, 0)])
@pytest.mark.parametrize("full", [False, True])
def test_svd_of_empty_matrices(shape, full):
    with no_fallback():
        check(lambda t: torch.linalg.svd(t, full_matrices=full), torch.randn(*shape))
        check(torch.linalg.svdvals, torch.randn(*shape))


def test_what_is_built_on_svd():
    a = torch.randn(2, 6, 4)
    low_rank = torch.randn(6, 2) @ torch.randn(2, 5)
    with no_fallback():
        check(torch.linalg.svdvals, a, atol=1e-5, rtol=1e-5)
        check(torch.linalg.pinv, a, atol=1e-5, rtol=1e-5)
        check(torch.linalg.pinv, low_rank, atol=1e-5, rtol=1e-5)
        check(torch.linalg.matrix_rank, low_rank)
        check(lambda t: torch.linalg.matrix_norm(t, ord="nuc"), a, atol=1e-5, rtol=1e-5)
        check(lambda t: torch.linalg.matrix_norm(t, ord=2), a, atol=1e-5, rtol=1e-5)
        check(lambda t: torch.linalg.matrix_norm(t, ord=-2), a, atol=1e-5, rtol=1e-5)
        check(torch.linalg.cond, torch.randn(3, 3) + 3 * torch.eye(3), atol=1e-4, rtol=1e-4)


def test_svd_gradients():
    def loss(t):
        u, s, vh = torch.linalg.svd(t, full_matrices=False)
        # Sign-invariant in each singular pair, as gradients through U and V must be.
        return (u.abs() * 1.5).sum() + (s**2).sum() + (vh**2 * torch.arange(vh.shape[-1], device=t.device)).sum()

    with no_fallback():
        for shape in [(5, 3), (3, 5), (2, 4, 4)]:
            a = torch.randn(*shape, dtype=torch.float64)
            check(loss, a.requires_grad_(), grad=True, atol=1e-9, rtol=1e-9)
        check(lambda t: torch.linalg.pinv(t).sum(), torch.randn(4, 3).requires_grad_(), grad=True, atol=1e-4, rtol=1e-4)


def test_svd_errors_match_cpu():
    with pytest.raises(RuntimeError, match="at least 2 dimensions"):
        torch.linalg.svd(torch.randn(3, device="tpu"))
    with pytest.raises(RuntimeError, match="driver"):
        torch.linalg.svd(torch.randn(3, 3, device="tpu"), driver="gesvd")


# Empty systems leave out gels: LAPACK's gels zeroes B on an empty A, so CPU residuals there
# are not a reference.
LSTSQ_CASES = [
    (driver, shape)
    for driver in ["gels", "gelsy", "gelsd", "gelss"]
    for shape in [(5, 3), (3, 3), (2, 3), (3, 5, 3), (0, 3), (3, 0)]
    if not (driver == "gels" and 0 in shape)
]


@pytest.mark.parametrize("driver,shape", LSTSQ_CASES)
def test_lstsq_matches_each_cpu_driver(driver, shape):
    a = torch.randn(*shape)
    with no_fallback():
        check(
            lambda x, y: torch.linalg.lstsq(x, y, driver=driver), a, torch.randn(*shape[:-1], 2), atol=1e-4, rtol=1e-4
        )
        if len(shape) == 2:  # a vector right-hand side
            check(lambda x, y: torch.linalg.lstsq(x, y, driver=driver), a, torch.randn(shape[0]), atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("driver", ["gels", "gelsy", "gelsd", "gelss"])
@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128])
def test_lstsq_of_complex_values(driver, dtype):
    # Residuals and singular values come back real, as on the CPU.
    tol = 1e-4 if dtype == torch.complex64 else 1e-10
    with no_fallback():
        for shape in [(5, 3), (2, 4, 4), (2, 3)]:
            a, b = torch.randn(*shape, dtype=dtype), torch.randn(*shape[:-1], 2, dtype=dtype)
            check(lambda x, y: torch.linalg.lstsq(x, y, driver=driver), a, b, atol=tol, rtol=tol)
        if driver == "gelsd":
            low = (torch.randn(6, 2, dtype=dtype) @ torch.randn(2, 4, dtype=dtype)).contiguous()
            check(lambda x, y: torch.linalg.lstsq(x, y, driver=driver), low, torch.randn(6, 2, dtype=dtype), atol=tol)
            a = torch.randn(5, 3, dtype=torch.complex128, requires_grad=True)
            b = torch.randn(5, 2, dtype=torch.complex128)
            check(lambda x, y: torch.linalg.lstsq(x, y).solution.abs().sum(), a, b, grad=True)


def test_lstsq_rank_deficient_rcond_and_gradients():
    low = torch.randn(6, 2) @ torch.randn(2, 4)
    with no_fallback():
        check(lambda x, y: torch.linalg.lstsq(x, y, driver="gelsd"), low, torch.randn(6, 2), atol=1e-4, rtol=1e-4)
        check(lambda x, y: torch.linalg.lstsq(x, y, rcond=0.5, driver="gelss"), torch.randn(5, 3), torch.randn(5, 1))
        a = torch.randn(5, 3, dtype=torch.float64, requires_grad=True)
        check(
            lambda x, y: torch.linalg.lstsq(x, y).solution.sum(), a, torch.randn(5, 2, dtype=torch.float64), grad=True
        )
    d = torch.randn(5, 3, device="tpu")
    with pytest.raises(RuntimeError, match="should match other.size"):
        torch.linalg.lstsq(d, torch.randn(4, 2, device="tpu"))
    with pytest.raises(RuntimeError, match="parameter `driver` should be one of"):
        torch.linalg.lstsq(d, torch.randn(5, 2, device="tpu"), driver="foo")
    with pytest.raises(RuntimeError, match="same dtype"):
        torch.linalg.lstsq(d, torch.randn(5, 2, dtype=torch.float64, device="tpu"))
    with pytest.raises(RuntimeError, match="types other than float and double"):
        torch.linalg.lstsq(d.half(), torch.randn(5, 2, device="tpu").half())


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.complex64, torch.complex128])
@pytest.mark.parametrize("shape", [(5, 3), (4, 4), (2, 6, 2), (3, 1), (3, 0)])
def test_polar_matches_cpu(shape, dtype):
    # The polar factors are unique for a full-rank A, whatever the signs of the SVD.
    a = torch.randn(*shape, dtype=dtype)
    tol = 1e-5 if dtype in (torch.float32, torch.complex64) else 1e-12
    with no_fallback():
        check(torch.linalg.polar, a, atol=tol, rtol=tol)
        u, h = torch.linalg.polar(a.to("tpu"))
    torch.testing.assert_close((u @ h).cpu(), a, atol=tol * 10, rtol=tol * 10)


def test_polar_gradient_errors_and_zero():
    with no_fallback():
        # The backward runs eigh.
        check(
            lambda a: torch.linalg.polar(a),
            torch.randn(4, 3, dtype=torch.float64, requires_grad=True),
            grad=True,
            atol=1e-10,
            rtol=1e-10,
        )
        check(torch.linalg.polar, torch.zeros(3, 2))
    for bad, kind in (
        (torch.randn(3, 4), RuntimeError),
        (torch.ones(2, 2, dtype=torch.int32), NotImplementedError),
        (torch.ones(3), RuntimeError),
    ):
        with pytest.raises(kind) as cpu:
            torch.linalg.polar(bad)
        with no_fallback(), pytest.raises(kind, match=str(cpu.value).split("(")[0]):
            torch.linalg.polar(bad.to("tpu"))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.complex64, torch.complex128])
def test_matrix_sqrth_matches_cpu(dtype):
    b = torch.randn(2, 4, 4, dtype=dtype)
    spd = b @ b.mH + torch.eye(4, dtype=dtype)
    tol = 1e-5 if dtype in (torch.float32, torch.complex64) else 1e-12
    with no_fallback():
        check(torch.linalg.matrix_sqrth, spd, atol=tol, rtol=tol)
        # Only the lower triangle is read; negative eigenvalues count as 0.
        check(torch.linalg.matrix_sqrth, torch.tensor([[4.0, 100.0], [1.0, 9.0]], dtype=dtype), atol=tol, rtol=tol)
        check(torch.linalg.matrix_sqrth, -torch.eye(3, dtype=dtype))
        check(torch.linalg.matrix_sqrth, torch.zeros(0, 0, dtype=dtype))
        check(
            torch.linalg.matrix_sqrth,
            spd[0].to(torch.float64 if dtype.is_floating_point else torch.complex128).requires_grad_(),
            grad=True,
            atol=1e-10,
            rtol=1e-10,
        )
    with no_fallback(), pytest.raises(RuntimeError, match="A must be batches of square matrices, but they are 2 by 3"):
        torch.linalg.matrix_sqrth(torch.randn(2, 3, device="tpu"))
