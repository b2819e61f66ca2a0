"""3-d max and average pooling on the device match CPU PyTorch (values, indices, dtypes,
layouts, gradients, errors), with no CPU fallback; also the argument checks the 2-d
poolings share with them."""

import pytest
import torch
import torch.nn.functional as F
from helpers import check, no_fallback, tol

aten = torch.ops.aten


def randn(*shape, dtype=torch.float32, grad=False):
    return torch.randn(*shape).to(dtype).requires_grad_(grad)


MAXPOOL_CONFIGS = [
    dict(kernel_size=2),
    dict(kernel_size=3, stride=2),
    dict(kernel_size=3, stride=2, padding=1),
    dict(kernel_size=2, stride=1, dilation=2),
    dict(kernel_size=3, stride=2, ceil_mode=True),
    dict(kernel_size=(3, 2, 2), stride=(2, 1, 3), padding=(1, 0, 1), dilation=(1, 2, 1), ceil_mode=True),
    dict(kernel_size=(1, 3, 2), stride=(1, 2, 2), padding=(0, 1, 1)),
]


@pytest.mark.parametrize("cfg", MAXPOOL_CONFIGS, ids=str)
def test_max_pool3d(cfg):
    torch.manual_seed(1)
    with no_fallback():
        check(lambda x: F.max_pool3d(x, return_indices=True, **cfg), randn(2, 3, 7, 8, 9, grad=True), grad=True)
        # unbatched (C, D, H, W)
        check(lambda x: F.max_pool3d(x, return_indices=True, **cfg), randn(3, 6, 7, 5, grad=True), grad=True)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16, torch.float64])
def test_max_pool3d_float_dtypes(dtype):
    torch.manual_seed(2)
    x = randn(2, 2, 5, 6, 5, dtype=dtype, grad=True)
    with no_fallback():
        check(lambda x: F.max_pool3d(x, 3, stride=2, padding=1, return_indices=True), x, grad=True, **tol(dtype))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int64, torch.int32, torch.int8, torch.uint8])
def test_max_pool3d_ties_take_the_first_maximum(dtype):
    # small integers give ties inside every window: the first in D, H, W order must win
    torch.manual_seed(3)
    x = torch.randint(0, 3, (2, 2, 5, 6, 4)).to(dtype)
    with no_fallback():
        check(lambda x: F.max_pool3d(x, 3, stride=1, padding=1, return_indices=True), x)
        check(lambda x: F.max_pool3d(x, (2, 3, 2), stride=(1, 2, 1), dilation=(2, 1, 1), return_indices=True), x)


def test_max_pool_nan_wins_its_window():
    # NaN is the maximum; among several NaNs in a window CPU keeps the last one
    x = torch.randn(1, 2, 4, 4, 4)
    x[0, 0, 1, 2, 3] = float("nan")
    x[0, 1, 0, 0, 0] = float("nan")
    x[0, 1, 3, 3, 3] = float("nan")
    x[0, 1, 1, 1, 1] = float("nan")
    x[0, 1, 1, 1, 2] = float("nan")
    x[0, 1, 2, 1, 1] = float("nan")
    with no_fallback():
        check(lambda x: F.max_pool3d(x, 2, stride=1, return_indices=True), x)
        check(lambda x: F.max_pool3d(x, 3, stride=1, padding=1, return_indices=True), x)
        check(lambda x: F.max_pool2d(x, 2, stride=1, return_indices=True), x[0])
        check(lambda x: F.max_pool2d(x, 3, stride=1, padding=1, return_indices=True), x[0])


def test_max_pool3d_overlapping_windows_add_gradients():
    x = torch.zeros(1, 1, 5, 5, 5)
    x[0, 0, 2, 2, 2] = 5.0
    x.requires_grad_(True)
    with no_fallback():
        check(lambda x: F.max_pool3d(x, 3, stride=1), x, grad=True)


def test_max_pool3d_empty_batch():
    with no_fallback():
        check(lambda x: F.max_pool3d(x, 2, return_indices=True), torch.randn(0, 2, 4, 4, 4))


def test_max_pool3d_backward_op_and_out_overloads():
    torch.manual_seed(4)
    x = torch.randn(2, 3, 6, 5, 7)
    args = ([3, 2, 3], [2, 2, 1], [1, 1, 0], [1, 2, 1], True)
    values, indices = aten.max_pool3d_with_indices(x, *args)
    gy = torch.randn(values.shape)
    with no_fallback():
        check(lambda x: aten.max_pool3d_with_indices(x, *args), x)
        check(lambda g, x, i: aten.max_pool3d_with_indices_backward(g, x, *args, i), gy, x, indices)
        check(
            lambda x, v, i: aten.max_pool3d_with_indices.out(x, *args, out=v, indices=i),
            x,
            torch.empty(values.shape),
            torch.empty(indices.shape, dtype=torch.long),
        )
        check(
            lambda g, x, i, gi: aten.max_pool3d_with_indices_backward.grad_input(g, x, *args, i, grad_input=gi),
            gy,
            x,
            indices,
            torch.empty(x.shape),
        )


