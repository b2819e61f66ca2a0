"""`segment_reduce` and the other ops of issue 7's coverage list match CPU PyTorch on the
device: values, dtypes, gradients and CPU's errors, with no CPU fallback."""

import pytest
import torch
import torch.nn.functional as F
from helpers import check, no_fallback, tol

aten = torch.ops.aten

REDUCTIONS = ["sum", "mean", "max", "min", "prod", "amax", "amin"]


def seg(reduce, key="lengths", **kw):
    return lambda x, idx: aten.segment_reduce(x, reduce, **{key: idx}, **kw)


@pytest.mark.parametrize("initial", [None, 2.5], ids=str)
@pytest.mark.parametrize("reduce", REDUCTIONS)
def test_segment_reduce_lengths_and_offsets_with_gradients(reduce, initial):
    torch.manual_seed(40)
    x = torch.randn(7, 3, requires_grad=True)
    lengths = torch.tensor([2, 0, 4, 1])
    offsets = torch.tensor([0, 2, 2, 6, 7], dtype=torch.int32)
    with no_fallback():
        check(seg(reduce, initial=initial), x, lengths, grad=True)
        check(seg(reduce, initial=initial, key="offsets"), x, offsets, grad=True)


@pytest.mark.parametrize("reduce", ["sum", "mean", "max", "min", "prod"])
def test_segment_reduce_inner_axis_and_batched_lengths(reduce):
    torch.manual_seed(41)
    x = torch.randn(2, 6, 3, requires_grad=True)
    lengths = torch.tensor([[1, 2, 3], [0, 6, 0]])
    offsets = torch.tensor([[0, 1, 1, 6], [2, 3, 5, 5]])
    with no_fallback():
        check(seg(reduce, axis=1), x, lengths, grad=True)
        check(seg(reduce, axis=-2, key="offsets"), x, offsets, grad=True)


@pytest.mark.parametrize("reduce", ["max", "min", "prod", "mean", "sum"])
def test_segment_reduce_ties_zeros_and_nan(reduce):
    nan = float("nan")
    x = torch.tensor([[1.0, 5, 5, 2, 0, 3, 0, 0], [2, 2, -1, 0, 4, nan, 3, 0]]).T.contiguous().requires_grad_()
    lengths = torch.tensor([3, 0, 3, 2])
    with no_fallback():
        check(seg(reduce), x, lengths, grad=True)
        check(seg(reduce, initial=2.0), x, lengths, grad=True)


@pytest.mark.parametrize("dtype", [torch.float64, torch.bfloat16, torch.float16], ids=str)
def test_segment_reduce_dtypes(dtype):
    x = torch.randn(6, 2).to(dtype).requires_grad_()
    lengths = torch.tensor([3, 1, 2], dtype=torch.int32)
    with no_fallback():
        for reduce in ["sum", "mean", "max", "prod"]:
            check(seg(reduce), x, lengths, grad=True, **tol(dtype))


def test_segment_reduce_unsafe_out_and_empty():
    x = torch.randn(5, 2)
    with no_fallback():
        check(seg("sum", unsafe=True), x, torch.tensor([1, 2]))
        check(lambda x, l: aten.segment_reduce.out(x, "max", lengths=l, out=x.new_empty(2, 2)), x, torch.tensor([4, 1]))
        check(seg("mean"), torch.empty(0, 3), torch.tensor([0, 0]))


BAD_SEGMENTS = [
    ("no lengths", lambda x, l: aten.segment_reduce(x, "sum")),
    ("bad reduce", lambda x, l: aten.segment_reduce(x, "foo", lengths=l)),
    ("axis", lambda x, l: aten.segment_reduce(x, "sum", lengths=l, axis=1)),
    ("offsets axis", lambda x, l: aten.segment_reduce(x, "sum", offsets=l, axis=1)),
    ("indices", lambda x, l: aten.segment_reduce(x, "sum", lengths=l, indices=l)),
]


