"""Memory formats as CPU PyTorch gives them: channels-last tensors made by `contiguous` and
`clone`, kept by pointwise ops, `cat`, convolutions, batch norm and pooling, and by
`resize_as_(preserve_format)`; values equal to the CPU's."""

import pytest
import torch
from helpers import no_fallback

CL, CL3 = torch.channels_last, torch.channels_last_3d


def same_layout(fn, *args):
    """`fn` on tpu copies of `args` gives the CPU's values and strides."""
    want = fn(*args)
    got = fn(*(a.to("tpu") if isinstance(a, torch.Tensor) else a for a in args))
    wants = want if isinstance(want, tuple) else (want,)
    gots = got if isinstance(got, tuple) else (got,)
    for w, g in zip(wants, gots):
        assert g.stride() == w.stride(), (g.stride(), w.stride())
        torch.testing.assert_close(g.cpu(), w)


@pytest.mark.parametrize("shape,fmt", [((2, 3, 4, 5), CL), ((2, 3, 2, 4, 5), CL3)])
def test_layout_follows_cpu(shape, fmt):
    torch.manual_seed(0)
    x = torch.randn(shape)
    with no_fallback():
        assert x.to("tpu").contiguous(memory_format=fmt).is_contiguous(memory_format=fmt)
        xl = x.contiguous(memory_format=fmt)
        same_layout(lambda t: t.clone(), xl)
        same_layout(lambda t: t.clone(memory_format=torch.contiguous_format), xl)
        same_layout(lambda t: t + 1, xl)
        same_layout(lambda t: torch.relu(t) * t.sum(), xl)
        same_layout(lambda t, u: t * u, xl, torch.randn(shape[-1]))
        same_layout(lambda t, u: u * t, xl, torch.randn(shape[-1]))
        same_layout(lambda t: t.to(torch.float64), xl)
        same_layout(lambda t: torch.cat([t, t]), xl)
        same_layout(lambda t: (t * 2).add_(1), xl)
        flat = torch.randn(x.numel(), device="tpu")
        flat.resize_as_(xl.to("tpu"), memory_format=torch.preserve_format)
        assert flat.is_contiguous(memory_format=fmt)


def test_nn_ops_keep_channels_last():
    torch.manual_seed(0)
    x = torch.randn(2, 3, 8, 8).contiguous(memory_format=CL)
    w = torch.randn(4, 3, 3, 3)
    with no_fallback():
        same_layout(lambda t, k: torch.nn.functional.conv2d(t, k, padding=1), x, w)
        same_layout(lambda t: torch.nn.functional.max_pool2d(t, 2), x)
        same_layout(lambda t: torch.nn.functional.avg_pool2d(t, 2), x)
        same_layout(lambda t: torch.nn.functional.adaptive_avg_pool2d(t, 3), x)
        same_layout(lambda t: torch.nn.functional.batch_norm(t, None, None, training=True), x)
        same_layout(lambda t: torch.nn.functional.interpolate(t, scale_factor=2), x)
        same_layout(lambda t: torch.nn.functional.interpolate(t, scale_factor=2, mode="bilinear"), x)
        # A contiguous input stays contiguous.
        same_layout(lambda t, k: torch.nn.functional.conv2d(t, k), x.contiguous(), w)


F = torch.nn.functional
MORE_NN_OPS = {
    "group_norm": (lambda t: F.group_norm(t, 2), (2, 4, 5, 6), CL),
    "group_norm_3d": (lambda t: F.group_norm(t, 2), (2, 4, 3, 5, 6), CL3),
    "constant_pad": (lambda t: F.pad(t, (1, 1, 1, 1)), (2, 3, 5, 6), CL),
    "reflection_pad2d": (lambda t: F.pad(t, (1, 1, 1, 1), mode="reflect"), (2, 3, 5, 6), CL),
    "replication_pad2d": (lambda t: F.pad(t, (1, 1, 1, 1), mode="replicate"), (2, 3, 5, 6), CL),
    "reflection_pad3d": (lambda t: F.pad(t, (1,) * 6, mode="reflect"), (2, 3, 4, 5, 6), CL3),
    "replication_pad3d": (lambda t: F.pad(t, (1,) * 6, mode="replicate"), (2, 3, 4, 5, 6), CL3),
    "nearest_3d": (lambda t: F.interpolate(t, scale_factor=2), (2, 3, 2, 3, 4), CL3),
    "trilinear": (lambda t: F.interpolate(t, scale_factor=2, mode="trilinear"), (2, 3, 2, 3, 4), CL3),
    "nearest_exact": (lambda t: F.interpolate(t, scale_factor=2, mode="nearest-exact"), (2, 3, 5, 6), CL),
    "adaptive_max_pool2d": (lambda t: F.adaptive_max_pool2d(t, 2, return_indices=True), (2, 3, 5, 6), CL),
    "hardswish": (F.hardswish, (2, 3, 5, 6), CL),
    "prelu": (lambda t: F.prelu(t, torch.full((3,), 0.25, device=t.device)), (2, 3, 5, 6), CL),
    "antialiased_bicubic": (lambda t: F.interpolate(t, size=(3, 4), mode="bicubic", antialias=True), (2, 3, 5, 6), CL),
    "pixel_shuffle": (lambda t: F.pixel_shuffle(t, 2), (2, 8, 3, 5), CL),
    "pixel_unshuffle": (lambda t: F.pixel_unshuffle(t, 2), (2, 3, 4, 6), CL),
    "channel_shuffle": (lambda t: F.channel_shuffle(t, 2), (2, 8, 3, 5), CL),
}


