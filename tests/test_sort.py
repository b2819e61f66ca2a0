"""sort, topk, kthvalue, median and nanmedian against CPU PyTorch: values, indices, NaN
order, ties, gradients, out= forms and errors."""

import pytest
import torch
from helpers import check, no_fallback

DTYPES = [torch.float32, torch.bfloat16, torch.int64, torch.int32, torch.uint8]


def distinct(shape, dtype):
    """Values without ties (so indices are unique), in `dtype`."""
    n = torch.Size(shape).numel()
    return torch.randperm(n).reshape(shape).to(dtype) if n < 256 else torch.randn(shape).to(dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("descending", [False, True])
@pytest.mark.parametrize("dim", [0, -1])
def test_sort(dtype, descending, dim):
    x = distinct((5, 7), dtype)
    with no_fallback():
        check(lambda t: torch.sort(t, dim=dim, descending=descending), x)
        check(lambda t: torch.sort(t, dim=dim, descending=descending, stable=True), x)
        check(lambda t: torch.argsort(t, dim=dim, descending=descending), x)


def test_sort_nan_and_ties_follow_cpu():
    x = torch.tensor([[3.0, float("nan"), 1.0, 3.0, -float("inf"), 1.0, float("nan"), 0.0]])
    with no_fallback():
        for descending in (False, True):
            check(lambda t: torch.sort(t, descending=descending, stable=True), x)
        check(lambda t: torch.sort(t > 1.0, stable=True), x)


def test_sort_gradient_and_out():
    x = distinct((4, 6), torch.float32).requires_grad_()
    with no_fallback():
        check(lambda t: torch.sort(t, dim=1).values * 2, x, grad=True)
        values, indices = torch.empty(0, device="tpu"), torch.empty(0, dtype=torch.long, device="tpu")
        torch.sort(x.detach().to("tpu"), dim=0, out=(values, indices))
    expected = torch.sort(x.detach(), dim=0)
    torch.testing.assert_close(values.cpu(), expected.values)
    torch.testing.assert_close(indices.cpu(), expected.indices)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("largest", [True, False])
def test_topk(dtype, largest):
    x = distinct((6, 9), dtype)
    with no_fallback():
        check(lambda t: torch.topk(t, 3, dim=-1, largest=largest), x)
        check(lambda t: torch.topk(t, 2, dim=0, largest=largest), x)
    grad_x = distinct((6, 9), torch.float32).requires_grad_()
    with no_fallback():
        check(lambda t: torch.topk(t, 4, largest=largest).values.sum(-1), grad_x, grad=True)


def test_topk_k_out_of_range_raises_like_cpu():
    for device in ("cpu", "tpu"):
        with pytest.raises(RuntimeError, match="out of range"):
            torch.topk(torch.randn(3, device=device), 5)


@pytest.mark.parametrize("keepdim", [False, True])
def test_kthvalue(keepdim):
    x = distinct((5, 8), torch.float32)
    with no_fallback():
        for k in (1, 3, 8):
            check(lambda t: torch.kthvalue(t, k, dim=1, keepdim=keepdim), x)
        check(lambda t: torch.kthvalue(t, 2, dim=0, keepdim=keepdim), x)
        # An empty input: empty results along a nonempty dim, CPU's IndexError along an empty one.
        check(lambda t: torch.kthvalue(t, 1, dim=2, keepdim=keepdim), torch.randn(2, 0, 4))
    for device in ("cpu", "tpu"):
        with pytest.raises(IndexError, match="kthvalue\\(\\): Expected reduction dim 1 to have non-zero size"):
            torch.kthvalue(torch.randn(2, 0, 4, device=device), 1, dim=1)


@pytest.mark.parametrize("op", [torch.median, torch.nanmedian])
def test_median(op):
    odd, even = distinct((5, 7), torch.float32), distinct((4, 6), torch.float32)
    nan = torch.tensor([[1.0, float("nan"), 3.0, 2.0], [2.0, float("nan"), float("nan"), 1.0], [4.0, 1.0, 2.0, 3.0]])
    with no_fallback():
        for x in (odd, even, nan):
            check(lambda t: op(t), x)
            check(lambda t: op(t, dim=1), x)
            check(lambda t: op(t, dim=0, keepdim=True), x)
        # A row of NaNs: the value is NaN (CPU's index for it is an artefact of its partition).
        check(lambda t: op(t, dim=1).values, torch.full((2, 5), float("nan")))
        check(lambda t: op(t), distinct((9,), torch.int64))
        for keepdim in (False, True):
            check(lambda t: op(t, 0, keepdim=keepdim), torch.tensor(2.5))
            check(lambda t: torch.kthvalue(t, 1, 0, keepdim=keepdim), torch.tensor(2.5))
        check(lambda t: op(t, 0), distinct((6, 3), torch.int32))


def test_topk_in_a_compiled_graph():
    torch._dynamo.reset()
    f = torch.compile(lambda x: torch.topk(x.softmax(-1), 3).values.sum() + torch.sort(x, -1).values[:, 0].sum())
    x = torch.randn(4, 10)
    with no_fallback():
        out = f(x.to("tpu"))
    torch.testing.assert_close(out.cpu(), f(x), atol=1e-5, rtol=1e-5)
    torch._dynamo.reset()


@pytest.mark.parametrize("op", [torch.cummax, torch.cummin])
def test_cummax_cummin(op):
    ties = torch.tensor(
        [[1.0, 3.0, 3.0, 2.0, float("nan"), 5.0, float("nan"), 0.0], [2.0, 2.0, 1.0, 1.0, 4.0, 4.0, 0.0, 9.0]]
    )
    with no_fallback():
        check(lambda t: op(t, 1), ties)
        check(lambda t: op(t, 0), ties)
        check(lambda t: op(t, -1), torch.tensor([[3, 1, 4, 1, 5, 9, 2, 6]], dtype=torch.int32))
        check(lambda t: op(t, 0), torch.tensor([True, False, True, True]))
        check(lambda t: op(t, 0), torch.tensor(2.5))
        check(lambda t: op(t, 1).values.sum(), distinct((3, 7), torch.float32).requires_grad_(), grad=True)


@pytest.mark.parametrize("inverse", [False, True])
@pytest.mark.parametrize("counts", [False, True])
def test_unique_and_unique_consecutive_match_cpu(inverse, counts):
    cases = [
        torch.tensor([3, 1, 2, 1, 5, 3, 0]),
        torch.tensor([[1.0, float("nan")], [1.0, float("nan")]]),  # each NaN its own value
        torch.tensor([]),
        torch.zeros(0, 0, 3),  # the inverse keeps the input's shape
        torch.tensor(4.0),
        torch.randint(0, 5, (3, 4, 5)),
    ]
    for x in cases:
        for fn in (torch.unique, torch.unique_consecutive):
            want = fn(x, return_inverse=inverse, return_counts=counts)
            with no_fallback():
                got = fn(x.to("tpu"), return_inverse=inverse, return_counts=counts)
            for w, g in zip(*(t if isinstance(t, tuple) else (t,) for t in (want, got))):
                assert (g.dtype, g.shape) == (w.dtype, w.shape)
                torch.testing.assert_close(g.cpu(), w, equal_nan=True)
    rows = torch.tensor([[1, 1, 2, 2], [3, 3, 4, 5]])
    for dim in (0, 1, -1):
        want = torch.unique_consecutive(rows, return_inverse=True, return_counts=True, dim=dim)
        with no_fallback():
            got = torch.unique_consecutive(rows.to("tpu"), return_inverse=True, return_counts=True, dim=dim)
        for w, g in zip(want, got):
            torch.testing.assert_close(g.cpu(), w)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int64, torch.uint8, torch.bool])
