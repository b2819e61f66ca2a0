"""Reductions (sum, mean, prod, amax/amin, max/min, argmax/argmin, var/std, logsumexp,
cumsum/cumprod, all/any, softmax/log_softmax, linalg_vector_norm) against CPU PyTorch."""

import warnings

import pytest
import torch
from helpers import DEVICE, assert_same, check, no_fallback

FLOAT_DTYPES = [torch.float32, torch.bfloat16, torch.float16]
INT_DTYPES = [torch.int64, torch.int32, torch.int8, torch.uint8]
ALL_DTYPES = FLOAT_DTYPES + INT_DTYPES + [torch.bool]


def sample(shape, dtype, seed=0):
    gen = torch.Generator().manual_seed(seed)
    if dtype == torch.bool:
        return torch.rand(shape, generator=gen) > 0.5
    if dtype.is_floating_point:
        return torch.randn(shape, generator=gen).to(dtype)
    lo = 0 if dtype == torch.uint8 else -5
    return torch.randint(lo, 6, shape, generator=gen, dtype=dtype)


def fsample(shape, dtype, seed=0):
    """A float sample that requires grad."""
    return sample(shape, dtype, seed).requires_grad_()


def tol(dtype):
    return dict(atol=2e-2, rtol=2e-2) if dtype in (torch.bfloat16, torch.float16) else {}


# ---------------------------------------------------------------- sum / mean / prod


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_sum_dtypes(dtype):
    x = sample((3, 4, 5), dtype)
    with no_fallback():
        check(torch.sum, x, **tol(dtype))
        check(lambda t: t.sum(1), x, **tol(dtype))
        check(lambda t: t.sum((0, -1), keepdim=True), x, **tol(dtype))
        check(lambda t: t.sum([]), x, **tol(dtype))
        check(lambda t: t.sum(dim=None), x, **tol(dtype))


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_sum_mean_grad(dtype):
    x = fsample((3, 4, 5), dtype)
    with no_fallback():
        check(torch.sum, x, grad=True, **tol(dtype))
        check(lambda t: t.sum((0, 2)), x, grad=True, **tol(dtype))
        check(lambda t: t.sum(-1, keepdim=True), x, grad=True, **tol(dtype))
        check(torch.mean, x, grad=True, **tol(dtype))
        check(lambda t: t.mean(1), x, grad=True, **tol(dtype))
        check(lambda t: t.mean((0, 1), keepdim=True), x, grad=True, **tol(dtype))


def test_sum_mean_dtype_arg_and_out():
    xi = sample((4, 5), torch.int32)
    xf = sample((4, 5), torch.float32)
    with no_fallback():
        check(lambda t: t.sum(dtype=torch.float32), xi)
        check(lambda t: t.sum(1, dtype=torch.int32), xi)
        check(lambda t: t.sum(0, dtype=torch.float16), xf, atol=1e-2, rtol=1e-2)
        check(lambda t: t.mean(dtype=torch.float32), xi)
        check(lambda t: t.mean(1, dtype=torch.float64), xf)
        check(lambda t: torch.sum(t, 1, out=torch.empty(0, device=t.device)), xf)
        check(lambda t: torch.sum(t, (0, 1), keepdim=True, out=torch.empty(3, device=t.device)), xf)
        check(lambda t: torch.mean(t, 0, out=torch.empty(5, device=t.device)), xf)
        # sum(int, out=float) accumulates in the out= dtype.
        check(lambda t: torch.sum(t, 0, out=torch.empty(5, device=t.device)), xi)


def test_sum_mean_empty_and_0d():
    e = torch.zeros(3, 0)
    s = torch.tensor(2.5)
    with no_fallback():
        check(torch.sum, e)
        check(lambda t: t.sum(1), e)
        check(lambda t: t.mean(1), e)
        check(torch.mean, e)
        check(lambda t: t.sum(0), s)
        check(lambda t: t.mean(-1, keepdim=True), s)
        check(torch.prod, e)


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_prod_dtypes(dtype):
    x = sample((3, 4), dtype)
    with no_fallback():
        check(torch.prod, x, **tol(dtype))
        check(lambda t: t.prod(1), x, **tol(dtype))
        check(lambda t: t.prod(0, keepdim=True), x, **tol(dtype))
        check(lambda t: t.prod(-1, dtype=torch.float32), x)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_prod_dim_grad(dtype):
    x = fsample((3, 4), dtype)
    with no_fallback():
        check(lambda t: t.prod(1), x, grad=True, **tol(dtype))
        check(lambda t: t.prod(0, keepdim=True), x, grad=True, **tol(dtype))
        check(lambda t: torch.prod(t, 1, out=torch.empty(0, device=t.device)), x.detach(), **tol(dtype))


