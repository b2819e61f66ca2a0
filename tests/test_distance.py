"""`cdist` and `pdist` on the device (`_cdist_forward`/`_cdist_backward`,
`_pdist_forward`/`_pdist_backward`) match CPU PyTorch: values, gradients for every kind of
p, CPU's matrix-product path for p = 2, broadcasting, empty inputs and errors, with no CPU
fallback."""

import pytest
import torch
from helpers import check, no_fallback

aten = torch.ops.aten

PS = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, float("inf")]


def randn(*shape, dtype=torch.float32, grad=False):
    return torch.randn(*shape, dtype=dtype).requires_grad_(grad)


@pytest.mark.parametrize("p", PS)
def test_cdist(p):
    torch.manual_seed(1)
    with no_fallback():
        check(lambda a, b: torch.cdist(a, b, p=p), randn(6, 4, grad=True), randn(5, 4, grad=True), grad=True)
        # batch dims broadcast; autograd sums each gradient back to its input's shape
        check(
            lambda a, b: torch.cdist(a, b, p=p),
            randn(2, 1, 4, 3, grad=True),
            randn(3, 7, 3, grad=True),
            grad=True,
            atol=1e-4,
            rtol=1e-4,
        )


@pytest.mark.parametrize("p", PS)
def test_cdist_float64(p):
    torch.manual_seed(2)
    with no_fallback():
        check(
            lambda a, b: torch.cdist(a, b, p=p),
            randn(3, 5, 4, dtype=torch.float64, grad=True),
            randn(3, 6, 4, dtype=torch.float64, grad=True),
            grad=True,
        )


@pytest.mark.parametrize("p", PS)
def test_cdist_backward_ties_and_zero_distances(p):
    # Small integers: equal coordinates (diff == 0), repeated rows (distance 0) and, for
    # p = inf, several columns at the maximum, where CPU's formulas have their special cases.
    torch.manual_seed(3)
    x1 = torch.randint(-2, 3, (2, 6, 3)).float()
    x2 = torch.cat([x1[:, :2], torch.randint(-2, 3, (2, 4, 3)).float()], 1)
    d = aten._cdist_forward(x1, x2, p, None)
    g = torch.randn(d.shape)
    with no_fallback():
        check(lambda x1, x2: aten._cdist_forward(x1, x2, p, None), x1, x2)
        check(lambda g, x1, x2, d: aten._cdist_backward(g, x1, x2, p, d), g, x1, x2, d)
        check(lambda g, x1, x2, d: aten._cdist_backward(g, x2, x1, p, d.mT.contiguous()), g.mT.contiguous(), x1, x2, d)


@pytest.mark.parametrize("mode", [None, 0, 1, 2])
@pytest.mark.parametrize("rows", [(4, 7), (30, 5), (3, 26)])
def test_cdist_forward_euclidean_modes(mode, rows):
    # p = 2 goes through CPU's matrix product with mode 1, or mode 0 past 25 rows
    torch.manual_seed(4)
    x1, x2 = torch.randn(2, rows[0], 5), torch.randn(2, rows[1], 5)
    with no_fallback():
        check(lambda a, b: aten._cdist_forward(a, b, 2.0, mode), x1, x2)
        check(lambda a, b: aten._cdist_forward(a, b, 1.0, mode), x1, x2)


def test_cdist_matrix_product_path_in_bfloat16():
    # the matrix-product path is made of ordinary ops on the CPU, so it takes bfloat16
    torch.manual_seed(5)
    x1, x2 = (torch.randn(4, 6) * 4).bfloat16(), (torch.randn(5, 6) * 4).bfloat16()
    with no_fallback():
        check(lambda a, b: aten._cdist_forward(a, b, 2.0, 1), x1, x2, atol=0.1, rtol=2e-2)


def test_cdist_large_euclidean_through_torch_cdist():
    torch.manual_seed(6)
    with no_fallback():
        check(
            lambda a, b: torch.cdist(a, b),
            randn(30, 4, grad=True) * 3,
            randn(27, 4, grad=True) * 3,
            grad=True,
            atol=1e-4,
            rtol=1e-4,
        )


def test_cdist_empty_inputs():
    with no_fallback():
        for p in [0.0, 1.0, 2.0]:
            check(lambda a, b: aten._cdist_forward(a, b, p, None), torch.randn(2, 0, 3), torch.randn(2, 5, 3))
            check(lambda a, b: aten._cdist_forward(a, b, p, None), torch.randn(2, 4, 0), torch.randn(2, 5, 0))
            check(lambda a, b: aten._cdist_forward(a, b, p, None), torch.randn(0, 4, 3), torch.randn(1, 5, 3))
        check(
            lambda g, a, b, d: aten._cdist_backward(g, a, b, 1.0, d),
            torch.randn(2, 4, 5),
            torch.randn(2, 4, 0),
            torch.randn(2, 5, 0),
            torch.zeros(2, 4, 5),
        )


