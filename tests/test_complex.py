"""Complex tensors on the device against CPU PyTorch: storage and copies (views, conjugate
bits, casts), `complex`/`polar`, complex add/sub/mul, indexing (gathers, scatters, masks),
and the `torch.fft` family with every normalization, signal lengths that pad or trim, and
gradients through the transforms."""

import os
import subprocess
import sys

import pytest
import torch
from helpers import check, no_fallback

torch.manual_seed(0)
REAL = torch.randn(4, 6)
CPLX = torch.complex(torch.randn(4, 6), torch.randn(4, 6))
NORMS = (None, "forward", "ortho")


def run_python(code: str, **env) -> subprocess.CompletedProcess:
    e = {k: v for k, v in os.environ.items() if k != "TPURS_FALLBACK"} | env
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=e, timeout=300)


def test_storage_views_and_casts():
    with no_fallback():
        check(lambda c: c.clone(), CPLX)
        check(lambda c: c.t().contiguous(), CPLX)
        check(lambda c: c[:, 1::2], CPLX)
        check(torch.view_as_real, CPLX)
        check(lambda c: (c.real, c.imag), CPLX)
        check(lambda x: torch.view_as_complex(x.reshape(4, 3, 2)), REAL)
        check(lambda x: x.to(torch.complex64), REAL)
        check(lambda x: x.to(torch.complex128), REAL.double())
        check(lambda c: c.to(torch.complex128), CPLX)
        check(lambda c: torch.cat([c, c.conj()]), CPLX)


def test_conjugate_bit():
    with no_fallback():
        check(lambda c: c.conj(), CPLX)
        check(torch.conj_physical, CPLX)
        check(lambda c: c.conj() * c, CPLX)
        check(lambda c: c.conj().clone(), CPLX)
    # Copies in and out of a conjugate view keep its meaning.
    dst = torch.zeros(4, 6, dtype=torch.complex64, device="tpu").conj()
    dst.copy_(CPLX)
    torch.testing.assert_close(dst.cpu(), CPLX)
    torch.testing.assert_close(dst.resolve_conj().cpu(), CPLX)
    host = torch.zeros(4, 6, dtype=torch.complex64).conj()
    host.copy_(CPLX.to("tpu"))
    torch.testing.assert_close(host, CPLX)


def test_arithmetic_and_constructors():
    with no_fallback():
        # Complex Python numbers and 0-d CPU tensors, each part passed to the program.
        check(lambda c: (c * 1j, c + (1 + 2j), (1 - 1j) - c, c / (2 - 1j), c * torch.tensor(2j)), CPLX)
        check(lambda x: (x * 1j, torch.arange(3, device=x.device) * (0.5 + 1j)), REAL)
        check(lambda c: (c.clone().fill_(1 + 2j), torch.add(c, c, alpha=2 + 1j), c.masked_fill(c.real > 0, 3j)), CPLX)
        check(lambda c: c.to(torch.complex128) * (0.5 + 0.25j), CPLX)
        check(lambda c, d: (c + d, c - d, c * d, c + 2 * d, c * 3), CPLX, CPLX.flip(0))
        check(lambda c, x: c * x, CPLX, REAL)
        check(torch.complex, REAL, REAL.flip(1))
        check(torch.polar, REAL.abs(), REAL)
        check(lambda c: torch.nn.functional.pad(c, (1, 2)), CPLX)


