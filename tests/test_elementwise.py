import pytest
import torch
from helpers import ALL_DTYPES, FLOAT_DTYPES, check, no_fallback, sample, tol


@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("op", ["add", "mul", "maximum", "minimum", "eq", "lt", "ge", "ne"])
def test_binary(op, dtype):
    a, b = sample((3, 4), dtype), sample((4,), dtype)
    with no_fallback():
        check(getattr(torch, op), a, b, **tol(dtype))


@pytest.mark.parametrize("dtype", [d for d in ALL_DTYPES if d != torch.bool])
def test_sub_and_scalar(dtype):
    a, b = sample((2, 3), dtype), sample((2, 3), dtype)
    check(torch.sub, a, b, **tol(dtype))
    check(lambda x: x + 1, a, **tol(dtype))
    check(lambda x: x * 2.5, a, **tol(dtype))
    check(lambda x, y: torch.add(x, y, alpha=2), a, b, **tol(dtype))


@pytest.mark.parametrize("dtype", FLOAT_DTYPES + [torch.int64])
def test_div_modes(dtype):
    a = sample((3, 3), dtype)
    b = sample((3, 3), dtype)
    b = torch.where(b == 0, torch.ones_like(b), b)
    check(torch.div, a, b, **tol(dtype))
    check(lambda x, y: torch.div(x, y, rounding_mode="floor"), a, b, **tol(dtype))
    check(lambda x, y: torch.div(x, y, rounding_mode="trunc"), a, b, **tol(dtype))
    check(torch.remainder, a, b, **tol(dtype))
    with no_fallback():
        check(lambda y: (torch.remainder(5, y), -3 % y, torch.remainder(2.5, y)), b, **tol(dtype))


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize(
    "op", ["exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "sin", "cos", "abs", "neg", "floor", "ceil", "erf", "relu"]
)
def test_unary_float(op, dtype):
    x = sample((5, 3), dtype)
    if op in ("log", "sqrt", "rsqrt"):
        x = x.abs() + 0.1
    with no_fallback():
        check(getattr(torch, op), x, **tol(dtype))


def test_unary_int_promotes_to_float():
    x = torch.arange(1, 7).reshape(2, 3)
    check(torch.exp, x)
    check(torch.sqrt, x)


@pytest.mark.parametrize("dtype", [torch.float32, torch.int64, torch.uint8])
def test_type_promotion(dtype):
    a = sample((4,), dtype)
    check(lambda x: x + 1.5, a)
    check(lambda x: x * torch.tensor(2.0, dtype=torch.float64), a)
    check(lambda x, y: x + y, a, sample((4,), torch.int32))


def test_where_clamp_logical():
    x = torch.randn(4, 5)
    check(lambda t: torch.where(t > 0, t, torch.zeros_like(t)), x)
    check(lambda t: torch.clamp(t, -0.5, 0.5), x)
    check(lambda t: torch.clamp(t, min=0.1), x)
    check(lambda t: t.clamp_max(0.2), x)
    b = x > 0
    check(torch.logical_and, b, x < 0.5)
    check(torch.logical_not, b)
    check(torch.bitwise_xor, b, x < 0.5)


def test_inplace_and_out():
    x = torch.randn(3, 3)
    check(lambda t: t.add_(1.0).mul_(2.0), x)
    out = torch.empty(3, 3)
    check(lambda t, o: torch.add(t, t, out=o), x, out)
    check(lambda t, o: torch.add(t, t, out=o), x, torch.empty(0))


def test_inplace_cast_error_matches_cpu():
    a = torch.ones(3, dtype=torch.int64)
    with pytest.raises(RuntimeError, match="can't be cast"):
        a.clone().add_(1.5)
    with pytest.raises(RuntimeError, match="can't be cast"):
        a.to("tpu").add_(1.5)


def test_broadcast_error_matches_cpu():
    with pytest.raises(RuntimeError, match="must match the size"):
        torch.ones(2, 3) + torch.ones(4)
    with pytest.raises(RuntimeError, match="must match the size"):
        torch.ones(2, 3, device="tpu") + torch.ones(4, device="tpu")


def test_round_decimals():
    x = torch.tensor([1.2345, -2.5, 0.125, 123.456, -0.0049, 2.675, 15.0, 1e-3]) * torch.tensor(3.0)
    with no_fallback():
        for decimals in (0, 1, 2, 3, -1, -2):
            check(lambda t: torch.round(t, decimals=decimals), x)
        with pytest.raises(NotImplementedError, match="round_cpu"):
            torch.round(torch.arange(5, device="tpu"), decimals=2)
        check(lambda t: t.clone().round_(decimals=1), x)


INVERSE_TRIG = {
    torch.asin: [-1.0, -0.7, -1e-4, 0.0, 0.3, 0.999, 1.0, 1.5],
    torch.acos: [-1.0, -0.7, 0.0, 0.3, 0.999, 1.0, -1.2],
    torch.asinh: [-1e12, -3.0, -1e-5, 0.0, 0.5, 2.0, 1e3, 1e12],
    torch.acosh: [0.5, 1.0, 1.0001, 1.5, 10.0, 1e5, 1e12],
    torch.atanh: [-1.0, -0.9, -1e-5, 0.0, 0.5, 0.999, 1.0, 1.5],
}


@pytest.mark.parametrize("op", list(INVERSE_TRIG), ids=lambda f: f.__name__)
def test_inverse_trig_and_hyperbolic(op):
    x = torch.tensor(INVERSE_TRIG[op])
    with no_fallback():
        check(op, x, atol=1e-5, rtol=1e-5)
        check(op, torch.arange(0, 2))
        inside = (
            x[(x.abs() < 0.95) & (x.abs() > 1e-3)] if op not in (torch.acosh, torch.asinh) else x[(x > 1.2) & (x < 1e4)]
        )
        check(lambda t: op(t).sum(), inside.clone().requires_grad_(), grad=True, atol=1e-4, rtol=1e-4)


def test_sinh_cosh_near_zero_and_near_overflow():
    # expm1 near 0 (e^x - e^-x cancels to a few digits at 1e-5); e^|x| / 2 up to 89.4,
    # where e^x alone overflows.
    x = torch.tensor([1e-7, -1e-5, 3e-3, 0.5, -7.0, 25.0, 88.9, -89.2, 89.5, 90.0, float("inf"), float("nan")])
    with no_fallback():
        check(lambda t: (torch.sinh(t), torch.cosh(t)), x, atol=0, rtol=2e-6)


def test_maximum_minimum_clamp_nan_and_signed_zeros():
    # A NaN in either operand propagates (XLA's max kept x when y was NaN); ties between
    # signed zeros pick the second operand for tensor bounds and x for number bounds, as CPU.
    v = [float("nan"), float("inf"), -float("inf"), 0.0, -0.0, 1.0, -2.0]
    a = torch.tensor([x for x in v for _ in v])
    b = torch.tensor([y for _ in v for y in v])

    def exact(t):
        # Compares signs of zeros too (assert_close treats 0.0 and -0.0 as equal), not of NaNs.
        return torch.stack([t, (torch.signbit(t) & ~t.isnan()).to(t.dtype)])

    with no_fallback():
        check(lambda x, y: exact(torch.maximum(x, y)), a, b, atol=0, rtol=0)
        check(lambda x, y: exact(torch.minimum(x, y)), a, b, atol=0, rtol=0)
        check(lambda x, y: exact(torch.clamp(x, y, y.flip(0))), a, b, atol=0, rtol=0)
        check(lambda x: exact(torch.clamp(x, -0.0, 1.0)), a, atol=0, rtol=0)
        check(lambda x: exact(torch.clamp_max(x, 0.0)), a, atol=0, rtol=0)
        check(lambda x: torch.clamp(x, float("nan")), a)
        # The foreach forms optimizers call (amsgrad's running max), and inf-norms over NaN.
        check(lambda x, y: torch._foreach_maximum([x], [y])[0], a, b)
        check(lambda x, y: torch._foreach_clamp_max([x], 1.0)[0], a, b)
        check(lambda x: torch._foreach_norm([x, x.flip(0)], float("inf")), a)


def test_copysign_fmax_fmin():
    nan = float("nan")
    a = torch.tensor([1.0, -2.0, 3.0, nan, 0.0, -0.0, 5.0])
    b = torch.tensor([-1.0, 2.0, -0.0, 1.0, nan, -3.0, nan])
    with no_fallback():
        check(torch.copysign, a, b)
        check(lambda t: torch.copysign(t, -1.0), a)
        check(torch.copysign, torch.arange(-3, 4), torch.tensor([1, -1, 1, -1, 1, -1, 1]))
        for op in (torch.fmax, torch.fmin):
            check(op, a, b)
            check(op, torch.tensor([1, 5, -3]), torch.tensor([2, 4, -3]))


def test_writes_that_partly_overlap_an_input_raise_like_cpu():
    message = "unsupported operation: some elements of the input tensor and the written-to tensor refer"
    for dev in ("cpu", "tpu"):
        x = torch.arange(4.0, device=dev)
        with pytest.raises(RuntimeError, match=message):
            torch.add(x[:3], 1, out=x[1:])
        with pytest.raises(RuntimeError, match=message):
            x.view(2, 2).add_(x.view(2, 2)[0])
    x = torch.arange(4.0, device="tpu")
    with no_fallback():
        torch.add(x, x, out=x)  # the same elements: allowed, as on CPU
        x.mul_(x)
    assert x.tolist() == [0.0, 4.0, 16.0, 36.0]


def test_copy_from_a_negative_view_copies_its_values():
    src = torch.tensor([1.0, -2.0, 3.0])
    for dev in ("cpu", "tpu"):
        with no_fallback():
            out = torch.empty(3, device=dev).copy_(src.to(dev)._neg_view())
            assert out.tolist() == [-1.0, 2.0, -3.0]
            into_neg = torch.zeros(3, device=dev)._neg_view()
            into_neg.copy_(src.to(dev))  # a negative destination shows what was copied
            assert into_neg.tolist() == [1.0, -2.0, 3.0]
    assert torch.empty(3, device="tpu").copy_(src._neg_view()).tolist() == [-1.0, 2.0, -3.0]  # from the host


@pytest.mark.parametrize("src", [torch.float32, torch.float64, torch.bfloat16])
@pytest.mark.parametrize("dst", [torch.int32, torch.int64, torch.int8, torch.uint8, torch.int16])
def test_float_to_int_casts_out_of_range_match_cpu(src, dst):
    # Out of range and NaN: x86's "integer indefinite", the type's minimum (StableHLO's
    # convert alone would saturate to the maximum and give 0 for NaN). Narrower integers
    # keep the low bits of that int32, as CPU PyTorch's casts do.
    x = torch.tensor([1e10, -1e10, float("nan"), float("inf"), 3.7, -3.7, 1e20, 0.0, 300.0, -300.0, 70000.0])
    x = x.to(src)
    with no_fallback():
        eager = x.to("tpu").to(dst)
        compiled = torch.compile(lambda t: t.to(dst))(x.to("tpu"))
    assert eager.tolist() == x.to(dst).tolist()
    assert compiled.tolist() == x.to(dst).tolist()


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16, torch.float16])
def test_nextafter_and_signbit_are_bit_exact(dtype):
    tiny = torch.finfo(dtype).tiny
    x = torch.tensor([0.0, -0.0, 1.0, -1.0, tiny, -tiny, float("inf"), -float("inf"), float("nan"), 2.5, 65504.0])
    y = torch.tensor([1.0, -1.0, 2.0, -2.0, 0.0, 1.0, 0.0, 0.0, 1.0, 2.5, float("inf")])
    x, y = x.to(dtype), y.to(dtype)
    ints = {2: torch.int16, 4: torch.int32, 8: torch.int64}[dtype.itemsize]
    with no_fallback():
        got = torch.nextafter(x.to("tpu"), y.to("tpu")).cpu()
        signs = torch.signbit(x.to("tpu")).cpu()
    assert got.view(ints).tolist() == torch.nextafter(x, y).view(ints).tolist()
    assert signs.tolist() == torch.signbit(x).tolist()


