"""Indexing ops: index_select, gather / scatter (+ add, reduce), index_add, advanced
indexing (`x[idx]`, `x[idx] = v`, boolean masks), masked_fill and masked_scatter."""

import warnings

import pytest
import torch
from helpers import ALL_DTYPES, check, no_fallback, sample, tol


def perm_index(n, k, shape):
    """`shape`-shaped int64 tensor of distinct-per-column indices below n (k rows)."""
    cols = [torch.randperm(n)[:k] for _ in range(shape[1])]
    return torch.stack(cols, dim=1)


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_index_select(dtype):
    g = dtype.is_floating_point
    x = sample((4, 5), dtype, g)
    idx = torch.tensor([3, 0, 3, 1])
    with no_fallback():
        check(lambda t, i: torch.index_select(t, 0, i), x, idx, grad=g, **tol(dtype))
        check(lambda t, i: t.index_select(-1, i), x, idx.to(torch.int32), grad=g, **tol(dtype))
        check(lambda t, i: t.index_select(1, i), x, torch.tensor(2), grad=g, **tol(dtype))

        def with_out(t, i):
            out = torch.empty(0, dtype=t.dtype, device=t.device)
            torch.index_select(t.detach(), 1, i, out=out)
            return out

        check(with_out, x, idx, **tol(dtype))


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_gather(dtype):
    g = dtype.is_floating_point
    x = sample((4, 5), dtype, g)
    idx = torch.randint(0, 4, (3, 5))
    with no_fallback():
        check(lambda t, i: torch.gather(t, 0, i), x, idx, grad=g, **tol(dtype))
        check(lambda t, i: torch.gather(t, 1, i), x, torch.randint(0, 5, (2, 3)), grad=g, **tol(dtype))
        check(lambda t, i: torch.gather(t, -1, i), x, torch.randint(0, 5, (4, 7)), grad=g, **tol(dtype))
        # An empty index is not checked further, not even its dtype (as on the CPU).
        check(lambda t, i: torch.gather(t, 1, i), x, torch.zeros(0, 7, dtype=torch.uint8))

        def with_out(t, i):
            out = torch.empty(0, dtype=t.dtype, device=t.device)
            torch.gather(t.detach(), 0, i, out=out)
            return out

        check(with_out, x, idx, **tol(dtype))
    check(lambda t, i: torch.gather(t, 0, i), x.detach(), idx.to(torch.int32), **tol(dtype))
    with pytest.raises(RuntimeError, match="Expected dtype int32/int64 for index"):
        torch.gather(x.detach().to("tpu"), 0, idx.to(torch.float32).to("tpu"))


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_scatter(dtype):
    g = dtype.is_floating_point
    x = sample((4, 5), dtype, g)
    src = sample((3, 6), dtype, g)
    idx = perm_index(4, 3, (3, 5))
    with no_fallback():
        check(lambda t, i, s: torch.scatter(t, 0, i, s), x, idx, src[:, :5], grad=g, **tol(dtype))
        check(lambda t, i, s: torch.scatter(t, 0, i, s), x, idx, src.detach(), **tol(dtype))
        check(lambda t, i: torch.scatter(t, 0, i, 3), x, idx, grad=g, **tol(dtype))
        check(lambda t, i, s: t.detach().clone().scatter_(0, i, s.detach()), x, idx, src, **tol(dtype))
        check(lambda t, i: t.detach().clone().scatter_(0, i, 2), x, idx, **tol(dtype))
        check(lambda t, i, s: torch.scatter_add(t, 0, i, s), x, idx, src[:, :5], grad=g, **tol(dtype))
        dup = torch.randint(0, 5, (4, 6))
        check(lambda t, i, s: torch.scatter_add(t, 1, i, s), x, dup, sample((4, 6), dtype, g), grad=g, **tol(dtype))
        check(
            lambda t, i, s: t.detach().clone().scatter_add_(1, i, s.detach()),
            x,
            dup,
            sample((4, 6), dtype),
            **tol(dtype),
        )