@pytest.mark.parametrize("name,fn", BAD_SEGMENTS, ids=[c[0] for c in BAD_SEGMENTS])
def test_segment_reduce_bad_arguments_raise_like_cpu(name, fn):
    x, lengths = torch.randn(6, 3), torch.tensor([2, 4])
    with pytest.raises(RuntimeError) as cpu:
        fn(x, lengths)
    with no_fallback(), pytest.raises(RuntimeError) as dev:
        fn(x.to("tpu"), lengths.to("tpu"))
    assert str(dev.value).splitlines()[0] == str(cpu.value).splitlines()[0]


@pytest.mark.parametrize("lengths", [[2, -1, 5], [2, 2]], ids=str)
def test_segment_reduce_bad_lengths_raise_at_the_next_sync(lengths):
    x, lengths = torch.randn(6, 3), torch.tensor(lengths)
    with pytest.raises(RuntimeError) as cpu:
        aten.segment_reduce(x, "sum", lengths=lengths)
    with no_fallback(), pytest.raises(RuntimeError) as dev:
        aten.segment_reduce(x.to("tpu"), "sum", lengths=lengths.to("tpu"))
        torch.tpu.synchronize()
    assert str(dev.value).splitlines()[0] == str(cpu.value).splitlines()[0]


def test_segment_reduce_integer_data_and_float_lengths_raise_like_cpu():
    for x, lengths in [(torch.ones(4, dtype=torch.long), torch.tensor([4])), (torch.ones(4), torch.tensor([4.0]))]:
        with pytest.raises(NotImplementedError) as cpu:
            aten.segment_reduce(x, "sum", lengths=lengths)
        with pytest.raises(NotImplementedError) as dev:
            aten.segment_reduce(x.to("tpu"), "sum", lengths=lengths.to("tpu"))
        assert str(dev.value) == str(cpu.value)


# Norms from below degree 1's bound to well above degree 18's (several squarings), so every
# approximant and the squaring loop run; a batch mixes them.
@pytest.mark.parametrize("scale", [1e-8, 1e-3, 0.03, 0.3, 1.0, 3.0], ids=str)
def test_matrix_exp_every_degree_with_gradients(scale):
    torch.manual_seed(42)
    x = (torch.randn(4, 4) * scale / 4).requires_grad_()
    with no_fallback():
        check(torch.linalg.matrix_exp, x, grad=True, atol=1e-5 * max(1.0, scale), rtol=1e-5)


def test_matrix_exp_batch_of_mixed_norms_and_float64():
    torch.manual_seed(43)
    scales = torch.tensor([1e-9, 1e-3, 0.05, 0.4, 1.2, 2.5, 6.0, 20.0]).view(2, 4, 1, 1)
    x = torch.randn(2, 4, 3, 3) * scales / 3
    with no_fallback():
        check(torch.linalg.matrix_exp, x, atol=1e-4, rtol=2e-5)
        check(torch.linalg.matrix_exp, x.double(), atol=1e-10, rtol=1e-10)
        check(torch.matrix_exp, x.double().requires_grad_(), grad=True, atol=1e-9, rtol=1e-9)


# CPU's half-precision matrix_exp (its float64 coefficient table read as the input's dtype)
# returns infinities; the device computes in float32 and rounds, so the reference
# here is CPU's float32 result rounded.
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=str)
def test_matrix_exp_half_dtypes(dtype):
    x = (torch.randn(3, 3, 3) / 2).to(dtype)
    with no_fallback():
        out = torch.linalg.matrix_exp(x.to("tpu"))
    assert out.dtype == dtype
    torch.testing.assert_close(out.cpu(), torch.linalg.matrix_exp(x.float()).to(dtype), **tol(dtype))


def test_matrix_exp_special_shapes_out_and_nan():
    with no_fallback():
        check(torch.linalg.matrix_exp, torch.randn(3, 1, 1))
        check(torch.linalg.matrix_exp, torch.randn(2, 0, 0))
        check(torch.linalg.matrix_exp, torch.randn(0, 3, 3))
        check(lambda x: aten.linalg_matrix_exp.out(x, out=torch.empty_like(x)), torch.randn(3, 3))
        check(torch.linalg.matrix_exp, -500 * torch.eye(3))
        check(torch.linalg.matrix_exp, torch.tensor([[1.0, float("nan")], [0.0, 1.0]]))