@pytest.mark.parametrize("norm", NORMS)
def test_fft_one_dim(norm):
    with no_fallback():
        for fn in (torch.fft.fft, torch.fft.ifft):
            check(lambda t: fn(t, norm=norm), REAL, atol=1e-5, rtol=1e-4)
            check(lambda t: fn(t, norm=norm), CPLX, atol=1e-5, rtol=1e-4)
            check(lambda t: fn(t, n=9, dim=0, norm=norm), CPLX, atol=1e-5, rtol=1e-4)
        check(lambda t: torch.fft.rfft(t, norm=norm), REAL, atol=1e-5, rtol=1e-4)
        check(lambda t: torch.fft.rfft(t, n=5, norm=norm), REAL, atol=1e-5, rtol=1e-4)
        check(lambda t: torch.fft.ihfft(t, norm=norm), REAL, atol=1e-5, rtol=1e-4)
        check(lambda t: torch.fft.irfft(t, norm=norm), CPLX, atol=1e-5, rtol=1e-4)
        check(lambda t: torch.fft.irfft(t, n=7, norm=norm), CPLX, atol=1e-5, rtol=1e-4)
        check(lambda t: torch.fft.hfft(t, norm=norm), CPLX, atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("norm", NORMS)
def test_fft_many_dims(norm):
    vol = torch.randn(3, 4, 5, 6)
    with no_fallback():
        check(lambda t: torch.fft.fft2(t, norm=norm), CPLX, atol=1e-5, rtol=1e-4)
        check(lambda t: torch.fft.ifftn(t, norm=norm), vol, atol=1e-5, rtol=1e-4)
        check(lambda t: torch.fft.fftn(t, dim=(0, 2, 3), norm=norm), vol, atol=1e-4, rtol=1e-4)
        check(lambda t: torch.fft.rfftn(t, norm=norm), vol, atol=1e-4, rtol=1e-4)
        check(lambda t: torch.fft.rfft2(t, s=(3, 8), norm=norm), vol, atol=1e-4, rtol=1e-4)
        check(lambda t: torch.fft.irfftn(torch.fft.rfftn(t), s=t.shape[-3:], norm=norm), vol, atol=1e-4, rtol=1e-4)
        check(lambda t: torch.fft.irfft2(t, norm=norm), CPLX, atol=1e-4, rtol=1e-4)
        check(lambda t: torch.fft.hfft2(t, norm=norm), CPLX, atol=1e-4, rtol=1e-4)


def test_fft_double_and_stft():
    with no_fallback():
        check(torch.fft.fft, REAL.double())
        check(torch.fft.rfft, REAL.double())
        window = torch.hann_window(8)
        signal = torch.randn(2, 64)
        check(lambda s, w: torch.stft(s, 8, window=w, return_complex=True), signal, window, atol=1e-5, rtol=1e-4)


def test_fft_gradients():
    x = torch.randn(4, 8, requires_grad=True)
    with no_fallback():
        check(lambda t: torch.view_as_real(torch.fft.rfft(t)), x, grad=True, atol=1e-5, rtol=1e-4)
        check(lambda t: torch.fft.irfft(torch.fft.fft(t), n=8), x, grad=True, atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128])
def test_data_movement(dtype):
    c = torch.randn(3, 4, 5, dtype=dtype)
    with no_fallback():
        check(lambda t: t.flip(0, 2), c)
        check(lambda t: (torch.fliplr(t), torch.flipud(t)), c)
        check(lambda t: (t.rot90(1, [1, 2]), t.rot90(2), t.rot90(-1, [0, 2])), c)
        check(lambda t: (t.movedim(0, -1).contiguous(), t.movedim((0, 1), (2, 0)).contiguous()), c)
        check(lambda t: (t.roll(2, 1), t.roll(1)), c)
        check(lambda t: t.repeat(2, 1, 3), c)
        check(lambda t: (t.tril(), t.triu(1)), c)
        check(lambda t: t[:, 1::2].flip(1), c)  # a strided view
        src = torch.randn(3, 4, dtype=dtype)
        check(lambda t, s: torch.select_scatter(t, s, 2, 1), c, src)
        check(lambda t, s: torch.slice_scatter(t, s[:, :, None], 2, 0, 1), c, src)
        check(lambda t, s: torch.diagonal_scatter(t[0], s[0, :4], 0), c, src)
        check(lambda t, s: torch.as_strided_scatter(t, s, (3, 4), (20, 5)), c, src)
        check(lambda t, s: torch.ops.aten.diagonal_backward(s[0, :3], (3, 3), 0, 0, 1), c, src)
        check(lambda t, s: torch.ops.aten.unfold_backward(s.reshape(3, 2, 2), (3, 5), 1, 2, 2), c, src)
        out = torch.empty(0, dtype=dtype, device="tpu")
        torch.ops.aten.flip.out(c.to("tpu"), [1], out=out)
        torch.testing.assert_close(out.cpu(), c.flip(1))