@pytest.mark.parametrize("dtype", [torch.float32, torch.int64])
@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce(dtype, reduce, include_self):
    x = sample((4, 5), dtype)
    src = sample((6, 5), dtype)
    idx = torch.randint(0, 3, (6, 5))
    with no_fallback():
        check(lambda t, i, s: t.scatter_reduce(0, i, s, reduce, include_self=include_self), x, idx, src)
        check(lambda t, i, s: t.clone().scatter_reduce_(0, i, s, reduce, include_self=include_self), x, idx, src)


def test_scatter_legacy_reduce():
    x = torch.randn(4, 5)
    idx = torch.randint(0, 4, (3, 5))
    src = torch.randn(3, 5)
    with no_fallback():
        check(lambda t, i, s: t.scatter(0, i, s, reduce="add"), x, idx, src)
        check(lambda t, i, s: t.scatter(0, i, s, reduce="multiply"), x, idx, src)
        check(lambda t, i: t.scatter(0, i, 2.0, reduce="multiply"), x, idx)


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_index_add(dtype):
    g = dtype.is_floating_point
    x = sample((5, 3), dtype, g)
    src = sample((4, 3), dtype, g)
    idx = torch.tensor([4, 0, 4, 2])
    with no_fallback():
        check(lambda t, i, s: torch.index_add(t, 0, i, s), x, idx, src, grad=g, **tol(dtype))
        check(lambda t, i, s: t.detach().clone().index_add_(0, i, s.detach()), x, idx, src, **tol(dtype))
        check(
            lambda t, i, s: t.index_add(1, i, s),
            x,
            torch.tensor([2, 2]),
            sample((5, 2), dtype, g),
            grad=g,
            **tol(dtype),
        )
        if dtype != torch.bool:
            check(lambda t, i, s: t.index_add(0, i, s, alpha=2), x, idx, src, grad=g, **tol(dtype))


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_advanced_index(dtype):
    g = dtype.is_floating_point
    x = sample((4, 5, 6), dtype, g)
    i = torch.tensor([0, -1, 2, 2])
    j = torch.tensor([[1], [3], [-4]])
    a = dict(grad=g, **tol(dtype))
    with no_fallback():
        check(lambda t, i: t[i], x, i, **a)
        check(lambda t, i: t[:, i], x, i, **a)
        check(lambda t, i: t[..., i], x, i, **a)
        check(lambda t, i: t[i, i], x, i, **a)
        check(lambda t, i, j: t[j, i], x, i, j, **a)  # broadcast to (3, 4)
        check(lambda t, i, j: t[:, j, i], x, i, j, **a)
        check(lambda t, i: t[i, :, i], x, i, **a)  # non-adjacent: batch dims first
        check(lambda t, i, j: t[j, 1:3, i], x, i, j, **a)
        check(lambda t, i: t[i, 2], x, i.to(torch.int32), **a)
        check(lambda t, i: t[None, i], x, i, **a)
        check(lambda t, i: t[torch.tensor(1), i], x, i, **a)  # 0-d CPU index is a host number
        check(lambda t, i: t[i[:0]], x, i, **a)


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_index_put(dtype):
    x = sample((4, 5), dtype)
    v = sample((3, 5), dtype)
    i = torch.tensor([2, 0, -1])

    def put(t, i, val):
        t = t.clone()
        t[i] = val
        return t

    def put2(t, i, j, val):
        t = t.clone()
        t[i, j] = val
        return t

    def put_cols(t, i, val):
        t = t.clone()
        t[:, i] = val
        return t

    with no_fallback():
        check(put, x, i, v, **tol(dtype))
        check(put, x, i, v[:1], **tol(dtype))
        check(lambda t, i: put(t, i, 1), x, i, **tol(dtype))
        check(put2, x, i, torch.tensor([1, 2, 3]), v[0, :3], **tol(dtype))
        check(put_cols, x, torch.tensor([4, 1]), sample((4, 2), dtype), **tol(dtype))
        dup = torch.tensor([1, 1, 3, 1])
        check(lambda t, d, s: t.index_put((d,), s, accumulate=True), x, dup, sample((4, 5), dtype), **tol(dtype))
        check(
            lambda t, d, s: t.clone().index_put_((d, d), s, accumulate=True), x, dup, sample((4,), dtype), **tol(dtype)
        )