def test_unique_dim_matches_cpu(dtype):
    x = torch.tensor([[[1, 1], [0, 1], [2, 1], [0, 1]], [[1, 1], [0, 1], [2, 1], [0, 1]]]).to(dtype)
    r = torch.randint(0, 3, (6, 3, 2)).to(dtype)
    with no_fallback():
        for t in (x, r, r.transpose(0, 2)):
            for dim in range(-1, t.dim()):
                check(lambda a: torch.unique(a, dim=dim), t)
                check(lambda a: torch.unique(a, True, True, True, dim), t)
        # Each output alone (one program per combination, so on one tensor only).
        for inverse, counts in ((True, False), (False, True)):
            check(lambda a: torch.unique(a, True, inverse, counts, 1), r)
        check(lambda a: torch.unique(a, return_inverse=True, return_counts=True, dim=1), torch.empty(5, 0, dtype=dtype))
    for shape, dim in (((5, 0, 0), 1), ((5, 0, 5), 2), ((5, 0), 0)):
        with pytest.raises(RuntimeError, match="unique cannot be applied"):
            torch.unique(torch.empty(shape, dtype=dtype, device="tpu"), dim=dim)
    with pytest.raises(IndexError):
        torch.unique(x.to("tpu"), dim=3)


def test_mode_matches_cpu():
    # Ties give the smallest value, the index is its last occurrence, NaNs each count once.
    for values in ([1, 2, 2, 3, 2], [2, 1, 2, 1], [5, 5, 1, 1, 1, 5], [3.0, float("nan"), float("nan")]):
        x = torch.tensor(values)
        with no_fallback():
            got = torch.mode(x.to("tpu"))
        assert got.indices.item() == torch.mode(x).indices.item()
        torch.testing.assert_close(got.values.cpu(), torch.mode(x).values, equal_nan=True)
    x = torch.randint(0, 3, (4, 9, 5))
    for dim in (0, 1, -1):
        for keepdim in (False, True):
            with no_fallback():
                check(lambda t: tuple(torch.mode(t, dim, keepdim)), x)
    with pytest.raises(IndexError, match=r"mode\(\): Expected reduction dim 1 to have non-zero size"):
        torch.mode(torch.zeros(2, 0, device="tpu"), 1)
    # The out= form, with CPU's dtype checks.
    with no_fallback():
        check(lambda t: tuple(torch.mode(t, 1, out=(t.new_empty(0), t.new_empty(0, dtype=torch.long)))), x)
    for device in ("cpu", "tpu"):
        with pytest.raises(RuntimeError, match="expected scalar type 'Long' but got 'Float' for values output"):
            t = x.to(device)
            torch.mode(t, 1, out=(t.new_empty(0, dtype=torch.float), t.new_empty(0, dtype=torch.long)))


def test_old_unique_and_index_fill_backward():
    # `aten::_unique` is what `index_fill`'s backward calls on the indices.
    x = torch.tensor([3, 1, 3, 2, 1, 0])
    with no_fallback():
        check(lambda t: torch.ops.aten._unique(t, True, True), x)
        check(
            lambda a, i: a.index_fill(1, i, 2.0),
            torch.randn(4, 5, requires_grad=True),
            torch.tensor([0, 2, 0]),
            grad=True,
        )
