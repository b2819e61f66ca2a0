//! 2-d pooling: max pooling with indices, average pooling and adaptive average pooling,
//! with their backwards.

use tpurs_hlo::{Builder, CompareDir, DType, Literal, ScatterDims, TensorType, Value};

use super::conv::{not_for, sum};
use super::one;
use crate::ctx::{Ctx, Out};
use crate::dtype::opmath;
use crate::error::{Error, Result};
use crate::table::Registry;

/// Kernel, stride, padding and dilation of a 2-d pooling, plus ceil mode.
struct Pool {
    k: [i64; 2],
    s: [i64; 2],
    p: [i64; 2],
    d: [i64; 2],
    ceil: bool,
}

/// Reads a 1- or 2-element pooling list (`default` when empty).
fn pair(v: Vec<i64>, what: &str, default: [i64; 2]) -> Result<[i64; 2]> {
    match v.len() {
        0 => Ok(default),
        1 => Ok([v[0], v[0]]),
        2 => Ok([v[0], v[1]]),
        _ => Err(Error::Runtime(format!(
            "max_pool2d: {what} must either be a single int, or a tuple of two ints"
        ))),
    }
}

impl Pool {
    /// Reads kernel, stride, padding (positions `at..at+3`), dilation (`dil_at`) and ceil mode.
    fn read(ctx: &Ctx, at: usize, dil_at: Option<usize>, ceil_at: usize) -> Result<Pool> {
        let k = pair(ctx.int_list(at)?, "kernel_size", [0, 0])?;
        let s = pair(ctx.int_list(at + 1)?, "stride", k)?;
        let p = pair(ctx.int_list(at + 2)?, "padding", [0, 0])?;
        let d = match dil_at {
            Some(i) => pair(ctx.int_list(i)?, "dilation", [1, 1])?,
            None => [1, 1],
        };
        let pool = Pool {
            k,
            s,
            p,
            d,
            ceil: ctx.bool_or(ceil_at, false)?,
        };
        for i in 0..2 {
            if k[i] <= 0 {
                return Err(Error::Runtime(format!(
                    "kernel size should be greater than zero, but got kH: {} kW: {}",
                    k[0], k[1]
                )));
            }
            if s[i] <= 0 {
                return Err(Error::Runtime(format!(
                    "stride should be greater than zero, but got dH: {} dW: {}",
                    s[0], s[1]
                )));
            }
            if d[i] <= 0 {
                return Err(Error::Runtime(format!(
                    "dilation should be greater than zero, but got dilationH: {} dilationW: {}",
                    d[0], d[1]
                )));
            }
            if p[i] < 0 || p[i] > ((k[i] - 1) * d[i] + 1) / 2 {
                return Err(Error::Runtime(format!(
                    "pad should be at most half of effective kernel size, but got pad={}, kernel_size={} and dilation={}",
                    p[i], k[i], d[i]
                )));
            }
        }
        Ok(pool)
    }

    /// PyTorch's `pooling_output_shape` for spatial dim `i` of size `n`.
    fn out_size(&self, i: usize, n: i64) -> i64 {
        let (k, s, p, d) = (self.k[i], self.s[i], self.p[i], self.d[i]);
        let extra = if self.ceil { s - 1 } else { 0 };
        let mut o = (n + 2 * p - d * (k - 1) - 1 + extra).div_euclid(s) + 1;
        if self.ceil && (o - 1) * s >= n + p {
            o -= 1;
        }
        o
    }

    /// Output spatial sizes of an input `(…, H, W)`, with PyTorch's "too small" error.
    fn out_sizes(&self, shape: &[i64]) -> Result<[i64; 2]> {
        let r = shape.len();
        let (h, w) = (shape[r - 2], shape[r - 1]);
        let o = [self.out_size(0, h), self.out_size(1, w)];
        if o[0] < 1 || o[1] < 1 {
            return Err(Error::Runtime(format!(
                "Given input size: ({}x{h}x{w}). Calculated output size: ({}x{}x{}). Output size is too small",
                shape[r - 3],
                shape[r - 3],
                o[0],
                o[1]
            )));
        }
        Ok(o)
    }