def test_index_put_grad_and_errors():
    x = torch.randn(4, 5, requires_grad=True)
    v = torch.randn(2, 5, requires_grad=True)
    i = torch.tensor([3, 1])
    with no_fallback():
        check(lambda t, i, s: t.index_put((i,), s), x, i, v, grad=True)
        check(lambda t, i, s: t.index_put((i,), s, accumulate=True), x, i, v, grad=True)
    d = torch.zeros(4, 5, device="tpu")
    with pytest.raises(RuntimeError, match="Index put requires the source and destination dtypes match"):
        d.index_put_((i.to("tpu"),), torch.ones(2, 5, dtype=torch.int64, device="tpu"))
    with pytest.raises(IndexError, match="too many indices"):
        d[i.to("tpu"), i.to("tpu"), i.to("tpu")]
    with pytest.raises(IndexError, match="tensors used as indices must be long"):
        d[torch.zeros(2, device="tpu")]


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int64, torch.bool])
def test_bool_mask_index(dtype):
    g = dtype.is_floating_point
    x = sample((4, 5), dtype, g)
    m = torch.rand(4, 5) > 0.4
    rows = torch.tensor([True, False, True, True])
    # x[mask] has a data-dependent shape: nonzero reads the count, the rest stays on the device.
    with no_fallback():
        check(lambda t, k: t[k], x, m, grad=g, **tol(dtype))
        check(lambda t, k: t[k], x, rows, grad=g, **tol(dtype))
        check(lambda t, k: t[:, k], x, torch.tensor([True, False, True, False, True]), grad=g, **tol(dtype))
        check(lambda t, k: t[k, 1:], x, rows, grad=g, **tol(dtype))
        check(lambda t, k: t[k], x, torch.zeros(4, 5, dtype=torch.bool), grad=g, **tol(dtype))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int64, torch.bool])
