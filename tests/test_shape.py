"""Shape ops (cat, stack, split, flip, roll, repeat, tril/triu, constant_pad_nd, *_scatter)
and views (strides equal CPU's, in-place writes reach the base, backward of views)."""

import pytest
import torch
from helpers import ALL_DTYPES, check, no_fallback, sample, tol


def grad_of(dtype):
    return dtype.is_floating_point


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_cat(dtype):
    g = grad_of(dtype)
    a, b = sample((2, 3), dtype, g), sample((4, 3), dtype, g)
    with no_fallback():
        check(lambda x, y: torch.cat([x, y]), a, b, grad=g, **tol(dtype))
        check(lambda x, y: torch.cat([x.t(), y.t()], dim=-1), a, b, grad=g, **tol(dtype))
        check(lambda x, y: torch.stack([x, y[:2]], dim=1), a, b, grad=g, **tol(dtype))


def test_cat_promotion_empty_and_out():
    a = torch.randn(2, 3, requires_grad=True)
    i = torch.randint(0, 5, (1, 3))
    with no_fallback():
        check(lambda x, y: torch.cat([x, y]), a, i, grad=True)
        check(lambda x, y: torch.cat([y, x.to(torch.bfloat16)]), a, i)
        check(lambda x, y: torch.cat([x > 0, y]), a, i)
        # Legacy empty 1-d tensors are skipped (but take part in promotion).
        check(lambda x: torch.cat([torch.zeros(0, device=x.device, dtype=torch.float64), x, x]), a, grad=True)
        check(lambda x: torch.cat([torch.zeros(0, device=x.device), torch.zeros(0, device=x.device)]), a)
        check(lambda x: torch.cat([x[:0], x]), a, grad=True)

        def with_out(x):
            out = torch.empty(0, device=x.device)
            r = torch.cat([x, x], dim=1, out=out)
            assert r is out
            return out

        check(with_out, a.detach())


def test_cat_errors():
    for dev in ("cpu", "tpu"):
        a, b = torch.zeros(2, 3, device=dev), torch.zeros(2, 4, device=dev)
        with pytest.raises(RuntimeError, match="Sizes of tensors must match except in dimension 0"):
            torch.cat([a, b])
        with pytest.raises(RuntimeError, match="zero-dimensional tensor"):
            torch.cat([a, torch.tensor(1.0, device=dev)])
        with pytest.raises(IndexError, match="Dimension out of range"):
            torch.cat([a, a], dim=2)


@pytest.mark.parametrize("dtype", [torch.float32, torch.int64, torch.bool])
def test_split_chunk_unbind(dtype):
    g = grad_of(dtype)
    x = sample((5, 4), dtype, g)
    with no_fallback():
        check(lambda t: t.split(2), x, grad=g)
        check(lambda t: t.split([1, 3], dim=1), x, grad=g)
        check(lambda t: t.chunk(3, dim=1), x, grad=g)
        check(lambda t: t.unbind(1), x, grad=g)
        check(lambda t: [p * 2 for p in t.split(2)] if g else t.split(2), x, grad=g)


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_flip_roll_repeat(dtype):
    g = grad_of(dtype)
    x = sample((3, 4, 2), dtype, g)
    with no_fallback():
        check(lambda t: t.flip(0), x, grad=g, **tol(dtype))
        check(lambda t: t.flip([-1, 1]), x, grad=g, **tol(dtype))
        check(lambda t: t.roll(1, 0), x, grad=g, **tol(dtype))
        check(lambda t: t.roll((-3, 5), (1, 2)), x, grad=g, **tol(dtype))
        check(lambda t: t.roll(5), x, grad=g, **tol(dtype))
        check(lambda t: t.repeat(2, 1, 3), x, **tol(dtype))
        check(lambda t: t.repeat(2, 1, 1, 2), x, **tol(dtype))


def test_repeat_grad_and_errors():
    x = torch.randn(2, 3, requires_grad=True)
    with no_fallback():
        check(lambda t: t.repeat(3, 2), x, grad=True)
        check(lambda t: t.repeat(0, 2), x)
    with pytest.raises(RuntimeError, match="Number of dimensions of repeat dims"):
        x.detach().to("tpu").repeat(2)


