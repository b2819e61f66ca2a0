"""Property-based fuzzing (hypothesis): random programs of elementwise ops with broadcasting,
views, in-place writes through views, reductions, cat, matmul, where and casts among
float32 / bfloat16 / int64 / bool run on the CPU and on the device, in fused and strict eager;
every live tensor must agree. Values are small integers, so most results are exact in every
dtype; a fixed seed and example budget keep CI deterministic."""

import pytest
import torch

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

DTYPES = [torch.float32, torch.bfloat16, torch.int64, torch.bool]
SHAPES = [(3, 4), (1, 4), (3, 1), (4,), (2, 3, 4)]


def make(shape, dtype, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randint(-3, 4, shape, generator=g)
    return x.to(dtype)


def numeric(x):
    return x if x.dtype != torch.bool else x.to(torch.int64)


def apply(step, pool):
    """One program step on `pool` (a list of tensors, all on one device); appends results."""
    kind, i, j, arg = step
    a, b = pool[i % len(pool)], pool[j % len(pool)]
    if kind == "add":
        pool.append(numeric(a) + numeric(b))
    elif kind == "mul":
        pool.append(numeric(a) * numeric(b))
    elif kind == "maximum":
        pool.append(torch.maximum(numeric(a), numeric(b)))
    elif kind == "where":
        pool.append(torch.where(a > 0, a, numeric(b).to(a.dtype) if a.dtype != torch.bool else b > 0))
    elif kind == "neg":
        pool.append(-numeric(a))
    elif kind == "abs":
        pool.append(numeric(a).abs())
    elif kind == "cast":
        pool.append(a.to(DTYPES[arg % len(DTYPES)]))
    elif kind == "transpose" and a.dim() >= 2:
        pool.append(a.transpose(0, -1))
    elif kind == "slice" and a.dim() >= 1 and a.shape[-1] > 1:
        pool.append(a[..., arg % 2 :: 2])
    elif kind == "unsqueeze":
        pool.append(a.unsqueeze(0))
    elif kind == "sum" and a.dim() >= 1:
        pool.append(numeric(a).sum(arg % a.dim()))
    elif kind == "amax" and a.dim() >= 1 and a.numel() > 0:
        pool.append(numeric(a).amax(arg % a.dim()))
    elif kind == "cat" and a.shape[1:] == b.shape[1:] and a.dim() >= 1:
        pool.append(torch.cat([numeric(a), numeric(b).to(numeric(a).dtype)], 0))
    elif kind == "matmul" and a.dim() == 2 and b.dim() == 2 and a.dtype.is_floating_point:
        pool.append(a @ b.to(a.dtype).transpose(0, 1)[: a.shape[1]] if b.shape[0] >= a.shape[1] else a)
    elif kind == "iadd_view" and a.dim() >= 1 and a.dtype != torch.bool:
        view = a[..., :1] if arg % 2 else a
        view.add_(torch.ones((), dtype=a.dtype))  # writes through the view into a's storage
        pool.append(a)


STEP = st.tuples(
    st.sampled_from(
        ["add", "mul", "maximum", "where", "neg", "abs", "cast", "transpose", "slice", "unsqueeze"]
        + ["sum", "amax", "cat", "matmul", "iadd_view"]
    ),
    st.integers(0, 20),
    st.integers(0, 20),
    st.integers(0, 7),
)
PROGRAM = st.tuples(
    st.lists(st.tuples(st.sampled_from(SHAPES), st.sampled_from(DTYPES), st.integers(0, 1000)), min_size=2, max_size=3),
    st.lists(STEP, min_size=1, max_size=10),
)


def run(program, device):
    inputs, steps = program
    pool = [make(shape, dtype, seed).to(device) for shape, dtype, seed in inputs]
    errors = []
    for n, step in enumerate(steps):
        try:
            apply(step, pool)
        except RuntimeError as e:  # a shape that does not broadcast: the same on both sides
            errors.append((n, type(e).__name__))
    return pool, errors


@pytest.mark.parametrize("mode", ["DEFER_AND_FUSE", "DEFER_NEVER"])
def test_random_programs_match_cpu(mode):
    @settings(max_examples=100, deadline=None, derandomize=True, database=None)
    @given(PROGRAM)
    def prop(program):
        expected, cpu_errors = run(program, "cpu")
        actual, errors = run(program, "tpu")
        assert errors == cpu_errors
        assert len(actual) == len(expected)
        for a, e in zip(actual, expected):
            assert a.dtype == e.dtype and a.shape == e.shape, (a.dtype, e.dtype, a.shape, e.shape)
            tol = 1e-2 if e.dtype == torch.bfloat16 else 0
            torch.testing.assert_close(a.cpu(), e, atol=tol, rtol=tol)

    old = torch.tpu.eager_mode()
    torch.tpu.set_eager_mode(mode)
    try:
        prop()
    finally:
        torch.tpu.set_eager_mode(old)