def test_bool_mask_put(dtype):
    x = sample((4, 5), dtype)
    m = torch.rand(4, 5) > 0.4
    rows = torch.tensor([True, False, True, True])

    def put(t, k, val):
        t = t.clone()
        t[k] = val
        return t

    with no_fallback():
        check(lambda t, k: put(t, k, 0), x, m, **tol(dtype))
        check(put, x, m, sample((int(m.sum()),), dtype), **tol(dtype))
        check(put, x, rows, sample((5,), dtype), **tol(dtype))
        check(put, x, rows, sample((3, 5), dtype), **tol(dtype))
        check(put, x, rows, sample((3, 1), dtype), **tol(dtype))
        cols = torch.tensor([True, False, True, False, True])
        check(
            lambda t, k, s: torch.ops.aten.index_put(t, [None, k], s, True),
            x,
            cols,
            sample((4, 3), dtype),
            **tol(dtype),
        )
        check(lambda t, k, s: torch.ops.aten.index_put(t, [k], s, True), x, m, sample((1,), dtype), **tol(dtype))


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_masked_fill(dtype):
    g = dtype.is_floating_point
    x = sample((3, 4), dtype, g)
    m = torch.rand(3, 4) > 0.5
    with no_fallback():
        check(lambda t, k: t.masked_fill(k, 1), x, m, grad=g, **tol(dtype))
        check(lambda t, k: t.masked_fill(k[0], 0), x, m, grad=g, **tol(dtype))
        check(lambda t, k: t[0].masked_fill(k, 0), x, m, grad=g, **tol(dtype))  # broadcast self
        check(lambda t, k: t.detach().clone().masked_fill_(k[:, :1], 2), x, m, **tol(dtype))
        if g:
            v = torch.tensor(2.5)
            check(lambda t, k, s: t.masked_fill(k, s), x, m, v.to(dtype), grad=True, **tol(dtype))
            check(lambda t, k, s: t.detach().clone().masked_fill_(k, s), x, m, v, **tol(dtype))
    if g:
        # The gradient of a tensor fill value is grad.masked_select(mask).sum().
        v = torch.tensor(2.5, dtype=dtype, requires_grad=True)
        with no_fallback():
            check(lambda t, k, s: t.masked_fill(k, s), x, m, v, grad=True, **tol(dtype))
    with pytest.raises(RuntimeError, match="only supports boolean masks"):
        torch.zeros(3, device="tpu").masked_fill(torch.ones(3, dtype=torch.uint8, device="tpu"), 1)
    with pytest.raises(RuntimeError, match="0-dimensional value tensor"):
        torch.zeros(3, device="tpu").masked_fill(
            torch.ones(3, dtype=torch.bool, device="tpu"), torch.ones(3, device="tpu")
        )


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int64, torch.bool])
def test_masked_scatter(dtype):
    g = dtype.is_floating_point
    x = sample((3, 4), dtype, g)
    m = torch.rand(3, 4) > 0.5
    with no_fallback():
        check(lambda t, k, s: t.masked_scatter(k, s), x, m, sample((3, 5), dtype, g), grad=g, **tol(dtype))
        check(lambda t, k, s: t.masked_scatter(k[0], s), x, m, sample((12,), dtype, g), grad=g, **tol(dtype))
        check(lambda t, k, s: t.detach().clone().masked_scatter_(k, s), x, m, sample((20,), dtype), **tol(dtype))


def test_masked_scatter_with_too_few_source_elements_raises_as_cpu():
    # The count of true positions is known only on the device: the error comes at the next
    # host read, as CUDA raises it; nothing wrong is read back.
    mask = torch.tensor([0, 0, 0, 0, 1, 0, 1, 0, 1, 0], dtype=torch.bool)
    for source in (torch.zeros(2), torch.zeros(0)):
        for device in ("cpu", "tpu"):
            with pytest.raises(RuntimeError, match="Number of elements of source < number of ones in mask"):
                dest = torch.arange(1.0, 11.0, device=device)
                dest.masked_scatter_(mask.to(device), source.to(device))
                dest.cpu()
    # Empty selections need no source.
    with no_fallback():
        check(
            lambda t, k, s: t.masked_scatter(k, s),
            torch.ones(5, 0, 5),
            torch.ones(5, 1, 5, dtype=torch.bool),
            torch.empty(0),
        )
        check(lambda t, k, s: t.masked_scatter(k, s), torch.ones(4), torch.zeros(4, dtype=torch.bool), torch.empty(0))


def test_masked_select_out():
    src = torch.arange(10, dtype=torch.int32)
    mask = torch.arange(10) % 3 == 0
    with no_fallback():
        out = torch.empty(0, dtype=torch.int32, device="tpu")
        torch.masked_select(src.to("tpu"), mask.to("tpu"), out=out)
    assert torch.equal(out.cpu(), torch.masked_select(src, mask))
    for device in ("cpu", "tpu"):
        with pytest.raises(RuntimeError, match="self and result must have the same scalar type"):
            torch.masked_select(src.to(device), mask.to(device), out=torch.empty(0, device=device))


