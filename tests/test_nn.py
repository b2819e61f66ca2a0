"""Neural-network ops (layer/rms norm, activations, dropout, losses, embedding backward,
scaled dot-product attention), forward and backward, compared against CPU PyTorch."""

import copy

import pytest
import torch
import torch.nn.functional as F
from helpers import DEVICE, check, no_fallback

FLOAT_DTYPES = [torch.float32, torch.bfloat16, torch.float16]


def rnd(*shape, dtype=torch.float32, grad=True):
    return torch.randn(shape).to(dtype).requires_grad_(grad)


def tol(dtype):
    if dtype == torch.bfloat16:
        return dict(atol=5e-2, rtol=2e-2)
    if dtype == torch.float16:
        return dict(atol=1e-2, rtol=1e-2)
    return dict(atol=1e-4, rtol=1e-4)


# ------------------------------------------------------------------ norms


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("affine", [True, False])
def test_layer_norm(dtype, affine):
    x = rnd(2, 3, 8, dtype=dtype)
    w = rnd(8, dtype=dtype) if affine else None
    b = rnd(8, dtype=dtype) if affine else None
    with no_fallback():
        check(lambda x, w, b: F.layer_norm(x, (8,), w, b), x, w, b, grad=True, **tol(dtype))
        check(lambda x: F.layer_norm(x, (3, 8), eps=1e-3), rnd(2, 3, 8, dtype=dtype), grad=True, **tol(dtype))


def test_native_layer_norm_outputs_and_mask():
    x, w, b = rnd(4, 6, grad=False), rnd(6, grad=False), rnd(6, grad=False)
    with no_fallback():
        out = check(lambda x, w, b: torch.native_layer_norm(x, (6,), w, b, 1e-5), x, w, b, atol=1e-5)
        assert [t.shape for t in out] == [torch.Size([4, 6]), torch.Size([4, 1]), torch.Size([4, 1])]
        g = rnd(4, 6, grad=False)
        _, mean, rstd = torch.native_layer_norm(x, (6,), w, b, 1e-5)
        for mask in ([True, True, True], [True, False, False], [False, True, True]):
            check(
                lambda g, x, m, r, w, b: torch.ops.aten.native_layer_norm_backward(g, x, (6,), m, r, w, b, mask),
                g,
                x,
                mean,
                rstd,
                w,
                b,
                atol=1e-4,
            )


def test_layer_norm_shape_error():
    for dev in ("cpu", DEVICE):
        with pytest.raises(RuntimeError, match=r"Given normalized_shape=\[3\], expected input with shape \[\*, 3\]"):
            F.layer_norm(torch.ones(2, 4, device=dev), (3,))


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("affine", [True, False])
def test_rms_norm(dtype, affine):
    w = rnd(8, dtype=dtype) if affine else None
    with no_fallback():
        check(lambda x, w: F.rms_norm(x, (8,), w, eps=1e-6), rnd(2, 3, 8, dtype=dtype), w, grad=True, **tol(dtype))


# ------------------------------------------------------------------ activations


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu(dtype, approximate):
    x = (torch.randn(4, 7) * 3).to(dtype).requires_grad_()
    with no_fallback():
        check(lambda x: F.gelu(x, approximate=approximate), x, grad=True, **tol(dtype))


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize(
    "fn",
    [
        F.silu,
        torch.sigmoid,
        torch.tanh,
        F.relu,
        lambda x: F.leaky_relu(x, 0.2),
        lambda x: F.hardtanh(x, -0.5, 0.75),
        lambda x: F.threshold(x, 0.1, -2.0),
    ],
    ids=["silu", "sigmoid", "tanh", "relu", "leaky_relu", "hardtanh", "threshold"],
)
def test_activation_backward(fn, dtype):
    x = (torch.randn(5, 6) * 2).to(dtype).requires_grad_()
    with no_fallback():
        check(fn, x, grad=True, **tol(dtype))


