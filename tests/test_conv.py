"""Convolution, pooling and batch norm on the device match CPU PyTorch (values, dtypes,
shapes, gradients), with no CPU fallback."""

import copy

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
from helpers import check, no_fallback

FLOAT_DTYPES = [torch.float32, torch.bfloat16, torch.float16]


def tol(dtype):
    return dict(atol=2e-2, rtol=2e-2) if dtype in (torch.bfloat16, torch.float16) else dict(atol=1e-4, rtol=1e-4)


def randn(*shape, dtype=torch.float32, grad=False):
    return torch.randn(*shape).to(dtype).requires_grad_(grad)


CONV2D_CONFIGS = [
    dict(),
    dict(stride=2),
    dict(padding=1),
    dict(dilation=2),
    dict(stride=2, padding=1, dilation=2),
    dict(groups=2),
    dict(stride=(2, 1), padding=(1, 0), groups=2),
]


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("cfg", CONV2D_CONFIGS, ids=str)
def test_conv2d_forward_backward(cfg, bias):
    torch.manual_seed(0)
    x = randn(2, 4, 9, 8, grad=True)
    w = randn(6, 4 // cfg.get("groups", 1), 3, 3, grad=True)
    b = randn(6, grad=True) if bias else None
    with no_fallback():
        check(lambda x, w, b: F.conv2d(x, w, b, **cfg), x, w, b, grad=True, **tol(torch.float32))


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_conv2d_dtypes(dtype):
    torch.manual_seed(1)
    x = randn(2, 3, 7, 7, dtype=dtype, grad=True)
    w = randn(4, 3, 3, 3, dtype=dtype, grad=True)
    b = randn(4, dtype=dtype, grad=True)
    with no_fallback():
        check(lambda x, w, b: F.conv2d(x, w, b, stride=2, padding=1), x, w, b, grad=True, **tol(dtype))


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32])
def test_conv2d_int(dtype):
    x = torch.randint(-3, 4, (1, 2, 5, 5), dtype=dtype)
    w = torch.randint(-3, 4, (3, 2, 2, 2), dtype=dtype)
    with no_fallback():
        check(lambda x, w: F.conv2d(x, w, padding=1), x, w)