def test_training_style_indexing():
    """Embedding-like lookup and a cross-entropy-like pick with their gradients."""
    w = torch.randn(10, 4, requires_grad=True)
    tokens = torch.tensor([[1, 3, 3], [9, 0, 1]])
    logits = torch.randn(6, 10, requires_grad=True)
    target = torch.tensor([1, 0, 9, 4, 4, 2])
    with no_fallback():
        check(lambda t, i: t[i], w, tokens, grad=True)
        check(lambda t, i: t.index_select(0, i.flatten()).view(2, 3, 4), w, tokens, grad=True)
        check(lambda t, i: t[torch.arange(6, device=t.device), i], logits, target, grad=True)
        check(lambda t, i: t.gather(1, i[:, None]), logits, target, grad=True)


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_index_fill(dtype):
    g = dtype.is_floating_point
    x = sample((4, 5), dtype, g)
    with no_fallback():
        check(lambda t, i: t.index_fill(0, i, 1), x, torch.tensor([2, -1]), grad=g, **tol(dtype))
        check(lambda t, i: t.index_fill(-1, i, 0), x, torch.tensor(3), grad=g, **tol(dtype))
        check(
            lambda t, i: t.detach().clone().index_fill_(1, i, torch.tensor(1)), x, torch.tensor([0, 4, 0]), **tol(dtype)
        )


def test_index_fill_takes_a_cpu_index():
    # As on CPU (PyTorch's stable-sort test fills through CPU indices, some empty).
    x = torch.randn(10, 10)
    with no_fallback():
        for i in (torch.tensor([3, -1]), torch.tensor([], dtype=torch.long)):
            check(lambda t: t.index_fill(1, i, float("inf")), x)
            check(lambda t: t.clone().index_fill_(0, i, torch.tensor(2.0)), x)
        with pytest.raises(RuntimeError, match="same device"):
            x.to("tpu").index_select(0, torch.tensor([1]))  # other index ops stay strict, as on CUDA


def test_out_of_range_index_raises_at_the_read():
    """CPU raises IndexError at the op; an index computed on the device is checked inside
    the program and raises at the next read, one copied from the CPU raises at the op
    (tests/test_device_checks.py covers every op)."""
    x = torch.arange(5.0)
    i = torch.tensor([7])
    with pytest.raises(IndexError):
        x[i]
    d = x.to("tpu")
    with pytest.raises(IndexError, match="index 7 is out of bounds"):
        d[i.to("tpu")]
    computed = i.to("tpu") + 0
    y = d[computed]
    assert y.shape == (1,)
    with pytest.raises(IndexError, match="index 7 is out of bounds"):
        y.cpu()
    z = d.clone().index_put_((computed,), torch.ones(1, device="tpu"))
    with pytest.raises(IndexError, match="index 7 is out of bounds"):
        z.cpu()


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_nonzero_and_masked_select_on_device(dtype):
    x = sample((3, 4), dtype)
    mask = torch.rand(3, 4) > 0.5
    with no_fallback():
        check(torch.nonzero, x)
        check(lambda t: torch.nonzero(t, as_tuple=True), x)
        check(torch.masked_select, x, mask)
        check(lambda t, m: torch.masked_select(t, m), x, mask[0])  # broadcast mask
        check(torch.nonzero, torch.zeros(0, 3, dtype=dtype))
        check(lambda t: torch.nonzero_static(t, size=20, fill_value=-7), x)


def test_nonzero_out_and_discontiguous():
    x = torch.randint(0, 2, (5, 6))
    with no_fallback():
        check(lambda t: t[:, ::2].nonzero(), x)  # discontiguous input
        check(lambda t: t.t().nonzero(), x)
        check(lambda t: torch.nonzero(t, out=torch.empty((), dtype=torch.long, device=t.device)), x)
        # A right-sized discontiguous out keeps its storage and strides, as on CPU.
        n = int(x.count_nonzero())
        for device in ("cpu", "tpu"):
            out = torch.empty(n, 4, dtype=torch.long, device=device)[:, ::2]
            ptr, strides = out.data_ptr(), out.stride()
            torch.nonzero(x.to(device), out=out)
            assert (out.data_ptr(), out.stride()) == (ptr, strides)
            assert torch.equal(out.cpu(), x.nonzero())
        dev = x.to("tpu")
        with pytest.raises(RuntimeError, match="scalar type Long"):
            torch.nonzero(dev, out=torch.empty(0, device="tpu"))
        with pytest.raises(RuntimeError, match="on the same device"):
            torch.nonzero(dev, out=torch.empty(0, dtype=torch.long))