    /// (low, high) padding of spatial dim `i` that makes a window of every output cover
    /// the input (high clipped at zero; the result is sliced to `out` afterwards).
    fn pads(&self, i: usize, n: i64, out: i64) -> (i64, i64) {
        let span = (self.k[i] - 1) * self.d[i] + 1;
        let hi = (out - 1) * self.s[i] + span - n - self.p[i];
        (self.p[i], hi.max(0))
    }
}

/// Checks a pooling input is 3-d or 4-d and views it as 4-d `(N, C, H, W)`.
fn as_4d(b: &mut Builder, x: &Value, op: &str) -> Result<Value> {
    match x.rank() {
        4 => Ok(x.clone()),
        3 => {
            let mut s = vec![1];
            s.extend_from_slice(x.shape());
            Ok(b.reshape(x, &s)?)
        }
        _ => Err(Error::Runtime(format!(
            "{op}: Expected 3D or 4D tensor for input, but got: {:?}",
            x.shape()
        ))),
    }
}

/// Slices the last two dims of `x` to `out`.
fn crop(b: &mut Builder, x: &Value, out: [i64; 2]) -> Result<Value> {
    let r = x.rank();
    let mut limit = x.shape().to_vec();
    limit[r - 2] = out[0];
    limit[r - 1] = out[1];
    Ok(b.slice(x, &vec![0; r], &limit, &vec![1; r])?)
}

/// The smallest value of `d` (the max-pool padding value).
fn lowest(d: DType) -> Literal {
    match d {
        d if d.is_float() => Literal::Float(f64::NEG_INFINITY),
        DType::I8 => Literal::Int(i8::MIN as i64),
        DType::I16 => Literal::Int(i16::MIN as i64),
        DType::I32 => Literal::Int(i32::MIN as i64),
        DType::I64 => Literal::Int(i64::MIN),
        DType::Bool => Literal::Bool(false),
        _ => Literal::Int(0),
    }
}

/// Max-pool combine on (value, index) pairs: the larger value (NaN counts as largest),
/// the smaller flat index on ties, so that the first maximum of a window wins.
fn argmax_combine(b: &mut Builder, acc: &[Value], new: &[Value]) -> Vec<Value> {
    let (va, ia, vb, ib) = (&acc[0], &acc[1], &new[0], &new[1]);
    let mut gt = b.compare(CompareDir::Gt, va, vb).expect("same types");
    let mut eq = b.compare(CompareDir::Eq, va, vb).expect("same types");
    if va.dtype().is_float() {
        let na = b.compare(CompareDir::Ne, va, va).expect("same types");
        let nb = b.compare(CompareDir::Ne, vb, vb).expect("same types");
        let not_nb = b.not(&nb);
        let a_nan = b.and(&na, &not_nb).expect("same types");
        gt = b.or(&gt, &a_nan).expect("same types");
        let both = b.and(&na, &nb).expect("same types");
        eq = b.or(&eq, &both).expect("same types");
    }
    let first = b.compare(CompareDir::Lt, ia, ib).expect("same types");
    let tie = b.and(&eq, &first).expect("same types");
    let pick = b.or(&gt, &tie).expect("same types");
    vec![
        b.select(&pick, va, vb).expect("same types"),
        b.select(&pick, ia, ib).expect("same types"),
    ]
}