def test_prod_all_grad_values():
    # Full prod's backward runs `nonzero`; the values must match, with zeros too.
    x = fsample((3, 4), torch.float32)
    check(torch.prod, x, grad=True)
    z = torch.tensor([[1.0, 0.0], [2.0, 3.0]], requires_grad=True)
    check(torch.prod, z, grad=True)


def test_prod_all_grad_no_fallback():
    # prod() backward counts zeros with aten::nonzero (a data-dependent shape).
    with no_fallback():
        check(torch.prod, fsample((3, 4), torch.float32), grad=True)


# ---------------------------------------------------------------- amax / max / argmax


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_extremes_dtypes(dtype):
    x = sample((4, 5), dtype)
    with no_fallback():
        for op in (torch.amax, torch.amin):
            check(op, x, **tol(dtype))
            check(lambda t: op(t, 1), x, **tol(dtype))
            check(lambda t: op(t, (0, 1), keepdim=True), x, **tol(dtype))
        check(torch.max, x)
        check(torch.min, x)
        check(lambda t: torch.max(t, 1), x)
        check(lambda t: torch.min(t, 0, keepdim=True), x)
        check(lambda t: torch.max(t, -1, keepdim=True), x)
        if dtype != torch.bool:  # argmax / argmin reject bool, as on the CPU (test_errors)
            check(torch.argmax, x)
            check(lambda t: torch.argmin(t, 1), x)
            check(lambda t: torch.argmax(t, 0, keepdim=True), x)
            check(lambda t: torch.argmin(t, keepdim=True), x)


def test_ties_pick_first_index():
    x = torch.tensor([[1.0, 3.0, 3.0, 0.0], [2.0, 2.0, 2.0, 2.0], [-1.0, -5.0, 7.0, -5.0]])
    xi = torch.tensor([[4, 4, 1, 4], [0, -3, -3, 2]], dtype=torch.int32)
    xb = torch.tensor([[False, True, True], [False, False, False]])
    with no_fallback():
        for t in (x, xi, xb):
            check(lambda u: torch.max(u, 1), t)
            check(lambda u: torch.min(u, 1), t)
            check(lambda u: torch.max(u, 0), t)
            if t.dtype != torch.bool:
                check(lambda u: torch.argmax(u, 1), t)
                check(lambda u: torch.argmin(u, 1), t)
                check(torch.argmax, t)
                check(torch.argmin, t)


def test_nan_propagates():
    nan = float("nan")
    x = torch.tensor([[1.0, nan, 3.0, nan], [2.0, 1.0, 0.0, 5.0], [nan, nan, nan, nan]])
    with no_fallback():
        for op in (torch.amax, torch.amin):
            check(lambda t: op(t, 1), x)
        check(torch.max, x)
        check(torch.min, x)
        check(lambda t: torch.max(t, 1), x)
        check(lambda t: torch.min(t, 1), x)
        check(lambda t: torch.argmax(t, 1), x)
        check(lambda t: torch.argmin(t, 1), x)
        check(torch.argmax, x)
        check(lambda t: t.softmax(1), x)
        check(lambda t: t.logsumexp(1), x)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_extremes_grad(dtype):
    x = fsample((4, 5), dtype)
    ties = torch.tensor([[1.0, 3.0, 3.0], [2.0, 2.0, 2.0]], dtype=dtype, requires_grad=True)
    with no_fallback():
        for t in (x, ties):
            check(lambda u: u.amax(1), t, grad=True, **tol(dtype))
            check(lambda u: u.amin((0, 1)), t, grad=True, **tol(dtype))
            check(torch.max, t, grad=True, **tol(dtype))
            check(torch.min, t, grad=True, **tol(dtype))
            check(lambda u: torch.max(u, 1), t, grad=True, **tol(dtype))
            check(lambda u: torch.min(u, 0, keepdim=True), t, grad=True, **tol(dtype))


