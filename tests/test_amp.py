"""Autocast on tpu: PyTorch's CUDA op lists and cast policies, in eager and compiled mode,
checked against CPU autocast (the same model and data, bfloat16 tolerance)."""

from __future__ import annotations

import copy
import os
import sys

import pytest
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples", "mingpt"))

from helpers import no_fallback  # noqa: E402
from model import Block, GPTConfig  # noqa: E402


@pytest.fixture(autouse=True)
def _native_only():
    with no_fallback():
        yield


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_op_lists_pick_the_dtype(dtype):
    a = torch.randn(8, 16, device="tpu")
    b = torch.randn(16, 4, device="tpu")
    with torch.autocast("tpu", dtype=dtype):
        assert torch.is_autocast_enabled("tpu")
        assert torch.get_autocast_dtype("tpu") == dtype
        mm = a @ b  # lower precision
        lin = F.linear(a, b.t())
        ln = F.layer_norm(mm, (4,))  # float32
        soft = torch.softmax(mm, dim=-1)  # float32 (set dtype)
        summed = mm.sum()  # float32 (set dtype)
        mixed = torch.addcmul(a, a.to(dtype), a)  # promote to the widest
        plain = mm + 1  # not listed: keeps its input's dtype
    assert (mm.dtype, lin.dtype, plain.dtype) == (dtype, dtype, dtype)
    assert (ln.dtype, soft.dtype, summed.dtype, mixed.dtype) == (torch.float32,) * 4
    torch.testing.assert_close(mm.float().cpu(), (a.cpu().to(dtype) @ b.cpu().to(dtype)).float())
    assert (a @ b).dtype == torch.float32, "autocast ends with its context"


def test_binary_cross_entropy_is_refused_as_on_cuda():
    p = torch.rand(4, device="tpu")
    with torch.autocast("tpu", dtype=torch.bfloat16), pytest.raises(RuntimeError, match="unsafe to autocast"):
        F.binary_cross_entropy(p, p)


def _train(block: torch.nn.Module, x: torch.Tensor, device: str, steps: int) -> tuple[list[float], torch.nn.Module]:
    block = block.to(device)
    # SGD: its updates scale with the gradients, so bfloat16 rounding stays small (Adam's
    # normalised steps would turn the rounding of near-zero gradients into full-size steps).
    opt = torch.optim.SGD(block.parameters(), lr=0.1)
    x = x.to(device)
    losses = []
    for _ in range(steps):
        with torch.autocast(device, dtype=torch.bfloat16):
            y = block(x)
            loss = (y.float() ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses, block


def test_gpt_block_trains_under_autocast_like_cpu():
    torch.manual_seed(0)
    cfg = GPTConfig(vocab_size=16, block_size=16, n_layer=1, n_head=2, n_embd=32, dropout=0.0)
    block = Block(cfg)
    x = torch.randn(4, 16, 32)
    cpu_losses, cpu_block = _train(copy.deepcopy(block), x, "cpu", 3)
    tpu_losses, tpu_block = _train(copy.deepcopy(block), x, "tpu", 3)
    torch.testing.assert_close(torch.tensor(tpu_losses), torch.tensor(cpu_losses), rtol=2e-2, atol=1e-3)
    for (name, p_tpu), p_cpu in zip(tpu_block.named_parameters(), cpu_block.parameters()):
        assert p_tpu.dtype == torch.float32, f"{name}: autocast must not change parameter dtypes"
        torch.testing.assert_close(p_tpu.cpu(), p_cpu, rtol=2e-2, atol=2e-3, msg=name)


def test_autocast_inside_a_compiled_function():
    torch.manual_seed(0)
    lin = torch.nn.Linear(16, 8).to("tpu")
    x = torch.randn(4, 16, device="tpu")

    def f(x):
        with torch.autocast("tpu", dtype=torch.bfloat16):
            h = lin(x)
            return h, torch.softmax(h, dim=-1)

    before = torch.tpu.metrics()["graph_compiles"]
    h, s = torch.compile(f)(x)
    assert torch.tpu.metrics()["graph_compiles"] > before
    h_eager, s_eager = f(x)
    assert (h.dtype, s.dtype) == (torch.bfloat16, torch.float32)
    torch.testing.assert_close(h.cpu(), h_eager.cpu())
    torch.testing.assert_close(s.cpu(), s_eager.cpu())


@pytest.mark.parametrize(("setting", "name"), [("highest", "HIGHEST"), ("high", "HIGH"), ("medium", "DEFAULT")])
def test_float32_matmul_precision_reaches_the_program(setting, name, tmp_path, monkeypatch):
    # What the program asks of the plugin (a TPU runs DEFAULT as one bfloat16 pass); the CPU
    # plugin computes all three in float32, so only the program text and the cache show it.
    monkeypatch.setenv("TPURS_DUMP_DIR", str(tmp_path))
    n = {"highest": 8, "high": 9, "medium": 10}[setting]  # a shape no other case compiles
    a = torch.randn(n, n, device="tpu")
    previous = torch.get_float32_matmul_precision()
    try:
        torch.set_float32_matmul_precision(setting)
        torch._dynamo.reset()
        torch.compile(torch.mm)(a, a)
        misses = torch.tpu.metrics()["compile_cache_misses"]
        eager = torch.mm(a, a)
        torch.set_float32_matmul_precision("medium" if setting == "highest" else "highest")
        torch.mm(a, a)
        assert torch.tpu.metrics()["compile_cache_misses"] > misses, "the precision is part of an op's cache key"
    finally:
        torch.set_float32_matmul_precision(previous)
        torch._dynamo.reset()
    program = "".join(p.read_text() for p in tmp_path.glob("*stablehlo.mlir"))
    assert f"precision_config = [#stablehlo<precision {name}>, #stablehlo<precision {name}>]" in program
    torch.testing.assert_close(eager.cpu(), a.cpu() @ a.cpu())


def test_tpu_precision_context_overrides_the_global_setting(tmp_path, monkeypatch):
    # TorchTPU's names: torch.tpu.Precision and the torch.tpu.precision(...) context.
    monkeypatch.setenv("TPURS_DUMP_DIR", str(tmp_path))
    a = torch.randn(11, 11, device="tpu")  # a shape no other case compiles
    previous = torch.get_float32_matmul_precision()
    torch._dynamo.reset()
    try:
        with no_fallback(), torch.tpu.precision(torch.tpu.Precision.HIGH):
            assert torch.get_float32_matmul_precision() == "high"
            out = torch.compile(torch.mm)(a, a)
    finally:
        torch._dynamo.reset()
    assert torch.get_float32_matmul_precision() == previous
    program = "".join(p.read_text() for p in tmp_path.glob("*stablehlo.mlir"))
    assert "precision_config = [#stablehlo<precision HIGH>, #stablehlo<precision HIGH>]" in program
    torch.testing.assert_close(out.cpu(), a.cpu() @ a.cpu())
    with pytest.raises(ValueError, match="Precision.HIGHEST"):
        with torch.tpu.precision("high"):
            pass
