"""The _foreach_* ops (each against CPU, one program per call) and torch.optim SGD / Adam /
AdamW training a small MLP on the foreach path, step by step against CPU."""

import contextlib

import pytest
import torch
from helpers import assert_same, check, no_fallback, to_device

FLOAT_DTYPES = [torch.float32, torch.bfloat16, torch.float16]
SHAPES = [(3, 4), (5,), (), (2, 1, 3)]


def tol(dtype):
    return dict(atol=1e-2, rtol=1e-2) if dtype in (torch.bfloat16, torch.float16) else {}


def tlist(dtype=torch.float32, positive=False, shapes=SHAPES):
    out = []
    for s in shapes:
        if dtype.is_floating_point:
            t = torch.rand(s) + 0.5 if positive else torch.randn(s)
        else:
            t = torch.randint(1 if positive else -5, 6, s)
        out.append(t.to(dtype))
    return out


def launches():
    return torch.tpu.metrics()["op_launches"]


@contextlib.contextmanager
def one_launch():
    """Asserts the block is exactly one program launch (measured in strict eager mode, where
    every op launches on its own)."""
    mode = torch.tpu.eager_mode()
    torch.tpu.set_eager_mode("DEFER_NEVER")
    try:
        before = launches()
        yield
        assert launches() - before == 1, "a foreach op must be one program"
    finally:
        torch.tpu.set_eager_mode(mode)


def check_inplace(fn, *lists, **kw):
    """Runs in-place `fn(*lists)` on CPU and tpu copies; compares the mutated first list and
    checks the tpu call is one launch."""
    cpu = [[t.clone() for t in l] if isinstance(l, list) else l for l in lists]
    dev = to_device(cpu)
    fn(*cpu)
    with no_fallback(), one_launch():
        fn(*dev)
    assert_same(dev[0], cpu[0], **kw)


def check_functional(fn, *lists, **kw):
    """Compares `fn(*lists)` with CPU and checks the tpu call is one launch."""
    with no_fallback():
        out = check(fn, *lists, **kw)
    dev = to_device(lists)
    with one_launch():
        fn(*dev)
    return out


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("op", ["add", "sub", "mul", "div", "maximum", "minimum", "clamp_min", "clamp_max", "pow"])
def test_binary_overloads(op, dtype):
    f = getattr(torch, f"_foreach_{op}")
    f_ = getattr(torch, f"_foreach_{op}_")
    xs, ys = tlist(dtype, positive=True), tlist(dtype, positive=True)
    scalars = [0.5, 2.0, -1.5, 3.0] if op != "pow" else [0.5, 2.0, 1.5, 3.0]
    check_functional(lambda a: f(a, 1.5), xs, **tol(dtype))
    check_functional(lambda a, b: f(a, b), xs, ys, **tol(dtype))
    check_functional(lambda a: f(a, scalars), xs, **tol(dtype))
    check_inplace(lambda a: f_(a, 1.5), xs, **tol(dtype))
    check_inplace(lambda a, b: f_(a, b), xs, ys, **tol(dtype))
    check_inplace(lambda a: f_(a, scalars), xs, **tol(dtype))
    if op in ("add", "sub"):
        check_functional(lambda a, b: f(a, b, alpha=-0.25), xs, ys, **tol(dtype))
        check_inplace(lambda a, b: f_(a, b, alpha=0.75), xs, ys, **tol(dtype))
    if op in ("add", "mul", "div"):
        other = torch.tensor(1.75, dtype=dtype)
        check_functional(lambda a, o: f(a, o), xs, other, **tol(dtype))
        check_inplace(lambda a, o: f_(a, o), xs, other, **tol(dtype))
        if op == "add":
            check_inplace(lambda a, o: f_(a, o, alpha=2), xs, other, **tol(dtype))


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.uint8])
def test_binary_int(dtype):
    xs, ys = tlist(dtype, positive=True), tlist(dtype, positive=True)
    check_functional(lambda a, b: torch._foreach_add(a, b, alpha=2), xs, ys)
    check_functional(lambda a: torch._foreach_mul(a, 3), xs)
    check_functional(lambda a: torch._foreach_mul(a, 1.5), xs)  # promotes to float
    check_functional(lambda a, b: torch._foreach_div(a, b), xs, ys)
    check_functional(lambda a: torch._foreach_maximum(a, 2), xs)
    check_inplace(lambda a, b: torch._foreach_sub_(a, b), xs, ys)
    with pytest.raises(RuntimeError, match="can't be cast"):
        torch._foreach_mul_(to_device(xs), 1.5)


