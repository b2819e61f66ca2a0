"""ComplexHalf (`torch.chalf`) on the device against CPU PyTorch: the device computes it as
complex64 and rounds each op's result to half-precision parts, so values match CPU's bit
for bit. Copies in and out, views that reinterpret the bytes, the ops CPU PyTorch
implements for ComplexHalf, and type promotion."""

import pytest
import torch
from helpers import no_fallback

pytestmark = pytest.mark.filterwarnings("ignore:ComplexHalf support is experimental")

torch.manual_seed(0)
PARTS = torch.randn(4, 6, 2) * 3
CHALF = torch.view_as_complex(PARTS).to(torch.chalf)
OTHER = torch.view_as_complex(torch.randn(4, 6, 2)).to(torch.chalf)
# Half-precision extremes: the largest finite, the smallest subnormal, inf and NaN.
SPECIAL = torch.tensor([65504 - 65504j, 2**-24 + 0j, float("inf") + 1j, complex(float("nan"), -0.0)], dtype=torch.chalf)


def parts(t: torch.Tensor) -> torch.Tensor:
    """The (real, imaginary) pairs of a complex tensor as real numbers on the CPU."""
    t = t.cpu().resolve_conj()
    return torch.view_as_real(t) if t.is_complex() else t


def same(fn, *args):
    """`fn` on CPU and on the device: equal dtypes and bit-equal values (NaN equal NaN)."""
    expected = fn(*args)
    with no_fallback():
        actual = fn(*[a.to("tpu") if isinstance(a, torch.Tensor) else a for a in args])
    expected = expected if isinstance(expected, tuple) else (expected,)
    actual = actual if isinstance(actual, tuple) else (actual,)
    for a, e in zip(actual, expected, strict=True):
        assert a.device.type == "tpu"
        assert a.dtype == e.dtype, f"{a.dtype} != {e.dtype}"
        torch.testing.assert_close(parts(a), parts(e), atol=0, rtol=0, equal_nan=True)


def test_copies_round_trip_exactly():
    for t in (CHALF, SPECIAL, CHALF[:, 1::2], CHALF.t(), CHALF[0, 0]):
        d = t.to("tpu")
        assert d.dtype == torch.chalf
        torch.testing.assert_close(parts(d), parts(t), atol=0, rtol=0, equal_nan=True)
    dst = torch.zeros(6, 4, dtype=torch.chalf, device="tpu")
    dst.t().copy_(CHALF)
    torch.testing.assert_close(parts(dst.t()), parts(CHALF), atol=0, rtol=0)
    host = torch.empty(4, 6, dtype=torch.chalf)
    host.copy_(CHALF.to("tpu"))
    torch.testing.assert_close(parts(host), parts(CHALF), atol=0, rtol=0)


def test_views_reinterpret_the_bytes():
    same(torch.view_as_real, CHALF)
    same(lambda c: (c.real.clone(), c.imag.clone()), CHALF)
    same(lambda c: c.view(torch.float32), CHALF)
    same(lambda c: c.view(torch.int16), SPECIAL)
    same(lambda x: torch.view_as_complex(x.half()), PARTS)
    same(lambda f: f.view(torch.chalf), torch.randn(4, 6))

    def write_parts(c):
        c = c.clone()
        torch.view_as_real(c)[..., 1].mul_(2)
        c.imag.add_(1)
        return c

    same(write_parts, CHALF)


def test_casts_round_to_half_parts():
    wide = torch.view_as_complex(torch.randn(4, 6, 2) * 100).to(torch.complex128)
    same(lambda z: z.to(torch.chalf), wide)
    same(lambda z: z.to(torch.complex64).to(torch.chalf), wide)
    same(lambda c: (c.to(torch.complex64), c.to(torch.complex128)), CHALF)
    same(lambda x: x.to(torch.chalf), torch.randn(5) * 1e5)  # overflows to inf, as on CPU
    same(lambda c: torch.zeros(4, 6, dtype=torch.chalf, device=c.device).copy_(c.to(torch.complex64) * 1.0001), CHALF)


def test_arithmetic_matches_cpu_bit_for_bit():
    same(lambda a, b: (a + b, a - b, a * b, -a, torch.add(a, b, alpha=2)), CHALF, OTHER)
    # A chain: CPU rounds each op's result to half parts, and so does the device, also when
    # the ops run as one fused program.
    same(lambda a, b: (a * b + a) * b - b, CHALF, OTHER)
    torch.tpu.set_eager_mode("DEFER_NEVER")
    try:
        same(lambda a, b: (a * b + a) * b - b, CHALF, OTHER)
    finally:
        torch.tpu.set_eager_mode("DEFER_AND_FUSE")
    same(lambda a: (a + 0.1, a * (1 + 2j), a - 3j), CHALF)
    same(torch.abs, CHALF)
    same(lambda a: (a == a, a != a.conj(), a.isnan(), a.isfinite()), SPECIAL)


def test_promotion():
    same(lambda a, h: (a + h, a * h), CHALF, torch.randn(4, 6).half())
    same(lambda a, f: a * f, CHALF, torch.randn(4, 6))
    same(lambda a, z: a + z, CHALF, OTHER.to(torch.complex64))
    same(lambda a, i: a * i, CHALF, torch.arange(6))
    assert torch.promote_types(torch.chalf, torch.bfloat16) == torch.complex64
    same(lambda a, b: a + b, CHALF, torch.randn(4, 6).bfloat16())


def test_movement_and_indexing():
    idx = torch.tensor([3, 0, 1])
    same(lambda a: (torch.cat([a, a.conj()]), torch.stack([a, a], 1), a.t().contiguous()), CHALF)
    same(lambda a, i: (a[i], a.index_select(1, i), a[:, i]), CHALF, idx)
    same(lambda a: (a[a.real > 0], a.masked_fill(a.imag > 0, 1 + 2j)), CHALF)
    same(lambda a, b: torch.where(a.real > 0, a, b), CHALF, OTHER)
    same(lambda a: (a.tril(), a.triu(1), a.roll(2, 1), a.repeat(2, 1)), CHALF)
    same(lambda a: a.nonzero(), torch.tensor([0, 1j, 0, 2], dtype=torch.chalf))


def test_factories_and_fill():
    same(lambda a: (a.clone().fill_(1.1 + 2.3j), a.clone().zero_(), torch.ones_like(a), torch.zeros_like(a)), CHALF)
    same(lambda a: torch.full((3,), 0.1 - 7j, dtype=torch.chalf, device=a.device), CHALF)
    t = torch.empty(2, 3, dtype=torch.chalf, device="tpu")
    assert t.dtype == torch.chalf and t.shape == (2, 3)
    r = torch.randn(1000, dtype=torch.chalf, device="tpu")
    assert r.dtype == torch.chalf
    assert 0.8 < torch.view_as_real(r).float().std().item() * 2**0.5 < 1.2


def test_complex_and_polar_of_half_parts():
    re, im = torch.randn(8).half(), torch.randn(8).half()
    same(torch.complex, re, im)
    same(torch.polar, re.abs(), im)