@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128])
def test_equality_and_indexing(dtype):
    c = torch.randn(4, 5, dtype=dtype)
    c[0, 0] = complex("nan")
    d = c.clone()
    d[1, ::2] = 3j
    mask = torch.rand(4, 5) > 0.5
    with no_fallback():
        check(lambda a, b: (a == b, a != b, torch.eq(a, b), a.ne(b)), c, d)
        check(lambda a: (a == 3, a != 1.5), d)  # real host numbers
        check(lambda a, m: a[m], c, mask)
        check(lambda a: a[[0, 2], 1:], c)
        check(lambda a, m: a.clone().index_put_((m,), torch.tensor(0, dtype=dtype)), c, mask)
        check(lambda a, m: a.clone().index_put_((torch.tensor([1, 1]),), a[:2], accumulate=True), c, mask)
        check(lambda a, b: torch.equal(a, b), c, c.clone())
        e = c.clone()
        e[1, 1] = complex(float("inf"), 1.0)
        e[2, 2] = complex(1.0, float("-inf"))
        e[3, 3] = complex(0.0, float("nan"))
        check(lambda a: (a.isnan(), a.isinf(), a.isfinite(), a.abs()), e)
        check(lambda a, b: torch.isclose(a, b, equal_nan=True), e, e + 1e-7)
        torch.testing.assert_close(e.to("tpu"), e.to("tpu"), equal_nan=True)
        with pytest.raises(RuntimeError, match="In-place abs is not supported for complex"):
            e.to("tpu").abs_()
        # Complex host numbers are program arguments (before, a TypeError that Python's `==`
        # turned into a silent `False`).
        check(lambda a: (a == 3j, a != 3j, torch.eq(a, torch.tensor(3j))), d)


@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128])
def test_random_draws_are_independent_parts(dtype):
    # As on CPU: the real and imaginary parts are independent draws, each part of randn
    # with variance 1/2 and of rand uniform in [0, 1).
    n = 20000
    with no_fallback():
        z = torch.randn(n, dtype=dtype, device="tpu").cpu()
        u = torch.rand(n, dtype=dtype, device="tpu").cpu()
        w = torch.empty(n, dtype=dtype, device="tpu").normal_(2.0, 4.0).cpu()
    assert z.dtype == u.dtype == dtype
    parts = torch.view_as_real(z)
    torch.testing.assert_close(parts.var(0), torch.full((2,), 0.5, dtype=parts.dtype), atol=0.03, rtol=0)
    assert abs(torch.corrcoef(parts.T)[0, 1]) < 0.05
    parts = torch.view_as_real(u)
    assert parts.min() >= 0 and parts.max() < 1 and abs(parts.mean() - 0.5) < 0.02
    assert abs(torch.corrcoef(parts.T)[0, 1]) < 0.05
    parts = torch.view_as_real(w)
    torch.testing.assert_close(parts.mean(0), torch.full((2,), 2.0, dtype=parts.dtype), atol=0.1, rtol=0)
    torch.testing.assert_close(parts.std(0), torch.full((2,), 8**0.5, dtype=parts.dtype), atol=0.1, rtol=0)


def test_ops_without_a_complex_lowering_fall_back():
    # A rule that does not handle complex values sends the call to the CPU like an op with
    # no rule (right values, one warning); TPURS_FALLBACK=error refuses it and says why.
    code = (
        "import torch\n"
        "x = torch.tensor([[3 + 4j], [1j], [2 - 1j]])\n"
        "i = torch.tensor([0, 0])\n"
        "s = torch.tensor([[1j], [2 + 0j]])\n"
        "want = x.index_reduce(0, i, s, 'prod')\n"
        "try:\n"
        "    y = x.to('tpu').index_reduce(0, i.to('tpu'), s.to('tpu'), 'prod')\n"
        "    torch.testing.assert_close(y.cpu(), want)\n"
        "    print('fallback', torch.tpu.metrics()['fallbacks'].get('aten::index_reduce', 0))\n"
        "except NotImplementedError as e:\n"
        "    print('refused', e)\n"
    )
    loose = run_python(code)
    assert "fallback 1" in loose.stdout, loose.stdout + loose.stderr
    strict = run_python(code, TPURS_FALLBACK="error")
    assert "refused tpurs: index_reduce has no lowering for Complex" in strict.stdout, strict.stdout + strict.stderr


