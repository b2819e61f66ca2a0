"""scaled_dot_product_attention on the device takes ATen's fused ("flash") route where it
applies, as CPU PyTorch does: one lowering rule forward and one backward, grouped-query
heads read in place. Values, log-sum-exp and gradients match CPU PyTorch; calls the fused
rule does not take (dropout, 3-d inputs, other value head sizes, a backend forced by
`sdpa_kernel`) stay on the math path and match too."""

import pytest
import torch
import torch.nn.functional as F
from helpers import DEVICE, check, no_fallback, run_python
from torch.nn.attention import SDPBackend, sdpa_kernel

FLASH = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu


def qkv(heads=4, kv_heads=4, L=5, S=7, E=8, dtype=torch.float32):
    torch.manual_seed(0)
    make = lambda h, n: torch.randn(2, h, n, E).to(dtype).requires_grad_()  # noqa: E731
    return make(heads, L), make(kv_heads, S), make(kv_heads, S)


def backward_name(q, k, v, **kw):
    out = F.scaled_dot_product_attention(q, k, v, **kw)
    return type(out.grad_fn).__name__


def test_device_takes_the_fused_route_like_the_cpu():
    q, k, v = qkv()
    dq, dk, dv = (t.detach().to(DEVICE).requires_grad_() for t in (q, k, v))
    assert backward_name(dq, dk, dv) == backward_name(q, k, v) == "ScaledDotProductFlashAttentionForCpuBackward0"
    with sdpa_kernel([SDPBackend.MATH]):
        assert "Flash" not in backward_name(dq, dk, dv)
        with no_fallback():
            check(F.scaled_dot_product_attention, q, k, v, grad=True, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize(
    "kw",
    [dict(), dict(is_causal=True), dict(scale=0.2), dict(attn_mask="bool"), dict(attn_mask="float")],
    ids=str,
)
@pytest.mark.parametrize("kv_heads", [4, 2, 1])
def test_grouped_query_attention_matches_cpu(kv_heads, kw):
    q, k, v = qkv(kv_heads=kv_heads)
    mask = kw.pop("attn_mask", None)
    if mask == "bool":
        kw["attn_mask"] = torch.rand(5, 7) > 0.3
    elif mask == "float":
        kw["attn_mask"] = torch.randn(2, 1, 5, 7)
    with no_fallback():
        check(
            lambda q, k, v, kw: F.scaled_dot_product_attention(q, k, v, enable_gqa=True, **kw),
            q,
            k,
            v,
            kw,
            grad=True,
            atol=1e-5,
            rtol=1e-5,
        )


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float64])
def test_fused_attention_dtypes(dtype):
    q, k, v = qkv(kv_heads=2, dtype=dtype)
    atol = 1e-9 if dtype == torch.float64 else 2e-2
    with no_fallback():
        check(
            lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True),
            q,
            k,
            v,
            grad=True,
            atol=atol,
            rtol=atol,
        )


def test_direct_op_log_sum_exp_and_fully_masked_rows():
    q, k, v = qkv(L=6, S=4)
    mask = torch.zeros(6, 4)
    mask[2] = float("-inf")  # a row that sees no key: zeros and a log-sum-exp of 0
    with no_fallback():
        check(
            lambda q, k, v, m: FLASH(q, k, v, 0.0, False, attn_mask=m), q, k, v, mask, grad=True, atol=1e-5, rtol=1e-5
        )
        # Causal with more queries than keys is upper-left aligned.
        check(lambda q, k, v: FLASH(q, k, v, 0.0, True, scale=0.5), q, k, v, grad=True, atol=1e-5, rtol=1e-5)


def test_calls_outside_the_fused_rule_take_the_math_path():
    torch.manual_seed(1)
    q3, k3, v3 = (torch.randn(3, 5, 8, requires_grad=True) for _ in range(3))
    q, k, _ = qkv()
    v_wide = torch.randn(2, 4, 7, 16, requires_grad=True)
    with no_fallback():
        check(F.scaled_dot_product_attention, q3, k3, v3, grad=True, atol=1e-5, rtol=1e-5)
        check(F.scaled_dot_product_attention, q, k, v_wide, grad=True, atol=1e-5, rtol=1e-5)


def test_fused_rule_errors_match_cpu():
    q, k, v = (t.detach() for t in qkv())
    cases = [
        (lambda q, k, v: FLASH(q, k, v, 0.5), "Currently do not support dropout > 0"),
        (lambda q, k, v: FLASH(q[0], k[0], v[0]), "Accept only 4 dims inputs"),
        (lambda q, k, v: FLASH(q, k, v, attn_mask=torch.zeros(2, 5, 7, device=q.device)), "Attention mask dim in"),
    ]
    for fn, message in cases:
        for device in ("cpu", DEVICE):
            args = [t.to(device) for t in (q, k, v)]
            with pytest.raises(RuntimeError, match=message):
                fn(*args)


def test_learned_bias_mask_gets_its_gradient():
    # T5's position bias is an additive mask that trains: the math path gives its gradient.
    q, k, v = qkv()
    bias = torch.randn(1, 4, 5, 7, requires_grad=True)
    with no_fallback():
        check(
            lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m),
            q,
            k,
            v,
            bias,
            grad=True,
            atol=1e-5,
            rtol=1e-5,
        )


