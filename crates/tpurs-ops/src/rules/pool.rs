//! Max pooling with indices and average pooling over 2 or 3 spatial dims, with their
//! backwards. They take the number of spatial dims `n` and act on the last `n` dims of an
//! `(N, C, …)` or unbatched `(C, …)` input, with CPU PyTorch's argument checks and messages.

use tpurs_hlo::{Builder, CompareDir, DType, Literal, TensorType, Value};

use super::combine::{add_c, lowest};
use super::conv::not_for;
use super::one;
use super::unpool::scatter_into_planes;
use crate::ctx::{Ctx, Out};
use crate::dtype::{opmath, torch_name};
use crate::error::{runtime, Result};
use crate::table::Registry;

/// Names of the (last `n` of three) spatial dims in PyTorch's pooling messages.
const AXES: [&str; 3] = ["T", "H", "W"];

/// `prefix` and value per spatial dim as PyTorch lists them: "kT: 2 kH: 3 kW: 3".
fn labelled(prefix: &str, v: &[i64]) -> String {
    let axes = &AXES[AXES.len() - v.len()..];
    let parts: Vec<String> = axes
        .iter()
        .zip(v)
        .map(|(a, x)| format!("{prefix}{a}: {x}"))
        .collect();
    parts.join(" ")
}

/// Reads pooling list `i` of `n` ints (one int stands for all dims). Empty reads as
/// `default` where the schema allows it (`omissible`: stride) or the argument is absent.
fn spatial(
    ctx: &Ctx,
    i: usize,
    n: usize,
    op: &str,
    what: &str,
    default: &[i64],
    omissible: bool,
) -> Result<Vec<i64>> {
    let v = ctx.int_list(i)?;
    match v.len() {
        0 if omissible || !ctx.has(i) => Ok(default.to_vec()),
        1 => Ok(vec![v[0]; n]),
        len if len == n => Ok(v),
        _ => runtime(format!(
            "{op}: {what} must either be a single int, or a tuple of {} ints",
            ["two", "three"][n - 2]
        )),
    }
}

/// Checks a pooling input has `n + 1` or `n + 2` dims.
fn check_rank(shape: &[i64], n: usize) -> Result<()> {
    if shape.len() == n + 1 || shape.len() == n + 2 {
        return Ok(());
    }
    runtime(format!(
        "non-empty {}D or {}D (batch mode) tensor expected for input",
        n + 1,
        n + 2
    ))
}

/// Kernel, stride, padding and dilation of a pooling over the last `k.len()` dims, plus
/// ceil mode.
struct Pool {
    k: Vec<i64>,
    s: Vec<i64>,
    p: Vec<i64>,
    d: Vec<i64>,
    ceil: bool,
}

impl Pool {
    /// Reads kernel, stride, padding (positions `at..at+3`), dilation (`dil_at`) and ceil
    /// mode of `op`, an `n`-d pooling, checked in CPU PyTorch's order.
    fn read(
        ctx: &Ctx,
        op: &str,
        n: usize,
        at: usize,
        dil_at: Option<usize>,
        ceil_at: usize,
    ) -> Result<Pool> {
        let k = spatial(ctx, at, n, op, "kernel_size", &[], false)?;
        let s = spatial(ctx, at + 1, n, op, "stride", &k, true)?;
        let p = spatial(ctx, at + 2, n, op, "padding", &vec![0; n], false)?;
        let d = match dil_at {
            Some(i) => spatial(ctx, i, n, op, "dilation", &vec![1; n], false)?,
            None => vec![1; n],
        };
        // `pooling_output_shape`'s checks, dim by dim, come first.
        for i in 0..n {
            if s[i] == 0 {
                return runtime("stride should not be zero");
            }
            if p[i] < 0 {
                return runtime(format!("pad must be non-negative, but got pad: {}", p[i]));
            }
            let span = (k[i] - 1).checked_mul(d[i]).and_then(|v| v.checked_add(1));
            let Some(span) = span else {
                return runtime(format!(
                    "effective kernel size overflows, but got kernel_size={} and dilation={}",
                    k[i], d[i]
                ));
            };
            if p[i] > span / 2 {
                return runtime(format!(
                    "pad should be at most half of effective kernel size, but got pad={}, kernel_size={} and dilation={}",
                    p[i], k[i], d[i]
                ));
            }
        }
        if k.iter().any(|&v| v <= 0) {
            return runtime(format!(
                "kernel size should be greater than zero, but got {}",
                labelled("k", &k)
            ));
        }
        if s.iter().any(|&v| v <= 0) {
            return runtime(format!(
                "stride should be greater than zero, but got {}",
                labelled("d", &s)
            ));
        }
        if d.iter().any(|&v| v <= 0) {
            return runtime(format!(
                "dilation should be greater than zero, but got {}",
                labelled("dilation", &d)
            ));
        }
        let ceil = ctx.bool_or(ceil_at, false)?;
        Ok(Pool { k, s, p, d, ceil })
    }

