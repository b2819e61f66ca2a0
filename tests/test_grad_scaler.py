"""`torch.amp.GradScaler("tpu")`: unscaling with the inf/NaN check and the scale update run
on the device (`_amp_foreach_non_finite_check_and_unscale_`, `_amp_update_scale_`), with
the foreach and the fused optimizers, equal to CPU."""

import pytest
import torch
from helpers import no_fallback


def train(device, fused):
    torch.manual_seed(0)
    model = torch.nn.Linear(8, 4).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2, fused=fused)
    scaler = torch.amp.GradScaler(device, init_scale=2.0**14, growth_interval=2)
    x = torch.randn(16, 8, generator=torch.Generator().manual_seed(1)).to(device)
    scales = []
    for i in range(7):
        opt.zero_grad()
        loss = model(x).square().mean() * (float("inf") if i in (1, 4) else 1.0)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        scales.append(scaler.get_scale())
    params = [p.detach().cpu() for p in model.parameters()]
    return params, scales, scaler._growth_tracker.cpu()


@pytest.mark.parametrize("fused", [False, True])
def test_scaled_training_skips_inf_steps_as_cpu(fused):
    params, scales, tracker = train("cpu", fused)
    with no_fallback():
        got_params, got_scales, got_tracker = train("tpu", fused)
    assert got_scales == scales
    assert torch.equal(got_tracker, tracker)
    for g, e in zip(got_params, params):
        torch.testing.assert_close(g, e, atol=1e-6, rtol=1e-5)


@pytest.mark.parametrize("found_before", [0.0, 1.0])
def test_unscale_finds_infs_and_nans(found_before):
    grads = [
        torch.tensor([1.0, 2.0, float("nan")]),
        torch.tensor([[3.0, -4.0]], dtype=torch.bfloat16),
        torch.tensor([5.0], dtype=torch.float16),
        torch.tensor([float("inf"), 1.0], dtype=torch.float64),
    ]
    for picks in ([0, 1, 2, 3], [1, 2]):  # with and without non-finite values
        results = {}
        for device in ["cpu", "tpu"]:
            gs = [grads[i].clone().to(device) for i in picks]
            found = torch.tensor([found_before]).to(device)
            with no_fallback():
                torch._amp_foreach_non_finite_check_and_unscale_(gs, found, torch.tensor([0.25]).to(device))
            results[device] = [t.cpu() for t in gs] + [found.cpu()]
        for g, e in zip(results["tpu"], results["cpu"]):
            assert g.dtype == e.dtype
            torch.testing.assert_close(g, e, equal_nan=True)


@pytest.mark.parametrize("found,tracker,scale", [(0.0, 2, 3e38), (0.0, 0, 8.0), (1.0, 2, 8.0), (0.0, 2, 8.0)])
def test_update_scale(found, tracker, scale):
    results = {}
    for device in ["cpu", "tpu"]:
        s = torch.tensor(scale).to(device)
        t = torch.tensor(tracker, dtype=torch.int32).to(device)
        with no_fallback():
            r = torch._amp_update_scale_(s, t, torch.tensor(found).to(device), 2.0, 0.5, 3)
        assert r is s
        results[device] = (s.cpu(), t.cpu())
    assert torch.equal(results["tpu"][0], results["cpu"][0])
    assert torch.equal(results["tpu"][1], results["cpu"][1])


def test_errors_as_cpu():
    for device in ["cpu", "tpu"]:
        g = [torch.ones(3).to(device)]
        with pytest.raises(RuntimeError, match="inv_scale must be a 1-element tensor"):
            torch._amp_foreach_non_finite_check_and_unscale_(g, torch.zeros(1).to(device), torch.ones(2).to(device))
        with pytest.raises(RuntimeError, match="growth_tracker must be an int tensor"):
            s, inf = torch.ones(1).to(device), torch.zeros(1).to(device)
            torch._amp_update_scale_(s, torch.zeros(1).to(device), inf, 2.0, 0.5, 3)
        with pytest.raises(NotImplementedError, match="not implemented for 'Long'"):
            ints = [torch.ones(3, dtype=torch.long).to(device)]
            torch._amp_foreach_non_finite_check_and_unscale_(ints, torch.zeros(1).to(device), torch.ones(1).to(device))
