"""Random ops on the tpu generator: shapes and dtypes, statistics over 100k samples, bounds,
and reproducibility through torch.manual_seed / torch.tpu.manual_seed / rng state."""

import math
import re

import pytest
import torch
from helpers import no_fallback

FLOAT_DTYPES = [torch.float32, torch.bfloat16, torch.float16]
INT_DTYPES = [torch.int64, torch.int32, torch.int8, torch.uint8]
N = 100_000


def on_tpu(t, dtype, shape):
    assert t.device.type == "tpu"
    assert t.dtype == dtype, t.dtype
    assert tuple(t.shape) == tuple(shape)
    return t.cpu()


def moments(x):
    x = x.double()
    return x.mean().item(), x.std().item()


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_rand(dtype):
    with no_fallback():
        x = on_tpu(torch.rand(N, dtype=dtype, device="tpu"), dtype, (N,))
    assert x.min() >= 0 and x.max() < 1
    m, s = moments(x)
    assert abs(m - 0.5) < 0.01 and abs(s - 1 / math.sqrt(12)) < 0.01
    assert x.unique().numel() > (100 if dtype != torch.float32 else N // 2)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_randn(dtype):
    with no_fallback():
        x = on_tpu(torch.randn(N, dtype=dtype, device="tpu"), dtype, (N,))
    assert torch.isfinite(x).all()
    m, s = moments(x)
    assert abs(m) < 0.015 and abs(s - 1) < 0.015
    # Tails of a normal: about 4.55% beyond 2 sigma.
    assert abs((x.double().abs() > 2).double().mean().item() - 0.0455) < 0.005


def test_uniform_normal_inplace():
    with no_fallback():
        u = torch.empty(N, device="tpu").uniform_(-3, 5)
        n = torch.empty(200, 500, device="tpu").normal_(2.0, 0.5)
        e = torch.empty(N, device="tpu").exponential_(2.0)
        nt = torch.normal(torch.full((N,), 3.0, device="tpu"), 2.0)
        nt2 = torch.normal(torch.zeros(N, device="tpu"), torch.full((N,), 0.1, device="tpu"))
        ln = torch.empty(N, device="tpu").log_normal_(0.0, 0.25)
        ge = torch.empty(N, device="tpu").geometric_(0.25)
    u = u.cpu()
    assert u.min() >= -3 and u.max() < 5
    m, s = moments(u)
    assert abs(m - 1) < 0.05 and abs(s - 8 / math.sqrt(12)) < 0.05
    m, s = moments(n.cpu())
    assert n.shape == (200, 500) and abs(m - 2) < 0.01 and abs(s - 0.5) < 0.01
    e = e.cpu()
    m, s = moments(e)
    assert e.min() >= 0 and abs(m - 0.5) < 0.01 and abs(s - 0.5) < 0.015
    m, s = moments(nt.cpu())
    assert abs(m - 3) < 0.03 and abs(s - 2) < 0.03
    m, s = moments(nt2.cpu())
    assert abs(m) < 0.002 and abs(s - 0.1) < 0.002
    m, _ = moments(ln.cpu().log())
    assert abs(m) < 0.005
    ge = ge.cpu()
    assert ge.min() >= 1 and abs(ge.mean().item() - 4) < 0.1


def test_random_errors():
    with pytest.raises(RuntimeError, match="normal expects std >= 0.0"):
        torch.empty(3, device="tpu").normal_(0, -1)
    with pytest.raises(RuntimeError, match=r"uniform_ expects to return a \[from, to\) range"):
        torch.empty(3, device="tpu").uniform_(1, 0)
    with pytest.raises(RuntimeError, match="random_ expects 'from' to be less than 'to'"):
        torch.randint(5, 5, (3,), device="tpu")
    with pytest.raises(RuntimeError, match="out of bounds for"):
        torch.empty(3, dtype=torch.uint8, device="tpu").random_(0, 300)
    with pytest.raises(RuntimeError, match="bernoulli_ expects p to be in"):
        torch.empty(3, device="tpu").bernoulli_(1.5)
    # A std tensor is checked element by element on the device and, as PyTorch waits for
    # this check on every device, raised by the call itself, in each eager mode.
    for mode in ("DEFER_AND_FUSE", "DEFER_NEVER"):
        torch.tpu.set_eager_mode(mode)
        try:
            for std in ([1.0, -1.0, 2.0], [1.0, float("nan")]):
                with no_fallback(), pytest.raises(RuntimeError, match="normal expects all elements of std >= 0.0"):
                    torch.normal(torch.zeros(len(std), device="tpu"), torch.tensor(std, device="tpu"))
                # Nothing is left pending for the next read, and the refused call's
                # result is freed.
                assert (torch.ones(2, device="tpu") + 1).tolist() == [2.0, 2.0]
            mean, std = torch.zeros(1000, device="tpu"), torch.full((1000,), -1.0, device="tpu")
            before = torch.tpu.memory_allocated()
            for _ in range(3):
                with pytest.raises(RuntimeError, match="std >= 0.0"):
                    torch.normal(mean, std)
            assert torch.tpu.memory_allocated() == before
        finally:
            torch.tpu.set_eager_mode("DEFER_AND_FUSE")
    with no_fallback():
        fine = torch.normal(0.0, torch.tensor([1.0, 0.0], device="tpu")).cpu()
    assert fine[1] == 0.0


@pytest.mark.parametrize("dtype", INT_DTYPES + FLOAT_DTYPES)
def test_randint(dtype):
    lo, hi = (0, 10) if dtype == torch.uint8 else (-7, 9)
    with no_fallback():
        x = on_tpu(torch.randint(lo, hi, (N,), dtype=dtype, device="tpu"), dtype, (N,))
    assert x.min() == lo and x.max() == hi - 1
    assert torch.equal(x, x.round())
    counts = torch.bincount((x.long() - lo), minlength=hi - lo).double()
    assert (counts / N - 1 / (hi - lo)).abs().max() < 0.01


def test_randint_like_and_random_overloads():
    with no_fallback():
        a = torch.randint_like(torch.zeros(N, dtype=torch.int32, device="tpu"), 3)
        b = torch.empty(N, dtype=torch.int64, device="tpu").random_(100)
        c = torch.empty(N, dtype=torch.uint8, device="tpu").random_()
        d = torch.empty(N, dtype=torch.int8, device="tpu").random_(-20, None)
        e = torch.empty(N, dtype=torch.float32, device="tpu").random_()
        f = torch.empty(N, dtype=torch.bool, device="tpu").random_()
        g = torch.empty(N, dtype=torch.int64, device="tpu").random_(-(2**40), 2**40)
        h = torch.empty(N, dtype=torch.int64, device="tpu").random_()
        k = torch.randint(2**33, 2**33 + 5, (N,), device="tpu")
    a, b, c, d, e, f, g, h, k = (t.cpu() for t in (a, b, c, d, e, f, g, h, k))
    assert a.dtype == torch.int32 and set(a.unique().tolist()) == {0, 1, 2}
    assert b.min() == 0 and b.max() == 99
    assert c.min() == 0 and c.max() == 255
    assert d.min() == -20 and d.max() == 127
    assert e.min() >= 0 and e.max() <= 2**24 and e.max() > 2**23 and torch.equal(e, e.round())
    assert f.dtype == torch.bool and 0.48 < f.double().mean().item() < 0.52
    assert g.min() >= -(2**40) and g.max() < 2**40 and g.min() < -(2**39) and g.max() > 2**39
    assert g.double().mean().abs().item() < 2**40 * 0.02
    assert h.min() >= 0 and h.max() > 2**62
    assert set(k.unique().tolist()) == {2**33 + i for i in range(5)}


@pytest.mark.parametrize("dtype", FLOAT_DTYPES + [torch.int64, torch.bool])
def test_bernoulli(dtype):
    with no_fallback():
        a = torch.empty(N, dtype=dtype, device="tpu").bernoulli_(0.3)
        p = torch.linspace(0, 1, 5, device="tpu").to(torch.float32 if dtype in (torch.int64, torch.bool) else dtype)
        b = torch.empty(N // 5, 5, dtype=dtype, device="tpu").bernoulli_(p)
    a = on_tpu(a, dtype, (N,))
    assert set(a.unique().tolist()) <= {0, 1}
    assert abs(a.double().mean().item() - 0.3) < 0.01
    means = on_tpu(b, dtype, (N // 5, 5)).double().mean(0)
    assert means[0] == 0 and means[4] == 1
    assert (means - torch.linspace(0, 1, 5).double()).abs().max() < 0.015


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_torch_bernoulli_and_dropout_like(dtype):
    p = torch.full((N,), 0.75, dtype=dtype, device="tpu")
    with no_fallback():
        a = torch.bernoulli(p)
        b = torch.bernoulli(p, 0.2)
    a, b = on_tpu(a, dtype, (N,)), on_tpu(b, dtype, (N,))
    assert abs(a.double().mean().item() - 0.75) < 0.01
    assert abs(b.double().mean().item() - 0.2) < 0.01


def draw(device="tpu"):
    """A fixed sequence of random ops."""
    return [
        torch.rand(50, device=device),
        torch.randn(3, 7, device=device),
        torch.randint(0, 1000, (20,), device=device),
        torch.empty(10, device=device).bernoulli_(0.5),
        torch.rand_like(torch.zeros(4, device=device)),
        torch.randn_like(torch.zeros(4, dtype=torch.bfloat16, device=device)),
        torch.randint_like(torch.zeros(6, device=device), 10),
    ]


def same(xs, ys):
    return all(torch.equal(x.cpu(), y.cpu()) for x, y in zip(xs, ys))


def test_manual_seed_reproducible():
    with no_fallback():
        torch.manual_seed(123)
        a = draw()
        torch.manual_seed(123)
        b = draw()
        torch.manual_seed(124)
        c = draw()
    assert same(a, b)
    assert not any(torch.equal(x.cpu(), y.cpu()) for x, y in zip(a[:3], c[:3]))
    # Successive calls differ.
    assert not torch.equal(a[4].cpu(), draw()[4].cpu())


def test_tpu_manual_seed_and_rng_state():
    torch.tpu.manual_seed(7)
    a = draw()
    torch.tpu.manual_seed(7)
    b = draw()
    assert same(a, b)
    assert torch.tpu.initial_seed() == 7
    state = torch.tpu.get_rng_state()
    assert state.dtype == torch.uint8 and state.device.type == "cpu"
    c = draw()
    d = draw()
    torch.tpu.set_rng_state(state)
    c2 = draw()
    assert same(c, c2)
    assert not same(c, d)
    torch.tpu.manual_seed_all(7)
    assert same(a, draw())


def test_cpu_generator_untouched():
    """Seeding with torch.manual_seed also seeds the CPU generator as usual."""
    torch.manual_seed(5)
    x = torch.rand(4)
    torch.rand(4, device="tpu")
    torch.manual_seed(5)
    assert torch.equal(x, torch.rand(4))


def test_large_and_empty():
    with no_fallback():
        e = torch.rand(0, 3, device="tpu")
        s = torch.randn((), device="tpu")
        x = torch.rand(1000, 1000, device="tpu")
    assert e.shape == (0, 3) and s.shape == ()
    x = x.cpu()
    assert abs(x.mean().item() - 0.5) < 0.002
    # Rows are not copies of each other.
    assert x[0].ne(x[1]).all()


def test_fork_rng_restores():
    torch.manual_seed(42)
    with torch.random.fork_rng(device_type="tpu"):
        a = torch.rand(8, device="tpu")
    b = torch.rand(8, device="tpu")
    assert torch.equal(a.cpu(), b.cpu())


def test_rng_state_with_large_seed():
    torch.manual_seed(2**63 + 5)
    state = torch.tpu.get_rng_state()
    a = torch.rand(4, device="tpu")
    torch.tpu.set_rng_state(state)
    assert torch.equal(a.cpu(), torch.rand(4, device="tpu").cpu())


def test_multinomial_frequencies_and_shapes():
    torch.manual_seed(0)
    p = torch.tensor([[0.1, 0.0, 0.6, 0.3], [1.0, 1.0, 0.0, 2.0]])
    with no_fallback():
        s = torch.multinomial(p.to("tpu"), 20000, replacement=True).cpu()
        without = torch.multinomial(p.to("tpu"), 3).cpu()
        single = torch.multinomial(p[0].to("tpu"), 1).cpu()
    assert s.dtype == torch.int64 and s.shape == (2, 20000)
    freq = torch.stack([torch.bincount(r, minlength=4) for r in s]).float() / 20000
    torch.testing.assert_close(freq, p / p.sum(1, keepdim=True), atol=0.015, rtol=0)
    # Without replacement: distinct categories, never a zero-probability one while others remain.
    for row, probs in zip(without, p):
        assert len(set(row.tolist())) == 3 and all(probs[i] > 0 for i in row)
    assert single.shape == (1,) and p[0, single[0]] > 0


def test_multinomial_is_reproducible_and_checks_its_input():
    p = torch.rand(3, 50, device="tpu")
    torch.manual_seed(5)
    a = torch.multinomial(p, 10).cpu()
    torch.manual_seed(5)
    assert torch.equal(torch.multinomial(p, 10).cpu(), a)
    with pytest.raises(RuntimeError, match="without replacement"):
        torch.multinomial(p, 51)
    with pytest.raises(RuntimeError, match="prob_dist must be 1 or 2 dim"):
        torch.multinomial(torch.rand(2, 2, 2, device="tpu"), 1)
    bad = torch.multinomial(torch.tensor([0.5, -1.0], device="tpu"), 1)
    with pytest.raises(RuntimeError, match="element < 0"):
        bad.cpu()
    empty = torch.multinomial(torch.zeros(2, 3, device="tpu"), 1)
    with pytest.raises(RuntimeError, match="sum of probabilities <= 0"):
        empty.cpu()


def test_random_float_range_warns_like_cpu():
    # Bounds past the integers a float type holds exactly warn (CPU's wording), once per call.
    for device in ("cpu", "tpu"):
        t = torch.empty(3, device=device)
        with no_fallback(), pytest.warns(UserWarning, match=r"from is out of bounds \[-\(2\^24\), 2\^24\]"):
            t.random_(-(2**25), 0)
        with no_fallback(), pytest.warns(UserWarning, match=r"to - 1 is out of bounds \[-\(2\^53\), 2\^53\]"):
            t.double().random_(0, 2**54)


def test_uniform_bounds_errors_match_cpu():
    big = torch.finfo(torch.float32).max
    for low, high, match in [
        (-big, big, "to-from"),
        (-1e300, 0.0, "from is out of bounds for float"),
        (2.0, 1.0, "range"),
    ]:
        for device in ("cpu", "tpu"):
            with no_fallback(), pytest.raises(RuntimeError, match=match):
                torch.empty(3, device=device).uniform_(low, high)


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.uint8, torch.float16, torch.bfloat16, torch.float32])
def test_randperm_is_a_permutation(dtype):
    with no_fallback():
        torch.manual_seed(5)
        a = torch.randperm(200, dtype=dtype, device="tpu")
        torch.manual_seed(5)
        b = torch.randperm(200, dtype=dtype, device="tpu")
        out = torch.empty(3, dtype=dtype, device="tpu")
        torch.randperm(9, out=out)
        empty = torch.randperm(0, dtype=dtype, device="tpu")
    assert a.dtype == dtype and a.device.type == "tpu"
    assert torch.equal(a.cpu(), b.cpu())
    assert torch.equal(a.cpu().double().sort().values, torch.arange(200).double())
    assert not torch.equal(a.cpu().double(), torch.arange(200).double())
    assert out.shape == (9,) and sorted(out.cpu().tolist()) == list(range(9))
    assert empty.shape == (0,)


def test_randperm_is_uniform_and_checked_as_on_cpu():
    with no_fallback():
        firsts = torch.stack([torch.randperm(4, device="tpu")[0] for _ in range(400)]).cpu()
    counts = torch.bincount(firsts, minlength=4)
    assert counts.min() > 60, counts  # 100 each expected
    for n, dtype in ((2050, torch.float16), (257, torch.uint8), (129, torch.int8), (3, torch.bool)):
        with pytest.raises((RuntimeError, NotImplementedError)) as cpu:
            torch.randperm(n, dtype=dtype)
        with no_fallback(), pytest.raises(type(cpu.value), match=re.escape(str(cpu.value))):
            torch.randperm(n, dtype=dtype, device="tpu")