    /// Number of spatial dims.
    fn n(&self) -> usize {
        self.k.len()
    }

    /// PyTorch's `pooling_output_shape` for spatial dim `i` of size `len`.
    fn out_size(&self, i: usize, len: i64) -> i64 {
        let (k, s, p, d) = (self.k[i], self.s[i], self.p[i], self.d[i]);
        let extra = if self.ceil { s - 1 } else { 0 };
        let mut o = (len + 2 * p - d * (k - 1) - 1 + extra).div_euclid(s) + 1;
        if self.ceil && (o - 1) * s >= len + p {
            o -= 1;
        }
        o
    }

    /// Output spatial sizes for an input of `shape` (batched or not), after PyTorch's shape
    /// checks; `kernel_fits` adds avg_pool3d's "input smaller than kernel" check.
    fn out_sizes(&self, shape: &[i64], op: &str, kernel_fits: bool) -> Result<Vec<i64>> {
        let n = self.n();
        let r = shape.len();
        let first = if r == n + 2 { 1 } else { 0 };
        if let Some(i) = (first..r).find(|&i| shape[i] == 0) {
            return runtime(format!(
                "{op}(): Expected input to have non-zero size for non-batch dimensions, but input has sizes {shape:?} with dimension {i} being empty"
            ));
        }
        let sizes = &shape[r - n..];
        if kernel_fits && sizes.iter().zip(&self.k).any(|(&len, &k)| len < k) {
            return runtime(format!(
                "input image ({}) smaller than kernel size ({})",
                labelled("", sizes),
                labelled("k", &self.k)
            ));
        }
        if self.k.iter().zip(&self.p).any(|(&k, &p)| k / 2 < p) {
            return runtime(format!(
                "pad should be smaller than or equal to half of kernel size, but got {} {}",
                labelled("k", &self.k),
                labelled("pad", &self.p)
            ));
        }
        let out: Vec<i64> = (0..n).map(|i| self.out_size(i, sizes[i])).collect();
        if out.iter().any(|&o| o < 1) {
            let planes = shape[r - n - 1];
            let dims = |v: &[i64]| v.iter().map(|x| format!("x{x}")).collect::<String>();
            return runtime(format!(
                "Given input size: ({planes}{}). Calculated output size: ({planes}{}). Output size is too small",
                dims(sizes),
                dims(&out)
            ));
        }
        Ok(out)
    }

    /// (low, high) padding of spatial dim `i` that makes a window of every output cover
    /// the input (high clipped at zero; the result is sliced to `out` afterwards).
    fn pads(&self, i: usize, len: i64, out: i64) -> (i64, i64) {
        let span = (self.k[i] - 1) * self.d[i] + 1;
        let hi = (out - 1) * self.s[i] + span - len - self.p[i];
        (self.p[i], hi.max(0))
    }