def test_activation_inplace_and_int_errors():
    with no_fallback():
        check(lambda x: F.silu(x.clone(), inplace=True), rnd(3, 4, grad=False))
        check(lambda x: F.leaky_relu(x.clone(), 0.1, inplace=True), rnd(3, 4, grad=False))
        check(lambda x: F.hardtanh(x.clone(), inplace=True), rnd(3, 4, grad=False))
        check(lambda x: F.hardtanh(x), torch.arange(-3, 4))
    for fn in (F.gelu, F.silu, F.leaky_relu):
        for dev in ("cpu", DEVICE):
            with pytest.raises(NotImplementedError, match="not implemented for 'Long'"):
                fn(torch.ones(3, dtype=torch.int64, device=dev))


# ------------------------------------------------------------------ dropout


@pytest.mark.parametrize("p", [0.1, 0.5, 0.8])
def test_dropout_statistics(p):
    x = torch.ones(200, 500, device=DEVICE)
    with no_fallback():
        y = F.dropout(x, p, training=True)
    y = y.cpu()
    kept = (y != 0).float().mean().item()
    assert abs(kept - (1 - p)) < 0.01, kept
    assert torch.allclose(y[y != 0], torch.full_like(y[y != 0], 1 / (1 - p)))
    # Two draws differ (the generator advances).
    y2 = F.dropout(x, p, training=True).cpu()
    assert not torch.equal(y, y2)


def test_dropout_seeded():
    x = torch.ones(64, 64, device=DEVICE)
    torch.manual_seed(123)
    a = F.dropout(x, 0.5).cpu()
    torch.manual_seed(123)
    b = F.dropout(x, 0.5).cpu()
    assert torch.equal(a, b)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_dropout_grad_is_mask_times_scale(dtype):
    p = 0.3
    x = torch.randn(50, 40).to(dtype).to(DEVICE).requires_grad_()
    with no_fallback():
        out, mask = torch.ops.aten.native_dropout(x, p, True)
        assert mask.dtype == torch.bool and mask.shape == x.shape
        torch.testing.assert_close(out.cpu(), (x.detach().cpu() * mask.cpu() / (1 - p)).to(dtype), **tol(dtype))
        y = F.dropout(x, p, training=True)
        g = torch.randn(50, 40).to(dtype)
        y.backward(g.to(DEVICE))
    kept = y.detach().cpu() != 0
    expected = torch.where(kept, g.float() / (1 - p), torch.zeros(())).to(dtype)
    torch.testing.assert_close(x.grad.cpu(), expected, **tol(dtype))


def test_dropout_identity_cases():
    x = rnd(6, 7)
    with no_fallback():
        check(lambda x: F.dropout(x, 0.5, training=False), x, grad=True)
        check(lambda x: F.dropout(x, 0.0, training=True), x, grad=True)
        check(lambda x: torch.ops.aten.native_dropout(x, 0.5, False), rnd(3, 3, grad=False))
        m = torch.nn.Dropout(0.5).eval()
        check(m, rnd(4, 4))
        out = F.dropout(torch.ones(10, 10, device=DEVICE), 1.0, training=True)
    assert torch.equal(out.cpu(), torch.zeros(10, 10))


# ------------------------------------------------------------------ losses


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("weighted", [False, True])
def test_nll_loss(reduction, weighted):
    x = rnd(6, 5)
    t = torch.tensor([0, 4, 2, 2, 1, 3])
    w = torch.rand(5) + 0.5 if weighted else None
    with no_fallback():
        check(lambda x, t, w: F.nll_loss(x, t, weight=w, reduction=reduction), x, t, w, grad=True)
        check(lambda x, t, w: F.nll_loss(x, t, weight=w, reduction=reduction, ignore_index=2), x, t, w, grad=True)