@pytest.mark.parametrize("cfg", [dict(), dict(stride=2, padding=2, dilation=3), dict(groups=3, padding=1)], ids=str)
def test_conv1d_conv3d(cfg):
    torch.manual_seed(2)
    x = randn(2, 3, 11, grad=True)
    w = randn(6, 3 // cfg.get("groups", 1), 3, grad=True)
    b = randn(6, grad=True)
    with no_fallback():
        check(lambda x, w, b: F.conv1d(x, w, b, **cfg), x, w, b, grad=True, **tol(torch.float32))
    x = randn(1, 3, 5, 6, 7, grad=True)
    w = randn(6, 3 // cfg.get("groups", 1), 2, 3, 2, grad=True)
    with no_fallback():
        check(lambda x, w, b: F.conv3d(x, w, b, **cfg), x, w, b, grad=True, **tol(torch.float32))


@pytest.mark.parametrize(
    "cfg",
    [
        dict(),
        dict(stride=2),
        dict(stride=2, padding=1, output_padding=1),
        dict(groups=2, dilation=2),
        dict(stride=3, padding=2, output_padding=2),
    ],
    ids=str,
)
def test_conv_transpose2d(cfg):
    torch.manual_seed(3)
    x = randn(2, 4, 5, 6, grad=True)
    w = randn(4, 6 // cfg.get("groups", 1), 3, 3, grad=True)
    b = randn(6 // cfg.get("groups", 1) * cfg.get("groups", 1), grad=True)
    with no_fallback():
        check(lambda x, w, b: F.conv_transpose2d(x, w, b, **cfg), x, w, b, grad=True, **tol(torch.float32))


def test_conv_transpose1d():
    torch.manual_seed(4)
    x = randn(2, 3, 7, grad=True)
    w = randn(3, 2, 4, grad=True)
    with no_fallback():
        check(lambda x, w: F.conv_transpose1d(x, w, stride=2, padding=1), x, w, grad=True, **tol(torch.float32))


def test_nn_conv2d_module_and_unbatched():
    torch.manual_seed(5)
    m = nn.Conv2d(3, 5, 3, stride=2, padding=1)
    x = randn(2, 3, 8, 8, grad=True)
    md = copy.deepcopy(m).to("tpu")
    with no_fallback():
        check(lambda x: md(x) if x.device.type == "tpu" else m(x), x, grad=True, **tol(torch.float32))
        assert md.weight.grad is not None
        torch.testing.assert_close(md.weight.grad.cpu(), m.weight.grad, atol=1e-4, rtol=1e-4)
        torch.testing.assert_close(md.bias.grad.cpu(), m.bias.grad, atol=1e-4, rtol=1e-4)
        check(lambda x, w: F.conv2d(x, w, padding=1), randn(3, 6, 6), randn(2, 3, 3, 3))


def test_conv_errors():
    x = torch.randn(1, 3, 5, 5)
    with pytest.raises(RuntimeError, match="channels"):
        F.conv2d(x.to("tpu"), torch.randn(2, 4, 3, 3).to("tpu"))
    with pytest.raises(RuntimeError):
        F.conv2d(x.to("tpu"), torch.randn(2, 3, 3, 3).to(torch.float16).to("tpu"))


# ----------------------------------------------------------------------------- pooling

MAXPOOL_CONFIGS = [
    dict(kernel_size=2),
    dict(kernel_size=3, stride=2),
    dict(kernel_size=3, stride=2, padding=1),
    dict(kernel_size=2, stride=1, dilation=2),
    dict(kernel_size=3, stride=2, ceil_mode=True),
    dict(kernel_size=(3, 2), stride=(2, 1), padding=(1, 1), dilation=(1, 2), ceil_mode=True),
]


@pytest.mark.parametrize("cfg", MAXPOOL_CONFIGS, ids=str)
def test_max_pool2d(cfg):
    torch.manual_seed(6)
    x = randn(2, 3, 9, 10, grad=True)
    with no_fallback():
        check(lambda x: F.max_pool2d(x, return_indices=True, **cfg), x, grad=True)
        check(lambda x: F.max_pool2d(x, **cfg), randn(3, 7, 8, grad=True), grad=True)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES + [torch.int64, torch.int32, torch.uint8])
def test_max_pool2d_dtypes_and_ties(dtype):
    # small integer values give ties inside windows: the first maximum must win
    x = torch.randint(0, 3, (2, 2, 6, 6)).to(dtype)
    with no_fallback():
        check(lambda x: F.max_pool2d(x, 3, stride=1, padding=1, return_indices=True), x)
    if dtype.is_floating_point:
        xg = randn(2, 2, 6, 6, dtype=dtype, grad=True)
        with no_fallback():
            check(lambda x: F.max_pool2d(x, 3, stride=2, padding=1), xg, grad=True, **tol(dtype))


def test_max_pool2d_overlapping_grad():
    # overlapping windows sharing an argmax accumulate their gradients
    x = torch.zeros(1, 1, 5, 5)
    x[0, 0, 2, 2] = 5.0
    x.requires_grad_(True)
    with no_fallback():
        check(lambda x: F.max_pool2d(x, 3, stride=1), x, grad=True)


AVGPOOL_CONFIGS = [
    dict(kernel_size=2),
    dict(kernel_size=3, stride=2, padding=1),
    dict(kernel_size=3, stride=2, padding=1, count_include_pad=False),
    dict(kernel_size=3, stride=2, padding=1, ceil_mode=True),
    dict(kernel_size=3, stride=2, padding=1, ceil_mode=True, count_include_pad=False),
    dict(kernel_size=(3, 2), stride=(2, 3), padding=(1, 1), divisor_override=5),
    dict(kernel_size=2, stride=3, ceil_mode=True),
]


@pytest.mark.parametrize("cfg", AVGPOOL_CONFIGS, ids=str)
def test_avg_pool2d(cfg):
    torch.manual_seed(7)
    with no_fallback():
        check(lambda x: F.avg_pool2d(x, **cfg), randn(2, 3, 9, 10, grad=True), grad=True)
        check(lambda x: F.avg_pool2d(x, **cfg), randn(3, 8, 7, grad=True), grad=True)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES + [torch.int64])
def test_avg_pool2d_dtypes(dtype):
    torch.manual_seed(8)
    if dtype.is_floating_point:
        x = randn(2, 3, 8, 8, dtype=dtype, grad=True)
        with no_fallback():
            check(lambda x: F.avg_pool2d(x, 3, stride=2, padding=1), x, grad=True, **tol(dtype))
    else:
        x = torch.randint(-20, 20, (2, 3, 8, 8), dtype=dtype)
        with no_fallback():
            check(lambda x: F.avg_pool2d(x, 3, stride=2, padding=1), x)
            check(lambda x: F.avg_pool2d(x, 3, stride=2, padding=1, count_include_pad=False), x)


def test_avg_pool2d_int32_not_implemented():
    x = torch.ones(1, 1, 4, 4, dtype=torch.int32)
    with pytest.raises(NotImplementedError):
        F.avg_pool2d(x, 2)
    with pytest.raises(NotImplementedError):
        F.avg_pool2d(x.to("tpu"), 2)


@pytest.mark.parametrize("size", [(1, 1), (2, 2), (3, 4), (4, 3), (5, 7), (2, 1)], ids=str)
def test_adaptive_avg_pool2d(size):
    torch.manual_seed(9)
    with no_fallback():
        check(lambda x: F.adaptive_avg_pool2d(x, size), randn(2, 3, 8, 12, grad=True), grad=True)
        check(lambda x: F.adaptive_avg_pool2d(x, size), randn(3, 7, 10, grad=True), grad=True)


def test_adaptive_avg_pool2d_infinite_input_stays_in_its_bins():
    # Bin sums are masked sums: a product with the 0/1 bin matrix made 0 * inf = NaN in
    # every other bin of the row.
    x = torch.randn(2, 3, 7, 9)
    x[0, 0, 0, 0], x[1, 2, 6, 8] = float("inf"), -float("inf")
    with no_fallback():
        for size in [(3, 4), (1, 1), (10, 2)]:
            check(lambda x: F.adaptive_avg_pool2d(x, size), x)


def test_adaptive_avg_pool2d_infinite_gradient_stays_in_its_bins():
    x = torch.randn(2, 3, 7, 9)
    for size in [(3, 4), (1, 1), (10, 2)]:
        g = torch.randn(2, 3, *size)
        g[0, 0, 0, 0], g[1, 2, -1, -1] = float("inf"), -float("inf")
        cpu = x.clone().requires_grad_()
        F.adaptive_avg_pool2d(cpu, size).backward(g)
        dev = x.to("tpu").requires_grad_()
        with no_fallback():
            F.adaptive_avg_pool2d(dev, size).backward(g.to("tpu"))
        torch.testing.assert_close(dev.grad.cpu(), cpu.grad, equal_nan=True)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_adaptive_avg_pool2d_dtypes(dtype):
    torch.manual_seed(10)
    x = randn(2, 3, 6, 6, dtype=dtype, grad=True)
    with no_fallback():
        check(lambda x: F.adaptive_avg_pool2d(x, (3, 2)), x, grad=True, **tol(dtype))
        check(lambda x: F.adaptive_avg_pool2d(x, 1), x, grad=True, **tol(dtype))


# -------------------------------------------------------------------------- batch norm


def test_native_batch_norm_ops():
    torch.manual_seed(11)
    x = randn(4, 3, 5, 5, grad=True)
    w, b = randn(3, grad=True), randn(3, grad=True)
    rm, rv = torch.randn(3), torch.rand(3) + 0.5
    with no_fallback():
        # training: batch statistics, save_mean / save_invstd
        check(
            lambda x, w, b, rm, rv: torch.ops.aten.native_batch_norm(x, w, b, rm, rv, True, 0.1, 1e-5),
            x,
            w,
            b,
            rm,
            rv,
            grad=True,
            **tol(torch.float32),
        )
        # eval: running statistics, empty saved statistics
        check(
            lambda x, w, b, rm, rv: torch.ops.aten.native_batch_norm(x, w, b, rm, rv, False, 0.1, 1e-5),
            x,
            w,
            b,
            rm,
            rv,
            grad=True,
            **tol(torch.float32),
        )
        check(
            lambda x: torch.ops.aten.native_batch_norm(x, None, None, None, None, True, 0.1, 1e-5),
            x,
            grad=True,
            **tol(torch.float32),
        )
        check(
            lambda x, w, b, rm, rv: torch.ops.aten._native_batch_norm_legit_no_training(x, w, b, rm, rv, 0.1, 1e-3),
            x,
            w,
            b,
            rm,
            rv,
            **tol(torch.float32),
        )
        check(
            lambda x, w, b: torch.ops.aten._native_batch_norm_legit.no_stats(x, w, b, True, 0.1, 1e-5),
            x,
            w,
            b,
            **tol(torch.float32),
        )
        check(
            lambda x, w, b, rm, rv: torch.ops.aten._native_batch_norm_legit_functional(
                x, w, b, rm, rv, True, 0.3, 1e-5
            ),
            x,
            w,
            b,
            rm,
            rv,
            **tol(torch.float32),
        )


def test_native_batch_norm_legit_updates_running_stats():
    torch.manual_seed(12)
    x = torch.randn(4, 3, 5, 5)
    w, b = torch.randn(3), torch.randn(3)
    rm, rv = torch.randn(3), torch.rand(3) + 0.5
    rmd, rvd = rm.to("tpu"), rv.to("tpu")
    with no_fallback():
        out_d = torch.ops.aten._native_batch_norm_legit(
            x.to("tpu"), w.to("tpu"), b.to("tpu"), rmd, rvd, True, 0.2, 1e-5
        )
    out_c = torch.ops.aten._native_batch_norm_legit(x, w, b, rm, rv, True, 0.2, 1e-5)
    for a, e in zip(out_d, out_c):
        torch.testing.assert_close(a.cpu(), e, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(rmd.cpu(), rm, atol=1e-6, rtol=1e-6)
    torch.testing.assert_close(rvd.cpu(), rv, atol=1e-6, rtol=1e-6)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_batch_norm_functional_dtypes(dtype):
    torch.manual_seed(13)
    x = randn(3, 4, 3, 3, dtype=dtype, grad=True)
    w, b = randn(4, dtype=dtype, grad=True), randn(4, dtype=dtype, grad=True)
    with no_fallback():
        check(lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True), x, w, b, grad=True, **tol(dtype))
        rm, rv = torch.randn(4).to(dtype), (torch.rand(4) + 0.5).to(dtype)
        check(
            lambda x, w, b, rm, rv: F.batch_norm(x, rm, rv, w, b, training=False),
            x,
            w,
            b,
            rm,
            rv,
            grad=True,
            **tol(dtype),
        )
        check(
            lambda x: F.batch_norm(x, None, None, training=True),
            randn(5, 3, dtype=dtype, grad=True),
            grad=True,
            **tol(dtype),
        )


def run_bn_module(bn, xs, device, train):
    bn = copy.deepcopy(bn).to(device).train(train)
    outs, grads = [], []
    for x in xs:
        x = x.detach().to(device).requires_grad_(True)
        y = bn(x)
        (y * torch.arange(y.numel(), device=device).reshape(y.shape).sin()).sum().backward()
        outs.append(y.detach().cpu())
        grads.append(x.grad.cpu())
    state = {k: v.detach().cpu() for k, v in bn.state_dict().items()}
    pgrads = {k: p.grad.cpu() for k, p in bn.named_parameters()}
    return outs, grads, state, pgrads


@pytest.mark.parametrize("train", [False, True])
def test_batchnorm2d_module_outputs_and_grads(train):
    torch.manual_seed(14)
    bn = nn.BatchNorm2d(3, momentum=0.2)
    bn.running_mean.normal_()
    bn.running_var.uniform_(0.5, 1.5)
    with torch.no_grad():
        bn.weight.normal_()
        bn.bias.normal_()
    xs = [torch.randn(4, 3, 5, 5) * 2 + 1 for _ in range(3)]
    c_outs, c_grads, _, c_pg = run_bn_module(bn, xs, "cpu", train)
    with no_fallback():
        d_outs, d_grads, _, d_pg = run_bn_module(bn, xs, "tpu", train)
    for a, e in zip(d_outs + d_grads, c_outs + c_grads):
        torch.testing.assert_close(a, e, atol=1e-4, rtol=1e-4)
    for k in c_pg:
        torch.testing.assert_close(d_pg[k], c_pg[k], atol=1e-4, rtol=1e-4, msg=k)


@pytest.mark.parametrize("train", [False, True])
def test_batchnorm2d_module_running_stats(train):
    """Running statistics after 3 steps (momentum, unbiased variance, num_batches_tracked)."""
    torch.manual_seed(15)
    bn = nn.BatchNorm2d(3, momentum=0.2)
    xs = [torch.randn(4, 3, 5, 5) * 2 + 1 for _ in range(3)]
    _, _, c_state, _ = run_bn_module(bn, xs, "cpu", train)
    with no_fallback():
        _, _, d_state, _ = run_bn_module(bn, xs, "tpu", train)
    for k in c_state:
        torch.testing.assert_close(d_state[k], c_state[k], atol=1e-5, rtol=1e-5, msg=k)


# ------------------------------------------------------------------------ small CNN


class SmallCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.pool = nn.MaxPool2d(2)
        self.conv2 = nn.Conv2d(8, 6, 3, stride=2, padding=1, groups=2)
        self.gap = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(6, 5)

    def forward(self, x):
        x = self.pool(F.relu(self.bn(self.conv1(x))))
        x = self.gap(self.conv2(x))
        return self.fc(torch.flatten(x, 1))


def train_cnn(model, batches, device):
    model = copy.deepcopy(model).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    losses = []
    for x, y in batches:
        x, y = x.to(device), y.to(device)
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses, model


def test_small_cnn_sgd_matches_cpu():
    torch.manual_seed(16)
    model = SmallCNN()
    batches = [(torch.randn(4, 3, 12, 12), torch.randint(0, 5, (4,))) for _ in range(5)]
    c_losses, c_model = train_cnn(model, batches, "cpu")
    with no_fallback():
        d_losses, d_model = train_cnn(model, batches, "tpu")
    for a, e in zip(d_losses, c_losses):
        assert abs(a - e) <= 1e-4 * max(1.0, abs(e)), (d_losses, c_losses)
    for (k, p), (_, q) in zip(d_model.named_parameters(), c_model.named_parameters()):
        torch.testing.assert_close(p.detach().cpu(), q.detach(), atol=1e-4, rtol=1e-4, msg=k)


def test_small_cnn_running_stats_and_eval_match_cpu():
    torch.manual_seed(16)
    model = SmallCNN()
    batches = [(torch.randn(4, 3, 12, 12), torch.randint(0, 5, (4,))) for _ in range(5)]
    _, c_model = train_cnn(model, batches, "cpu")
    with no_fallback():
        _, d_model = train_cnn(model, batches, "tpu")
    for (k, p), (_, q) in zip(d_model.named_buffers(), c_model.named_buffers()):
        torch.testing.assert_close(p.cpu(), q, atol=1e-4, rtol=1e-4, msg=k)
    # eval mode uses the running statistics
    x = torch.randn(2, 3, 12, 12)
    with no_fallback():
        d_out = d_model.eval()(x.to("tpu")).detach().cpu()
    torch.testing.assert_close(d_out, c_model.eval()(x).detach(), atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("dims", [2, 3])
def test_max_unpool(dims):
    pool = F.max_pool2d if dims == 2 else F.max_pool3d
    unpool = F.max_unpool2d if dims == 2 else F.max_unpool3d
    shape = (2, 3, 6, 8) if dims == 2 else (1, 2, 4, 6, 4)
    x = torch.randn(shape)
    values, indices = pool(x, 2, return_indices=True)
    with no_fallback():
        check(lambda v, i: unpool(v, i, 2), values, indices)
        check(lambda v, i: unpool(v, i, 2, output_size=x.shape[-dims:]), values, indices)
        check(lambda v, i: unpool(v, i, 2), values[0], indices[0])
        check(lambda v, i: unpool(v, i, 2).sum() * 2, values.requires_grad_(), indices, grad=True)


@pytest.mark.parametrize("dims", [1, 2, 3])
def test_max_unpool_alerts_under_deterministic_algorithms_as_cpu(dims):
    # Repeated indices leave the written value undefined: CPU raises its nondeterminism
    # alert (a warning with warn_only=True) under torch.use_deterministic_algorithms.
    unpool = (F.max_unpool1d, F.max_unpool2d, F.max_unpool3d)[dims - 1]
    name = "max_unpooling3d_forward_out" if dims == 3 else "max_unpooling2d_forward_out"
    x = torch.randn((1, 1) + (4,) * dims)
    indices = torch.zeros_like(x, dtype=torch.long)
    before = torch.are_deterministic_algorithms_enabled(), torch.is_deterministic_algorithms_warn_only_enabled()
    try:
        for device in ("cpu", "tpu"):
            torch.use_deterministic_algorithms(True)
            with no_fallback(), pytest.raises(RuntimeError, match=f"{name} does not have a deterministic"):
                unpool(x.to(device), indices.to(device), 3, 1)
            torch.use_deterministic_algorithms(True, warn_only=True)
            with no_fallback(), pytest.warns(UserWarning, match=f"{name} does not have a deterministic"):
                unpool(x.to(device), indices.to(device), 3, 1)
    finally:
        torch.use_deterministic_algorithms(before[0], warn_only=before[1])


@pytest.mark.parametrize(
    "shape,out",
    [((2, 3, 7, 9), (3, 4)), ((3, 5, 5), (5, 2)), ((1, 2, 8, 8), (1, 1)), ((2, 2, 5, 6, 7), (2, 3, 4))],
)
def test_adaptive_max_pool(shape, out):
    pool = F.adaptive_max_pool2d if len(out) == 2 else F.adaptive_max_pool3d
    x = torch.randn(shape, requires_grad=True)
    with no_fallback():
        check(lambda t: pool(t, out, return_indices=True), x)
        check(lambda t: pool(t, out).sum(), x, grad=True)
    ties = torch.zeros(1, 1, 4, 4)
    with no_fallback():
        check(lambda t: F.adaptive_max_pool2d(t, (2, 2), return_indices=True), ties)
