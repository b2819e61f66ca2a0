"""QR and symmetric eigendecomposition against CPU PyTorch: every mode and shape, batched,
float64, gradients; eigenvectors checked up to their sign (which is not unique)."""

import pytest
import torch
from helpers import check, no_fallback


@pytest.mark.parametrize("mode", ["reduced", "complete", "r"])
@pytest.mark.parametrize("shape", [(4, 4), (6, 3), (3, 6), (2, 5, 4)])
def test_qr_matches_lapack(mode, shape):
    a = torch.randn(*shape)
    with no_fallback():
        check(lambda t: torch.linalg.qr(t, mode=mode), a, atol=1e-5, rtol=1e-5)


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