    /// Window padding of a batched input of `shape` pooled to `out`.
    fn padding(&self, shape: &[i64], out: &[i64]) -> Vec<(i64, i64)> {
        let mut padding = vec![(0, 0); 2];
        padding.extend((0..self.n()).map(|i| self.pads(i, shape[i + 2], out[i])));
        padding
    }
}

/// `v` behind the two leading ones of a window attribute (batch and channel dims).
fn window(v: &[i64]) -> Vec<i64> {
    [1, 1].iter().chain(v).copied().collect()
}

/// Views an `n`-d pooling input as batched: `(C, …)` becomes `(1, C, …)`.
fn batched(b: &mut Builder, x: &Value, n: usize) -> Result<Value> {
    if x.rank() == n + 2 {
        return Ok(x.clone());
    }
    let mut s = vec![1];
    s.extend_from_slice(x.shape());
    Ok(b.reshape(x, &s)?)
}

/// `shape` with its last `out.len()` dims replaced by `out`.
fn pooled_shape(shape: &[i64], out: &[i64]) -> Vec<i64> {
    let lead = shape.len() - out.len();
    shape[..lead].iter().chain(out).copied().collect()
}

/// Slices the last `out.len()` dims of `x` to `out`.
fn crop(b: &mut Builder, x: &Value, out: &[i64]) -> Result<Value> {
    let r = x.rank();
    let limit = pooled_shape(x.shape(), out);
    Ok(b.slice(x, &vec![0; r], &limit, &vec![1; r])?)
}

/// Checks a pooling gradient of `gy` shape against the input's `shape` pooled to `out`
/// (channel and spatial dims, as CPU PyTorch's `check_dim_size`).
fn check_grad_shape(gy: &[i64], shape: &[i64], out: &[i64]) -> Result<()> {
    let r = shape.len();
    let want = pooled_shape(shape, out);
    for (i, w) in want.iter().enumerate().skip(r - out.len() - 1) {
        if gy.len() != r || gy.get(i) != Some(w) {
            return runtime(format!(
                "Expected a tensor of dimension {r} and tensor.size[{i}] == {w} but got: dimension {} and tensor.size[{i}] = {}",
                gy.len(),
                gy.get(i).map_or("?".into(), |v| v.to_string())
            ));
        }
    }
    Ok(())
}

/// Max-pool combine on (value, index) pairs: the larger value (NaN counts as largest),
/// the smaller flat index on ties, so that the first maximum of a window wins, but the
/// larger index between NaNs: CPU's scan takes every NaN it meets, so the last one wins.
fn argmax_combine(b: &mut Builder, acc: &[Value], new: &[Value]) -> Vec<Value> {
    let (va, ia, vb, ib) = (&acc[0], &acc[1], &new[0], &new[1]);
    let mut gt = b.compare(CompareDir::Gt, va, vb).expect("same types");
    let eq = b.compare(CompareDir::Eq, va, vb).expect("same types");
    let first = b.compare(CompareDir::Lt, ia, ib).expect("same types");
    let tie = b.and(&eq, &first).expect("same types");
    if va.dtype().is_float() {
        let na = b.compare(CompareDir::Ne, va, va).expect("same types");
        let nb = b.compare(CompareDir::Ne, vb, vb).expect("same types");
        let not_nb = b.not(&nb);
        let a_nan = b.and(&na, &not_nb).expect("same types");
        gt = b.or(&gt, &a_nan).expect("same types");
        let both = b.and(&na, &nb).expect("same types");
        let last = b.compare(CompareDir::Gt, ia, ib).expect("same types");
        let nan_tie = b.and(&both, &last).expect("same types");
        gt = b.or(&gt, &nan_tie).expect("same types");
    }
    let pick = b.or(&gt, &tie).expect("same types");
    vec![
        b.select(&pick, va, vb).expect("same types"),
        b.select(&pick, ia, ib).expect("same types"),
    ]
}

