"""StableHLO written outside tpurs as torch ops: `torch.tpu.ops.stablehlo` (a module's text)
and `torch.tpu.pallas.jax_op` (a JAX function, differentiable), against CPU PyTorch, in
fused eager and under torch.compile."""

from __future__ import annotations

import pytest
import torch
from helpers import no_fallback

MUL_TWICE = """
module @user attributes {mhlo.num_partitions = 1 : i32} {
  func.func public @main(%a: tensor<2x3xf32>, %b: tensor<2x3xf32>) -> tensor<2x3xf32> {
    %0 = stablehlo.multiply %a, %b : tensor<2x3xf32>
    %1 = call @helper(%0) : (tensor<2x3xf32>) -> tensor<2x3xf32>
    return %1 : tensor<2x3xf32>
  }
  func.func private @helper(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
    %0 = stablehlo.add %x, %x : tensor<2x3xf32>
    return %0 : tensor<2x3xf32>
  }
}
"""

# Same symbol names as MUL_TWICE, another body: the two must not clash in one program.
NEGATE_AND_SUM = """
func.func @main(%a: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<f32>) {
  %0 = call @helper(%a) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %zero = stablehlo.constant dense<0.0> : tensor<f32>
  %1 = stablehlo.reduce(%a init: %zero) applies stablehlo.add across dimensions = [0, 1] : (tensor<2x3xf32>, tensor<f32>) -> tensor<f32>
  return %0, %1 : tensor<2x3xf32>, tensor<f32>
}
func.func private @helper(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = stablehlo.negate %x : tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}
"""


@pytest.fixture(autouse=True)
def _native_only():
    with no_fallback():
        yield


def test_a_module_runs_fused_with_the_ops_around_it():
    f = torch.tpu.ops.stablehlo(MUL_TWICE)
    a, b = torch.randn(2, 3), torch.randn(2, 3)
    torch.tpu.synchronize()
    launches = torch.tpu.metrics()["op_launches"]
    out = (f(a.to("tpu") + 1, b.to("tpu")) * 3).sum()
    value = out.item()
    if torch.tpu.eager_mode() == torch.tpu.EagerMode.DEFER_AND_FUSE:
        assert torch.tpu.metrics()["op_launches"] == launches + 1  # one program for all of it
    torch.testing.assert_close(torch.tensor(value), (2 * (a + 1) * b * 3).sum())


def test_functions_with_the_same_symbols_share_a_program():
    f, g = torch.tpu.ops.stablehlo(MUL_TWICE), torch.tpu.ops.stablehlo(NEGATE_AND_SUM)
    a, b = torch.randn(2, 3), torch.randn(2, 3)
    negated, total = g(f(a.to("tpu"), b.to("tpu")))
    torch.testing.assert_close(negated.cpu(), -2 * a * b)
    torch.testing.assert_close(total.cpu(), (2 * a * b).sum())
    assert total.shape == () and g.results == [((2, 3), torch.float32), ((), torch.float32)]


def test_inputs_must_match_the_signature():
    f = torch.tpu.ops.stablehlo(MUL_TWICE)
    x = torch.randn(2, 3, device="tpu")
    with pytest.raises(TypeError, match="takes 2 tensors, got 1"):
        f(x)
    with pytest.raises(TypeError, match=r"input 1 is torch.float64\[2, 3\] where @main takes torch.float32\[2, 3\]"):
        f(x, x.double())
    with pytest.raises(TypeError, match="input 0"):
        f(torch.randn(3, 2, device="tpu"), x)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("func.func @helper(%a: tensor<3xf32>) -> tensor<3xf32> { return %a : tensor<3xf32> }", "no func.func @main"),
        ("func.func @main(%a: tensor<?xf32>) -> tensor<?xf32> { return %a : tensor<?xf32> }", "static shapes only"),
    ],
)
def test_unusable_text_is_refused(text, message):
    with pytest.raises(ValueError, match=message):
        torch.tpu.ops.stablehlo(text)


def test_a_compiled_graph_keeps_the_function_inside():
    f = torch.tpu.ops.stablehlo(MUL_TWICE)
    torch._dynamo.reset()
    torch.tpu.reset_metrics()
    compiled = torch.compile(lambda a, b: (f(a.sin(), b) + 1).relu())
    a, b = torch.randn(2, 3), torch.randn(2, 3)
    out = compiled(a.to("tpu"), b.to("tpu"))
    torch.testing.assert_close(out.cpu(), (2 * a.sin() * b + 1).relu())
    assert torch.tpu.metrics()["graph_compiles"] == 1


