"""Matrix products (mm, bmm, addmm, baddbmm, mv, addmv, dot) and the composites that
decompose into them (matmul, linear), compared against CPU PyTorch."""

import pytest
import torch
import torch.nn.functional as F
from helpers import DEVICE, check, no_fallback

FLOAT_DTYPES = [torch.float32, torch.bfloat16, torch.float16]
INT_DTYPES = [torch.int64, torch.int32, torch.int8, torch.uint8]


def sample(shape, dtype, requires_grad=False):
    if dtype.is_floating_point:
        return torch.randn(shape).to(dtype).requires_grad_(requires_grad)
    lo = 0 if dtype == torch.uint8 else -3
    return torch.randint(lo, 4, shape, dtype=dtype)


def tol(dtype):
    if dtype == torch.bfloat16:
        return dict(atol=5e-2, rtol=2e-2)
    if dtype == torch.float16:
        return dict(atol=1e-2, rtol=1e-2)
    return dict(atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_mm_bmm_float(dtype):
    with no_fallback():
        check(torch.mm, sample((3, 4), dtype, True), sample((4, 5), dtype, True), grad=True, **tol(dtype))
        check(torch.bmm, sample((2, 3, 4), dtype, True), sample((2, 4, 5), dtype, True), grad=True, **tol(dtype))


@pytest.mark.parametrize("dtype", INT_DTYPES)
def test_mm_bmm_int(dtype):
    with no_fallback():
        check(torch.mm, sample((3, 4), dtype), sample((4, 5), dtype))
        check(torch.bmm, sample((2, 3, 4), dtype), sample((2, 4, 5), dtype))
        check(torch.mv, sample((3, 4), dtype), sample((4,), dtype))
        check(torch.dot, sample((4,), dtype), sample((4,), dtype))


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_addmm_baddbmm(dtype):
    t = tol(dtype)
    with no_fallback():
        check(
            torch.addmm,
            sample((5,), dtype, True),
            sample((3, 4), dtype, True),
            sample((4, 5), dtype, True),
            grad=True,
            **t,
        )
        check(
            lambda s, a, b: torch.addmm(s, a, b, beta=0.5, alpha=2.0),
            sample((3, 5), dtype, True),
            sample((3, 4), dtype, True),
            sample((4, 5), dtype, True),
            grad=True,
            **t,
        )
        check(
            lambda s, a, b: torch.baddbmm(s, a, b, beta=-1.5, alpha=0.25),
            sample((2, 3, 5), dtype, True),
            sample((2, 3, 4), dtype, True),
            sample((2, 4, 5), dtype, True),
            grad=True,
            **t,
        )
        check(torch.baddbmm, sample((1, 5), dtype), sample((2, 3, 4), dtype), sample((2, 4, 5), dtype), **t)


def test_addmm_beta_zero_ignores_nan():
    s = torch.full((3, 5), float("nan"))
    with no_fallback():
        check(
            lambda s, a, b: torch.addmm(s, a, b, beta=0), s, torch.randn(3, 4), torch.randn(4, 5), atol=1e-4, rtol=1e-4
        )


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32])
def test_addmm_int(dtype):
    with no_fallback():
        check(
            lambda s, a, b: torch.addmm(s, a, b, beta=2, alpha=3),
            sample((3, 5), dtype),
            sample((3, 4), dtype),
            sample((4, 5), dtype),
        )


def test_inplace_and_out():
    a, b = torch.randn(3, 4), torch.randn(4, 5)
    with no_fallback():

        def mm_out(a, b):
            out = torch.empty(3, 5, device=a.device)
            torch.mm(a, b, out=out)
            return out

        check(mm_out, a, b, atol=1e-4, rtol=1e-4)

        def bmm_out(a, b):
            out = torch.empty(0, device=a.device)
            torch.bmm(a, b, out=out)
            return out

        check(bmm_out, torch.randn(2, 3, 4), torch.randn(2, 4, 5), atol=1e-4, rtol=1e-4)

        def addmm_(s, a, b):
            s = s.clone()
            s.addmm_(a, b, beta=0.5, alpha=-1)
            return s

        check(addmm_, torch.randn(3, 5), a, b, atol=1e-4, rtol=1e-4)

        def baddbmm_(s, a, b):
            s = s.clone()
            s.baddbmm_(a, b)
            return s

        check(baddbmm_, torch.randn(2, 3, 5), torch.randn(2, 3, 4), torch.randn(2, 4, 5), atol=1e-4, rtol=1e-4)