def test_extremes_out_and_0d():
    x = sample((3, 4), torch.float32)
    s = torch.tensor(1.5)
    with no_fallback():
        check(
            lambda t: torch.max(
                t, 1, out=(torch.empty(0, device=t.device), torch.empty(0, dtype=torch.long, device=t.device))
            ),
            x,
        )
        check(
            lambda t: torch.min(
                t, 0, out=(torch.empty(4, device=t.device), torch.empty(4, dtype=torch.long, device=t.device))
            ),
            x,
        )
        check(lambda t: torch.amax(t, 0, out=torch.empty(0, device=t.device)), x)
        check(lambda t: torch.argmax(t, 1, out=torch.empty(0, dtype=torch.long, device=t.device)), x)
        check(lambda t: torch.max(t, 0), s)
        check(lambda t: torch.argmin(t, -1, keepdim=True), s)
        check(torch.amax, s)
        check(torch.argmax, s)


# ---------------------------------------------------------------- var / std


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_var_std(dtype):
    x = fsample((4, 6), dtype)
    with no_fallback():
        for op in (torch.var, torch.std):
            check(op, x, grad=True, **tol(dtype))
            check(lambda t: op(t, 1), x, grad=True, **tol(dtype))
            check(lambda t: op(t, 0, correction=0, keepdim=True), x, grad=True, **tol(dtype))
            check(lambda t: op(t, (0, 1), unbiased=False), x, grad=True, **tol(dtype))
            check(lambda t: op(t, -1, correction=2), x, grad=True, **tol(dtype))
        for op in (torch.var_mean, torch.std_mean):
            check(op, x, grad=True, **tol(dtype))
            check(lambda t: op(t, 1, keepdim=True), x, grad=True, **tol(dtype))
            check(lambda t: op(t, 0, correction=0), x, grad=True, **tol(dtype))


def test_var_edge_cases():
    with no_fallback():
        check(torch.var, torch.tensor([1.0]))  # N - correction == 0: nan
        check(lambda t: torch.var(t, correction=2), torch.tensor([1.0, 2.0]))  # inf
        check(lambda t: torch.std(t, 1, out=torch.empty(0, device=t.device)), sample((3, 4), torch.float32))
        check(lambda t: torch.var(t, 0), torch.tensor(3.0))


# ---------------------------------------------------------------- logsumexp


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_logsumexp(dtype):
    x = fsample((4, 5), dtype)
    with no_fallback():
        check(lambda t: t.logsumexp(1), x, grad=True, **tol(dtype))
        check(lambda t: t.logsumexp((0, 1), keepdim=True), x, grad=True, **tol(dtype))
        check(lambda t: t.logsumexp(0) * 3, x * 30, **tol(dtype))


def test_logsumexp_stable_and_ints():
    inf = float("inf")
    x = torch.tensor([[1000.0, 1000.0], [-inf, -inf], [inf, 1.0], [-1000.0, -1001.0]])
    with no_fallback():
        check(lambda t: t.logsumexp(1), x)
        check(lambda t: t.logsumexp(1, keepdim=True), x)
        check(lambda t: t.logsumexp(0), sample((3, 4), torch.int64))
        check(lambda t: torch.logsumexp(t, 1, out=torch.empty(0, device=t.device)), x)


# ---------------------------------------------------------------- cumsum / cumprod


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_cumsum_cumprod_dtypes(dtype):
    x = sample((3, 37), dtype)
    small = sample((4, 6), dtype, seed=1)
    with no_fallback():
        check(lambda t: t.cumsum(1), x, **tol(dtype))
        check(lambda t: t.cumsum(0), x, **tol(dtype))
        check(lambda t: t.cumsum(-1, dtype=torch.float32), x, **tol(dtype))
        check(lambda t: t.cumprod(1), small, **tol(dtype))
        check(lambda t: t.cumprod(0), small, **tol(dtype))


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_cumsum_cumprod_grad(dtype):
    x = fsample((3, 9), dtype)
    with no_fallback():
        check(lambda t: t.cumsum(1), x, grad=True, **tol(dtype))
        check(lambda t: t.cumsum(0), x, grad=True, **tol(dtype))
        check(lambda t: t.cumprod(1), x, grad=True, **tol(dtype))


def test_cumsum_inplace_out_0d_empty():
    xi = sample((2, 5), torch.int32)
    xf = sample((2, 5), torch.float32)
    with no_fallback():
        check(lambda t: t.clone().cumsum_(1), xi)  # in place keeps int32
        check(lambda t: t.clone().cumprod_(0), xf)
        check(lambda t: torch.cumsum(t, 1, out=torch.empty(0, device=t.device)), xf)
        check(lambda t: torch.cumsum(t, 0, out=torch.empty(0, dtype=torch.long, device=t.device)), xi)
        check(lambda t: t.cumsum(0), torch.tensor(3.0))
        check(lambda t: t.cumsum(-1), torch.tensor(3))
        check(lambda t: t.cumsum(1), torch.zeros(2, 0))
        check(lambda t: t.cumsum(0), torch.ones(300))