def test_foreach_norm_of_complex_items():
    xs = [torch.randn(3, 4, dtype=torch.complex64), torch.randn(5, dtype=torch.complex128), torch.randn(2)]
    with no_fallback():
        for ord in (2, 1, 0, 3.5, float("inf"), -float("inf")):
            got = torch._foreach_norm([x.to("tpu") for x in xs], ord)
            for g, w in zip(got, torch._foreach_norm(xs, ord)):
                assert g.dtype == w.dtype
                torch.testing.assert_close(g.cpu(), w)
    with pytest.raises(RuntimeError, match="dtype should be complex for complex inputs"):
        torch._foreach_norm([xs[0].to("tpu")], 2, dtype=torch.float32)


@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128])
def test_random_fills(dtype):
    # CPU PyTorch fills a complex tensor through view_as_real: each part is a real draw,
    # and normal_ gives each part half the variance.
    with no_fallback():
        torch.manual_seed(0)
        n = torch.empty(20000, dtype=dtype, device="tpu").normal_(1.5, 2.0)
        u = torch.empty(20000, dtype=dtype, device="tpu").uniform_(2.0, 3.0)
        torch.manual_seed(0)
        again = torch.empty(20000, dtype=dtype, device="tpu").normal_(1.5, 2.0)
        n, u, again = n.cpu(), u.cpu(), again.cpu()
    assert n.dtype == dtype and u.dtype == dtype and n.shape == (20000,)
    assert torch.equal(n, again)
    for part in (n.real, n.imag):
        assert abs(part.mean().item() - 1.5) < 0.05
        assert abs(part.std().item() - 2.0 / 2**0.5) < 0.05
    for part in (u.real, u.imag):
        assert part.min().item() >= 2.0 and part.max().item() < 3.0
        assert abs(part.mean().item() - 2.5) < 0.02
    assert not torch.equal(n.real, n.imag)


def test_elementwise_and_comparisons():
    special = CPLX.clone()
    special[0, 0] = complex(float("nan"), 1.0)
    special[1, 1] = complex(2.0, float("-inf"))
    with no_fallback():
        check(lambda c: c.abs(), CPLX)
        check(lambda c: -c, CPLX)
        check(lambda c, d: c / d, CPLX, CPLX.flip(0))
        check(lambda c: c / 2.5, CPLX)
        check(lambda c, x: c / x, CPLX, REAL)
        check(lambda c: (c == c, c != c.conj(), c == 0), special)
        check(lambda c: (torch.isnan(c), torch.isinf(c)), special)
        check(lambda c: torch.isclose(c, c * (1 + 1e-7)), CPLX)
    with pytest.raises(RuntimeError, match="In-place abs"):
        CPLX.to("tpu").abs_()


@pytest.mark.parametrize("op", [torch.complex, torch.polar])
def test_part_dtype_errors_match_cpu(op):
    cases = [
        (torch.int32, torch.int32, "Half, Float or Double tensors but got Int and Int"),
        (torch.complex64, torch.complex64, "got ComplexFloat and ComplexFloat"),
        (torch.float32, torch.float64, "scalar type Float but got scalar type Double for second argument"),
    ]
    for a, b, match in cases:
        for device in ("cpu", "tpu"):
            with no_fallback(), pytest.raises(RuntimeError, match=match):
                op(torch.ones(2, dtype=a, device=device), torch.ones(2, dtype=b, device=device))


@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128])
def test_indexing(dtype):
    c = CPLX.to(dtype)
    i = torch.tensor([0, 2, 2, -1])
    with no_fallback():
        check(lambda c, i: c[i], c, i)
        check(lambda c, i: c[i, 1:], c, i)
        check(lambda c: c[c.real > 0], c)
        check(lambda c, i: c.index_select(1, i.abs()), c, i)
        check(lambda c, i: torch.gather(c, 1, i.abs().expand(4, 4)), c, i)
        for accumulate in (False, True):
            check(lambda c, i: c.clone().index_put_((i,), c[:4] * 2, accumulate=accumulate), c, i)
            check(lambda c, i: c.clone().index_put_((c.real > 0,), c[0, 0], accumulate=accumulate), c, i)
        # PyTorch's test_index_put_src_datatype: CPU indices, duplicates summed.
        ones = torch.ones(3, 2, 4, dtype=dtype)
        check(lambda s, v: s.clone().index_put_((torch.tensor([0, 2, 1]),), v, accumulate=True), ones, ones)


