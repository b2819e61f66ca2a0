"""Integer-only ops against CPU PyTorch: bit shifts (counts past the width and negative,
signed and unsigned, scalar forms, in-place) and gcd / lcm (signs and zeros)."""

import pytest
import torch
from helpers import check, no_fallback

A = torch.tensor([0, 1, -1, 7, -8, 12345, -40000, 2**40, -(2**40), 255])
COUNTS = torch.tensor([0, 1, 3, 63, 64, 70, -1, 5, 2, 7])


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8])
def test_shifts(dtype):
    a = A.to(dtype)
    with no_fallback():
        check(lambda x, n: (x << n, x >> n), a, COUNTS.to(dtype))
        check(lambda x: (x << 3, x >> 2, torch.bitwise_left_shift(x, 1)), a)
        check(lambda n: torch.bitwise_right_shift(100, n), COUNTS.to(dtype).clamp(0, 6))
        check(lambda x, n: x.clone().bitwise_left_shift_(n), a, COUNTS.to(dtype))
        check(lambda x: x.clone().__irshift__(1), a)


def test_shift_refuses_floats_as_cpu():
    for device in ("cpu", "tpu"):
        with pytest.raises(NotImplementedError, match="lshift_cpu"):
            torch.ones(2, device=device) << 1


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.int16, torch.uint8])
def test_gcd_lcm(dtype):
    x = torch.tensor([0, 0, 12, -12, 18, 7, 1, -30, 1000, 97]).to(dtype)
    y = torch.tensor([0, 5, 18, 8, -12, 13, 0, -45, 750, 97]).to(dtype)
    if dtype == torch.uint8:  # unsigned: no negatives, products wrap as on CPU
        x, y = x.abs() % 40, y.abs() % 40
    with no_fallback():
        check(torch.gcd, x, y)
        check(torch.lcm, x, y)
        check(lambda a, b: a.clone().gcd_(b), x, y)
        check(lambda a: torch.gcd(a, torch.tensor(6, dtype=dtype)), x)


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.uint8])
def test_integer_division_by_zero_raises_like_cpu(dtype):
    # CPU raises ZeroDivisionError (a RuntimeError) at the op; on the device the divisor is
    # checked inside the program and the error raised at the next read.
    x = torch.tensor([3, 4, 7], dtype=dtype)
    zero = torch.tensor([1, 0, 2], dtype=dtype)
    ops = (
        lambda a, b: a // b,
        lambda a, b: a % b,
        lambda a, b: torch.fmod(a, b),
        lambda a, b: torch.div(a, b, rounding_mode="trunc"),
        lambda a, b: torch.div(a, b, rounding_mode="floor"),
        lambda a, b: a % 0,
    )
    for op in ops:
        with pytest.raises(RuntimeError, match="ZeroDivisionError"):
            op(x, zero)
        with no_fallback():
            result = op(x.to("tpu"), zero.to("tpu"))
        with pytest.raises(RuntimeError, match="ZeroDivisionError"):
            result.cpu()
    # Nonzero divisors are unaffected, and float division by zero is not an error.
    with no_fallback():
        check(lambda a, b: (a // b, a % b, torch.fmod(a, b)), x, zero + 1)
        check(lambda a, b: a.float() // b, x, zero)


def test_unsigned_abs_and_sign():
    # StableHLO's abs and sign refuse unsigned types; an unsigned value is its own magnitude.
    x = torch.tensor([0, 1, 7, 200, 255], dtype=torch.uint8)
    with no_fallback():
        check(lambda a: (torch.abs(a), torch.sign(a), torch.sgn(a), a.abs_()), x)