/// `max_pool2d_with_indices(self, kernel_size, stride, padding, dilation, ceil_mode)`
/// -> (values, flat per-plane argmax indices).
fn max_pool2d_with_indices(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let pool = Pool::read(ctx, 1, Some(4), 5)?;
    let x0 = ctx.tensor(0)?;
    let b = &mut ctx.b;
    let x = as_4d(b, &x0, "max_pool2d")?;
    let out = pool.out_sizes(x.shape())?;
    let (h, w) = (x.shape()[2], x.shape()[3]);
    let ity = TensorType::new(DType::I64, x.shape().to_vec());
    let rows = b.iota(&ity, 2);
    let cols = b.iota(&ity, 3);
    let width = b.full_like(&rows, Literal::Int(w));
    let rows = b.mul(&rows, &width)?;
    let idx = b.add(&rows, &cols)?;
    let init_v = b.constant(lowest(x.dtype()), x.dtype());
    let init_i = b.constant(Literal::Int(i64::MAX), DType::I64);
    let padding = [
        (0, 0),
        (0, 0),
        pool.pads(0, h, out[0]),
        pool.pads(1, w, out[1]),
    ];
    let r = b.reduce_window_multi(
        &[&x, &idx],
        &[&init_v, &init_i],
        &[1, 1, pool.k[0], pool.k[1]],
        &[1, 1, pool.s[0], pool.s[1]],
        &[1, 1, pool.d[0], pool.d[1]],
        &padding,
        argmax_combine,
    );
    let mut shape = x0.shape().to_vec();
    let r0 = shape.len();
    shape[r0 - 2] = out[0];
    shape[r0 - 1] = out[1];
    let v = crop(b, &r[0], out)?;
    let i = crop(b, &r[1], out)?;
    Ok(vec![
        Some(b.reshape(&v, &shape)?),
        Some(b.reshape(&i, &shape)?),
    ])
}

/// `max_pool2d_with_indices_backward(grad_output, self, kernel_size, stride, padding,
/// dilation, ceil_mode, indices)`: scatters (adds) each gradient to its argmax position.
fn max_pool2d_with_indices_backward(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let gy = ctx.tensor(0)?;
    let shape = ctx.ty(1)?.shape;
    let idx = ctx.tensor(7)?;
    let b = &mut ctx.b;
    let ct = opmath(gy.dtype());
    let r = shape.len();
    let plane = shape[r - 1] * shape[r - 2];
    let planes: i64 = shape[..r - 2].iter().product();
    let m = gy.ty.numel();
    let idx = b.convert(&idx, DType::I64);
    let idx = b.reshape(&idx, &[planes, m / planes.max(1)])?;
    let base = b.iota(&idx.ty, 0);
    let stride = b.full_like(&base, Literal::Int(plane));
    let base = b.mul(&base, &stride)?;
    let flat = b.add(&idx, &base)?;
    let flat = b.reshape(&flat, &[m, 1])?;
    let upd = b.convert(&gy, ct);
    let upd = b.reshape(&upd, &[m])?;
    let zeros = b.splat(Literal::Int(0), &TensorType::new(ct, [planes * plane]));
    let dims = ScatterDims {
        update_window_dims: vec![],
        inserted_window_dims: vec![0],
        scatter_dims_to_operand_dims: vec![0],
        index_vector_dim: 1,
    };
    let g = b.scatter(
        &zeros,
        &flat,
        &upd,
        &dims,
        Some(|b, a, c| b.add(a, c).expect("same types")),
    );
    let g = b.reshape(&g, &shape)?;
    one(b.convert(&g, gy.dtype()))
}

/// The divisors of an average pool over `(H, W)`: a `(1, 1, oh, ow)` tensor of `ct`.
fn avg_divisor(
    b: &mut Builder,
    pool: &Pool,
    hw: [i64; 2],
    out: [i64; 2],
    include_pad: bool,
    divisor_override: Option<i64>,
    ct: DType,
) -> Result<Value> {
    let out_ty = TensorType::new(ct, [1, 1, out[0], out[1]]);
    if let Some(d) = divisor_override {
        return Ok(b.splat(Literal::Int(d), &out_ty));
    }
    let mut padding = vec![(0, 0), (0, 0)];
    let ones_shape = if include_pad {
        for i in 0..2 {
            let (_, hi) = pool.pads(i, hw[i], out[i]);
            padding.push((0, (hi - pool.p[i]).max(0)));
        }
        [1, 1, hw[0] + 2 * pool.p[0], hw[1] + 2 * pool.p[1]]
    } else {
        for i in 0..2 {
            padding.push(pool.pads(i, hw[i], out[i]));
        }
        [1, 1, hw[0], hw[1]]
    };
    let ones = b.splat(Literal::Int(1), &TensorType::new(ct, ones_shape));
    let zero = b.constant(Literal::Int(0), ct);
    let counts = b.reduce_window(
        &ones,
        &zero,
        &[1, 1, pool.k[0], pool.k[1]],
        &[1, 1, pool.s[0], pool.s[1]],
        &[1, 1, 1, 1],
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
        return Err(Error::Runtime("divisor must be not zero".into()));
    }
    Ok((include_pad, divisor))
}