/// Every element's flat index within its plane (the last `n` dims) of a tensor of `shape`.
fn plane_index(b: &mut Builder, shape: &[i64], n: usize) -> Result<Value> {
    let ty = TensorType::new(DType::I64, shape.to_vec());
    let r = shape.len();
    let mut idx = b.iota(&ty, r - 1);
    let mut stride = shape[r - 1];
    for d in (r - n..r - 1).rev() {
        let io = b.iota(&ty, d);
        let st = b.full_like(&io, Literal::Int(stride));
        let t = b.mul(&io, &st)?;
        idx = b.add(&idx, &t)?;
        stride *= shape[d];
    }
    Ok(idx)
}

/// `max_pool{n}d_with_indices(self, kernel_size, stride, padding, dilation, ceil_mode)`
/// -> (values, flat per-plane argmax indices).
fn max_pool_with_indices(ctx: &mut Ctx, n: usize) -> Result<Vec<Out>> {
    let op = format!("max_pool{n}d");
    let ty = ctx.ty(0)?;
    check_rank(&ty.shape, n)?;
    let pool = Pool::read(ctx, &op, n, 1, Some(4), 5)?;
    let out = pool.out_sizes(&ty.shape, &op, false)?;
    if ty.dtype == DType::Bool {
        return Err(not_for(&op, ty.dtype));
    }
    let x0 = ctx.tensor(0)?;
    let b = &mut ctx.b;
    let x = batched(b, &x0, n)?;
    let idx = plane_index(b, x.shape(), n)?;
    let init_v = b.constant(lowest(x.dtype()), x.dtype());
    let init_i = b.constant(Literal::Int(i64::MAX), DType::I64);
    let r = b.reduce_window_multi(
        &[&x, &idx],
        &[&init_v, &init_i],
        &window(&pool.k),
        &window(&pool.s),
        &window(&pool.d),
        &pool.padding(x.shape(), &out),
        argmax_combine,
    );
    let shape = pooled_shape(&ty.shape, &out);
    let v = crop(b, &r[0], &out)?;
    let i = crop(b, &r[1], &out)?;
    Ok(vec![
        Some(b.reshape(&v, &shape)?),
        Some(b.reshape(&i, &shape)?),
    ])
}

/// `max_pool{n}d_with_indices_backward(grad_output, self, kernel_size, stride, padding,
/// dilation, ceil_mode, indices)`: adds each gradient at its argmax position.
fn max_pool_with_indices_backward(ctx: &mut Ctx, n: usize) -> Result<Vec<Out>> {
    let op = format!("max_pool{n}d");
    let shape = ctx.ty(1)?.shape;
    check_rank(&shape, n)?;
    let pool = Pool::read(ctx, &op, n, 2, Some(5), 6)?;
    let out = pool.out_sizes(&shape, &op, false)?;
    let (gt, it) = (ctx.ty(0)?, ctx.ty(7)?);
    check_grad_shape(&gt.shape, &shape, &out)?;
    if it.dtype != DType::I64 {
        return runtime(format!(
            "expected scalar type Long but found {}",
            torch_name(it.dtype)
        ));
    }
    if !gt.dtype.is_float() {
        return Err(not_for(&format!("{op}_backward"), gt.dtype));
    }
    let gy = ctx.tensor(0)?;
    let idx = ctx.tensor(7)?;
    let b = &mut ctx.b;
    let r = shape.len();
    let planes: i64 = shape[..r - n].iter().product();
    let plane: i64 = shape[r - n..].iter().product();
    let upd = b.convert(&gy, opmath(gy.dtype()));
    let g = scatter_into_planes(b, &upd, &idx, planes, plane, Some(add_c))?;
    let g = b.reshape(&g, &shape)?;
    one(b.convert(&g, gy.dtype()))
}