BAD_MATRIX_EXP = [
    ("rank", RuntimeError, torch.randn(3)),
    ("square", RuntimeError, torch.randn(3, 2)),
    ("dtype", NotImplementedError, torch.ones(2, 2, dtype=torch.long)),
]


@pytest.mark.parametrize("name,exc,x", BAD_MATRIX_EXP, ids=[c[0] for c in BAD_MATRIX_EXP])
def test_matrix_exp_bad_arguments_raise_like_cpu(name, exc, x):
    with pytest.raises(exc) as cpu:
        torch.linalg.matrix_exp(x)
    with no_fallback(), pytest.raises(exc) as dev:
        torch.linalg.matrix_exp(x.to("tpu"))
    assert str(dev.value).splitlines()[0] == str(cpu.value).splitlines()[0]


AA_SIZES = [((9, 13), (4, 5)), ((5, 6), (11, 8)), ((16, 7), (3, 7)), ((8, 8), (1, 1)), ((30, 4), (7, 9))]


@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
@pytest.mark.parametrize("align_corners", [False, True], ids=["half_pixel", "corners"])
@pytest.mark.parametrize("size,out", AA_SIZES, ids=str)
def test_upsample_antialias_with_gradients(size, out, align_corners, mode):
    torch.manual_seed(44)
    x = torch.randn(2, 3, *size, requires_grad=True)
    with no_fallback():
        check(
            lambda x: F.interpolate(x, size=out, mode=mode, antialias=True, align_corners=align_corners),
            x,
            grad=True,
            atol=1e-5,
            rtol=1e-5,
        )


@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
@pytest.mark.parametrize("scale", [0.3, 0.5, 1.7, (0.25, 2.5)], ids=str)
def test_upsample_antialias_scale_factors_and_float64(scale, mode):
    x = torch.randn(1, 2, 12, 10, dtype=torch.float64, requires_grad=True)
    with no_fallback():
        for recompute in (False, True):
            check(
                lambda x: F.interpolate(
                    x, scale_factor=scale, mode=mode, antialias=True, recompute_scale_factor=recompute
                ),
                x,
                grad=True,
                atol=1e-12,
                rtol=1e-12,
            )


def test_upsample_bilinear_antialias_ops_direct_inf_and_errors():
    x = torch.randn(1, 1, 9, 7)
    x[0, 0, 4, 3] = float("inf")
    g = torch.randn(1, 2, 3, 4)
    with no_fallback():
        check(lambda x: aten._upsample_bilinear2d_aa(x, [3, 7], False, 0.4, None), x)
        check(lambda x: aten._upsample_bilinear2d_aa.out(x, [4, 4], True, out=x.new_empty(1, 1, 4, 4)), x)
        check(lambda g: aten._upsample_bilinear2d_aa_backward(g, [3, 4], [1, 2, 8, 11], False), g)
        check(lambda g: aten._upsample_bilinear2d_aa_backward(g, [3, 4], [1, 2, 3, 9], True, 0.5, 0.3), g)
        check(lambda x: aten._upsample_bicubic2d_aa(x, [5, 2], False, None, 0.3), x)
        check(lambda g: aten._upsample_bicubic2d_aa_backward(g, [3, 4], [1, 2, 8, 11], False), g)
    for fn, exc in [
        (lambda x: aten._upsample_bilinear2d_aa(x, [0, 3], False), RuntimeError),
        (lambda x: aten._upsample_bilinear2d_aa(x[0], [2, 3], False), RuntimeError),
        (lambda x: aten._upsample_bilinear2d_aa(x.half(), [2, 3], False), NotImplementedError),
        (lambda x: aten._upsample_bicubic2d_aa(x.double().half(), [2, 3], False), NotImplementedError),
    ]:
        with pytest.raises(exc) as cpu:
            fn(x)
        with no_fallback(), pytest.raises(exc) as dev:
            fn(x.to("tpu"))
        assert str(dev.value).splitlines()[0] == str(cpu.value).splitlines()[0]


FRACTIONAL_2D = [((2, 3, 11, 13), (2, 2), (4, 5)), ((3, 9, 8), (3, 2), (7, 6)), ((1, 2, 6, 6), (2, 3), (1, 1))]