@pytest.mark.parametrize("reduce", ["prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_index_reduce(reduce, include_self):
    x = torch.randn(5, 3)
    src = torch.randn(4, 3)
    src[1, 2] = float("nan")
    idx = torch.tensor([0, 4, 0, 2])

    def f(t, i, s, dim=0):
        return t.index_reduce(dim, i, s, reduce, include_self=include_self)

    with no_fallback():
        check(f, x, idx, src)
        check(lambda t, i, s: f(t, i, s, dim=1), x, torch.tensor([2, 2]), torch.randn(5, 2))
        check(f, torch.arange(-6, 9).reshape(5, 3), idx, torch.arange(12).reshape(4, 3) - 5)
        check(lambda t, i, s: t.clone().index_reduce_(0, i, s, reduce, include_self=include_self), x, idx, src)


def test_index_copy():
    x = torch.randn(5, 3)
    with no_fallback():
        check(lambda t, i, s: t.index_copy(0, i, s), x, torch.tensor([4, 1]), torch.randn(2, 3))
        check(lambda t, i, s: t.clone().index_copy_(1, i, s), x, torch.tensor([2, 0]), torch.randn(5, 2))
        check(lambda t, i, s: t.index_copy(0, i, s), torch.tensor(1.0), torch.tensor([0]), torch.tensor([5.0]))
        check(lambda t, i, s: t.index_copy(0, i, s), x, torch.tensor([], dtype=torch.int64), torch.randn(0, 3))
    d = x.to("tpu")
    with pytest.raises(RuntimeError, match="Expected a long tensor for index"):
        d.index_copy(0, torch.tensor([0], dtype=torch.int32, device="tpu"), d[:1])
    with pytest.raises(RuntimeError, match="Number of indices"):
        d.index_copy(0, torch.tensor([0, 1], device="tpu"), d[:3])


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int64, torch.bool])
def test_take_and_put(dtype):
    x = sample((3, 4), dtype)
    idx = torch.tensor([[0, -1], [5, 11], [-12, 3]])
    src = sample((3, 2), dtype)
    with no_fallback():
        check(torch.take, x, idx)
        check(torch.take, x.t(), idx)  # a strided view: positions follow its own order
        check(torch.take, sample((), dtype), torch.tensor([0, -1]))
        check(torch.take, x, torch.tensor([], dtype=torch.int64))
        check(lambda t, i, s: t.clone().put_(i, s), x, torch.tensor([[0, 7], [-1, 4], [2, 9]]), src)
        check(lambda t, i, s: t.put(i, s), x, torch.tensor([1, 6]), src[0])
        if dtype not in (torch.bool,):
            check(lambda t, i, s: t.put(i, s, accumulate=True), x, torch.tensor([1, 1, -11, 2, 0, 0]), src)