/// The divisors of an average pool over spatial sizes `sizes`: a `(1, 1, out…)` tensor of `ct`.
fn avg_divisor(
    b: &mut Builder,
    pool: &Pool,
    sizes: &[i64],
    out: &[i64],
    include_pad: bool,
    divisor_override: Option<i64>,
    ct: DType,
) -> Result<Value> {
    let out_ty = TensorType::new(ct, window(out));
    if let Some(d) = divisor_override {
        return Ok(b.splat(Literal::Int(d), &out_ty));
    }
    // Count the ones a window covers: of the padded input (up to, not past, its padding)
    // with count_include_pad, else of the input alone.
    let mut padding = vec![(0, 0); 2];
    let mut ones_shape = vec![1, 1];
    for i in 0..pool.n() {
        let (lo, hi) = pool.pads(i, sizes[i], out[i]);
        if include_pad {
            padding.push((0, (hi - lo).max(0)));
            ones_shape.push(sizes[i] + 2 * lo);
        } else {
            padding.push((lo, hi));
            ones_shape.push(sizes[i]);
        }
    }
    let ones = b.splat(Literal::Int(1), &TensorType::new(ct, ones_shape));
    let zero = b.constant(Literal::Int(0), ct);
    let counts = b.reduce_window(
        &ones,
        &zero,
        &window(&pool.k),
        &window(&pool.s),
        &vec![1; pool.n() + 2],
        &padding,
        |b, a, c| b.add(a, c).expect("same types"),
    );
    crop(b, &counts, out)
}

/// Reads the average-pool flags at `at` (ceil_mode, count_include_pad, divisor_override).
fn avg_flags(ctx: &Ctx, at: usize) -> Result<(bool, Option<i64>)> {
    let include_pad = ctx.bool_or(at + 1, true)?;
    let divisor = ctx.opt_int(at + 2)?;
    if divisor == Some(0) {
        return runtime("divisor must be not zero");
    }
    Ok((include_pad, divisor))
}

/// The compute type of an `n`-d average pool of `d`, with CPU PyTorch's dtypes: floats
/// and int64, but no 16-bit floats in 3-d.
fn avg_opmath(d: DType, n: usize, kernel: &str) -> Result<DType> {
    let half = matches!(d, DType::F16 | DType::BF16);
    if (d.is_float() && !(half && n == 3)) || d == DType::I64 {
        Ok(opmath(d))
    } else {
        Err(not_for(kernel, d))
    }
}

/// `avg_pool{n}d(self, kernel_size, stride, padding, ceil_mode, count_include_pad,
/// divisor_override)`.
fn avg_pool(ctx: &mut Ctx, n: usize) -> Result<Vec<Out>> {
    let op = format!("avg_pool{n}d");
    let ty = ctx.ty(0)?;
    check_rank(&ty.shape, n)?;
    let pool = Pool::read(ctx, &op, n, 1, None, 4)?;
    let (include_pad, divisor) = avg_flags(ctx, 4)?;
    let out = pool.out_sizes(&ty.shape, &op, n == 3)?;
    let ct = avg_opmath(ty.dtype, n, &op)?;
    let x0 = ctx.tensor(0)?;
    let b = &mut ctx.b;
    let x = batched(b, &x0, n)?;
    let x = b.convert(&x, ct);
    let sizes = x.shape()[2..].to_vec();
    let zero = b.constant(Literal::Int(0), ct);
    let s = b.reduce_window(
        &x,
        &zero,
        &window(&pool.k),
        &window(&pool.s),
        &vec![1; n + 2],
        &pool.padding(x.shape(), &out),
        |b, a, c| b.add(a, c).expect("same types"),
    );
    let s = crop(b, &s, &out)?;
    let div = avg_divisor(b, &pool, &sizes, &out, include_pad, divisor, ct)?;
    let div = b.broadcast_to(&div, s.shape())?;
    let y = b.div(&s, &div)?;
    let y = b.reshape(&y, &pooled_shape(&ty.shape, &out))?;
    one(b.convert(&y, ty.dtype))
}

