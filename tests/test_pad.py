"""Reflection, replication and circular padding (1-3 d, with and without a batch dim) and
their gradients against CPU PyTorch."""

import pytest
import torch
import torch.nn.functional as F
from helpers import check, no_fallback

CASES = [
    ((2, 3, 6), (2, 3)),
    ((3, 6), (1, 0)),
    ((2, 3, 5, 6), (1, 2, 3, 0)),
    ((3, 5, 6), (2, 2, 1, 1)),
    ((1, 2, 3, 4, 5), (1, 1, 2, 0, 0, 2)),
]


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
@pytest.mark.parametrize("shape,padding", CASES)
def test_pad_modes(mode, shape, padding):
    x = torch.randn(shape, requires_grad=True)
    with no_fallback():
        check(lambda t: F.pad(t, padding, mode=mode), x, grad=True)


def test_replicate_integers_and_reflect_too_large_raises():
    with no_fallback():
        check(lambda t: F.pad(t, (2, 3), mode="replicate"), torch.arange(12).reshape(1, 3, 4))
    for device in ("cpu", "tpu"):
        with pytest.raises(RuntimeError, match="Padding size should be less than"):
            F.pad(torch.randn(1, 2, 3, device=device), (3, 0), mode="reflect")


@pytest.mark.parametrize("mode", ["reflect", "replicate"])
def test_infinite_values_and_complex(mode):
    # Infinite inputs and gradients stay where they are (a one-hot matrix product spread
    # them as NaN over the whole row).
    x = torch.randn(1, 2, 5)
    x[0, 0, 0], x[0, 1, 4] = float("inf"), -float("inf")
    cot = torch.randn(1, 2, 8)
    cot[0, 1, 0] = float("inf")
    with no_fallback():
        check(lambda t: F.pad(t, (2, 1), mode=mode), x)
        check(lambda t: F.pad(t, (2, 1), mode=mode), torch.complex(x, x.flip(-1)))
        for device in ("cpu", "tpu"):
            t = x.detach().to(device).requires_grad_()
            F.pad(t, (2, 1), mode=mode).backward(cot.to(device))
            if device == "cpu":
                expected = t.grad
        torch.testing.assert_close(t.grad.cpu(), expected)


@pytest.mark.parametrize("mode", ["reflect", "replicate"])
@pytest.mark.parametrize("padding", [(-1, 2), (2, -1), (-2, -1), (-1, 1, 2, -2)], ids=str)
def test_negative_padding_crops(mode, padding):
    x = torch.randn(2, 5, 6, requires_grad=True)
    with no_fallback():
        check(lambda t: F.pad(t, padding, mode=mode), x, grad=True)
    for device in ("cpu", "tpu"):
        with pytest.raises(RuntimeError, match=r"input \(W: 6\) is too small"):
            F.pad(x.detach().to(device), (-6, 0), mode=mode)


@pytest.mark.parametrize("padding", [(-6, 3), (4, -6), (-7, 2, 1, -5), (8, -1, -1, -3)], ids=str)
def test_replicate_padding_that_crops_away_a_whole_side(padding):
    # Output element j repeats input element clamp(j - before, 0, n - 1), as CPU indexes:
    # a crop of every kept element still pads from the far edge.
    x = torch.randn(2, 5, 6, requires_grad=True)
    with no_fallback():
        check(lambda t: F.pad(t, padding, mode="replicate"), x, grad=True)


@pytest.mark.parametrize(
    "pad,shape",
    [
        (torch.nn.ReflectionPad1d(2), (3, 0, 10)),
        (torch.nn.ReflectionPad2d(2), (3, 0, 10, 10)),
        (torch.nn.ReflectionPad3d(3), (3, 0, 10, 10, 10)),
        (torch.nn.ReplicationPad2d(1), (3, 4, 0, 5)),
    ],
)
def test_empty_non_batch_dims_raise_as_cpu(pad, shape):
    # An empty batch pads to an empty result; an empty channel or spatial dim is refused.
    for device in ["cpu", "tpu"]:
        with pytest.raises(RuntimeError, match="batch mode\\) tensor with possibly 0 batch size"):
            pad(torch.randn(shape, device=device))
    empty_batch = (0,) + tuple(n or 3 for n in shape[1:])
    assert pad(torch.randn(empty_batch).to("tpu")).shape == pad(torch.randn(empty_batch)).shape
