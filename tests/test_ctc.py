"""ctc_loss against CPU PyTorch: concatenated and padded targets, the three reductions,
zero_infinity, empty targets, repeated labels, input lengths of 0 and 1, float64,
gradients, log alpha inside the region the recursion reaches, and the errors CPU raises."""

import copy

import pytest
import torch
import torch.nn.functional as F
from helpers import check, no_fallback

T, N, C = 12, 4, 6
INPUT_LENGTHS = [12, 7, 11, 1]  # the last is too short for its target: infinite loss
TARGET_LENGTHS = [3, 0, 5, 2]


def log_probs(dtype=torch.float32, t=T, n=N):
    return torch.randn(t, n, C, dtype=dtype).log_softmax(2).detach().requires_grad_()


def concatenated(lengths=TARGET_LENGTHS):
    tg = torch.randint(1, C, (sum(lengths),))
    tg[1] = tg[0]  # a repeated label: no skip over the blank between them
    return tg


def padded(lengths=TARGET_LENGTHS):
    tg = torch.randint(1, C, (len(lengths), max(lengths) + 2))
    tg[0, 1] = tg[0, 0]
    return tg


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("targets", [concatenated, padded])
def test_loss_and_grad(reduction, targets):
    lp, tg = log_probs(), targets()
    il, tl = torch.tensor(INPUT_LENGTHS), torch.tensor(TARGET_LENGTHS)
    with no_fallback():
        check(lambda x, t: F.ctc_loss(x, t, il, tl, reduction=reduction, zero_infinity=True), lp, tg, grad=True)


def test_infinite_loss_without_zero_infinity():
    # CPU gives inf and a NaN gradient for the sample that cannot emit its target.
    lp, tg = log_probs(torch.float64), concatenated()
    with no_fallback():
        check(lambda x, t: F.ctc_loss(x, t, INPUT_LENGTHS, TARGET_LENGTHS, reduction="none"), lp, tg, grad=True)


def test_float64_blank_and_int32_targets():
    lp = log_probs(torch.float64)
    tg = torch.randint(0, C - 1, (N, 4), dtype=torch.int32)  # labels avoid blank = C - 1
    lengths = [4, 2, 3, 1]
    with no_fallback():
        check(lambda x, t: F.ctc_loss(x, t, [T] * N, lengths, blank=C - 1, reduction="sum"), lp, tg, grad=True)


def test_no_input_steps_and_empty_targets():
    lp = log_probs(t=5, n=3)
    lengths = [0, 0, 2]
    tg = torch.randint(1, C, (2,))
    with no_fallback():
        check(
            lambda x, t: F.ctc_loss(x, t, [0, 3, 5], lengths, reduction="none", zero_infinity=True), lp, tg, grad=True
        )


def test_unbatched():
    lp = torch.randn(T, C).log_softmax(1).detach().requires_grad_()
    tg = torch.tensor([1, 2, 2, 3])
    with no_fallback():
        check(lambda x, t: F.ctc_loss(x, t, torch.tensor(T), torch.tensor(4)), lp, tg, grad=True)


def test_log_alpha_where_reached():
    lp, tg = log_probs(torch.float64), concatenated()
    with no_fallback():
        nll, alpha = (v.cpu() for v in torch._ctc_loss(lp.to("tpu"), tg.to("tpu"), INPUT_LENGTHS, TARGET_LENGTHS))
    want_nll, want_alpha = torch._ctc_loss(lp, tg, INPUT_LENGTHS, TARGET_LENGTHS)
    torch.testing.assert_close(nll, want_nll)
    assert alpha.shape == want_alpha.shape == (N, T, 2 * max(TARGET_LENGTHS) + 1)
    # The CPU leaves the rest of log alpha unwritten.
    for k, (il, tl) in enumerate(zip(INPUT_LENGTHS, TARGET_LENGTHS)):
        torch.testing.assert_close(alpha[k, :il, : 2 * tl + 1], want_alpha[k, :il, : 2 * tl + 1])


def test_model_step_matches_cpu():
    torch.manual_seed(1)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, C))
    x = torch.randn(T, N, 8)
    tg = concatenated()
    tpu_model = copy.deepcopy(model).to("tpu")

    def step(m, x, t):
        loss = F.ctc_loss(m(x).log_softmax(2), t, INPUT_LENGTHS, TARGET_LENGTHS, zero_infinity=True)
        loss.backward()
        return loss.detach(), [p.grad for p in m.parameters()]

    with no_fallback():
        got = step(tpu_model, x.to("tpu"), tg.to("tpu"))
    want = step(model, x, tg)
    torch.testing.assert_close(got[0].cpu(), want[0])
    for g, w in zip(got[1], want[1]):
        torch.testing.assert_close(g.cpu(), w, atol=1e-5, rtol=1e-4)


ERRORS = [
    (lambda lp, tg: torch._ctc_loss(lp, tg.float(), [T] * N, [3] * N), RuntimeError, "scalar type Int"),
    (lambda lp, tg: torch._ctc_loss(lp[0], tg, [T] * N, [3] * N), RuntimeError, "3-dimensional"),
    (lambda lp, tg: torch._ctc_loss(lp, tg[None], [T] * N, [3] * N), RuntimeError, "1 to 2 dimensions"),
    (lambda lp, tg: torch._ctc_loss(lp, tg.flatten(), [T] * N, [2] * N), RuntimeError, "to have size 8 at"),
    (lambda lp, tg: torch._ctc_loss(lp, tg[:, :2], [T] * N, [3] * N), RuntimeError, "size at least 3"),
    (lambda lp, tg: torch._ctc_loss(lp, tg, [T + 1] * N, [3] * N), RuntimeError, "at most 12"),
    (lambda lp, tg: torch._ctc_loss(lp, tg, [-1] * N, [3] * N), RuntimeError, "at least 0"),
    (lambda lp, tg: torch._ctc_loss(lp, tg, [T] * N, [-1] * N), RuntimeError, "at least 0"),
    (lambda lp, tg: torch._ctc_loss(lp, tg, [T] * N, [3] * N, C), RuntimeError, "blank must be in label range"),
    (lambda lp, tg: torch._ctc_loss(lp, tg, [T], [3] * N), RuntimeError, "input_lengths must be of size"),
    (lambda lp, tg: torch._ctc_loss(lp, tg, [T] * N, [3]), RuntimeError, "target_lengths must be of size"),
    (lambda lp, tg: torch._ctc_loss(lp.half(), tg, [T] * N, [3] * N), NotImplementedError, "'Half'"),
]


@pytest.mark.parametrize("case", range(len(ERRORS)))
def test_errors_match_cpu(case):
    fn, kind, text = ERRORS[case]
    lp, tg = log_probs().detach(), torch.randint(1, C, (N, 3))
    with pytest.raises(kind, match=text) as want:
        fn(lp, tg)
    with no_fallback(), pytest.raises(kind) as got:
        fn(lp.to("tpu"), tg.to("tpu"))
    assert str(got.value) == str(want.value)
