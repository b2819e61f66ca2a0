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


@pytest.mark.parametrize("lower,upper", [(0.125, 1 / 3), (0.0, 1.0), (-0.5, 0.2), (0.3, 0.3)], ids=str)
def test_rrelu_eval_is_leaky_relu_with_the_mean_slope(lower, upper):
    torch.manual_seed(30)
    x = torch.randn(4, 7, requires_grad=True)
    with no_fallback():
        check(lambda x: F.rrelu(x, lower, upper, training=False), x, grad=True)
        noise = torch.full((4, 7), 5.0)
        check(lambda x, n: (aten.rrelu_with_noise(x, n, lower, upper, False), n), x.detach(), noise)
        check(lambda x, n: aten.rrelu_with_noise_functional(x, n, lower, upper, False), x.detach(), noise)


@pytest.mark.parametrize("dtype", [torch.float64, torch.bfloat16, torch.float16], ids=str)
def test_rrelu_eval_dtypes(dtype):
    x = torch.randn(3, 5).to(dtype).requires_grad_()
    with no_fallback():
        check(lambda x: F.rrelu(x, 0.1, 0.4, training=False), x, grad=True, **tol(dtype))


def rrelu_train(x, lower, upper):
    noise = torch.empty_like(x)
    out = aten.rrelu_with_noise(x, noise, lower, upper, True)
    return out, noise


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16], ids=str)
@pytest.mark.parametrize("lower,upper", [(0.125, 1 / 3), (0.0, 1.0), (-0.5, -0.1)], ids=str)
def test_rrelu_training_draws_noise_in_range(lower, upper, dtype):
    x = torch.randn(64, 33).to(dtype).to("tpu")
    with no_fallback():
        out, noise = rrelu_train(x, lower, upper)
    assert out.dtype == noise.dtype == dtype and out.shape == noise.shape == x.shape
    x, out, noise = x.cpu(), out.cpu(), noise.cpu()
    neg = x <= 0
    assert torch.equal(noise[~neg], torch.ones_like(noise[~neg]))
    assert bool(((noise[neg] >= lower) & (noise[neg] <= upper)).all())
    assert torch.equal(out, x * noise)
    if dtype == torch.float32 and upper - lower > 0.5:
        assert noise[neg].unique().numel() > neg.sum() // 2, "draws repeat"


def test_rrelu_training_reproducible_under_manual_seed_and_forms_agree():
    x = torch.randn(8, 9, device="tpu")
    runs = []
    with no_fallback():
        for form in range(4):
            torch.manual_seed(7)
            if form == 0:
                runs.append(rrelu_train(x, 0.1, 0.3))
            elif form == 1:
                runs.append(aten.rrelu_with_noise_functional(x, torch.empty_like(x), 0.1, 0.3, True))
            elif form == 2:
                noise, out = torch.empty_like(x), torch.empty_like(x)
                aten.rrelu_with_noise.out(x, noise, 0.1, 0.3, True, out=out)
                runs.append((out, noise))
            else:
                y, noise = x.clone(), torch.empty_like(x)
                aten.rrelu_with_noise_(y, noise, 0.1, 0.3, True)
                runs.append((y, noise))
        torch.manual_seed(8)
        other = rrelu_train(x, 0.1, 0.3)
    for out, noise in runs[1:]:
        assert torch.equal(out.cpu(), runs[0][0].cpu()) and torch.equal(noise.cpu(), runs[0][1].cpu())
    assert not torch.equal(other[1].cpu(), runs[0][1].cpu())


def test_rrelu_training_gradient_is_grad_times_noise():
    x = torch.randn(6, 5, device="tpu", requires_grad=True)
    with no_fallback():
        torch.manual_seed(3)
        y = F.rrelu(x, 0.1, 0.3, training=True)
        g = torch.randn_like(y)
        y.backward(g)
    noise = torch.where(x.detach() > 0, torch.ones_like(y), y.detach() / x.detach())
    torch.testing.assert_close(x.grad.cpu(), (g * noise).cpu())


def test_rrelu_backward_op():
    gy, x, noise = torch.randn(3, 4), torch.randn(3, 4), torch.rand(3, 4)
    with no_fallback():
        for lower, upper, training in [(0.1, 0.3, True), (0.2, 0.2, True), (0.1, 0.3, False)]:
            check(lambda g, x, n: aten.rrelu_with_noise_backward(g, x, n, lower, upper, training, False), gy, x, noise)
        check(lambda g, x, n: aten.rrelu_with_noise_backward(g, x, n, 0.1, 0.3, False, True), gy, x, noise)


RRELU_BAD_ARGS = [
    ("noise shape", lambda x: aten.rrelu_with_noise(x, torch.empty_like(x[0]), 0.1, 0.3, True)),
    ("noise dtype", lambda x: aten.rrelu_with_noise(x, torch.empty_like(x, dtype=torch.float64), 0.1, 0.3, True)),
    ("lower above upper", lambda x: aten.rrelu_with_noise(x, torch.empty_like(x), 0.5, 0.3, True)),
    (
        "in-place backward negative slope",
        lambda x: aten.rrelu_with_noise_backward(x, x, x, -0.5, -0.3, False, True),
    ),
]


@pytest.mark.parametrize("name,fn", RRELU_BAD_ARGS, ids=[c[0] for c in RRELU_BAD_ARGS])
def test_rrelu_bad_arguments_raise_like_cpu(name, fn):
    x = torch.randn(4, 5)
    with pytest.raises(RuntimeError) as cpu:
        fn(x)
    with no_fallback(), pytest.raises(RuntimeError) as dev:
        fn(x.to("tpu"))
    assert str(dev.value).splitlines()[0] == str(cpu.value).splitlines()[0]


@pytest.mark.parametrize("training", [False, True])
def test_rrelu_integer_input_raises_like_cpu(training):
    x = torch.randint(-3, 3, (4, 5))
    with pytest.raises(NotImplementedError) as cpu:
        aten.rrelu_with_noise(x, torch.empty_like(x), 0.1, 0.3, training)
    with pytest.raises(NotImplementedError) as dev:
        aten.rrelu_with_noise(x.to("tpu"), torch.empty_like(x).to("tpu"), 0.1, 0.3, training)
    assert str(dev.value) == str(cpu.value)


def test_rrelu_training_compiled_is_reproducible_and_in_range():
    f = torch.compile(lambda x: F.rrelu(x, 0.1, 0.3, training=True), backend="tpu")
    x = torch.randn(6, 7, device="tpu")
    with no_fallback():
        torch.manual_seed(5)
        y = f(x)
        torch.manual_seed(5)
        y2 = f(x)
    assert torch.equal(y.cpu(), y2.cpu())
    x, y = x.cpu(), y.cpu()
    neg = x <= 0
    assert torch.equal(y[~neg], x[~neg])
    slope = y[neg] / x[neg]
    assert bool(((slope >= 0.1 - 1e-6) & (slope <= 0.3 + 1e-6)).all())
