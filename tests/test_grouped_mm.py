"""The grouped matmul of mixture-of-experts layers against CPU PyTorch: `torch._grouped_mm`
in its four layouts (ragged rows, ragged contraction, ragged columns, batched), its
gradients, `torch.tpu.ops.ragged_dot` (empty groups, rows past the last group), compiled
graphs whose group sizes change without a new program, and Hugging Face Qwen3-MoE with its
"grouped_mm" experts against the same model's eager experts on CPU."""

import copy

import pytest
import torch
from helpers import check, no_fallback
from torch.utils._python_dispatch import TorchDispatchMode

# CPU's kernel wants 16-byte aligned rows: sizes here are multiples of 8.
OFFS = torch.tensor([8, 8, 24], dtype=torch.int32)  # group 1 is empty


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_layouts_match_cpu(dtype):
    def r(*shape):
        return torch.randn(*shape).to(dtype)

    tol = dict(atol=1e-5, rtol=1e-5) if dtype == torch.float32 else dict(atol=2e-2, rtol=2e-2)
    with no_fallback():
        check(lambda a, b, o: torch._grouped_mm(a, b, offs=o), r(24, 16), r(3, 16, 8), OFFS, **tol)  # 2d x 3d
        check(lambda a, b, o: torch._grouped_mm(a, b, offs=o), r(8, 24), r(24, 16), OFFS, **tol)  # 2d x 2d
        check(lambda a, b, o: torch._grouped_mm(a, b, offs=o), r(3, 8, 16), r(16, 24), OFFS, **tol)  # 3d x 2d
        check(lambda a, b: torch._grouped_mm(a, b), r(3, 8, 16), r(3, 16, 8), **tol)  # batched


def test_gradients_match_cpu():
    a = torch.randn(24, 16, requires_grad=True)
    b = torch.randn(3, 16, 8, requires_grad=True)
    with no_fallback():
        check(lambda a, b, o: torch.nn.functional.grouped_mm(a, b, offs=o), a, b, OFFS, grad=True, atol=1e-4, rtol=1e-4)


def reference_ragged_dot(lhs, rhs, sizes):
    out, start = lhs.new_zeros(lhs.shape[0], rhs.shape[2]), 0
    for g, size in enumerate(sizes.tolist()):
        out[start : start + size] = lhs[start : start + size] @ rhs[g]
        start += size
    return out


def test_ragged_dot_and_its_gradients():
    lhs = torch.randn(10, 4, requires_grad=True)
    rhs = torch.randn(3, 4, 5, requires_grad=True)
    sizes = torch.tensor([3, 0, 5])  # rows 8 and 9 belong to no group: zeros
    want = reference_ragged_dot(lhs, rhs, sizes)
    (want * torch.arange(50.0).view(10, 5)).sum().backward()
    lt, rt = (t.detach().to("tpu").requires_grad_() for t in (lhs, rhs))
    with no_fallback():
        got = torch.tpu.ops.ragged_dot(lt, rt, sizes.to("tpu"))
        (got * torch.arange(50.0, device="tpu").view(10, 5)).sum().backward()
    torch.testing.assert_close(got.detach().cpu(), want.detach(), atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(lt.grad.cpu(), lhs.grad, atol=1e-4, rtol=1e-5)
    torch.testing.assert_close(rt.grad.cpu(), rhs.grad, atol=1e-4, rtol=1e-5)
    with pytest.raises(TypeError, match="group_sizes"):
        torch.tpu.ops.ragged_dot(lt, rt, torch.ones(3, device="tpu"))
    # TorchTPU's explicit weight gradient gives autograd's rhs gradient.
    upstream = torch.arange(50.0).view(10, 5)
    with no_fallback():
        weight_grad = torch.tpu.ops.ragged_dot_weight_grad(lt.detach(), upstream.to("tpu"), sizes.to("tpu"))
    torch.testing.assert_close(weight_grad.cpu(), rhs.grad, atol=1e-4, rtol=1e-5)


def test_compiled_ragged_dot_keeps_its_program_when_sizes_change():
    lhs, rhs = torch.randn(16, 8), torch.randn(4, 8, 8)
    f = torch.compile(torch.tpu.ops.ragged_dot, fullgraph=True)
    with no_fallback():
        for i, sizes in enumerate(([4, 4, 4, 4], [16, 0, 0, 0], [1, 2, 3, 4])):
            sizes = torch.tensor(sizes)
            got = f(lhs.to("tpu"), rhs.to("tpu"), sizes.to("tpu"))
            torch.testing.assert_close(got.cpu(), reference_ragged_dot(lhs, rhs, sizes), atol=1e-5, rtol=1e-5)
            if i == 0:
                compiles = torch.tpu.metrics()["graph_compiles"]
    assert torch.tpu.metrics()["graph_compiles"] == compiles


def test_qwen3_moe_grouped_mm_experts_match_cpu_eager_experts():
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    config = transformers.Qwen3MoeConfig(
        vocab_size=96,
        hidden_size=64,
        intermediate_size=96,
        moe_intermediate_size=32,
        num_experts=4,
        num_experts_per_tok=2,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=16,
        max_position_embeddings=64,
    )
    cpu = transformers.Qwen3MoeForCausalLM(config).eval()
    dev = copy.deepcopy(cpu).to("tpu")
    dev.set_experts_implementation("grouped_mm")
    ids = torch.randint(3, 96, (2, 10), generator=torch.Generator().manual_seed(1))
    calls = []

    class Count(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            calls.append(func)
            return func(*args, **(kwargs or {}))

    with no_fallback(), Count():
        out = dev(ids.to("tpu"), labels=ids.to("tpu"))
        out.loss.backward()
    # The experts ran as grouped matmuls, with no host read of the token counts.
    assert torch.ops.aten._grouped_mm.default in calls
    assert torch.ops.aten.nonzero.default not in calls
    ref = cpu(ids, labels=ids)
    ref.loss.backward()
    torch.testing.assert_close(out.logits.cpu(), ref.logits, atol=2e-4, rtol=2e-4)
    for (name, p), q in zip(cpu.named_parameters(), dev.parameters()):
        if p.grad is not None:
            torch.testing.assert_close(q.grad.cpu(), p.grad, atol=1e-3, rtol=1e-3, msg=lambda m, n=name: f"{n}: {m}")