def test_hypot_and_angle_match_cpu():
    x = torch.tensor([3.0, 0.0, 1e30, 1e-30, float("inf"), float("nan"), -5.0, float("nan"), -0.0, -2.0])
    y = torch.tensor([4.0, 0.0, 1e30, 1e-30, float("nan"), 1.0, 12.0, float("inf"), 0.0, 7.0])
    with no_fallback():
        check(torch.hypot, x, y)
        check(torch.hypot, x.double(), y.double())
        check(torch.angle, x)
        check(torch.angle, torch.tensor([-2, 0, 3]))


def test_fused_half_ops_round_each_result():
    # In fused eager a chain of bfloat16 ops is one program; each op's result still rounds
    # to bfloat16 as in eager PyTorch (XLA otherwise keeps float32 between fused ops:
    # ndtr(-2.47) in bfloat16 came out as 0.0059, the CPU's 0.0078).
    # A half tensor times or over a host number computes in float32 with the number rounded
    # to float32 only, as the CPU does (t * 1.1 used 1.1 rounded to bfloat16: 253 of 1001
    # differed); plus and minus round the number to the tensor's dtype, also as the CPU.
    for dtype in (torch.bfloat16, torch.float16):
        x = torch.linspace(-3, 3, 1001).to(dtype)
        with no_fallback():
            check(lambda t: ((t * 0.7071067811865476 + 1.0) * 0.5 - t / 3) * 1.1, x, atol=0, rtol=0)
            check(lambda t: (t * 1.1, t / 0.3, 1.1 / t, t + 0.3, 0.3 - t, t * torch.tensor(1.1)), x, atol=0, rtol=0)
            check(lambda t: t.clone().mul_(0.3).div_(1.7), x, atol=0, rtol=0)
            check(lambda t: (t // 0.3, torch.div(t, 1.1, rounding_mode="trunc")), x, atol=0, rtol=0)
            # alpha: `self + alpha * other` in float32, alpha rounded to the dtype (the CPU
            # fuses the multiply-add, so allow one unit in the last place).
            check(lambda t: (torch.add(t, t, alpha=0.3), torch.add(t, 0.3, alpha=1.1)), x, **tol(dtype))
    with no_fallback():
        check(lambda t: torch.special.ndtr(t), torch.tensor([-2.46875]).bfloat16(), atol=0, rtol=0)


def test_heaviside():
    x = torch.tensor([-1.0, 0.0, 2.0, float("nan"), -0.0, float("inf")])
    with no_fallback():
        check(torch.heaviside, x, torch.tensor([0.5]))
        check(torch.heaviside, x.int(), torch.tensor([7], dtype=torch.int32))
        check(torch.heaviside, x > 0, torch.tensor([False]))
        check(lambda a, b: a.clone().heaviside_(b), x.bfloat16(), torch.tensor(0.25).bfloat16())
    for device in ("cpu", "tpu"):
        with (
            no_fallback(),
            pytest.raises(RuntimeError, match="heaviside is not yet implemented for tensors with different dtypes"),
        ):
            torch.heaviside(x.to(device), torch.tensor([1.0], dtype=torch.float64, device=device))


# ATen's ops without type promotion (and clamp with number bounds, where, nan_to_num,
# signbit) refuse an out= of another dtype than their result, each with CPU's message.
SAME_DTYPE_OUT = {
    "neg": lambda x, out: torch.neg(x, out=out),
    "floor": lambda x, out: torch.floor(x, out=out),
    "ceil": lambda x, out: torch.ceil(x, out=out),
    "round": lambda x, out: torch.round(x, out=out),
    "round_decimals": lambda x, out: torch.round(x, decimals=1, out=out),
    "trunc": lambda x, out: torch.trunc(x, out=out),
    "fix": lambda x, out: torch.fix(x, out=out),
    "frac": lambda x, out: torch.frac(x, out=out),
    "sign": lambda x, out: torch.sign(x, out=out),
    "sgn": lambda x, out: torch.sgn(x, out=out),
    "conj_physical": lambda x, out: torch.conj_physical(x, out=out),
    "clamp": lambda x, out: torch.clamp(x, -1.0, 1.0, out=out),
    "clamp_min": lambda x, out: torch.clamp_min(x, 0.0, out=out),
    "clamp_max": lambda x, out: torch.clamp_max(x, 0.0, out=out),
    "where": lambda x, out: torch.where(x > 0, x, -x, out=out),
    "nan_to_num": lambda x, out: torch.nan_to_num(x, out=out),
    "signbit": lambda x, out: torch.signbit(x, out=out),
}


@pytest.mark.parametrize("name", sorted(SAME_DTYPE_OUT))
@pytest.mark.parametrize("out_dtype", [torch.float64, torch.float16])
def test_out_of_another_dtype_raises_as_cpu(name, out_dtype):
    op = SAME_DTYPE_OUT[name]
    messages = []
    for device in ["cpu", "tpu"]:
        x = torch.tensor([1.5, -2.25, 0.0]).to(device)
        out = torch.empty(0, dtype=out_dtype, device=device)
        with pytest.raises(RuntimeError) as err:
            op(x, out)
        messages.append(str(err.value).split("\n")[0])
        assert out.numel() == 0  # nothing written
    assert messages[0] == messages[1]
    # The result's own dtype is accepted and gives CPU's values.
    x = torch.tensor([1.5, -2.25, 0.0])
    want = op(x, torch.empty(0, dtype=torch.bool if name == "signbit" else x.dtype))
    got = op(x.to("tpu"), torch.empty(0, dtype=want.dtype, device="tpu"))
    assert torch.equal(got.cpu(), want)


@pytest.mark.parametrize("x_dtype", [torch.float32, torch.complex64, torch.int32])
@pytest.mark.parametrize(
    "out_dtype", [torch.float32, torch.float64, torch.float16, torch.complex64, torch.complex128, torch.int64]
)
def test_abs_out_dtypes_as_cpu(x_dtype, out_dtype):
    # A real input's out= must keep its dtype; a complex input's magnitudes go into the
    # complex input's own dtype or any float they cast to.
    x = torch.tensor([1.5, -2.25, 3.0]).to(x_dtype) * (1 - 1j if x_dtype.is_complex else 1)
    results = []
    for device in ["cpu", "tpu"]:
        out = torch.empty(0, dtype=out_dtype, device=device)
        try:
            results.append(torch.abs(x.to(device), out=out).cpu())
        except RuntimeError as e:
            results.append(str(e))
            assert out.numel() == 0
    if isinstance(results[0], str):
        assert results[1] == results[0]
    else:
        assert results[1].dtype == results[0].dtype
        torch.testing.assert_close(results[1], results[0])


IN_PLACE_NUMBER_CLAMPS = {
    "clamp_": lambda x: x.clamp_(0.5),
    "clamp_min_": lambda x: x.clamp_min_(0.5),
    "clamp_max_ int bound": lambda x: x.clamp_max_(1),
    "_foreach_maximum_": lambda x: torch._foreach_maximum_([x], 0.5),
    "_foreach_clamp_max_ list": lambda x: torch._foreach_clamp_max_([x], [0.5]),
    "_foreach_minimum_ tensors": lambda x: torch._foreach_minimum_([x], [torch.ones(2, device=x.device)]),
}


@pytest.mark.parametrize("name", sorted(IN_PLACE_NUMBER_CLAMPS))
@pytest.mark.parametrize("dtype", [torch.bool, torch.uint8, torch.int16, torch.int32, torch.int64])
def test_in_place_clamp_refuses_promotion_as_cpu(name, dtype):
    # Number bounds go through clamp's own check, which names the dtype by its C++ type;
    # tensor bounds through TensorIterator's, which uses PyTorch's name.
    op = IN_PLACE_NUMBER_CLAMPS[name]
    outcomes = []
    for device in ["cpu", "tpu"]:
        x = torch.ones(2, dtype=dtype, device=device)
        try:
            op(x)
            outcomes.append(x.cpu())
        except RuntimeError as e:
            outcomes.append(str(e))
    if isinstance(outcomes[0], str):
        assert outcomes[1] == outcomes[0]
    else:
        assert torch.equal(outcomes[1], outcomes[0])


def _clamp_operands(device):
    return {
        "c": torch.ones(2, dtype=torch.complex64, device=device),
        "f": torch.ones(2, device=device),
        "i": torch.ones(2, dtype=torch.int64, device=device),
        "b": torch.ones(2, dtype=torch.bool, device=device),
    }


COMPLEX_CLAMPS = {
    "clamp complex tensor": lambda t: torch.clamp(t["c"], 1),
    "clamp_min complex tensor": lambda t: torch.clamp_min(t["c"], 1),
    "clamp float, complex bound": lambda t: torch.clamp(t["f"], 1j),
    "clamp_min float, complex bound": lambda t: torch.clamp_min(t["f"], 1j),
    "clamp int, complex bound": lambda t: torch.clamp(t["i"], 1j),
    "clamp_ int, complex bound": lambda t: t["i"].clone().clamp_(1j),
    "clamp_min_ int, complex bound": lambda t: t["i"].clone().clamp_min_(1j),
    "foreach maximum complex item": lambda t: torch._foreach_maximum([t["c"]], 1),
    "foreach maximum_ float, complex number": lambda t: torch._foreach_maximum_([t["f"]], 1j),
    "foreach clamp_max float, complex list": lambda t: torch._foreach_clamp_max([t["f"]], [1j]),
    "foreach maximum_ promotes before complex": lambda t: torch._foreach_maximum_([t["b"], t["b"]], [1, 1j]),
    "foreach maximum_ complex before promotion": lambda t: torch._foreach_maximum_([t["b"], t["b"]], [1j, 1]),
    "foreach minimum list length first": lambda t: torch._foreach_minimum([t["c"]], [1, 2]),
    "foreach minimum empty number list": lambda t: torch._foreach_minimum([t["f"]], []),
}


@pytest.mark.parametrize("name", sorted(COMPLEX_CLAMPS))
def test_clamp_with_complex_values_raises_as_cpu(name):
    # CPU's clamp checks run per item in its order: complex tensors and one-sided complex
    # bounds are NotImplementedError, an in-place promotion comes first where it is checked
    # first, and a float tensor reads a two-sided bound as a double.
    errors = []
    for device in ["cpu", "tpu"]:
        with pytest.raises(RuntimeError) as err:
            COMPLEX_CLAMPS[name](_clamp_operands(device))
        errors.append((type(err.value), str(err.value)))
    assert errors[1] == errors[0]


def test_bitwise_not_and_integer_floor_keep_their_dtype_in_out():
    for device in ["cpu", "tpu"]:
        i = torch.tensor([1, 2]).to(device)
        with pytest.raises(RuntimeError, match="Found dtype Int but expected Long"):
            torch.bitwise_not(i, out=torch.empty(0, dtype=torch.int32, device=device))
        with pytest.raises(RuntimeError, match="Found dtype Float but expected Long"):
            torch.floor(i, out=torch.empty(0, dtype=torch.float32, device=device))
    # Tensor bounds promote as binary ops do: a wider out= is fine, as on CPU.
    x = torch.tensor([1.5, -2.25])
    want = torch.clamp(x, min=x - 1, out=torch.empty(0, dtype=torch.float64))
    got = torch.clamp(x.to("tpu"), min=(x - 1).to("tpu"), out=torch.empty(0, dtype=torch.float64, device="tpu"))
    assert torch.equal(got.cpu(), want)