def test_nll_loss_forms():
    with no_fallback():
        # 1-d input with a 0-d target.
        check(lambda x, t: F.nll_loss(x, t), rnd(5), torch.tensor(3), grad=True)
        check(lambda x, t: F.nll_loss(x, t, reduction="none"), rnd(5), torch.tensor(3), grad=True)
        # Spatial (N, C, H, W) input: nll_loss2d.
        t = torch.randint(0, 4, (2, 3, 5))
        for red in ("none", "mean", "sum"):
            check(lambda x, t: F.nll_loss(x, t, reduction=red, ignore_index=1), rnd(2, 4, 3, 5), t, grad=True)
        # (N, C, d) input is reshaped by nll_loss_nd.
        check(lambda x, t: F.nll_loss(x, t), rnd(2, 4, 3), torch.randint(0, 4, (2, 3)), grad=True)
        # The raw op: total_weight output.
        check(
            lambda x, t, w: torch.ops.aten.nll_loss_forward(x, t, w, 1, 0),
            rnd(4, 3, grad=False),
            torch.tensor([0, 1, 2, 1]),
            torch.rand(3),
        )


def test_nll_loss_errors():
    for dev in ("cpu", DEVICE):
        # CPU's wording changed after torch 2.11 ("expected scalar type Long but found Int").
        with pytest.raises(RuntimeError, match="(expected target dtype to be Long or Byte, but got|found) Int"):
            torch.ops.aten.nll_loss_forward(
                torch.ones(4, 3, device=dev), torch.zeros(4, dtype=torch.int32, device=dev), None, 1, -100
            )
        with pytest.raises(ValueError, match=r"Expected input batch_size \(4\) to match target batch_size \(3\)"):
            F.nll_loss(torch.ones(4, 3, device=dev), torch.zeros(3, dtype=torch.int64, device=dev))


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_cross_entropy(dtype, reduction):
    x = rnd(6, 5, dtype=dtype)
    t = torch.tensor([0, 4, 2, 2, 1, 3])
    with no_fallback():
        check(lambda x, t: F.cross_entropy(x, t, reduction=reduction), x, t, grad=True, **tol(dtype))
        check(
            lambda x, t: F.cross_entropy(x, t, reduction=reduction, ignore_index=2, weight=None),
            x,
            t,
            grad=True,
            **tol(dtype),
        )


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_cross_entropy_label_smoothing_and_weight(reduction):
    x = rnd(6, 5)
    t = torch.tensor([0, 4, 2, 2, 1, 3])
    w = torch.rand(5) + 0.5
    with no_fallback():
        check(lambda x, t: F.cross_entropy(x, t, reduction=reduction, label_smoothing=0.1), x, t, grad=True)
        # Probability targets.
        check(
            lambda x, p: F.cross_entropy(x, p, reduction=reduction), x, torch.softmax(torch.randn(6, 5), -1), grad=True
        )
    ws = lambda x, t, w: F.cross_entropy(x, t, w, reduction=reduction, label_smoothing=0.2, ignore_index=4)
    # (the weighted-mean smoothing path goes through masked_select: a data-dependent shape)
    with no_fallback():
        check(ws, x, t, w, grad=True)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_mse_loss(dtype, reduction):
    x, y = rnd(4, 5, dtype=dtype), rnd(4, 5, dtype=dtype)
    with no_fallback():
        check(lambda x, y: F.mse_loss(x, y, reduction=reduction), x, y, grad=True, **tol(dtype))


# ------------------------------------------------------------------ embedding


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_embedding_backward(dtype):
    w = rnd(10, 4, dtype=dtype)
    idx = torch.tensor([[1, 2, 4, 5], [4, 3, 2, 9]])
    with no_fallback():
        check(lambda w, i: F.embedding(i, w), w, idx, grad=True, **tol(dtype))
        check(lambda w, i: F.embedding(i, w, padding_idx=2), w, idx, grad=True, **tol(dtype))
        check(lambda w, i: F.embedding(i, w, scale_grad_by_freq=True), w, idx, grad=True, **tol(dtype))


def test_embedding_module_int32_indices():
    emb = torch.nn.Embedding(7, 3, padding_idx=0)
    with no_fallback():
        check(
            lambda w, i: F.embedding(i, w, padding_idx=0),
            emb.weight.detach().clone().requires_grad_(),
            torch.tensor([0, 3, 3, 6], dtype=torch.int32),
            grad=True,
        )


# ------------------------------------------------------------------ attention