AVGPOOL_CONFIGS = [
    dict(kernel_size=2),
    dict(kernel_size=3, stride=2, padding=1),
    dict(kernel_size=3, stride=2, padding=1, count_include_pad=False),
    dict(kernel_size=3, stride=2, padding=1, ceil_mode=True),
    dict(kernel_size=3, stride=2, padding=1, ceil_mode=True, count_include_pad=False),
    dict(kernel_size=(3, 2, 2), stride=(2, 3, 1), padding=(1, 1, 0), divisor_override=5),
    dict(kernel_size=(2, 3, 2), stride=(1, 2, 2), padding=(1, 1, 1), divisor_override=-3, ceil_mode=True),
    dict(kernel_size=2, stride=3, ceil_mode=True),
    dict(kernel_size=(1, 2, 3), stride=(2, 1, 2), padding=(0, 1, 1), ceil_mode=True, count_include_pad=False),
]


@pytest.mark.parametrize("cfg", AVGPOOL_CONFIGS, ids=str)
def test_avg_pool3d(cfg):
    torch.manual_seed(5)
    with no_fallback():
        check(lambda x: F.avg_pool3d(x, **cfg), randn(2, 3, 7, 8, 9, grad=True), grad=True)
        check(lambda x: F.avg_pool3d(x, **cfg), randn(3, 6, 7, 5, grad=True), grad=True)


def test_avg_pool3d_float64_and_int64():
    torch.manual_seed(6)
    with no_fallback():
        check(lambda x: F.avg_pool3d(x, 3, stride=2, padding=1), randn(2, 2, 6, 5, 6, dtype=torch.float64, grad=True))
        x = torch.randint(-20, 20, (2, 3, 6, 6, 5))
        check(lambda x: F.avg_pool3d(x, 3, stride=2, padding=1), x)
        check(lambda x: F.avg_pool3d(x, 3, stride=2, padding=1, count_include_pad=False), x)
        check(lambda x: F.avg_pool3d(x, 2, divisor_override=3), x)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.int32, torch.uint8])
def test_avg_pool3d_dtypes_cpu_refuses(dtype):
    x = torch.ones(1, 1, 4, 4, 4, dtype=dtype)
    g = torch.ones(1, 1, 2, 2, 2, dtype=dtype)
    with pytest.raises(NotImplementedError):
        F.avg_pool3d(x, 2)
    with no_fallback(), pytest.raises(NotImplementedError, match="avg_pool3d.* not implemented for"):
        F.avg_pool3d(x.to("tpu"), 2)
    with no_fallback(), pytest.raises(NotImplementedError, match="avg_pool3d_backward.* not implemented for"):
        aten.avg_pool3d_backward(g.to("tpu"), x.to("tpu"), [2], [2], [0], False, True, None)


def test_avg_pool3d_backward_op_and_out_overloads():
    torch.manual_seed(7)
    x = torch.randn(2, 3, 6, 5, 7)
    args = ([3, 2, 3], [2, 2, 1], [1, 1, 0], True, False, None)
    out = aten.avg_pool3d(x, *args)
    gy = torch.randn(out.shape)
    with no_fallback():
        check(lambda g, x: aten.avg_pool3d_backward(g, x, *args), gy, x)
        check(lambda x, o: aten.avg_pool3d.out(x, *args, out=o), x, torch.empty(out.shape))
        check(
            lambda g, x, gi: aten.avg_pool3d_backward.grad_input(g, x, *args, grad_input=gi),
            gy,
            x,
            torch.empty(x.shape),
        )


def test_pool3d_layouts_follow_cpu():
    # max_pool3d keeps a channels_last_3d input's layout on the CPU, avg_pool3d does not
    x = torch.randn(2, 3, 6, 5, 7).to(memory_format=torch.channels_last_3d)
    with no_fallback():
        check(lambda x: F.max_pool3d(x, 2, return_indices=True), x, check_stride=True)
        check(lambda x: F.avg_pool3d(x, 3, stride=2, padding=1), x, check_stride=True)


def raises_like_cpu(fn, *args):
    """`fn` raises on CPU tensors and raises the same exception type and message on the device."""
    with pytest.raises(Exception) as cpu:
        fn(*args)
    dev_args = [a.to("tpu") if isinstance(a, torch.Tensor) else a for a in args]
    with no_fallback(), pytest.raises(cpu.type) as dev:
        fn(*dev_args)
    return str(cpu.value).splitlines()[0], str(dev.value).splitlines()[0]


X3 = torch.randn(2, 3, 5, 6, 7)