def test_mixed_dtypes_and_promotion():
    xs = [torch.randn(3), torch.randn(2).to(torch.bfloat16), torch.randint(0, 5, (4,))]
    ys = [torch.randn(3).to(torch.float16), torch.randn(2), torch.randn(4)]
    check_functional(lambda a, b: torch._foreach_add(a, b), xs, ys, atol=1e-2, rtol=1e-2)
    check_functional(lambda a: torch._foreach_mul(a, 2), xs, atol=1e-2, rtol=1e-2)
    check_functional(lambda a: torch._foreach_div(a, 2), xs, atol=1e-2, rtol=1e-2)
    check_functional(lambda a: torch._foreach_sqrt(a), [x.abs() for x in xs], atol=1e-2, rtol=1e-2)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_addcmul_addcdiv(dtype):
    xs, t1, t2 = tlist(dtype), tlist(dtype), tlist(dtype, positive=True)
    scalars = [0.1, -2.0, 0.5, 3.0]
    for name in ("addcmul", "addcdiv"):
        f = getattr(torch, f"_foreach_{name}")
        f_ = getattr(torch, f"_foreach_{name}_")
        check_functional(lambda a, b, c: f(a, b, c), xs, t1, t2, **tol(dtype))
        check_functional(lambda a, b, c: f(a, b, c, value=0.3), xs, t1, t2, **tol(dtype))
        check_functional(lambda a, b, c: f(a, b, c, scalars), xs, t1, t2, **tol(dtype))
        check_inplace(lambda a, b, c: f_(a, b, c, value=-0.7), xs, t1, t2, **tol(dtype))
        check_inplace(lambda a, b, c: f_(a, b, c, scalars), xs, t1, t2, **tol(dtype))
    with pytest.raises(RuntimeError, match="Integer division with addcdiv"):
        torch._foreach_addcdiv_(*(to_device(tlist(torch.int64)) for _ in range(3)))


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_lerp(dtype):
    xs, ys = tlist(dtype), tlist(dtype)
    ws = [torch.rand(s).to(dtype) for s in SHAPES]
    check_functional(lambda a, b: torch._foreach_lerp(a, b, 0.3), xs, ys, **tol(dtype))
    check_functional(lambda a, b, w: torch._foreach_lerp(a, b, w), xs, ys, ws, **tol(dtype))
    check_inplace(lambda a, b: torch._foreach_lerp_(a, b, 0.9), xs, ys, **tol(dtype))
    check_inplace(lambda a, b, w: torch._foreach_lerp_(a, b, w), xs, ys, ws, **tol(dtype))
    check_inplace(lambda a, b: torch._foreach_lerp_(a, b, [0.1, 0.6, 0.2, 0.8]), xs, ys, **tol(dtype))


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize(
    "op", ["sqrt", "rsqrt", "exp", "log", "neg", "abs", "reciprocal", "sign", "sigmoid", "tanh", "floor", "frac"]
)
def test_unary(op, dtype):
    xs = tlist(dtype, positive=op in ("sqrt", "rsqrt", "log"))
    check_functional(lambda a: getattr(torch, f"_foreach_{op}")(a), xs, **tol(dtype))
    check_inplace(lambda a: getattr(torch, f"_foreach_{op}_")(a), xs, **tol(dtype))


def test_unary_int_promotes():
    xs = tlist(torch.int64, positive=True)
    check_functional(torch._foreach_sqrt, xs)
    check_functional(torch._foreach_neg, xs)
    check_functional(torch._foreach_abs, xs)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES + [torch.int64, torch.bool])