@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128])
def test_reductions_products_and_selection(dtype):
    c, d = CPLX.to(dtype), CPLX.flip(0).to(dtype)
    v = torch.complex(torch.randn(6), torch.randn(6)).to(dtype)
    tol = dict(atol=1e-5, rtol=1e-5)
    with no_fallback():
        check(lambda c: (c.sum(), c.sum(0), c.sum(1, keepdim=True), c.mean(), c.mean(1)), c, **tol)
        check(lambda c, d: (c @ d.t(), c.t() @ d, torch.mm(c, d.t())), c, d, **tol)
        check(lambda c, d: torch.bmm(c.expand(2, 4, 6), d.t().expand(2, 6, 4)), c, d, **tol)
        check(lambda c, d: torch.addmm(c[:, :4], c, d.t(), beta=0.5, alpha=2.0), c, d, **tol)
        check(lambda c, v: (c @ v, torch.mv(c, v), torch.addmv(c[:, 0], c, v)), c, v, **tol)
        check(lambda v, w: (torch.dot(v, w), torch.vdot(v, w)), v, v.flip(0), **tol)
        check(lambda c, d: (torch.where(c.real > 0, c, d), torch.where(c.imag > 0, c, 0.5)), c, d)
        check(lambda c: (c.masked_fill(c.real > 0, 2.0), c.clone().masked_fill_(c.imag < 0, -1.0)), c)
        check(lambda c, x: torch.where(x > 0, c, x), c, REAL.to(dtype.to_real()))
        check(lambda c: (c.prod(), c.prod(1), torch.any(c), torch.all(c, 0)), c, **tol)
        check(lambda c: (c.cumsum(1), c.cumprod(0), c.clone().cumsum_(0)), c, **tol)
        check(lambda c, d: (torch.logical_and(c, d), torch.logical_not(c * 0), torch.logical_xor(c, c * 0)), c, d)
        norm = torch.linalg.vector_norm
        check(lambda c: (norm(c), norm(c, 1, dim=1), norm(c, float("inf")), c.norm(), c.norm(p=3, dim=0)), c, **tol)
        # var/std of a complex tensor are real: the mean of |x - mean|^2. logsumexp shifts by
        # the largest real part.
        check(lambda c: (c.var(), c.std(1), torch.var(c, 0, correction=0, keepdim=True)), c, **tol)
        check(lambda c: (torch.var_mean(c, 1), torch.std_mean(c, (0, 1), correction=2)), c, **tol)
        check(lambda c: (torch.logsumexp(c, 1), torch.logsumexp(c, (0, 1), keepdim=True)), c, **tol)
    for device in ("cpu", "tpu"):
        with pytest.raises(RuntimeError, match="dtype should be complex for complex inputs"):
            torch.linalg.vector_norm(c.to(device), dtype=torch.float64)