def test_cdist_out_overloads():
    torch.manual_seed(7)
    x1, x2 = torch.randn(2, 4, 3), torch.randn(2, 5, 3)
    d = aten._cdist_forward(x1, x2, 1.5, None)
    g = torch.randn(d.shape)
    with no_fallback():
        check(lambda a, b, o: aten._cdist_forward.out(a, b, 1.5, None, out=o), x1, x2, torch.empty(d.shape))
        check(
            lambda g, a, b, d, o: aten._cdist_backward.out(g, a, b, 1.5, d, out=o),
            g,
            x1,
            x2,
            d,
            torch.empty(x1.shape),
        )


def raises_like_cpu(fn, *args):
    """`fn` raises on CPU tensors and the same exception type and message on the device."""
    with pytest.raises(Exception) as cpu:
        fn(*args)
    with no_fallback(), pytest.raises(cpu.type) as dev:
        fn(*[a.to("tpu") if isinstance(a, torch.Tensor) else a for a in args])
    assert str(dev.value).splitlines()[0] == str(cpu.value).splitlines()[0]


X = torch.randn(4, 3)

BAD_ARGS = [
    ("1-d", lambda a: aten._cdist_forward(a[0], a, 2.0, None)),
    ("columns", lambda a: aten._cdist_forward(a, a[:, :2], 2.0, None)),
    ("negative p", lambda a: aten._cdist_forward(a, a, -1.0, None)),
    ("nan p", lambda a: aten._cdist_forward(a, a, float("nan"), None)),
    ("mode", lambda a: aten._cdist_forward(a, a, 2.0, 3)),
    ("integers", lambda a: aten._cdist_forward(a.long(), a.long(), 1.0, None)),
    ("bfloat16", lambda a: aten._cdist_forward(a.bfloat16(), a.bfloat16(), 1.0, None)),
    ("float16 p=2", lambda a: aten._cdist_forward(a.half(), a.half(), 2.0, None)),
    ("mixed", lambda a: aten._cdist_forward(a, a.double(), 1.0, None)),
    ("backward 1-d", lambda a: aten._cdist_backward(a, a[0], a, 1.0, a)),
    (
        "backward bfloat16",
        lambda a: aten._cdist_backward(a[:, :3].bfloat16(), a.bfloat16(), a[:3].bfloat16(), 1.0, a[:, :3].bfloat16()),
    ),
    ("backward mixed", lambda a: aten._cdist_backward(a[:, :3], a, a[:3].double(), 1.0, a[:, :3])),
    ("pdist integers", lambda a: aten._pdist_forward(a.long(), 2.0)),
    ("pdist 1-d", lambda a: aten._pdist_forward(a[0], 2.0)),
    ("pdist not contiguous", lambda a: aten._pdist_forward(a.t(), 2.0)),
    ("pdist backward bfloat16", lambda a: aten._pdist_backward(a[0].bfloat16(), a.bfloat16(), 1.0, a[0].bfloat16())),
    (
        "pdist backward float16 one row",
        lambda a: aten._pdist_backward(a[0, :0].half(), a[:1].half(), 1.0, a[0, :0].half()),
    ),
]


@pytest.mark.parametrize("fn", [c[1] for c in BAD_ARGS], ids=[c[0] for c in BAD_ARGS])
def test_distance_bad_arguments_raise_like_cpu(fn):
    raises_like_cpu(fn, X)


@pytest.mark.parametrize("p", PS)
def test_pdist(p):
    torch.manual_seed(8)
    with no_fallback():
        check(lambda a: torch.pdist(a, p=p), randn(7, 4, grad=True), grad=True, atol=1e-4, rtol=1e-4)
        check(lambda a: torch.pdist(a, p=p), randn(5, 3, dtype=torch.float64, grad=True), grad=True)


@pytest.mark.parametrize("p", PS)
def test_pdist_backward_ties_and_zero_distances(p):
    torch.manual_seed(9)
    x = torch.randint(-2, 3, (6, 3)).float()
    x[4] = x[1]
    d = aten._pdist_forward(x, p)
    g = torch.randn(d.shape)
    with no_fallback():
        check(lambda x: aten._pdist_forward(x, p), x)
        check(lambda g, x, d: aten._pdist_backward(g, x, p, d), g, x, d)


def test_pdist_small_and_empty():
    with no_fallback():
        for n, m in [(1, 3), (0, 3), (2, 1), (4, 0)]:
            check(lambda a: aten._pdist_forward(a, 2.0), torch.randn(n, m))
        # (no zero-row backward: CPU's kernel crashes on it)
        for n, m in [(1, 3), (2, 1), (4, 0)]:
            x = torch.randn(n, m)
            d = aten._pdist_forward(x, 2.0)
            check(lambda g, a, d: aten._pdist_backward(g, a, 2.0, d), torch.randn(d.shape), x, d)


def test_pdist_out_overloads():
    torch.manual_seed(10)
    x = torch.randn(5, 3)
    d = aten._pdist_forward(x, 3.0)
    g = torch.randn(d.shape)
    with no_fallback():
        check(lambda a, o: aten._pdist_forward.out(a, 3.0, out=o), x, torch.empty(d.shape))
        check(lambda g, a, d, o: aten._pdist_backward.out(g, a, 3.0, d, out=o), g, x, d, torch.empty(x.shape))