def test_zero_copy(dtype):
    xs = tlist(dtype) if dtype != torch.bool else [torch.rand(s) > 0.5 for s in SHAPES]
    check_inplace(torch._foreach_zero_, xs)
    src = tlist(torch.float32)
    check_inplace(lambda a, b: torch._foreach_copy_(a, b), xs, src, **tol(dtype))
    # Broadcasting source.
    check_inplace(lambda a, b: torch._foreach_copy_(a, b), xs, [torch.tensor(2.0)] * len(xs))


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("ord", [2, 1, float("inf"), 0, 3.0, -float("inf")])
def test_norm(ord, dtype):
    xs = tlist(dtype, shapes=[(3, 4), (5,), (7, 2, 3)])
    xs[1][2] = 0
    check_functional(lambda a: torch._foreach_norm(a, ord), xs, **tol(dtype))
    if dtype == torch.float32:
        check_functional(lambda a: torch._foreach_norm(a, ord, dtype=torch.float64), xs)


def test_errors():
    with pytest.raises(RuntimeError, match="must have the same number of tensors"):
        torch._foreach_add(to_device(tlist()), to_device(tlist())[:2])
    with pytest.raises(RuntimeError, match="same number of elements as scalar list"):
        torch._foreach_add(to_device(tlist()), [1.0, 2.0])
    with pytest.raises(NotImplementedError, match="Expected a floating point"):
        torch._foreach_norm(to_device(tlist(torch.int64)))


def test_many_tensors_one_program():
    xs = [torch.randn(i + 1) for i in range(40)]
    check_inplace(lambda a: torch._foreach_mul_(a, 0.5), xs)
    check_inplace(lambda a, b: torch._foreach_addcmul_(a, b, b, value=0.1), xs, [x * 2 for x in xs])


def mlp():
    torch.manual_seed(0)
    return torch.nn.Sequential(
        torch.nn.Linear(6, 16), torch.nn.Tanh(), torch.nn.Linear(16, 16), torch.nn.ReLU(), torch.nn.Linear(16, 3)
    )


OPTIMIZERS = {
    "sgd_momentum": lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9),
    "sgd_nesterov_wd": lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9, weight_decay=0.01, nesterov=True),
    "sgd_plain": lambda p: torch.optim.SGD(p, lr=0.1),
    "adam": lambda p: torch.optim.Adam(p, lr=1e-2),
    "adam_amsgrad_wd": lambda p: torch.optim.Adam(p, lr=1e-2, amsgrad=True, weight_decay=0.1),
    "adamw": lambda p: torch.optim.AdamW(p, lr=1e-2),
}


@pytest.mark.parametrize("name", list(OPTIMIZERS))
@pytest.mark.parametrize("clip", [False, True])
def test_train_mlp(name, clip):
    cpu_model = mlp()
    dev_model = mlp().to("tpu")
    make = OPTIMIZERS[name]
    cpu_opt = make(cpu_model.parameters())
    dev_opt = make(dev_model.parameters())
    gen = torch.Generator().manual_seed(1)
    x = torch.randn(32, 6, generator=gen)
    y = torch.randn(32, 3, generator=gen)
    xd, yd = x.to("tpu"), y.to("tpu")

    def run(model, opt, a, b, after_backward):
        opt.zero_grad()
        torch.nn.functional.mse_loss(model(a), b).backward()
        after_backward()
        if clip:
            torch.nn.utils.clip_grad_norm_(model.parameters(), 0.5)
        opt.step()

    for _ in range(5):
        cpu_grads = []
        run(cpu_model, cpu_opt, x, y, lambda: cpu_grads.extend(p.grad.clone() for p in cpu_model.parameters()))
        dev_grads = []
        with no_fallback():  # forward, backward, clipping and the optimizer step
            run(dev_model, dev_opt, xd, yd, lambda: dev_grads.extend(p.grad.clone() for p in dev_model.parameters()))
        for gc, gd in zip(cpu_grads, dev_grads):
            torch.testing.assert_close(gd.cpu(), gc, atol=1e-5, rtol=1e-5)
        for pc, pd in zip(cpu_model.parameters(), dev_model.parameters()):
            assert pd.device.type == "tpu"
            torch.testing.assert_close(pd.detach().cpu(), pc.detach(), atol=1e-5, rtol=1e-5)


