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


def test_fills_with_numbers_past_int64_as_cpu():
    # A Python int past int64's range is a uint64 number: uint64 and float tensors take it;
    # other integer tensors refuse it with CPU's overflow error.
    mask = torch.tensor([True, False, True])
    index = torch.tensor([[2], [0]])
    with no_fallback():
        for v in (2**64 - 1, 2**63, 2**63 + 5):
            for dtype in (torch.uint64, torch.float32, torch.float64, torch.complex64):
                expected = torch.full((3,), v, dtype=dtype)
                assert torch.equal(torch.full((3,), v, dtype=dtype, device="tpu").cpu(), expected)
                assert torch.equal(torch.zeros(3, dtype=dtype, device="tpu").fill_(v).cpu(), expected)
                got = torch.zeros(3, dtype=dtype, device="tpu").masked_fill_(mask.to("tpu"), v)
                if dtype == torch.uint64:  # CPU has no uint64 masked_fill
                    expected = torch.tensor([v, 0, v], dtype=dtype)
                else:
                    expected = torch.zeros(3, dtype=dtype).masked_fill_(mask, v)
                assert torch.equal(got.cpu(), expected)
                got = torch.zeros(2, 3, dtype=dtype, device="tpu").scatter_(1, index.to("tpu"), v)
                assert torch.equal(got.cpu(), torch.zeros(2, 3, dtype=dtype).scatter_(1, index, v))
        # Comparisons cast the number to the common type, as CPU does (int64 sees 2**64 - 1
        # as -1).
        for dtype in (torch.uint64, torch.int64, torch.float64):
            x = torch.tensor([0, 1, -1, 2**62]).to(dtype)
            if dtype == torch.uint64:
                x = torch.tensor([0, 2**63, 2**64 - 1, 5], dtype=dtype)
            ops = (torch.eq, torch.ne) if dtype == torch.uint64 else (torch.eq, torch.ne, torch.lt, torch.ge)
            for v in (2**64 - 1, 2**63):
                for op in ops:  # CPU orders no uint64 values
                    assert torch.equal(op(x.to("tpu"), v).cpu(), op(x, v)), (dtype, v, op)
        for dtype in (torch.int64, torch.int32, torch.uint32):
            for device in ("cpu", "tpu"):
                with pytest.raises(RuntimeError, match="without overflow"):
                    torch.zeros(3, dtype=dtype, device=device).fill_(2**63 + 5)


def test_deterministic_resize_fills_uint64_with_its_maximum():
    # CPU fills the new elements with the type's largest value (test_torch's
    # test_deterministic_resize).
    before = torch.are_deterministic_algorithms_enabled()
    torch.use_deterministic_algorithms(True)
    try:
        with no_fallback():
            x = torch.zeros(2, dtype=torch.uint64, device="tpu")
            x.resize_(5)
            assert x[2:].cpu().tolist() == [2**64 - 1] * 3
    finally:
        torch.use_deterministic_algorithms(before)
