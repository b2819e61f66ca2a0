"""erfc and its relatives, the modified Bessel functions, the Bessel functions J and Y, the
Airy function, the incomplete gamma functions and frexp against CPU PyTorch: both sides of
every range boundary, zero, negative, large, infinite and NaN arguments (subnormals for
frexp), in float32 and float64, with no CPU fallback."""

import pytest
import torch
from helpers import check, no_fallback

S = torch.special

EDGES = [0.0, -0.0, 1e-30, 1e-6, -1e-6, 0.5, -0.5, 1.0, -1.0, 2.0, 2.09, -2.09, 5.0, -5.0, 7.9, 8.0, 8.1]
FAR = [50.0, 89.0, 100.0, 200.0, -50.0, float("inf"), float("-inf"), float("nan")]
POINTS = torch.tensor(torch.linspace(-30, 30, 121).tolist() + EDGES + FAR)

# (function, float32 tolerances, float64 tolerances)
OPS = {
    "erfc": (torch.erfc, 1e-6, 1e-5, 1e-15, 1e-12),
    "erfcx": (S.erfcx, 1e-6, 1e-5, 1e-15, 1e-12),
    "log_ndtr": (S.log_ndtr, 1e-6, 1e-5, 1e-15, 1e-12),
    "i0": (torch.i0, 1e-6, 1e-5, 1e-15, 1e-12),
    "i0e": (S.i0e, 1e-6, 1e-5, 1e-15, 1e-12),
    "i1": (S.i1, 1e-6, 1e-5, 1e-15, 1e-12),
    "i1e": (S.i1e, 1e-6, 1e-5, 1e-15, 1e-12),
    "modified_bessel_i0": (S.modified_bessel_i0, 1e-6, 1e-5, 1e-15, 1e-12),
    "modified_bessel_i1": (S.modified_bessel_i1, 1e-6, 1e-5, 1e-15, 1e-12),
    "modified_bessel_k0": (S.modified_bessel_k0, 1e-6, 1e-5, 1e-15, 1e-12),
    "modified_bessel_k1": (S.modified_bessel_k1, 1e-6, 1e-5, 1e-15, 1e-12),
    "scaled_modified_bessel_k0": (S.scaled_modified_bessel_k0, 1e-6, 1e-5, 1e-15, 1e-12),
    "scaled_modified_bessel_k1": (S.scaled_modified_bessel_k1, 1e-6, 1e-5, 1e-15, 1e-12),
    "bessel_j0": (S.bessel_j0, 1e-6, 1e-5, 1e-12, 1e-10),
    "bessel_j1": (S.bessel_j1, 1e-6, 1e-5, 1e-12, 1e-10),
    "bessel_y0": (S.bessel_y0, 1e-6, 1e-5, 1e-12, 1e-10),
    "bessel_y1": (S.bessel_y1, 1e-6, 1e-5, 1e-12, 1e-10),
    "airy_ai": (S.airy_ai, 1e-5, 1e-5, 1e-12, 1e-10),
}


@pytest.mark.parametrize("name", OPS)
def test_unary(name):
    fn, atol, rtol, atol64, rtol64 = OPS[name]
    with no_fallback():
        check(fn, POINTS, atol=atol, rtol=rtol)
        check(fn, POINTS.double(), atol=atol64, rtol=rtol64)
        check(fn, torch.arange(-3, 4))


def test_out_and_in_place():
    x = torch.linspace(-4, 4, 9)
    with no_fallback():
        check(lambda t: torch.erfc(t, out=torch.empty_like(t)), x)
        check(lambda t: torch.i0(t, out=torch.empty_like(t)), x)
        check(lambda t: S.bessel_j0(t, out=torch.empty_like(t)), x)
        check(lambda t: S.scaled_modified_bessel_k1(t.abs(), out=torch.empty_like(t)), x)
        check(lambda t: t.clone().erfc_(), x)
        check(lambda t: t.clone().i0_(), x)


def test_half_precision():
    x = torch.linspace(-6, 6, 25)
    with no_fallback():
        for dtype in (torch.bfloat16, torch.float16):
            check(torch.erfc, x.to(dtype), atol=1e-2, rtol=1e-2)
            check(torch.i0, x.to(dtype), atol=1e-2, rtol=1e-2)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16])
def test_frexp(dtype):
    x = torch.tensor([0.0, -0.0, 1.0, -3.5, 0.75, 123.456, 1e30, 1e-40, -1e-45, 1.2e-38])
    x = torch.cat([x, torch.tensor([float("inf"), float("-inf"), float("nan")])]).to(dtype)
    if dtype == torch.float64:
        x = torch.cat([x, torch.tensor([5e-324, 2.2e-308, -1e-310], dtype=dtype)])
    with no_fallback():
        check(torch.frexp, x, atol=0, rtol=0)
        check(
            lambda t: torch.frexp(
                t, out=(torch.empty_like(t), torch.empty(t.shape, dtype=torch.int32, device=t.device))
            ),
            x,
        )


GAMMA_POINTS = [0.0, 1e-3, 0.3, 0.5, 0.9, 1.0, 1.05, 1.5, 3.0, 10.0, 19.0, 25.0, 60.0, 199.0, 250.0, 1e4]
GAMMA_EDGES = [float("inf"), -1.0, float("nan")]


@pytest.mark.parametrize("fn", [torch.igamma, torch.igammac])
def test_igamma(fn):
    v = torch.tensor(GAMMA_POINTS + GAMMA_EDGES)
    a, x = (t.flatten() for t in torch.meshgrid(v, v, indexing="ij"))
    # Large a near x (the asymptotic expansion) and a broad random sweep.
    near = torch.tensor([30.0, 150.0, 300.0, 5000.0])
    a = torch.cat([a, near, near, torch.rand(200) * 50])
    x = torch.cat([x, near * 0.9, near * 1.02, torch.rand(200) * 50])
    with no_fallback():
        check(fn, a, x, atol=1e-6, rtol=1e-5)
        check(fn, a.double(), x.double(), atol=1e-13, rtol=1e-12)
        check(lambda t: fn(t, torch.tensor(2.5, device=t.device)), torch.linspace(0.1, 6, 12))
        check(lambda s, t: fn(s, t, out=torch.empty_like(s)), a[:50], x[:50], atol=1e-6, rtol=1e-5)
        method = fn.__name__ + "_"
        check(lambda s, t: getattr(s.clone(), method)(t), a[:50], x[:50], atol=1e-6, rtol=1e-5)