def test_optimizer_uses_foreach_and_no_fallback_in_step():
    """The tpu device is on torch.optim's foreach list, so step() runs _foreach_* ops."""
    from torch.utils._python_dispatch import TorchDispatchMode

    seen = set()

    class Log(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            seen.add(str(func.name()))
            return func(*args, **(kwargs or {}))

    model = mlp().to("tpu")
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    for p in model.parameters():
        p.grad = torch.ones_like(p)
    with Log(), no_fallback():
        opt.step()
    assert "aten::_foreach_addcdiv_.ScalarList" in seen, sorted(seen)
    assert "aten::_foreach_lerp_.Scalar" in seen


def ctlist(dtype):
    xs = [torch.randn(s, dtype=dtype) for s in [(3, 4), (5,), (2, 1, 3)]]
    xs[0][0, 0] = complex(float("inf"), 1.0)
    xs[0][0, 1] = complex(float("nan"), 0.0)
    xs[1][0] = 0
    return xs


COMPLEX_OPS = {
    "add_scalar": lambda a, b: torch._foreach_add(a, 2 - 1j),
    "add_list_alpha": lambda a, b: torch._foreach_add(a, b, alpha=0.5),
    "sub_list": lambda a, b: torch._foreach_sub(a, b),
    "mul_list": lambda a, b: torch._foreach_mul(a, b),
    "div_list": lambda a, b: torch._foreach_div(a, b),
    "div_scalar": lambda a, b: torch._foreach_div(a, 3.0),
    "pow_number": lambda a, b: torch._foreach_pow(a, 2),
    "pow_sqrt": lambda a, b: torch._foreach_pow(a, 0.5),
    "lerp": lambda a, b: torch._foreach_lerp(a, b, 0.3),
    "addcmul": lambda a, b: torch._foreach_addcmul(a, b, b, 0.5),
    "addcdiv": lambda a, b: torch._foreach_addcdiv(a, b, b, 0.5),
    **{
        op: (lambda op: lambda a, b: getattr(torch, f"_foreach_{op}")(a))(op)
        for op in ["sqrt", "rsqrt", "exp", "expm1", "log", "log1p", "sigmoid", "tanh", "sin", "cos"]
        + ["tan", "reciprocal", "neg", "abs"]
    },
}


@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128])
@pytest.mark.parametrize("name", sorted(COMPLEX_OPS))
def test_complex_items_match_cpu_special_values_included(name, dtype):
    # Each item takes the single-tensor op's complex path (CPU's special values), in one
    # program.
    torch.manual_seed(0)
    xs, ys = ctlist(dtype), ctlist(dtype)
    ys[0][0, 0] = 2 + 1j  # inf ** inf, where tpurs' pow differs from CPU's, is not asked
    check_functional(COMPLEX_OPS[name], xs, ys)


@pytest.mark.parametrize("dtype", [torch.complex64, torch.bfloat16])
def test_complex_copy_zero_and_in_place_errors(dtype):
    xs = [torch.randn(s).to(dtype) for s in [(3, 4), (5,)]]
    check_inplace(torch._foreach_zero_, xs)
    src = [torch.randn(s, dtype=torch.complex64) for s in [(3, 4), (5,)]]
    with (
        pytest.warns(UserWarning, match="discards the imaginary part")
        if not dtype.is_complex
        else (contextlib.nullcontext())
    ):
        check_inplace(lambda a, b: torch._foreach_copy_(a, b), xs, src, **tol(dtype))
    # A complex number into real items, and an in-place magnitude, raise as on CPU.
    for device in ["cpu", "tpu"]:
        reals = [torch.ones(3, dtype=torch.float64, device=device)]
        with pytest.raises(RuntimeError, match="ComplexDouble can't be cast to the desired output type Double"):
            torch._foreach_add_(reals, 1j)
        with pytest.raises(RuntimeError, match="In-place abs is not supported for complex tensors"):
            torch._foreach_abs_([torch.ones(3, dtype=torch.complex64, device=device)])
        with pytest.raises(NotImplementedError, match="\"frac_cpu\" not implemented for 'Long'"):
            torch._foreach_frac([torch.ones(3, dtype=torch.long, device=device)])