@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128])
def test_transcendental_with_special_values(dtype):
    # Infinite and NaN parts give CPU's values (XLA's exp gives NaN for exp(-inf + inf j),
    # and a complex product with log2(e) turned an infinite part into NaN).
    parts = (0.0, -0.0, 1.5, -2.0, 30.0, 1e-8, float("inf"), -float("inf"), float("nan"))
    special = torch.tensor([complex(a, b) for a in parts for b in parts], dtype=dtype)
    c = CPLX.to(dtype) * 3
    ops = (torch.exp, torch.exp2, torch.log, torch.log2, torch.log10, torch.tan, torch.tanh, torch.sqrt)
    ops += (torch.sin, torch.cos, torch.sinh, torch.cosh, torch.expm1)
    with no_fallback():
        check(lambda x: tuple(op(x) for op in ops), c, atol=1e-5, rtol=1e-4)
        # A value with a NaN part is NaN as a whole (torch.isnan), whatever its other part.
        # log2/log10 are left out here: assert_close compares a number with an infinite part
        # exactly, and theirs differ from CPU's in the last bit of the finite part.
        check(lambda x: tuple(op(x) for op in ops[:3] + ops[5:]), special, atol=1e-5, rtol=1e-4)
        # sinh/cosh of a real part near 90 overflow only where the product with cos/sin does.
        big = torch.complex(torch.tensor([89.9, -89.7, 90.2, 30.0]), torch.tensor([-42.0, 35.3, 53.5, 1.0])).to(dtype)
        trig = (torch.sinh, torch.cosh, lambda z: torch.sin(z * 1j), lambda z: torch.cos(z * 1j))
        check(lambda x: tuple(torch.view_as_real(f(x)) for f in trig), big, atol=0, rtol=1e-5)
        # sqrt of parts too large to add without overflow; nan_to_num replaces in each part.
        huge = torch.tensor([3e38 + 3e38j, -3e38 - 1j, 1e38j], dtype=torch.complex64).to(dtype)
        check(torch.sqrt, huge, atol=0, rtol=1e-6)
        check(lambda x: (torch.nan_to_num(x), torch.nan_to_num(x, 1.0, 2.0, -3.0), torch.sgn(x)), special)
        # x ** 2, 3 and 0.5 take CPU's shortcuts (products, sqrt); a NaN part makes NaN.
        check(lambda x: (x**2, x**3, x**0.5, x**0, x ** (1j)), special)
        check(
            lambda x, y: (x**2.5, x**y, torch.pow(2.0, x), x.clone().pow_(-1.5)),
            c,
            c.flip(0) * 0.3,
            atol=1e-5,
            rtol=1e-4,
        )
    # abs's gradient is sgn; sqrt's divides by the root.
    check(lambda x: x.sqrt().abs(), c.requires_grad_(), grad=True, atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128])
def test_pow_special_values_part_by_part(dtype):
    # CPU's pow is C99's cpow, exp(y log x) with an Annex G product (infinities recovered
    # where the plain formula gives NaN in both parts); number exponents 0, 1, +-1, +-2, 3
    # and +-0.5 take CPU's shortcuts (fill, copy, products, roots, reciprocals).
    inf, nan = float("inf"), float("nan")
    parts = (0.0, -0.0, 1.0, -2.0, 0.5, inf, -inf, nan)
    values = [complex(a, b) for a in parts for b in parts]
    x = torch.tensor([p for p in values for _ in values], dtype=dtype)
    y = torch.tensor([q for _ in values for q in values], dtype=dtype)
    tol = dict(atol=1e-6, rtol=1e-5, equal_nan=True)
    with no_fallback():
        got = torch.view_as_real(torch.pow(x.to("tpu"), y.to("tpu"))).cpu()
        torch.testing.assert_close(got, torch.view_as_real(torch.pow(x, y)), **tol)
        z = torch.tensor(values, dtype=dtype)
        for e in (0, 1, -1, 2, -2, 3, 0.5, -0.5, 1.7, 1j):
            got = torch.view_as_real(torch.pow(z.to("tpu"), e)).cpu()
            torch.testing.assert_close(got, torch.view_as_real(torch.pow(z, e)), **tol, msg=f"exponent {e}")


@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128])
def test_log1p_and_logaddexp(dtype):
    # log1p is CPU's Kahan form: z where 1 + z rounds to 1, else log(1 + z) corrected by
    # z / ((1 + z) - 1). XLA folded that `(1 + z) - 1` back into z, and its complex log
    # lost log|1 + 1e-8j| (5e-17, not 0) and gave log(1 + nan j) a real part of 0.35.
    # logaddexp orders by real part and treats equal infinite real parts apart. Parts are
    # compared one by one (a NaN part must be NaN on both devices).
    tol = dict(atol=1e-6, rtol=1e-5) if dtype == torch.complex64 else dict(atol=1e-14, rtol=1e-12)
    inf, nan = float("inf"), float("nan")
    parts = (0.0, -0.0, 1e-30, 1e-8, -0.3, -1.0, 0.6, 2.5, 1e30, inf, -inf, nan)
    special = torch.tensor([complex(a, b) for a in parts for b in parts], dtype=dtype)
    pair_parts = [complex(a, b) for a in (0.0, -1.0, 2.5, 1e30, inf, -inf, nan) for b in (0.0, 1.0, inf, nan)]
    x = torch.tensor([p for p in pair_parts for _ in pair_parts], dtype=dtype)
    y = torch.tensor([q for _ in pair_parts for q in pair_parts], dtype=dtype)
    c = CPLX.to(dtype)
    with no_fallback():
        for op in (torch.log1p, torch.log, torch.exp):
            check(lambda z: torch.view_as_real(op(z)), special, **tol)
        check(lambda a, b: torch.view_as_real(torch.logaddexp(a, b)), x, y, **tol)
        check(lambda a, b: torch.logaddexp(a, b), c.requires_grad_(), c.flip(0) * 2, grad=True, atol=1e-5, rtol=1e-4)
        check(torch.log1p, c.detach().requires_grad_(), grad=True, atol=1e-5, rtol=1e-4)
    for device in ("cpu", "tpu"):
        with no_fallback(), pytest.raises(NotImplementedError, match='"logaddexp2_cpu" not implemented for'):
            torch.logaddexp2(c.detach().to(device), c.detach().to(device))


