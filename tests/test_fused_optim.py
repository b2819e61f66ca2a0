"""`torch.optim.Adam/AdamW/SGD/Adagrad(fused=True)` (`_fused_adam_`, `_fused_adamw_` (Hugging
Face's default optimizer), `_fused_sgd_`, `_fused_adagrad_`): one program per step on the
device, equal to CPU's fused kernels, with the learning rate a program input so a scheduler
compiles nothing new."""

import pytest
import torch
from helpers import no_fallback


def mlp(dtype=torch.float32):
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 4)).to(dtype)


CONFIGS = {
    "adam": (torch.optim.Adam, {}),
    "adamw": (torch.optim.AdamW, {}),
    "adamw_wd_amsgrad": (torch.optim.AdamW, dict(weight_decay=0.1, amsgrad=True)),
    "adam_wd_maximize_betas": (torch.optim.Adam, dict(weight_decay=0.1, maximize=True, betas=(0.3, 0.9))),
    "adamw_tensor_lr": (torch.optim.AdamW, dict(lr=torch.tensor(0.01))),
    "sgd": (torch.optim.SGD, dict(lr=0.1)),
    "sgd_momentum_wd": (torch.optim.SGD, dict(lr=0.1, momentum=0.9, weight_decay=0.01, dampening=0.1)),
    "sgd_nesterov_maximize": (torch.optim.SGD, dict(lr=0.1, momentum=0.9, nesterov=True, maximize=True)),
    "adagrad": (torch.optim.Adagrad, dict(lr=0.1)),
    "adagrad_decay_wd": (torch.optim.Adagrad, dict(lr=0.1, lr_decay=0.01, weight_decay=0.1, maximize=True)),
}


def train(device, name, dtype=torch.float32, steps=4, schedule=False):
    cls, kw = CONFIGS[name]
    model = mlp(dtype).to(device)
    opt = cls(model.parameters(), fused=True, **kw)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 1.0 / (1 + s)) if schedule else None
    x = torch.randn(32, 8, generator=torch.Generator().manual_seed(1)).to(dtype).to(device)
    for _ in range(steps):
        opt.zero_grad()
        model(x).float().square().mean().backward()
        opt.step()
        if sched:
            sched.step()
    state = [v for s in opt.state.values() for k, v in sorted(s.items()) if k != "step"]
    return [t.detach().cpu() for t in list(model.parameters()) + state]


# LambdaLR cannot scale a tensor learning rate: that configuration runs unscheduled only.
CASES = [(n, s) for n in CONFIGS for s in (False, True) if not (s and n == "adamw_tensor_lr")]


@pytest.mark.parametrize("name,schedule", CASES)
def test_matches_cpu_fused_adam(name, schedule):
    expected = train("cpu", name, schedule=schedule)
    with no_fallback():
        got = train("tpu", name, schedule=schedule)
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        torch.testing.assert_close(g, e, atol=1e-6, rtol=1e-5)


@pytest.mark.parametrize("name", ["adamw_wd_amsgrad", "sgd_momentum_wd", "adagrad_decay_wd"])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_half_types_compute_in_float32(name, dtype):
    expected = train("cpu", name, dtype)
    with no_fallback():
        got = train("tpu", name, dtype)
    for g, e in zip(got, expected):
        assert g.dtype == dtype
        torch.testing.assert_close(g.float(), e.float(), atol=2e-2, rtol=2e-2)


def test_a_scheduled_learning_rate_compiles_nothing_new():
    model = mlp().to("tpu")
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2, fused=True)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 1.0 / (1 + s))
    x = torch.randn(16, 8).to("tpu")

    def step():
        opt.zero_grad()
        model(x).square().mean().backward()
        opt.step()
        sched.step()
        torch.tpu.synchronize()

    step()
    step()
    before = torch.tpu.metrics()["compiles"]
    for _ in range(4):
        step()
    assert torch.tpu.metrics()["compiles"] == before
    assert opt.param_groups[0]["lr"] == pytest.approx(1e-2 / 7)


def state_lists(device, n=3, seed=0):
    g = torch.Generator().manual_seed(seed)
    shapes = [(4, 3), (5,), ()]
    make = lambda scale=1.0: [(torch.randn(s, generator=g) * scale).to(device) for s in shapes[:n]]  # noqa: E731
    params, grads, avgs = make(), make(8.0), make(0.1)
    sqs = [t.abs().to(device) for t in make(0.1)]
    steps = [torch.tensor(3.0).to(device) for _ in range(n)]
    return params, grads, avgs, sqs, steps


def fused_call(op, params, grads, avgs, sqs, steps, **extra):
    if op == "adamw":
        torch._fused_adamw_(
            params, grads, avgs, sqs, [], steps, lr=0.01, beta1=0.9, beta2=0.999,
            weight_decay=0.01, eps=1e-8, amsgrad=False, maximize=False, **extra,
        )  # fmt: skip
    elif op == "sgd":
        torch._fused_sgd_(
            params, grads, avgs, weight_decay=0.01, momentum=0.9, lr=0.1, dampening=0.0,
            nesterov=False, maximize=False, is_first_step=False, **extra,
        )  # fmt: skip
    else:
        torch._fused_adagrad_(
            params, grads, sqs, steps, lr=0.1, lr_decay=0.01, weight_decay=0.01, eps=1e-10,
            maximize=False, **extra,
        )  # fmt: skip


@pytest.mark.parametrize("op", ["adamw", "sgd", "adagrad"])
@pytest.mark.parametrize("found_inf", [None, 0.0, 1.0])
def test_grad_scale_and_found_inf_as_cpu(op, found_inf):
    """With grad_scale the grads are unscaled in place; found_inf == 1 skips the step."""
    results = {}
    for device in ["cpu", "tpu"]:
        params, grads, avgs, sqs, steps = state_lists(device)
        extra = dict(grad_scale=torch.tensor(4.0).to(device))
        if found_inf is not None:
            extra["found_inf"] = torch.tensor(found_inf).to(device)
        with no_fallback():
            fused_call(op, params, grads, avgs, sqs, steps, **extra)
        results[device] = [t.cpu() for t in params + grads + avgs + sqs]
    for g, e in zip(results["tpu"], results["cpu"]):
        torch.testing.assert_close(g, e, atol=1e-6, rtol=1e-5)


def test_errors_as_cpu():
    for device in ["cpu", "tpu"]:
        params, grads, avgs, sqs, steps = state_lists(device)
        kw = dict(lr=0.01, beta1=0.9, beta2=0.999, weight_decay=0.0, eps=1e-8, amsgrad=False, maximize=False)
        with pytest.raises(RuntimeError):
            torch._fused_adam_(params, grads[:2], avgs, sqs, [], steps, **kw)
        ints = [torch.ones(3, dtype=torch.int64).to(device)]
        with pytest.raises(NotImplementedError, match="not implemented for 'Long'"):
            torch._fused_adam_(ints, ints, ints, ints, [], [torch.tensor(1.0).to(device)], **kw)


def test_compiled_step_matches_cpu():
    def run(device, compile):
        model = mlp().to(device)
        opt = torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.1, fused=True)
        x = torch.randn(16, 8, generator=torch.Generator().manual_seed(1)).to(device)

        def step():
            opt.zero_grad()
            model(x).square().mean().backward()
            opt.step()

        f = torch.compile(step) if compile else step
        for _ in range(3):
            f()
        return [p.detach().cpu() for p in model.parameters()]

    expected = run("cpu", False)
    with no_fallback():
        got = run("tpu", True)
    for g, e in zip(got, expected):
        torch.testing.assert_close(g, e, atol=1e-6, rtol=1e-5)