def test_shuffles_check_their_arguments_as_cpu():
    cases = [
        lambda d: F.pixel_shuffle(torch.ones(2, 3, device=d), 2),
        lambda d: F.pixel_shuffle(torch.ones(1, 8, 2, 2, device=d), 0),
        lambda d: F.pixel_shuffle(torch.ones(1, 8, 2, 2, device=d), 3),
        lambda d: F.pixel_unshuffle(torch.ones(1, 8, 3, 2, device=d), 2),
        lambda d: F.pixel_unshuffle(torch.ones(1, 8, 2, 3, device=d), 2),
        lambda d: F.channel_shuffle(torch.ones(1, 8, 2, 2, device=d), 3),
        lambda d: F.channel_shuffle(torch.ones(1, 8, 2, 2, device=d), 0),
        lambda d: F.channel_shuffle(torch.ones(8, device=d), 2),
    ]
    for case in cases:
        messages = []
        for device in ("cpu", "tpu"):
            with pytest.raises(RuntimeError) as err:
                case(device)
            messages.append(str(err.value))
        assert messages[1] == messages[0]
    # The gradient of a shuffle is the inverse shuffle.
    x = torch.randn(2, 8, 4, 4, requires_grad=True)
    xt = x.detach().to("tpu").requires_grad_()
    with no_fallback():
        F.pixel_shuffle(xt, 2).pow(2).sum().backward()
    F.pixel_shuffle(x, 2).pow(2).sum().backward()
    torch.testing.assert_close(xt.grad.cpu(), x.grad)


@pytest.mark.parametrize("name", sorted(MORE_NN_OPS))
def test_more_nn_ops_keep_channels_last(name):
    fn, shape, fmt = MORE_NN_OPS[name]
    torch.manual_seed(0)
    with no_fallback():
        same_layout(fn, torch.randn(shape).contiguous(memory_format=fmt))


INDEXED_WRITES = {
    "scatter_": lambda x, i: x.scatter_(0, i, 1.0),
    "scatter_add_": lambda x, i: x.scatter_add_(0, i, torch.ones(3, device=x.device)),
    "index_copy_": lambda x, i: x.index_copy_(0, i, torch.ones(3, device=x.device)),
    "index_add_": lambda x, i: x.index_add_(0, i, torch.ones(3, device=x.device)),
    "index_reduce_": lambda x, i: x.index_reduce_(0, i, torch.ones(3, device=x.device), "prod"),
    "put_": lambda x, i: x.put_(i, torch.ones(3, device=x.device)),
    "masked_scatter_": lambda x, i: x.masked_scatter_(x > 2, torch.ones(6, device=x.device)),
}
# CPU only warns for these ("deprecated") and writes the selected positions; a whole-view
# write-back into repeated elements would undo them, so tpu refuses.
WARNED_ON_CPU = {
    "index_fill_": lambda x, i: x.index_fill_(0, i, 1.0),
    "index_put_": lambda x, i: x.index_put_((i,), torch.tensor(1.0, device=x.device)),
    "masked_fill_": lambda x, i: x.masked_fill_(x > 2, 1.0),
}


@pytest.mark.parametrize("name", sorted(INDEXED_WRITES) + sorted(WARNED_ON_CPU))
def test_indexed_writes_into_repeated_elements_raise(name):
    op = INDEXED_WRITES.get(name) or WARNED_ON_CPU[name]
    devices = ("tpu",) if name in WARNED_ON_CPU else ("cpu", "tpu")
    for device in devices:
        x = torch.zeros(1, device=device).expand(6)
        with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
            op(x, torch.tensor([2, 1, 0], device=device))


def test_index_fill_refuses_its_own_index_as_cpu():
    for device in ("cpu", "tpu"):
        i = torch.tensor([2, 1, 0], device=device)
        with pytest.raises(RuntimeError, match="some elements of the input tensor and the written-to tensor"):
            i.index_fill_(0, i, 0)
        assert i.cpu().tolist() == [2, 1, 0]


def test_writes_into_repeated_elements_raise_like_cpu():
    ops = {
        "add_": lambda x: x.add_(1),
        "copy_": lambda x: x.copy_(torch.ones(3, device=x.device)),
        "uniform_": lambda x: x.uniform_(),
        "linspace out=": lambda x: torch.linspace(1, 10, 3, out=x),
        "mul out=": lambda x: torch.mul(torch.ones(3, device=x.device), 2, out=x),
    }
    with no_fallback():
        for name, op in ops.items():
            for device in ("cpu", "tpu"):
                with pytest.raises(RuntimeError, match="unsupported operation"):
                    op(torch.zeros(1, device=device).expand(3))
        # fill_ and zero_ write an expanded tensor on the CPU too.
        x = torch.zeros(1, device="tpu").expand(3)
        assert x.fill_(2).cpu().tolist() == [2.0, 2.0, 2.0]