@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128])
def test_division_and_its_relatives(dtype):
    # CPU divides complex numbers NumPy's way (scaled by the larger part of the divisor,
    # (a / 0, b / 0) for a zero one); XLA's own division gave other infinities and zeros:
    # 0 / (inf + inf j) was 0, not NaN. reciprocal, rsqrt and sigmoid divide the same way;
    # the gradients of sigmoid and tanh take the conjugate.
    inf, nan = float("inf"), float("nan")
    parts = (0.0, -0.0, 1.0, -2.0, 30.0, 1e30, inf, -inf, nan)
    values = [complex(a, b) for a in parts for b in parts]
    x = torch.tensor([p for p in values for _ in values], dtype=dtype)
    y = torch.tensor([q for _ in values for q in values], dtype=dtype)
    special = torch.tensor(values, dtype=dtype)
    c = CPLX.to(dtype) * 3
    with no_fallback():
        check(lambda a, b: torch.view_as_real(a / b), x, y, atol=1e-6, rtol=1e-5)
        for op in (torch.reciprocal, torch.rsqrt, torch.sigmoid):
            check(lambda z: torch.view_as_real(op(z)), special, atol=1e-6, rtol=1e-5)
        check(
            lambda a, b: (a / b, a.reciprocal(), a.rsqrt(), a.sigmoid(), a.tanh()),
            c.requires_grad_(),
            c.flip(1),
            grad=True,
            atol=1e-5,
            rtol=1e-4,
        )


@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128])
def test_angle(dtype):
    parts = (0.0, -0.0, 1.5, -2.0, float("inf"), float("-inf"), float("nan"))
    z = torch.tensor([complex(a, b) for a in parts for b in parts] + CPLX.flatten().tolist(), dtype=dtype)
    with no_fallback():
        check(torch.angle, z)
        check(torch.angle, CPLX.to(dtype).requires_grad_(), grad=True)


INDEX_OPS = {
    "scatter": lambda x, s, i2, i1, m: (x.scatter(0, i2, s), x.scatter(0, i2, 2 + 1j)),
    "scatter_add": lambda x, s, i2, i1, m: x.scatter_add(0, i2, s),
    "scatter_reduce": lambda x, s, i2, i1, m: tuple(x.scatter_reduce(0, i2, s, r) for r in ("sum", "prod", "mean")),
    "index_add": lambda x, s, i2, i1, m: x.index_add(0, i1, s[:3], alpha=2 - 1j),
    "index_copy": lambda x, s, i2, i1, m: x.index_copy(0, i1, s[:3]),
    "index_fill": lambda x, s, i2, i1, m: x.index_fill(1, i1, 3 - 1j),
    "masked_scatter": lambda x, s, i2, i1, m: x.masked_scatter(m, s),
    "take_put": lambda x, s, i2, i1, m: (x.take(i1), x.put(i1, s[0, :3]), x.put(i1[:2], s[0, :2], accumulate=True)),
    "trace_eye": lambda x, s, i2, i1, m: (x.trace(), torch.eye(3, 4, dtype=x.dtype, device=x.device)),
}


@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128])
@pytest.mark.parametrize("name", list(INDEX_OPS))
def test_index_ops(name, dtype):
    x = torch.complex(torch.randn(4, 5), torch.randn(4, 5)).to(dtype)
    s = torch.complex(torch.randn(4, 5), torch.randn(4, 5)).to(dtype)
    i2 = torch.tensor([[0, 1, 2, 3, 0], [3, 2, 1, 0, 1]])
    i1 = torch.tensor([2, 0, 3])
    with no_fallback():
        check(INDEX_OPS[name], x, s, i2, i1, torch.rand(4, 5) > 0.5, atol=1e-5, rtol=1e-5)