/// The compute type of an average pool of `d` (floats and int64 only, like CPU PyTorch).
fn avg_opmath(d: DType, kernel: &str) -> Result<DType> {
    if d.is_float() || d == DType::I64 {
        Ok(opmath(d))
    } else {
        Err(not_for(kernel, d))
    }
}

/// `avg_pool2d(self, kernel_size, stride, padding, ceil_mode, count_include_pad,
/// divisor_override)`.
fn avg_pool2d(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let pool = Pool::read(ctx, 1, None, 4)?;
    let (include_pad, divisor) = avg_flags(ctx, 4)?;
    let x0 = ctx.tensor(0)?;
    let ct = avg_opmath(x0.dtype(), "avg_pool2d")?;
    let b = &mut ctx.b;
    let x = as_4d(b, &x0, "avg_pool2d")?;
    let x = b.convert(&x, ct);
    let out = pool.out_sizes(x.shape())?;
    let hw = [x.shape()[2], x.shape()[3]];
    let zero = b.constant(Literal::Int(0), ct);
    let padding = [
        (0, 0),
        (0, 0),
        pool.pads(0, hw[0], out[0]),
        pool.pads(1, hw[1], out[1]),
    ];
    let s = b.reduce_window(
        &x,
        &zero,
        &[1, 1, pool.k[0], pool.k[1]],
        &[1, 1, pool.s[0], pool.s[1]],
        &[1, 1, 1, 1],
        &padding,
        |b, a, c| b.add(a, c).expect("same types"),
    );
    let s = crop(b, &s, out)?;
    let div = avg_divisor(b, &pool, hw, out, include_pad, divisor, ct)?;
    let div = b.broadcast_in_dim(&div, s.shape(), &[0, 1, 2, 3])?;
    let y = b.div(&s, &div)?;
    let mut shape = x0.shape().to_vec();
    let r = shape.len();
    shape[r - 2] = out[0];
    shape[r - 1] = out[1];
    let y = b.reshape(&y, &shape)?;
    one(b.convert(&y, x0.dtype()))
}

/// `avg_pool2d_backward(grad_output, self, kernel_size, stride, padding, ceil_mode,
/// count_include_pad, divisor_override)`: spreads each `grad / divisor` over its window.
fn avg_pool2d_backward(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let pool = Pool::read(ctx, 2, None, 5)?;
    let (include_pad, divisor) = avg_flags(ctx, 5)?;
    let shape = ctx.ty(1)?.shape;
    let gy0 = ctx.tensor(0)?;
    let ct = avg_opmath(gy0.dtype(), "avg_pool2d_backward")?;
    let b = &mut ctx.b;
    let gy = as_4d(b, &gy0, "avg_pool2d_backward")?;
    let gy = b.convert(&gy, ct);
    let r = shape.len();
    let hw = [shape[r - 2], shape[r - 1]];
    let out = [gy.shape()[2], gy.shape()[3]];
    let div = avg_divisor(b, &pool, hw, out, include_pad, divisor, ct)?;
    let div = b.broadcast_in_dim(&div, gy.shape(), &[0, 1, 2, 3])?;
    let g = b.div(&gy, &div)?;
    let zero = b.constant(Literal::Int(0), ct);
    let (k, s) = (pool.k, pool.s);
    let dilated = b.pad(
        &g,
        &zero,
        &[0, 0, k[0] - 1, k[1] - 1],
        &[0, 0, k[0] - 1, k[1] - 1],
        &[0, 0, s[0] - 1, s[1] - 1],
    )?;
    let full = b.reduce_window(
        &dilated,
        &zero,
        &[1, 1, k[0], k[1]],
        &[1, 1, 1, 1],
        &[1, 1, 1, 1],
        &[(0, 0); 4],
        |b, a, c| b.add(a, c).expect("same types"),
    );
    let covered = [full.shape()[2], full.shape()[3]];
    let p = pool.p;
    let gi = b.pad(
        &full,
        &zero,
        &[0, 0, -p[0], -p[1]],
        &[0, 0, hw[0] + p[0] - covered[0], hw[1] + p[1] - covered[1]],
        &[0, 0, 0, 0],
    )?;
    let gi = b.reshape(&gi, &shape)?;
    one(b.convert(&gi, gy0.dtype()))
}