/// `avg_pool{n}d_backward(grad_output, self, kernel_size, stride, padding, ceil_mode,
/// count_include_pad, divisor_override)`: spreads each `grad / divisor` over its window.
fn avg_pool_backward(ctx: &mut Ctx, n: usize) -> Result<Vec<Out>> {
    let op = format!("avg_pool{n}d");
    let shape = ctx.ty(1)?.shape;
    check_rank(&shape, n)?;
    let pool = Pool::read(ctx, &op, n, 2, None, 5)?;
    let (include_pad, divisor) = avg_flags(ctx, 5)?;
    let out = pool.out_sizes(&shape, &op, n == 3)?;
    let gt = ctx.ty(0)?;
    check_grad_shape(&gt.shape, &shape, &out)?;
    let ct = avg_opmath(gt.dtype, n, &format!("{op}_backward"))?;
    let gy0 = ctx.tensor(0)?;
    let b = &mut ctx.b;
    let gy = batched(b, &gy0, n)?;
    let gy = b.convert(&gy, ct);
    let sizes = &shape[shape.len() - n..];
    let div = avg_divisor(b, &pool, sizes, &out, include_pad, divisor, ct)?;
    let div = b.broadcast_to(&div, gy.shape())?;
    let g = b.div(&gy, &div)?;
    // Every window spread over the input: the gradient dilated by the stride, padded by
    // `k - 1` and summed over windows of `k`, then cut back from padded to input coordinates.
    let zero = b.constant(Literal::Int(0), ct);
    let (k, s, p) = (&pool.k, &pool.s, &pool.p);
    let margin: Vec<i64> = k.iter().map(|k| k - 1).collect();
    let gaps: Vec<i64> = s.iter().map(|s| s - 1).collect();
    let lead = [0, 0];
    let edge: Vec<i64> = lead.iter().chain(&margin).copied().collect();
    let interior: Vec<i64> = lead.iter().chain(&gaps).copied().collect();
    let dilated = b.pad(&g, &zero, &edge, &edge, &interior)?;
    let full = b.reduce_window(
        &dilated,
        &zero,
        &window(k),
        &vec![1; n + 2],
        &vec![1; n + 2],
        &vec![(0, 0); n + 2],
        |b, a, c| b.add(a, c).expect("same types"),
    );
    let low: Vec<i64> = lead.iter().chain(p).map(|v| -v).collect();
    let mut high = vec![0, 0];
    high.extend((0..n).map(|i| sizes[i] + p[i] - full.shape()[i + 2]));
    let gi = b.pad(&full, &zero, &low, &high, &vec![0; n + 2])?;
    let gi = b.reshape(&gi, &shape)?;
    one(b.convert(&gi, gt.dtype))
}

pub(crate) fn register(reg: &mut Registry) {
    reg.ops(
        &["max_pool2d_with_indices", "max_pool2d_with_indices.out"],
        |ctx| max_pool_with_indices(ctx, 2),
    );
    reg.ops(
        &["max_pool3d_with_indices", "max_pool3d_with_indices.out"],
        |ctx| max_pool_with_indices(ctx, 3),
    );
    reg.ops(
        &[
            "max_pool2d_with_indices_backward",
            "max_pool2d_with_indices_backward.grad_input",
        ],
        |ctx| max_pool_with_indices_backward(ctx, 2),
    );
    reg.ops(
        &[
            "max_pool3d_with_indices_backward",
            "max_pool3d_with_indices_backward.grad_input",
        ],
        |ctx| max_pool_with_indices_backward(ctx, 3),
    );
    reg.ops(&["avg_pool2d", "avg_pool2d.out"], |ctx| avg_pool(ctx, 2));
    reg.ops(&["avg_pool3d", "avg_pool3d.out"], |ctx| avg_pool(ctx, 3));
    reg.ops(
        &["avg_pool2d_backward", "avg_pool2d_backward.grad_input"],
        |ctx| avg_pool_backward(ctx, 2),
    );
    reg.ops(
        &["avg_pool3d_backward", "avg_pool3d_backward.grad_input"],
        |ctx| avg_pool_backward(ctx, 3),
    );
}
