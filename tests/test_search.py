"""isin, histc, searchsorted and bucketize against CPU PyTorch: promotion, numbers on
either side, ties and NaN, values on bin edges and outside the range, batched sequences,
sorters, and the errors CPU raises."""

import pytest
import torch
from helpers import check, no_fallback


def test_isin():
    e = torch.tensor([[1, 2, 3], [4, 5, 6]])
    with no_fallback():
        check(torch.isin, e, torch.tensor([2, 6, 9]))
        check(lambda a, b: torch.isin(a, b, invert=True), e, torch.tensor([2, 6]))
        check(torch.isin, e, torch.tensor([1.0, 3.5]))  # promoted
        check(lambda a: torch.isin(a, 5), e)
        check(lambda b: torch.isin(3, b), torch.tensor([1, 3]))
        check(torch.isin, torch.tensor([1.0, float("nan")]), torch.tensor([float("nan"), 1.0]))
        check(torch.isin, e, torch.tensor([], dtype=torch.int64))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
def test_histc(dtype):
    x = torch.randn(1000).to(dtype)
    with no_fallback():
        check(lambda t: torch.histc(t, bins=10), x)  # the data's own range
        check(lambda t: torch.histc(t, bins=7, min=-1, max=1), x)  # some outside
        edges = torch.linspace(-2, 2, 9).to(dtype)
        check(lambda t: torch.histc(t, bins=8, min=-2, max=2), torch.cat([edges, edges]))
        check(lambda t: torch.histc(t, bins=4), torch.full((5,), 2.0, dtype=dtype))
        check(lambda t: torch.histc(t, bins=3), torch.tensor([], dtype=dtype))
        check(lambda t: torch.histc(t, bins=5, min=0, max=3), torch.tensor([0.0, float("nan"), 3.0, 1.5], dtype=dtype))


def test_histc_range_is_not_cached_across_calls():
    x = torch.randn(50)
    with no_fallback():
        for lo, hi in [(0, 0), (-10, 0), (-1, 1), (0.5, 3)]:
            check(lambda t: torch.histc(t, bins=4, min=lo, max=hi), x)


def test_histc_counts_integers_as_cuda_does():
    """CPU refuses integer input; CUDA counts it (Transformers' MoE routers rely on it)."""
    ids = torch.tensor([0, 3, 3, 1, 7, 2, 3, 5], dtype=torch.int32)
    with no_fallback():
        got = torch.histc(ids.to("tpu"), bins=6, min=0, max=5)
    assert got.dtype == torch.int32
    assert got.cpu().tolist() == torch.histc(ids.float(), bins=6, min=0, max=5).int().tolist()


def test_histc_errors():
    x = torch.randn(4, device="tpu")
    with pytest.raises(RuntimeError, match="bins must be > 0"):
        torch.histc(x, bins=0)
    with pytest.raises(RuntimeError, match="max must be larger than min"):
        torch.histc(x, min=2, max=1)
    with pytest.raises(NotImplementedError):
        torch.histc(torch.ones(3, dtype=torch.bool, device="tpu"))
    y = torch.histc(torch.tensor([1.0, float("inf")], device="tpu"), bins=3)
    with pytest.raises(RuntimeError, match="not finite"):
        y.cpu()


@pytest.mark.parametrize("right", [False, True])
def test_searchsorted(right):
    seq = torch.tensor([1.0, 2.0, 2.0, 2.0, 5.0, 7.0, float("nan")])
    values = torch.tensor([[0.0, 1.0, 2.0], [3.0, 7.0, 9.0], [float("nan"), 2.5, -1.0]])
    batched = torch.sort(torch.randn(3, 9), dim=-1).values
    with no_fallback():
        check(lambda s, v: torch.searchsorted(s, v, right=right), seq, values)
        check(lambda s, v: torch.searchsorted(s, v, right=right, out_int32=True), seq, values)
        check(lambda s, v: torch.searchsorted(s, v, right=right), batched, torch.randn(3, 4))
        check(lambda s: torch.searchsorted(s, 2.0, right=right), seq)
        check(lambda s, v: torch.searchsorted(s, v, side="right" if right else "left"), batched, batched)
        unsorted = torch.randn(2, 6)
        sorter = torch.argsort(unsorted, dim=-1)
        check(lambda s, v, o: torch.searchsorted(s, v, sorter=o, right=right), unsorted, torch.randn(2, 3), sorter)
        check(
            lambda s, v: torch.searchsorted(s, v, right=right), torch.tensor([1, 3, 5, 7]), torch.tensor([0, 3, 6, 8])
        )
        check(lambda s, v: torch.searchsorted(s, v, right=right), torch.tensor([]), torch.tensor([1.0]))
        empty = torch.zeros(2, 0)
        check(lambda s, v, o: torch.searchsorted(s, v, sorter=o), empty, torch.randn(2, 3), empty.long())


def test_bucketize():
    boundaries = torch.tensor([1, 3, 5, 7, 9])
    v = torch.tensor([[3, 6, 9], [3, 6, 9]])
    with no_fallback():
        check(torch.bucketize, v, boundaries)
        check(lambda a, b: torch.bucketize(a, b, right=True, out_int32=True), v, boundaries)
        check(torch.bucketize, torch.randn(20), torch.linspace(-1, 1, 5))


def test_search_errors():
    with pytest.raises(RuntimeError, match="boundaries tensor should be 1 dimension"):
        torch.searchsorted(torch.zeros(2, 3, device="tpu"), torch.zeros(3, 3, device="tpu"))
    with pytest.raises(RuntimeError, match="side and right can't be set to opposites"):
        torch.searchsorted(torch.zeros(3, device="tpu"), torch.zeros(3, device="tpu"), side="left", right=True)
    with pytest.raises(RuntimeError, match="boundaries tensor must be 1 dimension"):
        torch.bucketize(torch.zeros(3, device="tpu"), torch.zeros(2, 2, device="tpu"))