# ---------------------------------------------------------------- all / any


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_all_any(dtype):
    x = sample((3, 4), dtype)
    ones = torch.ones(3, 4, dtype=dtype)
    with no_fallback():
        for op in (torch.all, torch.any):
            for t in (x, ones, torch.zeros(3, 4, dtype=dtype)):
                check(op, t)
                check(lambda u: op(u, 1), t)
                check(lambda u: op(u, 0, keepdim=True), t)
                check(lambda u: op(u, (0, 1)), t)
                check(lambda u: op(u, dim=()), t)


def test_all_any_out_empty_0d():
    x = sample((3, 4), torch.float32) > 0
    with no_fallback():
        check(lambda t: torch.all(t, 1, out=torch.empty(0, dtype=torch.bool, device=t.device)), x)
        check(lambda t: torch.any(t, out=torch.empty(0, dtype=torch.bool, device=t.device)), x)
        check(lambda t: torch.any(t, (0,), out=torch.empty(0, dtype=torch.bool, device=t.device)), x)
        check(lambda t: torch.all(t, 1), torch.zeros(2, 0))
        check(lambda t: torch.any(t, 1), torch.zeros(2, 0))
        check(torch.all, torch.tensor(0.0))
        check(lambda t: torch.any(t, 0), torch.tensor(2))
        # A uint8 result is allowed, as on CPU; other result dtypes raise.
        check(lambda t: torch.all(t, 1, out=torch.empty(0, dtype=torch.uint8, device=t.device)), x.short())
    for device in ("cpu", "tpu"):
        for op, name in ((torch.all, "all"), (torch.any, "any")):
            with (
                no_fallback(),
                pytest.raises(RuntimeError, match=f"{name} only supports bool tensor for result, got: Short"),
            ):
                op(x.short().to(device), 1, out=torch.empty(0, dtype=torch.int16, device=device))


# ---------------------------------------------------------------- softmax


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_softmax_log_softmax(dtype):
    x = fsample((3, 4, 5), dtype)
    with no_fallback():
        for dim in (0, 1, -1):
            check(lambda t: t.softmax(dim), x, grad=True, **tol(dtype))
            check(lambda t: t.log_softmax(dim), x, grad=True, **tol(dtype))
        check(lambda t: torch.softmax(t, 1, dtype=torch.float32), x, grad=True, **tol(dtype))
        check(
            lambda t: torch.nn.functional.cross_entropy(t[:, :, 0], torch.tensor([1, 0, 3], device=t.device)),
            x,
            grad=True,
            **tol(dtype),
        )


def test_softmax_edge_cases():
    inf = float("inf")
    x = torch.tensor([[1000.0, 0.0, -1000.0], [-inf, 0.0, 1.0], [-inf, -inf, -inf]])
    with no_fallback():
        check(lambda t: t.softmax(1), x)
        check(lambda t: t.log_softmax(1), x)
        check(lambda t: t.softmax(0), torch.tensor(2.0))
        check(lambda t: torch.ops.aten._softmax.out(t, 1, False, out=torch.empty(0, device=t.device)), x)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_softmax_half_to_float(dtype):
    # CPU PyTorch does not implement half_to_float; compare with softmax computed in f32.
    x = sample((3, 6), dtype)
    with no_fallback():
        d = x.to(DEVICE)
        assert_same(torch.ops.aten._softmax(d, 1, True), torch.softmax(x.float(), 1))
        assert_same(torch.ops.aten._log_softmax(d, 0, True), torch.log_softmax(x.float(), 0))
        y = torch.softmax(x.float(), 1)
        g = torch.randn(3, 6)
        expected = torch.ops.aten._softmax_backward_data(g, y, 1, torch.float32).to(dtype)
        actual = torch.ops.aten._softmax_backward_data(g.to(DEVICE), y.to(DEVICE), 1, dtype)
        assert_same(actual, expected, atol=1e-2, rtol=1e-2)