@pytest.mark.parametrize("shape,kernel,out", FRACTIONAL_2D, ids=str)
def test_fractional_max_pool2d_with_samples_and_gradients(shape, kernel, out):
    torch.manual_seed(45)
    x = torch.randn(*shape, requires_grad=True)
    samples = torch.rand(shape[0] if len(shape) == 4 else 1, shape[-3], 2)
    with no_fallback():
        check(
            lambda x, s: F.fractional_max_pool2d(x, kernel, output_size=out, return_indices=True, _random_samples=s),
            x,
            samples,
            grad=True,
        )


def test_fractional_max_pool3d_with_samples_and_gradients():
    torch.manual_seed(46)
    x = torch.randn(2, 2, 7, 8, 9, requires_grad=True)
    samples = torch.rand(2, 2, 3)
    with no_fallback():
        for kernel, out in [((2, 2, 3), (3, 4, 2)), ((1, 3, 2), (6, 1, 5))]:
            check(
                lambda x, s: F.fractional_max_pool3d(
                    x, kernel, output_size=out, return_indices=True, _random_samples=s
                ),
                x,
                samples,
                grad=True,
            )
        check(lambda x, s: aten.fractional_max_pool3d(x[0], [2, 2, 2], [3, 3, 3], s), x.detach(), samples[:1])


def test_fractional_max_pool_ties_nan_extra_samples_and_out():
    x = torch.zeros(1, 2, 8, 8)
    x[0, 0, 2:5, 2:5] = 1.0
    x[0, 1, 3, 3] = float("nan")
    x[0, 1, 6, 6] = float("nan")
    samples = torch.rand(3, 2, 2)
    with no_fallback():
        check(lambda x, s: aten.fractional_max_pool2d(x, [3, 3], [4, 4], s), x, samples)
        check(
            lambda x, s: aten.fractional_max_pool2d.output(
                x, [2, 2], [5, 5], s, output=x.new_empty(0), indices=x.new_empty(0, dtype=torch.long)
            ),
            x,
            samples,
        )


@pytest.mark.parametrize("dtype", [torch.float64, torch.bfloat16, torch.float16], ids=str)
def test_fractional_max_pool_dtypes(dtype):
    torch.manual_seed(47)
    x = torch.randn(2, 3, 10, 12).to(dtype).requires_grad_()
    samples = torch.rand(2, 3, 2).to(dtype)
    with no_fallback():
        check(lambda x, s: aten.fractional_max_pool2d(x, [2, 3], [6, 5], s), x, samples, grad=True, **tol(dtype))


BAD_FRACTIONAL = [
    ("samples dtype", lambda x, s: aten.fractional_max_pool2d(x, [2, 2], [3, 3], s.double())),
    ("samples rank", lambda x, s: aten.fractional_max_pool2d(x, [2, 2], [3, 3], s[0])),
    ("samples size", lambda x, s: aten.fractional_max_pool2d(x, [2, 2], [3, 3], torch.rand(1, 1, 3, device=x.device))),
    ("pool height", lambda x, s: aten.fractional_max_pool2d(x, [2, 2], [8, 3], s)),
    ("pool width", lambda x, s: aten.fractional_max_pool2d(x, [2, 2], [3, 8], s)),
    ("input rank", lambda x, s: aten.fractional_max_pool2d(x[0, 0], [2, 2], [3, 3], s)),
    ("empty dim", lambda x, s: aten.fractional_max_pool2d(x[:, :0], [2, 2], [3, 3], s[:, :0])),
    ("kernel len", lambda x, s: aten.fractional_max_pool2d(x, [2], [3, 3], s)),
    (
        "3d pool time",
        lambda x, s: aten.fractional_max_pool3d(x[None], [2, 2, 2], [1, 3, 3], torch.rand(1, 1, 3, device=x.device)),
    ),
    (
        "3d pool equal",
        lambda x, s: aten.fractional_max_pool3d(x[None], [1, 2, 2], [1, 3, 3], torch.rand(1, 1, 3, device=x.device)),
    ),
    (
        "3d output len",
        lambda x, s: aten.fractional_max_pool3d(x, [2, 2, 2], [3, 3], torch.rand(1, 1, 3, device=x.device)),
    ),
]


