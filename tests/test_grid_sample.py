"""3-d grid sampling (`grid_sampler_3d` and its backward) and the 2-d backward on the device
match CPU PyTorch: values and gradients of input and grid for every interpolation / padding /
align_corners combination, dtypes, empty shapes and CPU's errors, with no CPU fallback."""

import itertools

import pytest
import torch
import torch.nn.functional as F
from helpers import check, no_fallback

aten = torch.ops.aten

MODES = list(itertools.product(["bilinear", "nearest"], ["zeros", "border", "reflection"], [False, True]))


def sample3d(n, c, size, out, spread=1.2, dtype=torch.float32):
    """An input and a grid reaching a bit past [-1, 1] (so padding matters)."""
    x = torch.randn(n, c, *size).to(dtype).requires_grad_()
    g = ((torch.rand(n, *out, 3) * 2 - 1) * spread).to(dtype).requires_grad_()
    return x, g


@pytest.mark.parametrize("mode,padding_mode,align_corners", MODES, ids=str)
def test_grid_sample3d(mode, padding_mode, align_corners):
    torch.manual_seed(3)

    def fn(x, g):
        return F.grid_sample(x, g, mode=mode, padding_mode=padding_mode, align_corners=align_corners)

    with no_fallback():
        check(fn, *sample3d(2, 3, (4, 5, 6), (3, 4, 5)), grad=True, atol=1e-4, rtol=1e-4)
        check(fn, *sample3d(1, 2, (1, 3, 2), (2, 2, 7), spread=3.0), grad=True, atol=1e-4, rtol=1e-4)


def test_grid_sample3d_far_outside_reflects_many_times():
    torch.manual_seed(4)
    with no_fallback():
        for align in [False, True]:
            check(
                lambda x, g: F.grid_sample(x, g, padding_mode="reflection", align_corners=align),
                *sample3d(2, 2, (3, 4, 5), (2, 3, 4), spread=7.0),
                grad=True,
                atol=1e-4,
                rtol=1e-4,
            )


@pytest.mark.parametrize("dtype", [torch.float64, torch.bfloat16, torch.float16], ids=str)
def test_grid_sample3d_dtypes(dtype):
    torch.manual_seed(5)
    x, g = sample3d(2, 2, (3, 4, 5), (2, 3, 2), dtype=dtype)
    # CPU computes half types in their own precision, coordinates included.
    opts = dict(atol=5e-2, rtol=5e-2) if dtype != torch.float64 else {}
    with no_fallback():
        check(lambda x, g: F.grid_sample(x, g, align_corners=False), x.detach(), g.detach(), **opts)
        if dtype == torch.float64:
            check(lambda x, g: F.grid_sample(x, g, padding_mode="border", align_corners=True), x, g, grad=True)


def test_grid_sample3d_ops_out_and_output_mask():
    torch.manual_seed(6)
    x, g = (t.detach() for t in sample3d(2, 3, (4, 3, 5), (2, 2, 3)))
    gy = torch.randn(2, 3, 2, 2, 3)
    with no_fallback():
        check(lambda x, g: aten.grid_sampler_3d.out(x, g, 0, 1, False, out=torch.empty(0, device=x.device)), x, g)
        check(lambda gy, x, g: aten.grid_sampler_3d_backward(gy, x, g, 0, 2, True, [True, True]), gy, x, g)
        check(lambda gy, x, g: aten.grid_sampler_3d_backward(gy, x, g, 1, 0, False, [True, True]), gy, x, g)
        check(lambda gy, x, g: aten.grid_sampler_3d_backward(gy, x, g, 0, 0, False, [False, True]), gy, x, g)


def test_grid_sample3d_empty_shapes():
    with no_fallback():
        check(
            lambda x, g: F.grid_sample(x, g, align_corners=False), torch.randn(2, 0, 3, 3, 3), torch.rand(2, 2, 2, 2, 3)
        )
        check(
            lambda x, g: F.grid_sample(x, g, align_corners=False), torch.randn(2, 3, 3, 3, 3), torch.rand(2, 0, 2, 2, 3)
        )
        check(
            lambda x, g: F.grid_sample(x, g, align_corners=False), torch.randn(0, 3, 3, 3, 3), torch.rand(0, 1, 2, 2, 3)
        )


X = torch.randn(2, 3, 4, 5, 6)
G = torch.rand(2, 3, 4, 5, 3)

BAD_ARGS = [
    ("batch size", lambda x, g: aten.grid_sampler_3d(x, g[:1], 0, 0, False)),
    ("grid last dim", lambda x, g: aten.grid_sampler_3d(x, g[..., :2], 0, 0, False)),
    ("unbatched", lambda x, g: aten.grid_sampler_3d(x[0], g[0], 0, 0, False)),
    ("empty spatial dim", lambda x, g: aten.grid_sampler_3d(x[:, :, :0], g, 0, 0, False)),
    ("grid dtype", lambda x, g: aten.grid_sampler_3d(x, g.double(), 0, 0, False)),
    ("backward batch size", lambda x, g: aten.grid_sampler_3d_backward(x, x, g[:1], 0, 0, False, [True, True])),
]


@pytest.mark.parametrize("name,fn", BAD_ARGS, ids=[c[0] for c in BAD_ARGS])
def test_grid_sample3d_bad_arguments_raise_like_cpu(name, fn):
    with pytest.raises(RuntimeError) as cpu:
        fn(X, G)
    with no_fallback(), pytest.raises(RuntimeError) as dev:
        fn(X.to("tpu"), G.to("tpu"))
    assert str(dev.value).splitlines()[0] == str(cpu.value).splitlines()[0]


def test_grid_sample3d_integer_input_raises_like_cpu():
    x, g = X.long(), G.long()
    with pytest.raises(NotImplementedError) as cpu:
        aten.grid_sampler_3d(x, g, 0, 0, False)
    with pytest.raises(NotImplementedError) as dev:
        aten.grid_sampler_3d(x.to("tpu"), g.to("tpu"), 0, 0, False)
    assert str(dev.value) == str(cpu.value)


@pytest.mark.parametrize("mode,padding_mode,align_corners", MODES, ids=str)
def test_grid_sample2d_gradients(mode, padding_mode, align_corners):
    torch.manual_seed(7)
    x = torch.randn(2, 3, 5, 6, requires_grad=True)
    g = ((torch.rand(2, 4, 3, 2) * 2 - 1) * 1.5).requires_grad_()
    gy = torch.randn(2, 3, 4, 3)
    interp = ["bilinear", "nearest"].index(mode)
    pad = ["zeros", "border", "reflection"].index(padding_mode)

    def fn(x, g):
        return F.grid_sample(x, g, mode=mode, padding_mode=padding_mode, align_corners=align_corners)

    with no_fallback():
        check(fn, x, g, grad=True, atol=1e-4, rtol=1e-4)
        check(
            lambda gy, x, g: aten.grid_sampler_2d_backward(gy, x, g, interp, pad, align_corners, [True, True]),
            gy,
            x.detach(),
            g.detach(),
            atol=1e-4,
            rtol=1e-4,
        )