# ---------------------------------------------------------------- norms


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_vector_norm_values(dtype):
    x = sample((4, 5), dtype)
    with no_fallback():
        for ord in (2, 1, float("inf"), float("-inf"), 0, 3, 0.5):
            check(lambda t: torch.linalg.vector_norm(t, ord), x, **tol(dtype))
            check(lambda t: torch.linalg.vector_norm(t, ord, dim=1, keepdim=True), x, **tol(dtype))
        check(lambda t: torch.linalg.vector_norm(t, dtype=torch.float32), x)
        check(lambda t: torch.norm(t), x, **tol(dtype))


def test_norm_overloads():
    x = sample((4, 5), torch.float32)
    with no_fallback():
        check(lambda t: torch.ops.aten.norm.Scalar(t, 3), x)
        check(lambda t: torch.norm(t, p=1, dim=1, keepdim=True), x)
        check(lambda t: torch.norm(t, p="fro", dim=(0, 1)), x)
        check(lambda t: torch.ops.aten.norm.ScalarOpt_dtype(t, 2, dtype=torch.float64), x)
        check(lambda t: torch.ops.aten.norm.ScalarOpt_dim_dtype(t, float("inf"), [0], False, dtype=torch.float64), x)
        out = torch.empty(0, device="tpu")
        torch.norm(x.to("tpu"), p=2, dim=0, out=out)
    torch.testing.assert_close(out.cpu(), torch.norm(x, p=2, dim=0))


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_vector_norm_grad(dtype):
    x = fsample((4, 5), dtype)
    with no_fallback():
        check(lambda t: torch.linalg.vector_norm(t), x, grad=True, **tol(dtype))
        check(lambda t: torch.linalg.vector_norm(t, 2, dim=0), x, grad=True, **tol(dtype))
        check(lambda t: torch.linalg.vector_norm(t, 3, dim=(0, 1)), x, grad=True, **tol(dtype))


def test_vector_norm_ord1_inf_grad_values():
    # These backward formulas use aten::sgn (no tpu rule yet); the values must still match.
    x = fsample((4, 5), torch.float32)
    for ord in (1, float("inf")):
        check(lambda t: torch.linalg.vector_norm(t, ord, dim=1), x, grad=True)


def test_vector_norm_ord1_grad_no_fallback():
    with no_fallback():
        check(lambda t: torch.linalg.vector_norm(t, 1), fsample((4, 5), torch.float32), grad=True)


def test_clip_grad_norm():
    torch.manual_seed(0)
    lin = torch.nn.Linear(5, 3)
    dev = torch.nn.Linear(5, 3).to(DEVICE)
    dev.load_state_dict({k: v.to(DEVICE) for k, v in lin.state_dict().items()})
    x = torch.randn(8, 5)
    for m, inp in ((lin, x), (dev, x.to(DEVICE))):
        m(inp).pow(2).sum().backward()
    with no_fallback():
        total = torch.nn.utils.clip_grad_norm_(dev.parameters(), 0.5, foreach=False)
    expected = torch.nn.utils.clip_grad_norm_(lin.parameters(), 0.5, foreach=False)
    assert_same(total, expected, atol=1e-5, rtol=1e-5)
    for p, q in zip(dev.parameters(), lin.parameters()):
        assert_same(p.grad, q.grad, atol=1e-5, rtol=1e-5)


# ---------------------------------------------------------------- errors


def raises_like(fn, x):
    """Asserts fn raises on the tpu device with the exception type and message CPU raises."""
    with pytest.raises(Exception) as cpu_err:
        fn(x)
    with pytest.raises(type(cpu_err.value)) as dev_err:
        fn(x.to(DEVICE))
    assert str(cpu_err.value).split("\n")[0] in str(dev_err.value)


def test_errors():
    x = sample((2, 3), torch.float32)
    raises_like(lambda t: t.sum(2), x)
    raises_like(lambda t: t.sum((0, 0)), x)
    raises_like(lambda t: t.mean(), sample((2, 3), torch.int64))
    raises_like(lambda t: t.var(), sample((2, 3), torch.int64))
    raises_like(lambda t: t.amax(0), torch.zeros(0, 3))
    raises_like(lambda t: t.max(), torch.zeros(0, 3))
    raises_like(lambda t: t.max(0), torch.zeros(0, 3))
    raises_like(lambda t: t.argmax(), torch.zeros(0, 3))
    raises_like(lambda t: t.argmin(1), torch.zeros(2, 3, dtype=torch.bool))
    raises_like(lambda t: t.cumsum(-3), x)
    raises_like(lambda t: t.softmax(0), sample((2, 3), torch.int64))
    raises_like(lambda t: torch.linalg.vector_norm(t), sample((2, 3), torch.int64))
    raises_like(lambda t: torch.linalg.vector_norm(t, float("inf")), torch.zeros(0))