/// PyTorch's adaptive-pool bins from `n_in` to `n_out`: the 0/1 membership matrix
/// `(n_out, n_in)` and each bin's size `(n_out,)`, both of type `ct`.
fn adaptive_bins(b: &mut Builder, n_in: i64, n_out: i64, ct: DType) -> Result<(Value, Value)> {
    let ty = TensorType::new(DType::I64, [n_out, n_in]);
    let i = b.iota(&ty, 0);
    let j = b.iota(&ty, 1);
    let nin = b.full_like(&i, Literal::Int(n_in));
    let nout = b.full_like(&i, Literal::Int(n_out));
    let one_ = b.full_like(&i, Literal::Int(1));
    let lo = b.mul(&i, &nin)?;
    let start = b.div(&lo, &nout)?;
    let i1 = b.add(&i, &one_)?;
    let hi = b.mul(&i1, &nin)?;
    let hi = b.add(&hi, &nout)?;
    let hi = b.sub(&hi, &one_)?;
    let end = b.div(&hi, &nout)?;
    let ge = b.compare(CompareDir::Ge, &j, &start)?;
    let lt = b.compare(CompareDir::Lt, &j, &end)?;
    let mask = b.and(&ge, &lt)?;
    let m = b.convert(&mask, ct);
    let cnt = sum(b, &m, &[1]);
    Ok((m, cnt))
}

/// Sums of `x` over the bins of dim `d` given by the 0/1 `[out, in]` matrix `m`, the `out`
/// dim in place of `d`. Masked sums, not a product with `m`, so an infinite element reaches
/// only its own bins (`0 * inf` is NaN).
fn bin_sums(b: &mut Builder, x: &Value, m: &Value, d: usize) -> Result<Value> {
    let mut shape = x.shape().to_vec();
    shape.insert(d, m.shape()[0]);
    let x_dims: Vec<i64> = (0..x.rank() as i64)
        .map(|i| if i < d as i64 { i } else { i + 1 })
        .collect();
    let xb = b.broadcast_in_dim(x, &shape, &x_dims)?;
    let zero = b.full_like(m, Literal::Int(0));
    let inside = b.compare(CompareDir::Ne, m, &zero)?;
    let inside = b.broadcast_in_dim(&inside, &shape, &[d as i64, d as i64 + 1])?;
    let zeros = b.full_like(&xb, Literal::Int(0));
    let masked = b.select(&inside, &xb, &zeros)?;
    Ok(sum(b, &masked, &[d as i64 + 1]))
}

/// The `(oh, ow)` bin sizes of an adaptive pool, as an outer product.
fn bin_areas(b: &mut Builder, ch: &Value, cw: &Value) -> Result<Value> {
    let shape = [ch.shape()[0], cw.shape()[0]];
    let h = b.broadcast_in_dim(ch, &shape, &[0])?;
    let w = b.broadcast_in_dim(cw, &shape, &[1])?;
    Ok(b.mul(&h, &w)?)
}