@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("diagonal", [0, 1, -1, 5])
def test_tril_triu(dtype, diagonal):
    g = grad_of(dtype)
    x = sample((2, 4, 5), dtype, g)
    with no_fallback():
        check(lambda t: t.tril(diagonal), x, grad=g, **tol(dtype))
        check(lambda t: t.triu(diagonal), x, grad=g, **tol(dtype))
        check(lambda t: t.detach().clone().tril_(diagonal), x, **tol(dtype))
        check(lambda t: t.detach().clone().triu_(diagonal), x, **tol(dtype))

        def out_form(t):
            out = torch.empty_like(t.detach())
            torch.triu(t.detach(), diagonal, out=out)
            return out

        check(out_form, x, **tol(dtype))
    with pytest.raises(RuntimeError, match="at least 2 dimensions"):
        torch.zeros(3, device="tpu").tril()


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_constant_pad(dtype):
    g = grad_of(dtype)
    x = sample((2, 3, 4), dtype, g)
    F = torch.nn.functional
    with no_fallback():
        check(lambda t: F.pad(t, (1, 2)), x, grad=g, **tol(dtype))
        check(lambda t: F.pad(t, (1, 0, 0, 2), value=1), x, grad=g, **tol(dtype))
        check(lambda t: F.pad(t, (-1, 2, 1, -2, 0, 1)), x, grad=g, **tol(dtype))
        check(lambda t: torch.constant_pad_nd(t, (-1, -1, -1, -1)), x, grad=g, **tol(dtype))
    with pytest.raises(RuntimeError, match="must be even"):
        torch.constant_pad_nd(x.detach().to("tpu"), (1,))
    with pytest.raises(RuntimeError, match="no more than twice"):
        torch.constant_pad_nd(x.detach().to("tpu"), (1,) * 8)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int64, torch.bool])
def test_scatter_views(dtype):
    g = grad_of(dtype)
    x = sample((4, 5), dtype, g)
    with no_fallback():
        check(lambda t, s: torch.slice_scatter(t, s, 1, 1, 5, 2), x, sample((4, 2), dtype, g), grad=g, **tol(dtype))
        check(lambda t, s: torch.slice_scatter(t, s, 0, -2), x, sample((2, 5), dtype, g), grad=g, **tol(dtype))
        check(lambda t, s: torch.select_scatter(t, s, 0, -1), x, sample((5,), dtype, g), grad=g, **tol(dtype))
        check(lambda t, s: torch.select_scatter(t, s, 1, 2), x, sample((4,), dtype, g), grad=g, **tol(dtype))
        check(lambda t, s: torch.diagonal_scatter(t, s), x, sample((4,), dtype, g), grad=g, **tol(dtype))
        check(lambda t, s: torch.diagonal_scatter(t, s, 2), x, sample((3,), dtype, g), grad=g, **tol(dtype))
        check(lambda t, s: torch.diagonal_scatter(t, s, -1, 1, 0), x, sample((4,), dtype, g), grad=g, **tol(dtype))
        check(lambda t, s: torch.as_strided_scatter(t, s, (2, 2), (5, 2), 1), x, sample((2, 2), dtype, g), **tol(dtype))
    with pytest.raises(RuntimeError):
        torch.slice_scatter(torch.zeros(4, 5, device="tpu"), torch.zeros(4, 3, device="tpu"), 1, 0, 2)


def test_view_backward_no_fallback():
    x = torch.randn(4, 5, requires_grad=True)
    with no_fallback():
        check(lambda t: t[:, 1:3], x, grad=True)
        check(lambda t: t[0], x, grad=True)
        check(lambda t: t[1:, ::2][:, 1], x, grad=True)
        check(lambda t: t.diagonal(1), x, grad=True)
        check(lambda t: t.unfold(1, 2, 1), x, grad=True)
        check(lambda t: t.unfold(0, 2, 3), x, grad=True)
        check(lambda t: t.t().narrow(0, 1, 2), x, grad=True)
        check(lambda t: t[None].expand(3, 4, 5), x, grad=True)
        for f in (lambda t: t[:, 1:3].sum(), lambda t: t[0].sum()):
            d = x.detach().to("tpu").requires_grad_()
            c = x.detach().clone().requires_grad_()
            f(d).backward()
            f(c).backward()
            torch.testing.assert_close(d.grad.cpu(), c.grad)