# ---- JAX ----


def test_jax_op_forward_and_gradients_match_cpu():
    jax = pytest.importorskip("jax")
    jnp = jax.numpy

    @torch.tpu.pallas.jax_op
    def sin_mul(x, y):
        return jnp.sin(x) * y, jnp.tanh(x).sum()

    x, y = torch.randn(4, 5, requires_grad=True), torch.randn(4, 5, requires_grad=True)
    xt, yt = (t.detach().to("tpu").requires_grad_() for t in (x, y))
    prod, total = sin_mul(xt, yt)
    (prod * prod).sum().add(total).backward()
    ref_prod, ref_total = torch.sin(x) * y, torch.tanh(x).sum()
    (ref_prod * ref_prod).sum().add(ref_total).backward()
    torch.testing.assert_close(prod.cpu(), ref_prod.detach())
    torch.testing.assert_close(total.cpu(), ref_total.detach())
    torch.testing.assert_close(xt.grad.cpu(), x.grad)
    torch.testing.assert_close(yt.grad.cpu(), y.grad)


def test_jax_op_treats_integer_inputs_as_constants():
    jax = pytest.importorskip("jax")

    @torch.tpu.pallas.jax_op
    def gather_rows(table, rows):
        return jax.numpy.take(table, rows, axis=0) * 2.0

    table = torch.randn(6, 3, requires_grad=True)
    rows = torch.tensor([4, 0, 4], dtype=torch.int32)
    tt = table.detach().to("tpu").requires_grad_()
    out = gather_rows(tt, rows.to("tpu"))
    out.pow(2).sum().backward()
    ref = table[rows.long()] * 2.0
    ref.pow(2).sum().backward()
    torch.testing.assert_close(out.cpu(), ref.detach())
    torch.testing.assert_close(tt.grad.cpu(), table.grad)


def test_jax_op_exports_once_per_shape_and_dtype():
    jax = pytest.importorskip("jax")
    exports = []

    def gelu(x):
        exports.append(x.shape)
        return jax.nn.gelu(x, approximate=True)

    op = torch.tpu.pallas.jax_op(gelu)
    for shape, dtype in [
        ((3, 4), torch.float32),
        ((3, 4), torch.float32),
        ((5,), torch.float32),
        ((5,), torch.bfloat16),
    ]:
        x = torch.randn(shape).to(dtype)
        out = op(x.to("tpu"))
        tol = 1e-2 if dtype == torch.bfloat16 else 1e-5
        ref = torch.nn.functional.gelu(x.float(), approximate="tanh").to(dtype)
        torch.testing.assert_close(out.cpu(), ref, atol=tol, rtol=tol)
    assert exports == [(3, 4), (5,), (5,)]


def test_jax_op_under_torch_compile_is_one_graph_per_direction():
    jax = pytest.importorskip("jax")
    gelu = torch.tpu.pallas.jax_op(lambda x: jax.nn.gelu(x, approximate=True))
    torch._dynamo.reset()
    torch.tpu.reset_metrics()
    step = torch.compile(lambda x, w: (gelu(x @ w) * 2).sum())
    x, w = torch.randn(8, 16), torch.randn(16, 4, requires_grad=True)
    wt = w.detach().to("tpu").requires_grad_()
    out = step(x.to("tpu"), wt)
    out.backward()
    ref = (torch.nn.functional.gelu(x @ w, approximate="tanh") * 2).sum()
    ref.backward()
    torch.testing.assert_close(out.cpu(), ref.detach())
    torch.testing.assert_close(wt.grad.cpu(), w.grad, atol=1e-4, rtol=1e-4)
    metrics = torch.tpu.metrics()
    assert metrics["graph_compiles"] == 2 and metrics["fallback_count"] == 0


def test_jax_op_refuses_64_bit_inputs_without_x64():
    jax = pytest.importorskip("jax")
    if jax.config.jax_enable_x64:
        pytest.skip("x64 is on in this process")
    op = torch.tpu.pallas.jax_op(lambda x: x * 2)
    with pytest.raises(TypeError, match="jax_enable_x64"):
        op(torch.randn(3, dtype=torch.float64, device="tpu"))
