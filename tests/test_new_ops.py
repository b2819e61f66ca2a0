"""`embedding_renorm_` and `rrelu_with_noise` on the device match CPU PyTorch: values,
in-place updates, gradients, dtypes and CPU's errors, with no CPU fallback; random rrelu
draws are checked by range, `output == x * noise` and reproducibility under one seed."""

import pytest
import torch
import torch.nn.functional as F
from helpers import check, no_fallback, tol

aten = torch.ops.aten


def renorm_inplace(w, idx, max_norm, norm_type):
    w = w.clone()
    torch.embedding_renorm_(w, idx, max_norm, norm_type)
    return w


@pytest.mark.parametrize("norm_type", [2.0, 1.0, 3.0, float("inf")], ids=str)
@pytest.mark.parametrize("max_norm", [0.5, 1.5, 100.0], ids=str)
def test_embedding_renorm(max_norm, norm_type):
    torch.manual_seed(20)
    w = torch.randn(10, 4)
    idx = torch.tensor([[1, 3, 3], [9, 0, 1]])
    with no_fallback():
        check(renorm_inplace, w, idx, max_norm, norm_type)
        check(lambda w, i: aten.embedding_renorm(w, i, max_norm, norm_type), w, idx)
        check(lambda w, i: aten.embedding_renorm.out(w, i, max_norm, norm_type, out=torch.empty_like(w)), w, idx)


def test_embedding_renorm_repeated_rows_scale_once_and_int32_indices():
    w = torch.randn(6, 5) * 3
    idx = torch.tensor([2, 2, 2, 5, 2], dtype=torch.int32)
    with no_fallback():
        check(renorm_inplace, w, idx, 1.0, 2.0)
        check(renorm_inplace, w, torch.tensor([-1, 0]), 1.0, 2.0)
        check(renorm_inplace, w, torch.tensor([], dtype=torch.long), 1.0, 2.0)


@pytest.mark.parametrize("dtype", [torch.float64, torch.bfloat16, torch.float16], ids=str)
def test_embedding_renorm_dtypes(dtype):
    w = (torch.randn(8, 3) * 2).to(dtype)
    with no_fallback():
        check(renorm_inplace, w, torch.tensor([0, 4, 7]), 1.0, 2.0, **tol(dtype))


def test_embedding_with_max_norm_renorms_the_weight_in_place():
    torch.manual_seed(21)
    w = torch.randn(10, 3) * 2
    idx = torch.tensor([[0, 2, 2], [7, 9, 0]])

    def fn(w, idx):
        out = F.embedding(idx, w, max_norm=1.0)
        return out, w

    with no_fallback():
        check(fn, w, idx)


RENORM_BAD_ARGS = [
    ("self rank", lambda w, i: torch.embedding_renorm_(w[0], i, 1.0, 2.0)),
    ("index dtype", lambda w, i: torch.embedding_renorm_(w, i.float(), 1.0, 2.0)),
]


@pytest.mark.parametrize("name,fn", RENORM_BAD_ARGS, ids=[c[0] for c in RENORM_BAD_ARGS])
def test_embedding_renorm_bad_arguments_raise_like_cpu(name, fn):
    w, i = torch.randn(5, 3), torch.tensor([0, 1])
    with pytest.raises(RuntimeError) as cpu:
        fn(w, i)
    with no_fallback(), pytest.raises(RuntimeError) as dev:
        fn(w.to("tpu"), i.to("tpu"))
    assert str(dev.value).splitlines()[0] == str(cpu.value).splitlines()[0]


def test_embedding_renorm_errors_integer_weight_and_index_out_of_range():
    w, i = torch.randint(0, 5, (5, 3)), torch.tensor([0, 1])
    with pytest.raises(NotImplementedError) as cpu:
        torch.embedding_renorm_(w, i, 1.0, 2.0)
    with pytest.raises(NotImplementedError) as dev:
        torch.embedding_renorm_(w.to("tpu"), i.to("tpu"), 1.0, 2.0)
    assert str(dev.value) == str(cpu.value)
    w, i = torch.randn(5, 3), torch.tensor([0, 5])
    with pytest.raises(IndexError) as cpu:
        torch.embedding_renorm_(w, i, 1.0, 2.0)
    with no_fallback(), pytest.raises(IndexError) as dev:
        torch.embedding_renorm_(w.to("tpu"), i.to("tpu"), 1.0, 2.0)
        torch.tpu.synchronize()
    assert str(dev.value).splitlines()[0] == str(cpu.value).splitlines()[0]