# (name, function, arguments, whether the device message is CPU's word for word)
BAD_ARGS = [
    ("kernel list", lambda x: aten.max_pool3d_with_indices(x, [2, 2]), X3, True),
    ("padding list", lambda x: aten.max_pool3d_with_indices(x, [2], [], [1, 1]), X3, True),
    ("dilation list", lambda x: aten.max_pool3d_with_indices(x, [2], [], [0], [1, 1]), X3, False),
    ("stride zero", lambda x: aten.max_pool3d_with_indices(x, [2], [0]), X3, True),
    ("kernel zero", lambda x: aten.max_pool3d_with_indices(x, [0], [1]), X3, True),
    ("stride negative", lambda x: aten.max_pool3d_with_indices(x, [2], [-1]), X3, True),
    ("dilation zero", lambda x: aten.max_pool3d_with_indices(x, [2], [], [0], [0]), X3, True),
    ("padding negative", lambda x: aten.max_pool3d_with_indices(x, [2], [], [-1]), X3, True),
    ("padding over effective kernel", lambda x: aten.max_pool3d_with_indices(x, [3], [], [2]), X3, True),
    ("padding over kernel", lambda x: aten.max_pool3d_with_indices(x, [3], [1], [2], [2]), X3, False),
    ("rank 3", lambda x: aten.max_pool3d_with_indices(x[0, 0], [2]), X3, True),
    ("rank 6", lambda x: aten.max_pool3d_with_indices(x[None], [2]), X3, True),
    ("empty channels", lambda x: aten.max_pool3d_with_indices(x[:, :0], [2]), X3, False),
    ("output too small", lambda x: aten.max_pool3d_with_indices(x, [6]), X3, True),
    ("bool input", lambda x: aten.max_pool3d_with_indices(x > 0, [2]), X3, True),
    ("avg kernel list", lambda x: aten.avg_pool3d(x, [2, 2]), X3, False),
    ("avg stride zero", lambda x: aten.avg_pool3d(x, [2], [0]), X3, True),
    ("avg padding over kernel", lambda x: aten.avg_pool3d(x, [2], [], [2]), X3, True),
    ("avg kernel over input", lambda x: aten.avg_pool3d(x, [6]), X3, True),
    ("avg kernel over unpadded input", lambda x: aten.avg_pool3d(x[..., :2, :2, :2], [3], [], [1]), X3, True),
    ("avg divisor zero", lambda x: aten.avg_pool3d(x, [2], [], [0], False, True, 0), X3, True),
    ("avg rank 3", lambda x: aten.avg_pool3d(x[0, 0], [2]), X3, True),
    ("avg empty depth", lambda x: aten.avg_pool3d(x[0, :, :0], [2]), X3, False),
    (
        "avg backward gradient shape",
        lambda x: aten.avg_pool3d_backward(torch.ones_like(x[..., :2, :3, :4]), x, [2], [2], [0], False, True, None),
        X3,
        True,
    ),
    (
        "max backward int32 indices",
        lambda x: aten.max_pool3d_with_indices_backward(
            torch.ones_like(x[..., :2, :3, :3]),
            x,
            [2],
            [2],
            [0],
            [1],
            False,
            torch.zeros(2, 3, 2, 3, 3).int().to(x.device),
        ),
        X3,
        True,
    ),
    (
        "max backward int64 gradient",
        lambda x: aten.max_pool3d_with_indices_backward(
            torch.ones_like(x[..., :2, :3, :3]).long(),
            x.long(),
            [2],
            [2],
            [0],
            [1],
            False,
            torch.zeros(2, 3, 2, 3, 3).long().to(x.device),
        ),
        X3,
        True,
    ),
    # shared with the 2-d poolings
    ("2-d padding over kernel", lambda x: aten.max_pool2d_with_indices(x[0], [3], [1], [2], [2]), X3, False),
    ("2-d padding negative", lambda x: aten.max_pool2d_with_indices(x[0], [2], [], [-1]), X3, True),
    ("2-d avg stride zero", lambda x: aten.avg_pool2d(x[0], [2], [0]), X3, True),
    (
        "2-d avg backward gradient shape",
        lambda x: aten.avg_pool2d_backward(torch.ones_like(x[0, :, :2, :4]), x[0], [2], [2], [0], False, True, None),
        X3,
        True,
    ),
]


@pytest.mark.parametrize("name,fn,x,same_message", BAD_ARGS, ids=[c[0] for c in BAD_ARGS])
def test_pool_bad_arguments_raise_like_cpu(name, fn, x, same_message):
    cpu_msg, dev_msg = raises_like_cpu(fn, x)
    if same_message:
        assert dev_msg == cpu_msg