def test_take_and_put_grad_and_errors():
    x = torch.randn(3, 4, requires_grad=True)
    idx = torch.tensor([1, 1, -1, 5])
    with no_fallback():
        check(torch.take, x, idx, grad=True)
        check(
            lambda t, s: t.put(idx.to(t.device), s, accumulate=True), x, torch.randn(4, requires_grad=True), grad=True
        )
        d = torch.arange(6.0, device="tpu")
        with pytest.raises(IndexError, match="tried to access index 10 on a tensor of 6 elements"):
            torch.take(d, torch.tensor([0, 10], device="tpu")).cpu()
        with pytest.raises(IndexError, match="tried to access index -7 on a tensor of 6 elements"):
            d.clone().put_(torch.tensor([-7], device="tpu"), torch.ones(1, device="tpu")).cpu()
        with pytest.raises(IndexError, match="Expected source and index to have the same number of elements"):
            d.put_(torch.tensor([1, 2], device="tpu"), torch.ones(1, device="tpu"))
        with pytest.raises(RuntimeError, match="Expected a long tensor for index"):
            torch.take(d, torch.tensor([1], dtype=torch.int32, device="tpu"))
        with pytest.raises(IndexError, match="tried to take from an empty tensor"):
            torch.take(d[:0], torch.tensor([0], device="tpu"))
        assert torch.take(d, torch.tensor([-1], device="tpu")).item() == 5.0


def test_mask_assignment_with_the_wrong_number_of_values_raises_like_cpu():
    # The mask's count is data: the check runs on the device and raises at the next read.
    message = r"shape mismatch: value tensor of shape \[2, 2\] cannot be broadcast to indexing result of shape \[2, 3\]"
    for dev in ("cpu", "tpu"):
        x = torch.arange(8.0, device=dev).view(2, 4)
        with no_fallback(), pytest.raises(RuntimeError, match=message):
            x[:, torch.tensor([True, False, True, True], device=dev)] = torch.ones(2, 2, device=dev)
            x.cpu()
    x = torch.arange(4.0, device="tpu")
    with no_fallback():
        x[x > 1] = torch.tensor([7.0, 8.0], device="tpu")  # the right count
        x[x > 7] = torch.tensor([5.0], device="tpu")  # one value broadcast
    assert x.tolist() == [0.0, 1.0, 7.0, 5.0]


def test_uint8_masks_warn_like_cpu():
    def warnings_of(dev):
        mask = torch.tensor([1, 0, 1, 0], dtype=torch.uint8, device=dev)
        x = torch.arange(16.0, device=dev).view(4, 4)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            x.index_put_((mask,), x[mask], accumulate=True)
            x[mask] = torch.tensor([3.0, 4.0, 5.0, 6.0], device=dev)
        return [str(m.message).split(" (Triggered")[0] for m in w], x.cpu()

    with no_fallback():
        got, x = warnings_of("tpu")
    expected, x_cpu = warnings_of("cpu")
    assert got == expected and len(got) == 3
    torch.testing.assert_close(x, x_cpu)


@pytest.mark.parametrize(
    "call",
    [
        lambda d: torch.zeros(5, device=d).scatter_add(
            0, torch.zeros(2, 0, dtype=torch.uint8, device=d), torch.ones(2, 0, device=d)
        ),
        lambda d: torch.zeros(5, device=d).scatter(0, torch.zeros(0, dtype=torch.int64, device=d), 3.0),
        lambda d: torch.zeros(5, device=d).gather(0, torch.zeros(2, 0, dtype=torch.uint8, device=d)),
    ],
)
def test_an_empty_index_of_any_dtype_or_rank_is_accepted(call):
    # CPU checks neither the dtype nor the shape of an empty index.
    with no_fallback():
        torch.testing.assert_close(call("tpu").cpu(), call("cpu"))


@pytest.mark.parametrize("op", ["scatter", "scatter_add", "scatter_reduce"])
def test_scatter_src_dtype_error_names_scatter(op):
    def call(d):
        x, i, s = torch.zeros(5, device=d), torch.tensor([1], device=d), torch.ones(1, dtype=torch.float64, device=d)
        return getattr(x, op)(0, i, s, "sum") if op == "scatter_reduce" else getattr(x, op)(0, i, s)

    with pytest.raises(RuntimeError, match=r"^scatter\(\): Expected self.dtype to be equal to src.dtype"):
        call("cpu")
    with (
        no_fallback(),
        pytest.raises(RuntimeError, match=r"^scatter\(\): Expected self.dtype to be equal to src.dtype"),
    ):
        call("tpu")
