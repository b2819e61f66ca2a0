"""The 8-bit float dtypes are device dtypes: casts round (and overflow) as CPU PyTorch's do,
and the ops CPU PyTorch has for them give the same bits."""

import pytest
import torch
from helpers import no_fallback

FLOAT8 = [torch.float8_e5m2, torch.float8_e4m3fn, torch.float8_e5m2fnuz, torch.float8_e4m3fnuz]
SPECIAL = [0.0, -0.0, 1.0, -2.5, 100.0, 448.0, 464.0, 480.0, 240.0, 250.0, 60000.0, 61440.0, 1e6]
SPECIAL += [float("inf"), -float("inf"), float("nan"), 1e-3, 0.01, -1e-9]


def same_values(actual, expected):
    # NaN payloads may differ (any NaN is NaN); every other value is compared bit for bit.
    nan = expected.float().isnan()
    assert torch.equal(actual.float().isnan(), nan)
    a, e = actual.view(torch.uint8)[~nan], expected.view(torch.uint8)[~nan]
    assert torch.equal(a, e), (actual.float()[~nan][a != e], expected.float()[~nan][a != e])


@pytest.mark.parametrize("dtype", FLOAT8, ids=str)
def test_casts_round_and_overflow_as_cpu(dtype):
    gen = torch.Generator().manual_seed(0)
    src = torch.cat(
        [torch.tensor(SPECIAL), torch.randn(3000, generator=gen) * 40, torch.randn(1000, generator=gen) / 500]
    )
    with no_fallback():
        for wide in [torch.float32, torch.float64, torch.bfloat16, torch.float16, torch.int64, torch.uint8]:
            x = src.to(wide) if wide.is_floating_point else src.clamp(-300, 300).to(wide)
            same_values(x.to("tpu").to(dtype).cpu(), x.to(dtype))
        y = src.to(dtype)
        for wide in [torch.float32, torch.float64, torch.bfloat16, torch.float16]:
            torch.testing.assert_close(y.to("tpu").to(wide).cpu(), y.to(wide), rtol=0, atol=0, equal_nan=True)
        finite = y[~y.float().isnan()]
        assert torch.equal(finite.to("tpu").to(torch.int32).cpu(), finite.to(torch.int32))


@pytest.mark.parametrize("dtype", FLOAT8, ids=str)
def test_ops_cpu_defines_give_the_same_bits(dtype):
    gen = torch.Generator().manual_seed(1)
    x, y = (torch.randn(6, 5, generator=gen).to(dtype) for _ in range(2))
    with no_fallback():
        dx, dy = x.to("tpu"), y.to("tpu")
        same_values((dx * dy).cpu(), x * y)
        same_values((dx @ dy.t()).cpu(), x @ y.t())
        same_values(torch.cat([dx, dy], 1).cpu(), torch.cat([x, y], 1))
        same_values(dx.abs().cpu(), x.abs())
        same_values(dx[torch.tensor([4, 0, 2], device="tpu")].t().contiguous().cpu(), x[torch.tensor([4, 0, 2])].t())
        assert torch.equal((dx == dy).cpu(), x == y)
        full = torch.empty(7, dtype=dtype, device="tpu").fill_(-96)
        same_values(full.cpu(), torch.full((7,), -96.0).to(dtype))
        same_values(dx.view(torch.uint8).view(dtype).cpu(), x)