def _local_mask(length: int, window: int) -> torch.Tensor:
    rows, cols = torch.arange(length).unsqueeze(1), torch.arange(length)
    return (cols <= rows) & (cols >= rows - window)


@pytest.mark.parametrize(
    ("heads", "kv_heads", "kwargs"),
    [
        (4, 4, {}),
        (4, 4, {"is_causal": False, "scale": 0.3}),
        (8, 2, {"block_q": 128, "q_layout": "HEAD_DIM_MINOR"}),
        (4, 1, {"local_window_size": 3}),
    ],
)
def test_splash_sdpa_is_fused_attention_under_torchtpu_name(heads, kv_heads, kwargs):
    torch.manual_seed(0)
    q = torch.randn(2, heads, 12, 16, requires_grad=True)
    k = torch.randn(2, kv_heads, 12, 16, requires_grad=True)
    v = torch.randn(2, kv_heads, 12, 16, requires_grad=True)
    window = kwargs.get("local_window_size")
    mask = _local_mask(12, window) if window is not None else None
    ref = F.scaled_dot_product_attention(
        q,
        k,
        v,
        attn_mask=mask,
        is_causal=kwargs.get("is_causal", True) and mask is None,
        scale=kwargs.get("scale"),
        enable_gqa=heads != kv_heads,
    )
    dq, dk, dv = (t.detach().to("tpu").requires_grad_() for t in (q, k, v))
    grad = torch.randn_like(ref)
    with no_fallback(), torch.profiler.profile() as prof:
        out = torch.tpu.ops.splash_sdpa(dq, dk, dv, **kwargs)
        out.backward(grad.to("tpu"))
    assert any(e.name == "aten::_scaled_dot_product_flash_attention_for_cpu" for e in prof.events())
    ref.backward(grad)
    torch.testing.assert_close(out.detach().cpu(), ref.detach(), atol=1e-5, rtol=1e-4)
    for device_t, cpu_t in ((dq, q), (dk, k), (dv, v)):
        torch.testing.assert_close(device_t.grad.cpu(), cpu_t.grad, atol=1e-4, rtol=1e-4)


def test_splash_sdpa_refuses_unknown_arguments():
    q = torch.randn(1, 2, 4, 8, device="tpu")
    with pytest.raises(TypeError, match="block_size"):
        torch.tpu.ops.splash_sdpa(q, q, q, block_size=4)


BLOCKED = """
import os, torch, torch.nn.functional as F
torch.manual_seed(0)
shapes = [((2, 4, 2, 12, 12, 8), True, False), ((1, 2, 2, 10, 7, 4), False, True), ((2, 4, 1, 9, 9, 8), True, True)]
for (B, H, Hkv, L, S, E), causal, masked in shapes:
    q = torch.randn(B, H, L, E, dtype=torch.float64, requires_grad=True)
    k = torch.randn(B, Hkv, S, E, dtype=torch.float64, requires_grad=True)
    v = torch.randn(B, Hkv, S, E, dtype=torch.float64, requires_grad=True)
    mask = torch.randn(B, 1, L, S, dtype=torch.float64) if masked else None
    if masked:
        mask[0, 0, 3] = float("-inf")  # a query that sees no key: zeros, as on the CPU
    kw = dict(is_causal=causal and not masked, enable_gqa=H != Hkv)
    ref = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, **kw)
    grad = torch.randn_like(ref)
    ref.backward(grad)
    dq, dk, dv = (t.detach().to("tpu").requires_grad_() for t in (q, k, v))
    out = F.scaled_dot_product_attention(dq, dk, dv, attn_mask=None if mask is None else mask.to("tpu"), **kw)
    out.backward(grad.to("tpu"))
    for got, want in ((out.detach(), ref.detach()), (dq.grad, q.grad), (dk.grad, k.grad), (dv.grad, v.grad)):
        torch.testing.assert_close(got.cpu(), want, atol=1e-12, rtol=1e-12)
compiled = torch.compile(lambda q: F.scaled_dot_product_attention(q, q, q, is_causal=True))
x = torch.randn(1, 2, 16, 8)
torch.testing.assert_close(compiled(x.to("tpu")).cpu(), F.scaled_dot_product_attention(x, x, x, is_causal=True))
programs = [p for p in os.listdir(os.environ["TPURS_DUMP_DIR"]) if p.endswith(".mlir")]
assert any("stablehlo.while" in open(os.path.join(os.environ["TPURS_DUMP_DIR"], p)).read() for p in programs)
print("ok")
"""


def test_long_sequences_run_over_query_blocks(tmp_path):
    # A tiny score budget makes every call take the blocked loop (one query per block).
    r = run_python(BLOCKED, TPURS_ATTENTION_BLOCK_BYTES="1000", TPURS_FALLBACK="error", TPURS_DUMP_DIR=str(tmp_path))
    assert r.returncode == 0 and r.stdout.strip().endswith("ok"), r.stderr[-3000:]