@pytest.mark.parametrize("name,fn", BAD_FRACTIONAL, ids=[c[0] for c in BAD_FRACTIONAL])
def test_fractional_max_pool_bad_arguments_raise_like_cpu(name, fn):
    x, s = torch.randn(1, 1, 8, 8), torch.rand(1, 1, 2)
    with pytest.raises(RuntimeError) as cpu:
        fn(x, s)
    with no_fallback(), pytest.raises(RuntimeError) as dev:
        fn(x.to("tpu"), s.to("tpu"))
    assert str(dev.value).splitlines()[0] == str(cpu.value).splitlines()[0]


def hist(*args, **kwargs):
    return lambda x, *t: torch.histogram(x, *args, *t, **kwargs)


@pytest.mark.parametrize("density", [False, True], ids=["counts", "density"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
def test_histogram_bin_count_range_weight_and_density(dtype, density):
    torch.manual_seed(48)
    x = torch.randn(7, 9, dtype=dtype)
    w = torch.rand(7, 9, dtype=dtype)
    with no_fallback():
        check(hist(10, density=density), x)
        check(hist(7, range=(-1.0, 1.5), density=density), x)
        check(lambda x, w: torch.histogram(x, 5, weight=w, density=density), x, w, atol=1e-5, rtol=1e-5)
        check(hist(4), torch.full((5,), 2.0, dtype=dtype))
        check(hist(3), torch.empty(0, dtype=dtype))


def test_histogram_edges_on_bin_boundaries_and_outside():
    # Elements exactly on the linspace edges, where interpolation alone can misplace them.
    x = torch.linspace(-3, 3, 61)
    x = torch.cat([x, torch.tensor([float("nan"), -5.0, 5.0])])
    with no_fallback():
        for bins in [3, 6, 7, 60, 61]:
            check(hist(bins, range=(-3.0, 3.0)), x)
        check(hist(7, range=(-2.9, 0.1)), x)


def test_histogram_bins_tensor_and_out():
    x = torch.randn(50)
    edges = torch.tensor([-2.0, -0.5, 0.0, 0.1, 1.0, 3.0])
    with no_fallback():
        check(lambda x, e: torch.histogram(x, e), x, edges)
        check(lambda x, e: torch.histogram(x, e, weight=x.abs(), density=True), x, edges)
        check(
            lambda x: torch.histogram(x, 4, out=(x.new_empty(0), x.new_empty(0))),
            x,
        )


BAD_HISTOGRAM = [
    ("bins", lambda x: torch.histogram(x, 0)),
    ("range len", lambda x: aten.histogram.bin_ct(x, 5, range=[1.0])),
    ("range order", lambda x: torch.histogram(x, 5, range=(2.0, 1.0))),
    ("range inf", lambda x: torch.histogram(x, 5, range=(0.0, float("inf")))),
    ("weight shape", lambda x: torch.histogram(x, 5, weight=x[:3])),
    ("weight dtype", lambda x: torch.histogram(x, 5, weight=x.double())),
    ("edges rank", lambda x: torch.histogram(x, x.new_ones(2, 2))),
    ("edges empty", lambda x: torch.histogram(x, x.new_ones(0))),
    ("one edge", lambda x: torch.histogram(x, x.new_ones(1))),
    ("edges dtype", lambda x: torch.histogram(x, x.new_ones(3).double())),
]


@pytest.mark.parametrize("name,fn", BAD_HISTOGRAM, ids=[c[0] for c in BAD_HISTOGRAM])
def test_histogram_bad_arguments_raise_like_cpu(name, fn):
    x = torch.randn(10)
    with pytest.raises(RuntimeError) as cpu:
        fn(x)
    with no_fallback(), pytest.raises(RuntimeError) as dev:
        fn(x.to("tpu"))
    assert str(dev.value).splitlines()[0] == str(cpu.value).splitlines()[0]


def test_histogram_non_finite_data_range_raises_at_the_next_sync_and_ints_refused():
    x = torch.tensor([1.0, float("inf")])
    with pytest.raises(RuntimeError, match="is not finite"):
        torch.histogram(x, 5)
    with no_fallback(), pytest.raises(RuntimeError, match="is not finite"):
        torch.histogram(x.to("tpu"), 5)
        torch.tpu.synchronize()
    for x in [torch.ones(3, dtype=torch.long), torch.ones(3, dtype=torch.half)]:
        with pytest.raises(NotImplementedError) as cpu:
            torch.histogram(x, 4)
        with pytest.raises(NotImplementedError) as dev:
            torch.histogram(x.to("tpu"), 4)
        assert str(dev.value) == str(cpu.value)


# CPU's float32 linspace rounds each value once (fused multiply-adds): bit-for-bit equal,
# which histogram's edges rely on.
@pytest.mark.parametrize("start,end", [(-3.0, 3.0), (0.1, 7.3), (5.0, -2.0)], ids=str)
def test_linspace_float32_bit_exact(start, end):
    with no_fallback():
        for steps in [8, 23, 61, 257]:
            dev = torch.linspace(start, end, steps, device="tpu").cpu()
            assert torch.equal(dev, torch.linspace(start, end, steps)), steps


@pytest.mark.parametrize("density", [False, True], ids=["counts", "density"])
def test_histogramdd_bin_counts_edges_weights(density):
    torch.manual_seed(49)
    x = torch.randn(4, 30, 3)
    w = torch.rand(4, 30)
    with no_fallback():
        check(lambda x: torch.histogramdd(x, [3, 4, 5], density=density), x)
        check(lambda x: torch.histogramdd(x, 4, range=[-1.0, 1.0, -2.0, 0.5, 0.0, 3.0], density=density), x)
        check(lambda x, w: torch.histogramdd(x, [2, 3, 2], weight=w, density=density), x, w, atol=1e-5, rtol=1e-5)
        edges = [torch.tensor([-1.0, 0.0, 2.0]), torch.tensor([-3.0, 3.0]), torch.tensor([-0.5, 0.0, 0.5, 1.0])]
        check(lambda x, *e: torch.histogramdd(x, list(e), density=density), x, *edges)
        check(lambda x: aten._histogramdd_bin_edges(x, [2, 3, 4]), x.double())


BAD_HISTOGRAMDD = [
    ("rank", lambda x: torch.histogramdd(x[:, 0], [3])),
    ("bins len", lambda x: torch.histogramdd(x, [3, 3, 3])),
    ("bins zero", lambda x: torch.histogramdd(x, [3, 0])),
    ("range len", lambda x: torch.histogramdd(x, [3, 3], range=[0.0, 1.0])),
    ("range order", lambda x: torch.histogramdd(x, [3, 3], range=[0.0, 1.0, 2.0, 1.0])),
    ("edges count", lambda x: torch.histogramdd(x, [x.new_ones(3)])),
    ("one edge", lambda x: torch.histogramdd(x, [x.new_ones(3), x.new_ones(1)])),
    ("weight", lambda x: torch.histogramdd(x, [3, 3], weight=x[:9, 0])),
]


@pytest.mark.parametrize("name,fn", BAD_HISTOGRAMDD, ids=[c[0] for c in BAD_HISTOGRAMDD])
def test_histogramdd_bad_arguments_raise_like_cpu(name, fn):
    x = torch.randn(10, 2)
    with pytest.raises(RuntimeError) as cpu:
        fn(x)
    with no_fallback(), pytest.raises(RuntimeError) as dev:
        fn(x.to("tpu"))
    assert str(dev.value).splitlines()[0] == str(cpu.value).splitlines()[0]


# CPU's antialiased vertical pass over a width-1 image repeats the first output row (a CPU
# bug); the device resizes it as it resizes each column of a wider image.
@pytest.mark.parametrize("op", [aten._upsample_bilinear2d_aa, aten._upsample_bicubic2d_aa], ids=str)
def test_upsample_antialias_width_one_matches_wider_images(op):
    x = torch.randn(1, 2, 9, 1)
    with no_fallback():
        one = op(x.to("tpu"), [5, 1], False).cpu()
        two = op(x.expand(1, 2, 9, 2).contiguous().to("tpu"), [5, 2], False).cpu()
    torch.testing.assert_close(one[..., 0], two[..., 0])
    torch.testing.assert_close(two, op(x.expand(1, 2, 9, 2).contiguous(), [5, 2], False))