def test_nansum_and_trace():
    x = torch.tensor([[1.0, float("nan"), 2.0], [float("nan"), float("nan"), 3.0]])
    with no_fallback():
        check(torch.nansum, x)
        check(lambda t: torch.nansum(t, dim=1, keepdim=True), x)
        check(lambda t: torch.nansum(t, dim=0, dtype=torch.float64), x)
        check(torch.nansum, torch.arange(6, dtype=torch.int32).reshape(2, 3))
        check(torch.trace, torch.randn(4, 3, requires_grad=True), grad=True)
        check(torch.trace, torch.arange(9, dtype=torch.int32).reshape(3, 3))
    for device in ("cpu", "tpu"):
        with pytest.raises(RuntimeError, match="expected a matrix"):
            torch.trace(torch.ones(3, device=device))


def test_logcumsumexp_is_stable_for_any_spread():
    x = torch.tensor([[1e3, -1e3, 0.5, float("-inf"), 2.0], [float("-inf"), float("-inf"), 1.0, float("inf"), 3.0]])
    with no_fallback():
        for dim in (0, 1):
            check(lambda t: torch.logcumsumexp(t, dim), x)
        check(lambda t: torch.logcumsumexp(t, 1), torch.randn(4, 300) * 50, atol=1e-4, rtol=1e-5)
        check(lambda t: torch.logcumsumexp(t, 0), torch.tensor(2.0))


def test_reductions_over_more_than_64_dims_raise_like_cpu():
    # CPU PyTorch marks the reduced dims in a 64-bit mask: an explicit dim of a 65-d tensor
    # raises; a full reduction and scans do not.
    for device in ("cpu", "tpu"):
        t = torch.ones([1] * 65, device=device)
        for op in (torch.sum, torch.prod, torch.amax, torch.argmax, torch.logsumexp, torch.var, torch.all):
            with no_fallback(), pytest.raises(RuntimeError, match="only tensors with up to 64 dims are supported"):
                op(t, 0)
        with no_fallback():
            assert t.sum().item() == 1 and torch.cumsum(t, 0).shape == t.shape


def test_hash_tensor():
    # The xor of every element's 64-bit image (floats as doubles, integers sign-extended).
    cases = [
        torch.tensor([1.5, -2.0]),
        torch.tensor([-1, 5, -7], dtype=torch.int8),
        torch.tensor([200, 3], dtype=torch.uint8),
        torch.tensor([True, True, True]),
        torch.tensor([1.5, 3.0], dtype=torch.bfloat16),
        torch.randint(-100, 100, (3, 4, 5)),
    ]
    y = torch.randn(3, 4, 5)
    with no_fallback():
        for x in cases:
            check(torch.hash_tensor, x)
        check(lambda t: (torch.hash_tensor(t, 1), torch.hash_tensor(t, [0, 2], keepdim=True)), y)
    for device in ("cpu", "tpu"):
        with pytest.raises(RuntimeError, match="Expected reduction dim to be specified"):
            torch.hash_tensor(torch.zeros(0, device=device))
        with pytest.raises(IndexError, match="Expected reduction dim 1 to have non-zero size"):
            torch.hash_tensor(torch.zeros(2, 0, device=device), 1)
        with pytest.raises(RuntimeError, match="Unknown hash_tensor mode: 1"):
            torch.hash_tensor(torch.ones(2, device=device), mode=1)


def test_variance_warns_when_correction_leaves_no_degrees_of_freedom():
    # CPU's warning, from the same counts (an empty input counts 0 elements per output).
    cases = [((10, 20), dict(dim=(0, 1), correction=199)), ((10, 20), dict(dim=(0, 1), correction=200))]
    cases += [((10, 20), dict(dim=-1, correction=20)), ((10, 20), dict(correction=None)), ((0, 3), dict(dim=0))]
    cases += [((3, 0), dict(dim=0)), ((), dict(correction=0))]
    for shape, kwargs in cases:
        x = torch.randn(shape)
        for f in (torch.var, torch.std, torch.var_mean, torch.std_mean):
            seen = []
            for t in (x, x.to("tpu")):
                with warnings.catch_warnings(record=True) as w, no_fallback():
                    warnings.simplefilter("always")
                    f(t, **kwargs)
                seen.append([str(m.message).split(" (Triggered")[0] for m in w])
            assert seen[1] == seen[0], (shape, kwargs, f.__name__, seen)