@pytest.mark.parametrize("size", [(1, 1, 1), (2, 2, 2), (3, 4, 5), (4, 3, 2), (5, 7, 3), (2, 1, 6)], ids=str)
def test_adaptive_avg_pool3d(size):
    torch.manual_seed(10)
    with no_fallback():
        check(lambda x: F.adaptive_avg_pool3d(x, size), randn(2, 3, 6, 8, 5, grad=True), grad=True)
        check(lambda x: F.adaptive_avg_pool3d(x, size), randn(3, 7, 4, 10, grad=True), grad=True)


@pytest.mark.parametrize("dtype", [torch.float64, torch.bfloat16, torch.float16], ids=str)
def test_adaptive_avg_pool3d_float_dtypes(dtype):
    torch.manual_seed(11)
    with no_fallback():
        x = randn(2, 2, 5, 6, 7, dtype=dtype, grad=True)
        check(lambda x: F.adaptive_avg_pool3d(x, (3, 2, 4)), x, grad=True, **tol(dtype))


def test_adaptive_avg_pool3d_infinities_stay_in_their_bins():
    x = torch.randn(2, 2, 5, 6, 7)
    x[0, 0, 0, 0, 0], x[1, 1, 4, 5, 6] = float("inf"), -float("inf")
    for size in [(2, 3, 4), (1, 1, 1), (7, 2, 9)]:
        g = torch.randn(2, 2, *size)
        g[0, 0, 0, 0, 0], g[1, 1, -1, -1, -1] = float("inf"), -float("inf")
        cpu = x.clone().requires_grad_()
        F.adaptive_avg_pool3d(cpu, size).backward(g)
        dev = x.to("tpu").requires_grad_()
        with no_fallback():
            y = F.adaptive_avg_pool3d(dev, size)
            y.backward(g.to("tpu"))
        torch.testing.assert_close(y.detach().cpu(), F.adaptive_avg_pool3d(x, size), equal_nan=True)
        torch.testing.assert_close(dev.grad.cpu(), cpu.grad, equal_nan=True)


def test_adaptive_avg_pool3d_op_out_and_empty_batch():
    x, gy = torch.randn(2, 3, 5, 4, 6), torch.randn(2, 3, 2, 3, 4)
    with no_fallback():
        check(lambda x: aten._adaptive_avg_pool3d.out(x, [2, 3, 4], out=torch.empty(0, device=x.device)), x)
        check(lambda g, x: aten._adaptive_avg_pool3d_backward(g, x), gy, x)
        check(
            lambda g, x: aten._adaptive_avg_pool3d_backward.out(g, x, out=torch.empty(0, device=x.device)),
            gy,
            x,
        )
        check(lambda x: F.adaptive_avg_pool3d(x, 2), torch.randn(0, 3, 4, 4, 4))
        check(lambda x: F.adaptive_avg_pool3d(x, 2), torch.randn(0, 4, 4, 4))
        check(lambda x: F.adaptive_avg_pool2d(x, 2), torch.randn(2, 0, 4, 4))
        check(lambda x: F.adaptive_avg_pool3d(x, (0, 2, 2)), torch.randn(2, 4, 4, 4))


ADAPTIVE_BAD_ARGS = [
    ("rank", lambda x: aten._adaptive_avg_pool3d(x[0, 0, 0], [2, 2, 2])),
    ("output size length", lambda x: aten._adaptive_avg_pool3d(x, [2, 2])),
    ("negative output size", lambda x: aten._adaptive_avg_pool3d(x, [2, -1, 2])),
    ("empty spatial dim", lambda x: F.adaptive_avg_pool3d(x[..., :0], 2)),
    ("empty channel dim", lambda x: F.adaptive_avg_pool3d(x[:, :0], 2)),
    ("2-d empty spatial dim", lambda x: F.adaptive_avg_pool2d(x[0, :, :, :0], 2)),
    ("2-d rank", lambda x: aten._adaptive_avg_pool2d(x[0, 0, 0], [2, 2])),
]


@pytest.mark.parametrize("name,fn", ADAPTIVE_BAD_ARGS, ids=[c[0] for c in ADAPTIVE_BAD_ARGS])
def test_adaptive_avg_pool_bad_arguments_raise_like_cpu(name, fn):
    cpu_msg, dev_msg = raises_like_cpu(fn, X3)
    assert dev_msg == cpu_msg


@pytest.mark.parametrize("dim", [2, 3])
def test_adaptive_avg_pool_integer_input_raises_like_cpu(dim):
    pool = F.adaptive_avg_pool3d if dim == 3 else F.adaptive_avg_pool2d
    x = torch.randint(0, 5, (2, 3, 4, 4, 4)[-dim - 1 :])
    with pytest.raises(NotImplementedError) as cpu:
        pool(x, 2)
    with pytest.raises(NotImplementedError) as dev:
        pool(x.to("tpu"), 2)
    assert str(dev.value) == str(cpu.value)
