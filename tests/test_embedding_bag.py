"""embedding_bag against CPU PyTorch: sum, mean and max over bags given by offsets or a
2-d input, empty bags, padding_idx, include_last_offset, per-sample weights, int32 indices,
half types, gradients of the table (also scaled by frequency) and of the per-sample weights,
nn.EmbeddingBag in a model, and the errors CPU raises."""

import pytest
import torch
import torch.nn.functional as F
from helpers import check, no_fallback

IDX = torch.tensor([1, 2, 4, 5, 4, 3, 2, 9])
OFF = torch.tensor([0, 4, 4, 6])  # bag 1 is empty


def aux(w, idx, off, mode, psw=None, last=False, pad=-1):
    return torch._embedding_bag(w, idx, off, False, mode, False, psw, last, pad)


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_forward_and_grad(mode):
    w = torch.randn(10, 3, requires_grad=True)
    with no_fallback():
        check(lambda w, i, o: F.embedding_bag(i, w, o, mode=mode), w, IDX, OFF, grad=True)
        check(lambda w, i: F.embedding_bag(i, w, mode=mode), w, IDX.view(2, 4), grad=True)
        check(lambda w, i, o: F.embedding_bag(i, w, o, mode=mode, padding_idx=2), w, IDX, OFF, grad=True)
        last = torch.tensor([0, 4, 4, 8])
        check(lambda w, i, o: F.embedding_bag(i, w, o, mode=mode, include_last_offset=True), w, IDX, last, grad=True)
        check(lambda w, i, o: F.embedding_bag(i, w, o, mode=mode), w, IDX.int(), OFF.int(), grad=True)
        if mode != "max":
            check(lambda w, i, o: F.embedding_bag(i, w, o, mode=mode, scale_grad_by_freq=True), w, IDX, OFF, grad=True)


@pytest.mark.parametrize("mode", [0, 1, 2])
@pytest.mark.parametrize("case", ["plain", "padding", "int32_last"])
def test_auxiliary_outputs(mode, case):
    # Shapes are those torch's meta function gives devices other than the CPU (what
    # torch.compile traces with); values are the CPU's mean/max-mode bookkeeping.
    idx, off, last, pad = {
        "plain": (IDX, OFF, False, -1),
        "padding": (IDX, OFF, False, 2),
        "int32_last": (IDX.int(), torch.tensor([0, 4, 4, 8]).int(), True, -1),
    }[case]
    w = torch.randn(10, 3)
    with no_fallback():
        got = [t.cpu() for t in aux(w.to("tpu"), idx.to("tpu"), off.to("tpu"), mode, last=last, pad=pad)]
    meta = aux(w.to("meta"), idx.to("meta"), off.to("meta"), mode, last=last, pad=pad)
    assert [(t.shape, t.dtype) for t in got] == [(t.shape, t.dtype) for t in meta]
    cpu = aux(w, idx, off, mode, last=last, pad=pad)
    torch.testing.assert_close(got[0], cpu[0])
    book = aux(w, idx, off, max(mode, 1), last=last, pad=pad)  # the CPU fills these in mean/max mode
    assert got[1].tolist() == book[1].tolist()
    assert got[2][: len(book[2])].tolist() == book[2].tolist()
    if mode == 2:
        assert got[3].tolist() == cpu[3].tolist()


def test_max_keeps_the_first_of_equal_values():
    w = torch.tensor([[1.0, 2.0], [1.0, 0.0], [0.0, 2.0]])
    with no_fallback():
        check(lambda w, i, o: aux(w, i, o, 2), w, torch.tensor([1, 0, 2, 2, 1]), torch.tensor([0, 3]))


def test_per_sample_weights():
    w = torch.randn(10, 3, requires_grad=True)
    psw = torch.rand(8, requires_grad=True)
    with no_fallback():
        check(
            lambda w, p, i, o: F.embedding_bag(i, w, o, mode="sum", per_sample_weights=p), w, psw, IDX, OFF, grad=True
        )
        check(
            lambda w, p, i, o: F.embedding_bag(i, w, o, mode="sum", per_sample_weights=p, padding_idx=4),
            w,
            psw,
            IDX,
            OFF,
            grad=True,
        )


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float64])
def test_dtypes(dtype):
    w = torch.randn(10, 3).to(dtype)
    with no_fallback():
        for mode in ("sum", "mean", "max"):
            check(lambda w, i, o: F.embedding_bag(i, w, o, mode=mode), w, IDX, OFF, atol=1e-2, rtol=1e-2)


def test_empty_input():
    w = torch.randn(10, 3, requires_grad=True)
    with no_fallback():
        for mode in ("sum", "mean", "max"):
            check(lambda w, i, o: F.embedding_bag(i, w, o, mode=mode), w, IDX[:0], torch.tensor([0, 0]))


def test_module_training_matches_cpu():
    torch.manual_seed(0)
    bag = torch.nn.EmbeddingBag(50, 8, mode="mean")
    head = torch.nn.Linear(8, 1)
    idx = torch.randint(50, (64,))
    off = torch.arange(0, 64, 4)

    def step(bag, head, idx, off):
        opt = torch.optim.SGD([*bag.parameters(), *head.parameters()], lr=0.5)
        for _ in range(3):
            loss = head(bag(idx, off)).square().mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        return bag.weight.detach(), loss.detach()

    import copy

    with no_fallback():
        got = step(copy.deepcopy(bag).to("tpu"), copy.deepcopy(head).to("tpu"), idx.to("tpu"), off.to("tpu"))
    want = step(bag, head, idx, off)
    torch.testing.assert_close(got[0].cpu(), want[0], atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(got[1].cpu(), want[1], atol=1e-5, rtol=1e-5)


def test_errors_match_cpu():
    w = torch.randn(10, 3, device="tpu")
    with no_fallback():
        with pytest.raises(RuntimeError, match="not in the valid range"):
            F.embedding_bag(torch.tensor([1, 12], device="tpu"), w, torch.tensor([0], device="tpu")).cpu()
        with pytest.raises(RuntimeError, match=r"offsets\[0\] has to be 0"):
            F.embedding_bag(torch.tensor([1, 2], device="tpu"), w, torch.tensor([1], device="tpu")).cpu()
        with pytest.raises(RuntimeError, match=r"offsets\[-1\] can not be greater than input's length 2"):
            F.embedding_bag(torch.tensor([1, 2], device="tpu"), w, torch.tensor([0, 3], device="tpu")).cpu()
        with pytest.raises(RuntimeError, match="per_sample_weights only supported with mode='sum'"):
            aux(w, torch.tensor([1, 2], device="tpu"), torch.tensor([0], device="tpu"), 1, torch.rand(2, device="tpu"))
        # The process goes on after a failed check.
        torch.testing.assert_close(
            F.embedding_bag(IDX.to("tpu"), w, OFF.to("tpu")).cpu(), F.embedding_bag(IDX, w.cpu(), OFF)
        )


@pytest.mark.parametrize("mode", ["sum", "max"])
def test_compiled_matches_cpu(mode):
    w = torch.randn(10, 3)

    def f(w, i, o):
        return (F.embedding_bag(i, w, o, mode=mode) * torch.arange(3.0, device=w.device)).sum()

    wt = w.to("tpu").requires_grad_()
    with no_fallback():
        out = torch.compile(f, fullgraph=True)(wt, IDX.to("tpu"), OFF.to("tpu"))
        out.backward()
    wc = w.clone().requires_grad_()
    want = f(wc, IDX, OFF)
    want.backward()
    torch.testing.assert_close(out.detach().cpu(), want.detach())
    torch.testing.assert_close(wt.grad.cpu(), wc.grad)
