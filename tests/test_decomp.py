"""QR and symmetric (Hermitian) eigendecomposition against CPU PyTorch: every mode and shape,
batched, float64, complex, gradients; eigenvectors checked up to their sign or phase (which is
not unique)."""

import pytest
import torch
from helpers import check, no_fallback


@pytest.mark.parametrize("mode", ["reduced", "complete", "r"])
@pytest.mark.parametrize("shape", [(4, 4), (6, 3), (3, 6), (2, 5, 4)])
def test_qr_matches_lapack(mode, shape):
    a = torch.randn(*shape)
    with no_fallback():
        check(lambda t: torch.linalg.qr(t, mode=mode), a, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128])
@pytest.mark.parametrize("mode", ["reduced", "complete"])
@pytest.mark.parametrize("shape", [(4, 4), (6, 3), (2, 3, 5)])
def test_complex_qr_matches_lapack(shape, mode, dtype):
    # LAPACK's complex Householder QR leaves R's diagonal real; so does the device's.
    a = torch.randn(*shape, dtype=dtype)
    tol = 1e-5 if dtype == torch.complex64 else 1e-12
    with no_fallback():
        check(lambda t: torch.linalg.qr(t, mode=mode), a, atol=tol, rtol=tol)


def test_qr_float64_and_gradients():
    a = torch.randn(5, 3, dtype=torch.float64)
    with no_fallback():
        check(lambda t: torch.linalg.qr(t), a, atol=1e-10, rtol=1e-10)
        check(lambda t: sum(x.sum() for x in torch.linalg.qr(t)), torch.randn(5, 3).requires_grad_(), grad=True)


def _symmetric(*batch, n=5, dtype=torch.float32):
    s = torch.randn(*batch, n, n, dtype=dtype)
    return s + s.mT


@pytest.mark.parametrize("uplo", ["L", "U"])
def test_eigh(uplo):
    a = _symmetric(3)
    # Only the UPLO triangle may be read: poison the other one.
    poisoned = a.triu(1) * 7 + a.tril() if uplo == "L" else a.tril(-1) * 7 + a.triu()
    with no_fallback():
        w, v = torch.linalg.eigh(poisoned.to("tpu"), UPLO=uplo)
        check(lambda t: torch.linalg.eigvalsh(t, UPLO=uplo), poisoned, atol=1e-5, rtol=1e-5)
    w_cpu, v_cpu = torch.linalg.eigh(poisoned, UPLO=uplo)
    torch.testing.assert_close(w.cpu(), w_cpu, atol=1e-5, rtol=1e-5)
    v = v.cpu()
    torch.testing.assert_close(a @ v, v * w.cpu().unsqueeze(-2), atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(v.mT @ v, torch.eye(5).expand(3, 5, 5), atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(v.abs(), v_cpu.abs(), atol=1e-4, rtol=1e-4)


def test_eigh_float64_and_eigenvalue_gradients():
    a = _symmetric(n=6, dtype=torch.float64)
    with no_fallback():
        check(lambda t: torch.linalg.eigvalsh(t), a, atol=1e-10, rtol=1e-10)
        check(lambda t: torch.linalg.eigvalsh(t).square().sum(), _symmetric(n=4).requires_grad_(), grad=True, atol=1e-4)


@pytest.mark.parametrize("n", [4, 30])
def test_float64_eigenvectors_reach_working_precision(n):
    # XLA's Eigh alone rebuilt A only to ~1e-8 (4x4) and 3e-7 (30x30); polished, to LAPACK's.
    a = _symmetric(2, n=n, dtype=torch.float64)
    with no_fallback():
        w, v = (t.cpu() for t in torch.linalg.eigh(a.to("tpu")))
    w_cpu, v_cpu = torch.linalg.eigh(a)
    torch.testing.assert_close(w, w_cpu, atol=1e-12, rtol=1e-12)
    torch.testing.assert_close(v @ torch.diag_embed(w) @ v.mT, a, atol=1e-12, rtol=1e-12)
    torch.testing.assert_close(v.mT @ v, torch.eye(n, dtype=torch.float64).expand(2, n, n), atol=1e-13, rtol=0)
    torch.testing.assert_close(v.abs(), v_cpu.abs(), atol=1e-10, rtol=1e-10)


def test_float64_eigh_of_repeated_and_opposite_eigenvalues():
    q, _ = torch.linalg.qr(torch.randn(6, 6, dtype=torch.float64))
    a = q @ torch.diag(torch.tensor([-2.0, -2.0, 0.0, 0.0, 2.0, 2.0], dtype=torch.float64)) @ q.mT
    with no_fallback():
        w, v = (t.cpu() for t in torch.linalg.eigh(a.to("tpu")))
        check(torch.linalg.eigh, torch.zeros(3, 3, dtype=torch.float64))
    torch.testing.assert_close(w, torch.linalg.eigvalsh(a), atol=1e-13, rtol=0)
    torch.testing.assert_close(v @ torch.diag(w) @ v.mT, a, atol=1e-13, rtol=0)
    torch.testing.assert_close(v.mT @ v, torch.eye(6, dtype=torch.float64), atol=1e-13, rtol=0)


@pytest.mark.parametrize("uplo", ["L", "U"])
@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128])
def test_complex_eigh(dtype, uplo):
    s = torch.randn(3, 5, 5, dtype=dtype)
    a = s + s.mH
    # Only the UPLO triangle may be read, and only the real part of the diagonal.
    poison = torch.randn(3, 5, 5, dtype=dtype) * 7
    poisoned = a.tril() + poison.triu(1) if uplo == "L" else a.triu() + poison.tril(-1)
    poisoned = poisoned + 1j * torch.diag_embed(torch.randn(3, 5))
    tol = 1e-4 if dtype == torch.complex64 else 1e-10
    with no_fallback():
        w, v = (t.cpu() for t in torch.linalg.eigh(poisoned.to("tpu"), UPLO=uplo))
        check(lambda t: torch.linalg.eigvalsh(t, UPLO=uplo), poisoned, atol=tol, rtol=tol)
    w_cpu, v_cpu = torch.linalg.eigh(poisoned, UPLO=uplo)
    assert w.dtype == w_cpu.dtype
    torch.testing.assert_close(w, w_cpu, atol=tol, rtol=tol)
    torch.testing.assert_close(a @ v, v * w.to(dtype).unsqueeze(-2), atol=tol, rtol=tol)
    torch.testing.assert_close(v.mH @ v, torch.eye(5, dtype=dtype).expand(3, 5, 5), atol=tol, rtol=tol)
    # LAPACK's convention: each vector is real in the first row (L) or the last (U).
    row = 0 if uplo == "L" else -1
    assert v[..., row, :].imag.abs().max() < tol and v[..., row, :].real.min() >= 0
    torch.testing.assert_close(v, v_cpu * v_cpu[..., row : row + 1 or None, :].real.sign(), atol=tol, rtol=tol)


def test_errors_match_the_cpu():
    for fn in (torch.linalg.qr, torch.linalg.eigh):
        with pytest.raises(RuntimeError, match="at least 2 dimensions"):
            fn(torch.randn(3, device="tpu"))
        with pytest.raises(NotImplementedError):
            fn(torch.randn(3, 3, device="tpu", dtype=torch.float16))
    with pytest.raises(RuntimeError, match="unrecognized mode"):
        torch.linalg.qr(torch.randn(3, 3, device="tpu"), mode="full")
    with pytest.raises(RuntimeError, match="square matrices"):
        torch.linalg.eigh(torch.randn(3, 4, device="tpu"))