def test_mv_addmv_dot():
    with no_fallback():
        check(torch.mv, torch.randn(3, 4, requires_grad=True), torch.randn(4, requires_grad=True), grad=True, atol=1e-4)
        check(
            lambda s, m, v: torch.addmv(s, m, v, beta=0.5, alpha=2),
            torch.randn(3, requires_grad=True),
            torch.randn(3, 4, requires_grad=True),
            torch.randn(4, requires_grad=True),
            grad=True,
            atol=1e-4,
        )
        check(torch.dot, torch.randn(7, requires_grad=True), torch.randn(7, requires_grad=True), grad=True, atol=1e-4)


MATMUL_SHAPES = [
    ((4,), (4,)),
    ((3, 4), (4,)),
    ((4,), (4, 5)),
    ((3, 4), (4, 5)),
    ((2, 3, 4), (4, 5)),
    ((2, 3, 4), (4,)),
    ((4,), (2, 4, 5)),
    ((3, 4), (2, 4, 5)),
    ((2, 3, 4), (2, 4, 5)),
    ((2, 1, 3, 4), (3, 4, 5)),
    ((2, 3, 3, 4), (1, 3, 4, 5)),
]


@pytest.mark.parametrize("shapes", MATMUL_SHAPES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_matmul_broadcasting(shapes):
    a, b = shapes
    with no_fallback():
        check(
            torch.matmul,
            torch.randn(a, requires_grad=True),
            torch.randn(b, requires_grad=True),
            grad=True,
            atol=1e-4,
            rtol=1e-4,
        )


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_matmul_dtypes(dtype):
    with no_fallback():
        check(torch.matmul, sample((2, 3, 4), dtype, True), sample((4, 5), dtype, True), grad=True, **tol(dtype))


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("shape", [(3, 4), (2, 3, 4), (4,)])
def test_linear(shape, bias):
    x = torch.randn(shape, requires_grad=True)
    w = torch.randn(5, 4, requires_grad=True)
    b = torch.randn(5, requires_grad=True) if bias else None
    with no_fallback():
        check(F.linear, x, w, b, grad=True, atol=1e-4, rtol=1e-4)


def test_linear_bf16():
    x = sample((2, 3, 8), torch.bfloat16, True)
    w = sample((6, 8), torch.bfloat16, True)
    b = sample((6,), torch.bfloat16, True)
    with no_fallback():
        check(F.linear, x, w, b, grad=True, **tol(torch.bfloat16))


def test_bf16_accumulates_in_f32():
    # A long contraction in bf16: per-step bf16 rounding would drift far from CPU's result.
    a = torch.full((1, 4096), 1.0, dtype=torch.bfloat16)
    b = torch.full((4096, 1), 1.0 / 3, dtype=torch.bfloat16)
    with no_fallback():
        check(torch.mm, a, b, atol=0, rtol=0.01)


def _raises(fn, exc, msg):
    with pytest.raises(exc) as cpu_err:
        fn("cpu")
    with pytest.raises(exc) as dev_err:
        fn(DEVICE)
    assert msg in str(cpu_err.value)
    assert msg in str(dev_err.value), str(dev_err.value)


def test_errors():
    def mk(*s, dev, dtype=torch.float32):
        return torch.ones(*s, device=dev, dtype=dtype)

    _raises(
        lambda d: torch.mm(mk(2, 3, dev=d), mk(4, 5, dev=d)),
        RuntimeError,
        "mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)",
    )
    _raises(
        lambda d: torch.matmul(mk(2, 3, dev=d), mk(4, 5, dev=d)),
        RuntimeError,
        "mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)",
    )
    _raises(
        lambda d: F.linear(mk(2, 3, dev=d), mk(5, 4, dev=d)),
        RuntimeError,
        "mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)",
    )
    _raises(
        lambda d: torch.addmm(mk(5, dev=d), mk(2, 3, dev=d), mk(4, 5, dev=d)),
        RuntimeError,
        "mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)",
    )
    _raises(lambda d: torch.mm(mk(2, 3, dev=d), mk(3, dev=d)), RuntimeError, "mat2 must be a matrix")
    _raises(
        lambda d: torch.addmm(mk(3, dev=d), mk(2, 3, dev=d), mk(3, 5, dev=d)),
        RuntimeError,
        "The expanded size of the tensor (5) must match the existing size (3) at non-singleton dimension 1.  Target sizes: [2, 5].  Tensor sizes: [3]",
    )
    _raises(
        lambda d: torch.bmm(mk(2, 2, 3, dev=d), mk(2, 4, 5, dev=d)),
        RuntimeError,
        "Expected size for first two dimensions of batch2 tensor to be: [2, 3] but got: [2, 4].",
    )
    _raises(lambda d: torch.bmm(mk(2, 3, dev=d), mk(3, 3, 5, dev=d)), RuntimeError, "batch1 must be a 3D tensor")
    _raises(lambda d: torch.dot(mk(3, dev=d), mk(4, dev=d)), RuntimeError, "inconsistent tensor size")
    _raises(
        lambda d: torch.dot(mk(3, 1, dev=d), mk(3, 1, dev=d)),
        RuntimeError,
        "1D tensors expected, but got 2D and 2D tensors",
    )
    _raises(
        lambda d: torch.mv(mk(2, 3, dev=d), mk(4, dev=d)),
        RuntimeError,
        "size mismatch, got input (2), mat (2x3), vec (4)",
    )
    _raises(
        lambda d: torch.mm(mk(2, 3, dev=d), mk(3, 2, dev=d, dtype=torch.float64)),
        RuntimeError,
        "expected m1 and m2 to have the same dtype, but got: float != double",
    )
    _raises(
        lambda d: torch.mm(mk(2, 3, dev=d, dtype=torch.bool), mk(3, 2, dev=d, dtype=torch.bool)),
        NotImplementedError,
        "not implemented for 'Bool'",
    )


def test_empty():
    with no_fallback():
        check(torch.mm, torch.randn(0, 4), torch.randn(4, 5))
        check(torch.mm, torch.randn(3, 0), torch.randn(0, 5))


def test_vdot_real():
    a, b = torch.randn(7, requires_grad=True), torch.randn(7, requires_grad=True)
    with no_fallback():
        check(torch.vdot, a, b, grad=True, atol=1e-5, rtol=1e-5)
        check(torch.vdot, torch.arange(5), torch.arange(5))
    for device in ("cpu", "tpu"):
        with pytest.raises(RuntimeError, match="1D tensors expected"):
            torch.vdot(torch.ones(2, 2, device=device), torch.ones(4, device=device))


def test_addbmm():
    m, b1, b2 = torch.randn(3, 5), torch.randn(4, 3, 2), torch.randn(4, 2, 5)
    with no_fallback():
        check(torch.addbmm, m, b1, b2, atol=1e-5, rtol=1e-5)
        check(lambda x, y, z: torch.addbmm(x, y, z, beta=0.5, alpha=2.0), m, b1, b2, atol=1e-5, rtol=1e-5)
        check(
            lambda x, y, z: torch.addbmm(x, y, z).sum(),
            m.requires_grad_(),
            b1.requires_grad_(),
            b2.requires_grad_(),
            grad=True,
            atol=1e-4,
            rtol=1e-4,
        )