def test_view_strides_match_cpu():
    x = torch.randn(3, 4, 5)
    with no_fallback():
        for f in (
            lambda t: t.expand(2, 3, 4, 5),
            lambda t: t[:, :1].expand(3, 7, 5),
            lambda t: t.permute(2, 0, 1),
            lambda t: t.transpose(0, 2),
            lambda t: t.narrow(1, 1, 2),
            lambda t: t.diagonal(0, 1, 2),
            lambda t: t.unfold(2, 2, 2),
            lambda t: t[:, 1],
            lambda t: t[1:, ::2, 3:],
            lambda t: t.unsqueeze(1).squeeze(1),
        ):
            r = check(f, x, check_stride=True)
            assert r.storage_offset() == f(x).storage_offset()


def test_inplace_on_views_updates_base():
    x = torch.randn(4, 5)

    def f(t):
        t = t.clone()
        t[:, 1:3].mul_(2)
        t[0].fill_(7)
        t.t()[2].add_(1)
        t.diagonal().zero_()
        t.narrow(1, 3, 2).copy_(torch.ones(4, 2, device=t.device))
        t.unsqueeze(0).expand(2, 4, 5)  # views only
        return t

    with no_fallback():
        check(f, x)


def test_view_offsets_do_not_make_new_programs():
    # A view's storage offset is a program argument: reading or writing at 2,000 distinct
    # offsets reuses a handful of programs instead of compiling one per offset.
    cpu = torch.randn(2000)
    x = cpu.to("tpu")
    cols = torch.randn(40, 50)
    y = cols.to("tpu")
    with no_fallback():
        x[1].item(), (y[:, 1] * 2).sum().item(), y[1:3].sum().item()  # warm up
        before = torch.tpu.metrics()["compile_cache_misses"]
        reads = [x[i].item() for i in range(2000)]
        col_sums = [(y[:, k] * 2).sum().item() for k in range(1, 50)]
        row_sums = [y[k : k + 3].sum().item() for k in range(1, 37)]
        y[:, 7].add_(1)
        y[3, 4:9] = 5.0
        compiled = torch.tpu.metrics()["compile_cache_misses"] - before
    assert reads == cpu.tolist()
    torch.testing.assert_close(torch.tensor(col_sums), (cols[:, 1:] * 2).sum(0))
    torch.testing.assert_close(torch.tensor(row_sums), torch.stack([cols[k : k + 3].sum() for k in range(1, 37)]))
    cols[:, 7].add_(1)
    cols[3, 4:9] = 5.0
    torch.testing.assert_close(y.cpu(), cols)
    assert compiled <= 10, f"{compiled} programs built for views at distinct offsets"


def test_repeat_interleave_with_tensor_repeats_matches_cpu():
    x = torch.arange(6.0).view(2, 3)
    with no_fallback():
        check(lambda t, r: t.repeat_interleave(r, dim=0), x, torch.tensor([1, 2]))
        check(lambda t, r: t.repeat_interleave(r, dim=1), x, torch.tensor([0, 2, 1]))
        for repeats in (torch.tensor([2, 0, 1], dtype=torch.int32), torch.tensor([], dtype=torch.long)):
            check(torch.repeat_interleave, repeats)
        got = torch.repeat_interleave(torch.tensor([2, 0, 1], device="tpu"), output_size=3)
    assert got.tolist() == [0, 0, 2]
    for bad, message in (
        (torch.tensor([[1]]), "only accept 1D vector"),
        (torch.tensor([1, -1]), "can not be negative"),
    ):
        with pytest.raises(RuntimeError, match=message):
            torch.repeat_interleave(bad.to("tpu"))