def test_scatter_amax_of_complex_values_is_refused_as_on_cpu():
    x = torch.complex(torch.randn(2, 3), torch.randn(2, 3))
    i = torch.tensor([[0, 1, 0]])
    with pytest.raises(NotImplementedError):
        x.scatter_reduce(0, i, x[:1], "amax")
    # The rule declines; the call goes where CPU PyTorch refuses it.
    with pytest.raises(NotImplementedError):
        x.to("tpu").scatter_reduce(0, i.to("tpu"), x[:1].to("tpu"), "amax")


@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128])
def test_lerp_silu_logcumsumexp_and_matrix_exp(dtype):
    tol = dict(atol=1e-5, rtol=1e-5) if dtype == torch.complex64 else dict(atol=1e-12, rtol=1e-12)
    # Detached: other tests turn on CPLX's requires_grad (a cast to its own dtype is itself).
    c = CPLX.to(dtype).detach()
    with no_fallback():
        # lerp picks its formula by the weight's magnitude.
        check(lambda a, b: torch.lerp(a, b, 0.3 + 0.4j), c, c.flip(0), **tol)
        check(lambda a, b, w: torch.lerp(a, b, w), c, c.flip(0), (c * 0.3).flip(1), **tol)
        check(torch.nn.functional.silu, c, **tol)
        # CPU sums in order; a complex log's imaginary part depends on that order (by 2 pi
        # steps), here with parts large enough to wrap.
        check(lambda z: torch.logcumsumexp(z, 0), torch.complex(REAL * 9, REAL.flip(1) * 9).to(dtype), **tol)
        check(lambda z: torch.logcumsumexp(z, 1), c, **tol)
        check(torch.linalg.matrix_exp, torch.randn(3, 4, 4, dtype=dtype), **tol)
        check(torch.linalg.matrix_exp, torch.randn(2, 1, 1, dtype=dtype), **tol)
    # CPU has no complex32 silu kernel; neither does the device.
    for device in ("cpu", "tpu"):
        with no_fallback(), pytest.raises(NotImplementedError, match="silu"):
            torch.nn.functional.silu(torch.ones(2, dtype=torch.chalf, device=device))


FILLS = {
    "index_fill_scalar": lambda x, d: x.index_fill_(1, torch.tensor([0], device=d), 1 + 1j),
    "index_fill_tensor": lambda x, d: x.index_fill(1, torch.tensor([0], device=d), torch.tensor(1 + 0j, device=d)),
    "masked_fill_scalar": lambda x, d: x.masked_fill_(x > 2, 1 + 1j),
    "masked_fill_tensor": lambda x, d: x.masked_fill_(x > 2, torch.tensor(1 + 1j, device=d)),
    "scatter_value": lambda x, d: x.scatter_(1, torch.zeros(2, 1, dtype=torch.long, device=d), 2j),
    "masked_fill_uint8_overflow": lambda x, d: x.to(torch.uint8).masked_fill_(x > 2, 300),
}


@pytest.mark.parametrize("name", sorted(FILLS))
def test_fill_values_that_do_not_fit_raise_as_on_cpu(name):
    # A complex value written into a real tensor (or 300 into uint8) raises CPU's error
    # instead of keeping the real part (or wrapping).
    messages = []
    for device in ["cpu", "tpu"]:
        x = torch.tensor([[1.0, 2.0], [4.0, 5.0]], device=device)
        with pytest.raises(RuntimeError) as err:
            FILLS[name](x, device)
            x.cpu()  # a value computed on the device is checked at the next host wait
        messages.append(str(err.value).split("\n")[0])
    assert messages[0] == messages[1]
    # A complex value without an imaginary part fits a real masked_fill, as on CPU.
    x = torch.tensor([1.0, 3.0])
    want = x.clone().masked_fill_(x > 2, torch.tensor(7 + 0j))
    got = x.to("tpu").masked_fill_(x.to("tpu") > 2, torch.tensor(7 + 0j).to("tpu"))
    assert torch.equal(got.cpu(), want)
