"""nn.LSTM / nn.GRU and their cells on the device: PyTorch runs them through the fused cell
ops on every non-CPU device (`_thnn_fused_lstm_cell`, `_thnn_fused_gru_cell` and their
backward ops); forward, input and parameter gradients against CPU, eager and compiled."""

import pytest
import torch
from helpers import no_fallback
from torch import nn

MODULES = {
    "lstm_2_layers": (lambda: nn.LSTM(8, 16, num_layers=2), (5, 3, 8)),
    "lstm_batch_first_bidirectional": (lambda: nn.LSTM(8, 16, batch_first=True, bidirectional=True), (3, 5, 8)),
    "lstm_no_bias": (lambda: nn.LSTM(8, 16, bias=False), (5, 3, 8)),
    "lstm_projection": (lambda: nn.LSTM(8, 16, proj_size=4), (5, 3, 8)),
    "lstm_unbatched": (lambda: nn.LSTM(8, 16), (5, 8)),
    "gru_2_layers": (lambda: nn.GRU(8, 16, num_layers=2), (5, 3, 8)),
    "gru_no_bias_bidirectional": (lambda: nn.GRU(8, 16, bias=False, bidirectional=True), (5, 3, 8)),
    "lstm_cell": (lambda: nn.LSTMCell(8, 16), (3, 8)),
    "gru_cell": (lambda: nn.GRUCell(8, 16), (3, 8)),
}


def run(name, device, dtype, compiled=False, compute=None):
    """Outputs, input gradient and parameter gradients; `compute` runs the module in another
    dtype from the same `dtype`-rounded parameters and input."""
    make, shape = MODULES[name]
    torch.manual_seed(0)
    module = make().to(dtype).to(compute or dtype)
    x = torch.randn(*shape, generator=torch.Generator().manual_seed(1)).to(dtype).to(compute or dtype)
    module, x = module.to(device), x.to(device).requires_grad_()
    fn = torch.compile(module) if compiled else module
    out = fn(x)
    outs = (
        list(out[:1]) + (list(out[1]) if isinstance(out[1], tuple) else [out[1]]) if isinstance(out, tuple) else [out]
    )
    torch.autograd.backward([o.float().sin().sum() for o in outs])
    return [o.detach().cpu() for o in outs] + [x.grad.cpu()] + [p.grad.cpu() for p in module.parameters()]


@pytest.mark.parametrize("name", sorted(MODULES))
def test_recurrent_modules_match_cpu(name):
    want = run(name, "cpu", torch.float32)
    with no_fallback():
        got = run(name, "tpu", torch.float32)
    for g, w in zip(got, want, strict=True):
        assert g.dtype == w.dtype and g.shape == w.shape
        torch.testing.assert_close(g, w, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("name", sorted(MODULES))
def test_bfloat16_cells_are_as_close_to_float64_as_cpu(name):
    # CPU rounds each gate to bfloat16 between its ops; the fused cells keep float32 inside,
    # as CUDA's do. Both are compared with float64 from the same rounded parameters.
    exact = run(name, "cpu", torch.bfloat16, compute=torch.float64)
    cpu = run(name, "cpu", torch.bfloat16)
    with no_fallback():
        got = run(name, "tpu", torch.bfloat16)
    for g, c, e in zip(got, cpu, exact, strict=True):
        assert g.dtype == c.dtype == torch.bfloat16 and g.shape == c.shape
        scale = e.abs().max().item() + 1e-3
        assert (g.double() - e).abs().max() <= 1.5 * (c.double() - e).abs().max() + 1e-2 * scale


@pytest.mark.parametrize("name", ["lstm_2_layers", "gru_2_layers"])
def test_compiled_recurrent_modules_match_cpu(name):
    want = run(name, "cpu", torch.float32)
    torch._dynamo.reset()
    with no_fallback():
        got = run(name, "tpu", torch.float32, compiled=True)
    for g, w in zip(got, want, strict=True):
        torch.testing.assert_close(g, w, atol=1e-5, rtol=1e-5)


def test_cell_shape_errors():
    gates, state = torch.randn(3, 64).to("tpu"), torch.randn(3, 8).to("tpu")
    with pytest.raises(RuntimeError, match="input_gates must have shape"):
        torch.ops.aten._thnn_fused_lstm_cell(gates, gates, state)
    with pytest.raises(RuntimeError, match="same dtype"):
        torch.ops.aten._thnn_fused_gru_cell(gates[:, :24], gates[:, :24].double(), state)