/// The compute type of an adaptive average pool of `d` (floats only, like CPU PyTorch).
fn adaptive_opmath(d: DType, kernel: &str) -> Result<DType> {
    if d.is_float() {
        Ok(opmath(d))
    } else {
        Err(not_for(kernel, d))
    }
}

/// `_adaptive_avg_pool2d(self, output_size)` for any sizes (PyTorch's uneven bins too).
fn adaptive_avg_pool2d(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let size = ctx.int_list(1)?;
    let x = ctx.tensor(0)?;
    let r = x.rank();
    if !(3..=4).contains(&r) || size.len() != 2 || size.iter().any(|&s| s < 0) {
        return Err(Error::Runtime(format!(
            "adaptive_avg_pool2d(): Expected 3D or 4D tensor and output_size of 2 non-negative ints, but got input of size {:?} and output_size {size:?}",
            x.shape()
        )));
    }
    let ct = adaptive_opmath(x.dtype(), "adaptive_avg_pool2d")?;
    let b = &mut ctx.b;
    let xc = b.convert(&x, ct);
    let (h, w) = (x.shape()[r - 2], x.shape()[r - 1]);
    let (mh, ch) = adaptive_bins(b, h, size[0], ct)?;
    let (mw, cw) = adaptive_bins(b, w, size[1], ct)?;
    let y = bin_sums(b, &xc, &mh, r - 2)?;
    let y = bin_sums(b, &y, &mw, r - 1)?;
    let area = bin_areas(b, &ch, &cw)?;
    let area = b.broadcast_to(&area, y.shape())?;
    let y = b.div(&y, &area)?;
    one(b.convert(&y, x.dtype()))
}

/// `_adaptive_avg_pool2d_backward(grad_output, self)`: spreads `grad / bin size` over each bin.
fn adaptive_avg_pool2d_backward(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let shape = ctx.ty(1)?.shape;
    let gy = ctx.tensor(0)?;
    let ct = adaptive_opmath(gy.dtype(), "adaptive_avg_pool2d_backward")?;
    let b = &mut ctx.b;
    let r = shape.len();
    let g = b.convert(&gy, ct);
    let (oh, ow) = (gy.shape()[r - 2], gy.shape()[r - 1]);
    let (mh, ch) = adaptive_bins(b, shape[r - 2], oh, ct)?;
    let (mw, cw) = adaptive_bins(b, shape[r - 1], ow, ct)?;
    let area = bin_areas(b, &ch, &cw)?;
    let area = b.broadcast_to(&area, g.shape())?;
    let g = b.div(&g, &area)?;
    // Each input element sums the bins it lies in: masked sums over the transposed bins,
    // so an infinite gradient reaches only its own bin's elements, as on the CPU.
    let mh = b.transpose(&mh, &[1, 0])?;
    let mw = b.transpose(&mw, &[1, 0])?;
    let z = bin_sums(b, &g, &mh, r - 2)?;
    let z = bin_sums(b, &z, &mw, r - 1)?;
    one(b.convert(&z, gy.dtype()))
}

pub(crate) fn register(reg: &mut Registry) {
    reg.ops(
        &["max_pool2d_with_indices", "max_pool2d_with_indices.out"],
        max_pool2d_with_indices,
    );
    reg.ops(
        &[
            "max_pool2d_with_indices_backward",
            "max_pool2d_with_indices_backward.grad_input",
        ],
        max_pool2d_with_indices_backward,
    );
    reg.ops(&["avg_pool2d", "avg_pool2d.out"], avg_pool2d);
    reg.ops(
        &["avg_pool2d_backward", "avg_pool2d_backward.grad_input"],
        avg_pool2d_backward,
    );
    reg.ops(
        &["_adaptive_avg_pool2d", "_adaptive_avg_pool2d.out"],
        adaptive_avg_pool2d,
    );
    reg.ops(
        &[
            "_adaptive_avg_pool2d_backward",
            "_adaptive_avg_pool2d_backward.out",
        ],
        adaptive_avg_pool2d_backward,
    );
}