def qkv(dtype=torch.float32, L=5, S=5, E=8):
    return rnd(2, 3, L, E, dtype=dtype), rnd(2, 3, S, E, dtype=dtype), rnd(2, 3, S, E, dtype=dtype)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_sdpa_plain_and_causal(dtype):
    q, k, v = qkv(dtype)
    with no_fallback():
        check(F.scaled_dot_product_attention, q, k, v, grad=True, **tol(dtype))
        check(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True), q, k, v, grad=True, **tol(dtype))
        check(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, scale=0.3), q, k, v, grad=True, **tol(dtype))


def test_sdpa_masks():
    q, k, v = qkv(L=4, S=6)
    bool_mask = torch.rand(4, 6) > 0.4
    bool_mask[:, 0] = True
    float_mask = torch.randn(2, 1, 4, 6)
    with no_fallback():
        check(lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m), q, k, v, bool_mask, grad=True)
        check(lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m), q, k, v, float_mask, grad=True)
        # A fully masked row gives zeros (the math path's safe softmax).
        bool_mask[1] = False
        check(lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m), q, k, v, bool_mask, grad=True)


def test_safe_softmax_direct():
    x = torch.randn(3, 5)
    x[1] = float("-inf")
    x[2, :2] = float("-inf")
    with no_fallback():
        check(lambda x: torch.ops.aten._safe_softmax(x, -1), x)
        check(lambda x: torch.ops.aten._safe_softmax(x, 0), x)


def test_mse_loss_promotion_and_errors():
    with no_fallback():
        check(F.mse_loss, torch.arange(6).reshape(2, 3), torch.randn(2, 3))
    for dev in ("cpu", DEVICE):
        with pytest.raises(NotImplementedError, match="\"mse_cpu\" not implemented for 'Long'"):
            F.mse_loss(torch.ones(3, dtype=torch.int64, device=dev), torch.zeros(3, dtype=torch.int64, device=dev))


def test_sdpa_dropout_runs_on_device():
    q, k, v = (t.detach().to(DEVICE).requires_grad_() for t in qkv())
    with no_fallback():
        out = F.scaled_dot_product_attention(q, k, v, dropout_p=0.5)
        out.sum().backward()
    assert out.shape == q.shape and torch.isfinite(out.cpu()).all()
    assert q.grad is not None and q.grad.shape == q.shape


@pytest.mark.parametrize("affine", [True, False])
@pytest.mark.parametrize("shape,groups", [((2, 6, 5, 4), 3), ((3, 4, 7), 2), ((2, 8, 3), 4)])
def test_group_norm_forward_backward(shape, groups, affine):
    x = torch.randn(shape, requires_grad=True)
    c = shape[1]
    w = torch.randn(c, requires_grad=True) if affine else None
    b = torch.randn(c, requires_grad=True) if affine else None
    with no_fallback():
        check(lambda t, w, b: F.group_norm(t, groups, w, b, eps=1e-5), x, w, b, grad=True, atol=1e-4, rtol=1e-4)


def test_group_norm_module_compiled():
    torch._dynamo.reset()
    gn = torch.nn.GroupNorm(2, 8)
    x = torch.randn(2, 8, 5, 5)
    expected = gn(x).square().mean()
    expected.backward()
    dev = copy.deepcopy(gn).to("tpu")
    dev.zero_grad()
    with no_fallback():
        out = torch.compile(dev)(x.to("tpu")).square().mean()
        out.backward()
    torch.testing.assert_close(out.cpu(), expected, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(dev.weight.grad.cpu(), gn.weight.grad, atol=1e-5, rtol=1e-4)
    torch._dynamo.reset()


def test_module_to_keeps_parameters_and_tied_weights():
    """`Module.to("tpu")` swaps each Parameter's data in place, as for CUDA: the objects an
    optimizer holds stay the model's, and tied weights stay tied."""
    emb = torch.nn.Embedding(10, 4)
    head = torch.nn.Linear(4, 10, bias=False)
    head.weight = emb.weight
    model = torch.nn.Sequential(emb, head)
    params = list(model.parameters())
    model.to("tpu")
    assert head.weight is emb.weight and list(model.parameters()) == params
    assert emb.weight.device.type == "tpu"
    model.cpu()
    assert head.weight is emb.weight and emb.weight.device.type == "cpu"
