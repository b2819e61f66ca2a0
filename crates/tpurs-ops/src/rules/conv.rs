//! Convolution, pooling and batch norm: `convolution` (1-3 spatial dims, strided, padded,
//! dilated, grouped, transposed) and `convolution_backward`; 2-d max pooling with indices,
//! average pooling and adaptive average pooling with their backwards; and the batch-norm
//! forwards (train / eval, running-statistics update) and backwards.

use tpurs_hlo::{Builder, CompareDir, ConvDims, DType, Literal, ScatterDims, TensorType, Value};

use super::{empty, one};
use crate::ctx::{Ctx, Out};
use crate::dtype::{opmath, torch_name};
use crate::error::{Error, Result};
use crate::table::Registry;

/// CPU PyTorch's `NotImplementedError` for a kernel without this dtype.
fn not_for(kernel: &str, d: DType) -> Error {
    Error::NotImplemented(format!(
        "\"{kernel}\" not implemented for '{}'",
        torch_name(d)
    ))
}

/// Sum of `x` over `dims`.
fn sum(b: &mut Builder, x: &Value, dims: &[i64]) -> Value {
    let zero = b.constant(Literal::Int(0), x.dtype());
    b.reduce(x, &zero, dims, |b, a, c| b.add(a, c).expect("same types"))
}

/// Every dim of a rank-`r` tensor except the channel dim 1.
fn non_channel_dims(r: usize) -> Vec<i64> {
    (0..r as i64).filter(|&d| d != 1).collect()
}

/// Broadcasts a per-channel vector `(C,)` along dim 1 of `shape`.
fn per_channel(b: &mut Builder, v: &Value, shape: &[i64]) -> Result<Value> {
    Ok(b.broadcast_in_dim(v, shape, &[1])?)
}

// ---------------------------------------------------------------------------------------
// Convolution
// ---------------------------------------------------------------------------------------

/// Stride, symmetric padding, dilation and groups of a convolution.
struct Window {
    stride: Vec<i64>,
    padding: Vec<i64>,
    dilation: Vec<i64>,
    groups: i64,
}

/// Expands a one-element list to every spatial dim, with PyTorch's error otherwise.
fn expand(v: Vec<i64>, nsp: usize, what: &str) -> Result<Vec<i64>> {
    match v.len() {
        1 => Ok(vec![v[0]; nsp]),
        n if n == nsp => Ok(v),
        _ => Err(Error::Runtime(format!(
            "expected {what} to be a single integer value or a list of {nsp} values to match the convolution dimensions, but got {what}={v:?}"
        ))),
    }
}

/// Reads the window from schema positions `at` (stride, padding, dilation) and `groups_at`.
fn conv_window(ctx: &Ctx, at: usize, groups_at: usize, nsp: usize) -> Result<Window> {
    let win = Window {
        stride: expand(ctx.int_list(at)?, nsp, "stride")?,
        padding: expand(ctx.int_list(at + 1)?, nsp, "padding")?,
        dilation: expand(ctx.int_list(at + 2)?, nsp, "dilation")?,
        groups: ctx.int(groups_at)?,
    };
    if win.stride.iter().any(|&s| s <= 0) {
        return Err(Error::Runtime(
            "non-positive stride is not supported".into(),
        ));
    }
    if win.padding.iter().any(|&p| p < 0) {
        return Err(Error::Runtime("negative padding is not supported".into()));
    }
    if win.dilation.iter().any(|&d| d <= 0) {
        return Err(Error::Runtime(
            "dilation should be greater than zero".into(),
        ));
    }
    if win.groups <= 0 {
        return Err(Error::Runtime(
            "non-positive groups is not supported".into(),
        ));
    }
    Ok(win)
}

/// A plain convolution of `x` (N, C, *) with `w` (O, C/g, *k).
fn conv_fwd(b: &mut Builder, x: &Value, w: &Value, win: &Window) -> Result<Value> {
    let nsp = x.rank() - 2;
    let dims = ConvDims {
        strides: win.stride.clone(),
        padding: win.padding.iter().map(|&p| (p, p)).collect(),
        lhs_dilation: vec![1; nsp],
        rhs_dilation: win.dilation.clone(),
        feature_group_count: win.groups,
        batch_group_count: 1,
    };
    Ok(b.convolution(x, w, &dims)?)
}

/// The gradient of [`conv_fwd`] with respect to an input of spatial size `in_sp`, given
/// `gy` (N, O, *): a convolution with the flipped, group-transposed kernel over the
/// stride-dilated `gy`. This is also the transposed convolution of `gy`.
fn conv_grad_input(
    b: &mut Builder,
    gy: &Value,
    w: &Value,
    win: &Window,
    in_sp: &[i64],
) -> Result<Value> {
    let nsp = gy.rank() - 2;
    let (o, cg, g) = (w.shape()[0], w.shape()[1], win.groups);
    let k = w.shape()[2..].to_vec();
    let grouped: Vec<i64> = [g, o / g, cg].iter().chain(&k).copied().collect();
    let wt = b.reshape(w, &grouped)?;
    let perm: Vec<i64> = [0, 2, 1].into_iter().chain(3..3 + nsp as i64).collect();
    let wt = b.transpose(&wt, &perm)?;
    let flat: Vec<i64> = [g * cg, o / g].iter().chain(&k).copied().collect();
    let wt = b.reshape(&wt, &flat)?;
    let spatial: Vec<i64> = (2..2 + nsp as i64).collect();
    let wt = b.reverse(&wt, &spatial);
    let padding = (0..nsp)
        .map(|i| {
            let lo = win.dilation[i] * (k[i] - 1) - win.padding[i];
            let hi = in_sp[i] - 1 - (gy.shape()[i + 2] - 1) * win.stride[i] + win.padding[i];
            (lo, hi)
        })
        .collect();
    let dims = ConvDims {
        strides: vec![1; nsp],
        padding,
        lhs_dilation: win.stride.clone(),
        rhs_dilation: win.dilation.clone(),
        feature_group_count: g,
        batch_group_count: 1,
    };
    Ok(b.convolution(gy, &wt, &dims)?)
}

/// The gradient of [`conv_fwd`] with respect to its kernel of spatial size `k`: a
/// convolution of `x` with `gy` over the batch (batch groups for grouped convolutions).
fn conv_grad_weight(
    b: &mut Builder,
    x: &Value,
    gy: &Value,
    k: &[i64],
    win: &Window,
) -> Result<Value> {
    let nsp = x.rank() - 2;
    let perm: Vec<i64> = [1, 0].into_iter().chain(2..2 + nsp as i64).collect();
    let xt = b.transpose(x, &perm)?;
    let gt = b.transpose(gy, &perm)?;
    let padding = (0..nsp)
        .map(|i| {
            let covered =
                (k[i] - 1) * win.dilation[i] + (gy.shape()[i + 2] - 1) * win.stride[i] + 1;
            (win.padding[i], covered - x.shape()[i + 2] - win.padding[i])
        })
        .collect();
    let dims = ConvDims {
        strides: win.dilation.clone(),
        padding,
        lhs_dilation: vec![1; nsp],
        rhs_dilation: win.stride.clone(),
        feature_group_count: 1,
        batch_group_count: win.groups,
    };
    let r = b.convolution(&xt, &gt, &dims)?;
    Ok(b.transpose(&r, &perm)?)
}

/// Checks the input / weight / bias dtypes agree, with CPU PyTorch's message.
fn check_same_dtype(x: DType, other: DType, what: &str) -> Result<()> {
    if x != other {
        return Err(Error::Runtime(format!(
            "Input type ({}) and {what} type ({}) should be the same",
            torch_name(x),
            torch_name(other)
        )));
    }
    Ok(())
}

/// `convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding,
/// groups)`, also `_convolution` (same leading arguments).
fn convolution(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let (xt, wt) = (ctx.ty(0)?, ctx.ty(1)?);
    let r = xt.rank();
    if !(3..=5).contains(&r) || wt.rank() != r {
        return Err(Error::Runtime(format!(
            "Expected {}D (unbatched) or {r}D (batched) input to conv, but got input of size: {:?}",
            wt.rank().max(3) - 1,
            xt.shape
        )));
    }
    let nsp = r - 2;
    let win = conv_window(ctx, 3, 8, nsp)?;
    let transposed = ctx.bool_or(6, false)?;
    let dt = xt.dtype;
    check_same_dtype(dt, wt.dtype, "weight")?;
    if ctx.has(2) {
        check_same_dtype(dt, ctx.ty(2)?.dtype, "bias")?;
    }
    if dt == DType::Bool {
        return Err(not_for("slow_conv2d_cpu", dt));
    }
    let g = win.groups;
    let (c, w0, w1) = (xt.shape[1], wt.shape[0], wt.shape[1]);
    let expected = if transposed { w0 } else { w1 * g };
    if c != expected || w0 % g != 0 {
        return Err(Error::Runtime(format!(
            "Given {}, weight of size {:?}, expected input{:?} to have {expected} channels, but got {c} channels instead",
            if transposed { "transposed=1".to_string() } else { format!("groups={g}") },
            wt.shape,
            xt.shape
        )));
    }
    let ct = opmath(dt);
    let x = ctx.tensor(0)?;
    let w = ctx.tensor(1)?;
    let bias = ctx.opt_tensor(2)?;
    let output_padding = if transposed {
        expand(ctx.int_list(7)?, nsp, "output_padding")?
    } else {
        vec![0; nsp]
    };
    let b = &mut ctx.b;
    let (x, w) = (b.convert(&x, ct), b.convert(&w, ct));
    let mut y = if transposed {
        let out_sp: Vec<i64> = (0..nsp)
            .map(|i| {
                (x.shape()[i + 2] - 1) * win.stride[i] - 2 * win.padding[i]
                    + win.dilation[i] * (w.shape()[i + 2] - 1)
                    + output_padding[i]
                    + 1
            })
            .collect();
        conv_grad_input(b, &x, &w, &win, &out_sp)?
    } else {
        conv_fwd(b, &x, &w, &win)?
    };
    if let Some(bias) = bias {
        let bias = b.convert(&bias, ct);
        let bias = per_channel(b, &bias, y.shape())?;
        y = b.add(&y, &bias)?;
    }
    one(b.convert(&y, dt))
}

/// `convolution_backward(grad_output, input, weight, bias_sizes, stride, padding, dilation,
/// transposed, output_padding, groups, output_mask)` -> (grad_input, grad_weight, grad_bias).
fn convolution_backward(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let nsp = ctx.ty(1)?.rank() - 2;
    let win = conv_window(ctx, 4, 9, nsp)?;
    let transposed = ctx.bool_or(7, false)?;
    let mask = ctx.bool_list(10)?;
    let gy = ctx.tensor(0)?;
    let x = ctx.tensor(1)?;
    let w = ctx.tensor(2)?;
    let b = &mut ctx.b;
    let ct = opmath(x.dtype());
    let (gyc, xc, wc) = (b.convert(&gy, ct), b.convert(&x, ct), b.convert(&w, ct));
    let k = w.shape()[2..].to_vec();
    let gi = if mask.first().copied().unwrap_or(false) {
        let r = if transposed {
            conv_fwd(b, &gyc, &wc, &win)?
        } else {
            conv_grad_input(b, &gyc, &wc, &win, &x.shape()[2..])?
        };
        Some(b.convert(&r, x.dtype()))
    } else {
        None
    };
    let gw = if mask.get(1).copied().unwrap_or(false) {
        let r = if transposed {
            conv_grad_weight(b, &gyc, &xc, &k, &win)?
        } else {
            conv_grad_weight(b, &xc, &gyc, &k, &win)?
        };
        Some(b.convert(&r, w.dtype()))
    } else {
        None
    };
    let gb = if mask.get(2).copied().unwrap_or(false) {
        let s = sum(b, &gyc, &non_channel_dims(gy.rank()));
        Some(b.convert(&s, gy.dtype()))
    } else {
        None
    };
    Ok(vec![gi, gw, gb])
}

// ---------------------------------------------------------------------------------------
// Pooling
// ---------------------------------------------------------------------------------------

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
    let rr = r as i64;
    let y = b.dot_general(&xc, &mh, (&[], &[]), (&[rr - 2], &[1]))?;
    let y = b.dot_general(&y, &mw, (&[], &[]), (&[rr - 2], &[1]))?;
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
    let rr = r as i64;
    let z = b.dot_general(&g, &mh, (&[], &[]), (&[rr - 2], &[0]))?;
    let z = b.dot_general(&z, &mw, (&[], &[]), (&[rr - 2], &[0]))?;
    one(b.convert(&z, gy.dtype()))
}

// ---------------------------------------------------------------------------------------
// Batch norm
// ---------------------------------------------------------------------------------------

/// Argument positions of one batch-norm forward overload.
struct BnArgs {
    /// Position of running_mean (running_var follows), if the overload has them.
    stats: Option<usize>,
    /// Where the mode comes from.
    training: Mode,
    /// Position of momentum (eps follows).
    momentum: usize,
}

/// Whether a batch-norm overload normalises with batch statistics.
enum Mode {
    /// Read from the `training` argument at this position.
    Arg(usize),
    /// Fixed by the overload.
    Fixed(bool),
}

/// Results of a batch-norm forward.
struct BnOut {
    out: Value,
    save_mean: Value,
    save_invstd: Value,
    running: Option<(Value, Value)>,
}

/// The batch-norm forward: batch statistics (biased variance) in training, running
/// statistics otherwise; `out = x * (w * invstd) + (bias - mean * w * invstd)` like CPU.
fn bn_forward(ctx: &mut Ctx, a: &BnArgs) -> Result<BnOut> {
    let training = match a.training {
        Mode::Arg(i) => ctx.bool_or(i, false)?,
        Mode::Fixed(t) => t,
    };
    let momentum = ctx.opt_float(a.momentum)?.unwrap_or(0.1);
    let eps = ctx.float(a.momentum + 1)?;
    let x = ctx.tensor(0)?;
    let w = ctx.opt_tensor(1)?;
    let bias = ctx.opt_tensor(2)?;
    let (rm, rv) = match a.stats {
        Some(i) => (ctx.opt_tensor(i)?, ctx.opt_tensor(i + 1)?),
        None => (None, None),
    };
    if x.rank() < 2 {
        return Err(Error::Runtime(format!(
            "batch_norm: expected input with at least 2 dims, got {:?}",
            x.shape()
        )));
    }
    if !training && (rm.is_none() || rv.is_none()) {
        return Err(Error::Runtime(
            "running_mean and running_var must be defined in evaluation mode".into(),
        ));
    }
    let stat_dtype = [&w, &bias, &rm, &rv]
        .iter()
        .find_map(|v| v.as_ref().map(|v| v.dtype()))
        .unwrap_or(x.dtype());
    let ct = opmath(x.dtype()).max_float(opmath(stat_dtype));
    let b = &mut ctx.b;
    let shape = x.shape().to_vec();
    let dims = non_channel_dims(x.rank());
    let c = shape[1];
    let n = x.ty.numel() / c.max(1);
    let xc = b.convert(&x, ct);
    let eps_v = b.splat(Literal::Float(eps), &TensorType::new(ct, [c]));
    let (mean, invstd, running) = if training {
        let inv_n = b.splat(Literal::Float(1.0 / n as f64), &TensorType::new(ct, [c]));
        let s = sum(b, &xc, &dims);
        let mean = b.mul(&s, &inv_n)?;
        let mb = per_channel(b, &mean, &shape)?;
        let diff = b.sub(&xc, &mb)?;
        let sq = b.mul(&diff, &diff)?;
        let ss = sum(b, &sq, &dims);
        let var = b.mul(&ss, &inv_n)?;
        let ve = b.add(&var, &eps_v)?;
        let invstd = b.rsqrt(&ve);
        let running = match (&rm, &rv) {
            (Some(rm), Some(rv)) => {
                let m = b.splat(Literal::Float(momentum), &TensorType::new(ct, [c]));
                let keep = b.splat(Literal::Float(1.0 - momentum), &TensorType::new(ct, [c]));
                let unbias = n as f64 / (n - 1).max(1) as f64;
                let ub = b.splat(Literal::Float(unbias), &TensorType::new(ct, [c]));
                let (rmc, rvc) = (b.convert(rm, ct), b.convert(rv, ct));
                let a1 = b.mul(&mean, &m)?;
                let a2 = b.mul(&rmc, &keep)?;
                let new_m = b.add(&a1, &a2)?;
                let uv = b.mul(&var, &ub)?;
                let v1 = b.mul(&uv, &m)?;
                let v2 = b.mul(&rvc, &keep)?;
                let new_v = b.add(&v1, &v2)?;
                Some((b.convert(&new_m, rm.dtype()), b.convert(&new_v, rv.dtype())))
            }
            _ => None,
        };
        (mean, invstd, running)
    } else {
        let (rm, rv) = (rm.expect("checked"), rv.expect("checked"));
        let mean = b.convert(&rm, ct);
        let rvc = b.convert(&rv, ct);
        let ve = b.add(&rvc, &eps_v)?;
        (mean, b.rsqrt(&ve), None)
    };
    let alpha = match &w {
        Some(w) => {
            let wc = b.convert(w, ct);
            b.mul(&invstd, &wc)?
        }
        None => invstd.clone(),
    };
    let ma = b.mul(&mean, &alpha)?;
    let beta = match &bias {
        Some(bv) => {
            let bc = b.convert(bv, ct);
            b.sub(&bc, &ma)?
        }
        None => b.neg(&ma),
    };
    let ab = per_channel(b, &alpha, &shape)?;
    let bb = per_channel(b, &beta, &shape)?;
    let y = b.mul(&xc, &ab)?;
    let y = b.add(&y, &bb)?;
    let out = b.convert(&y, x.dtype());
    let (save_mean, save_invstd) = if training {
        (b.convert(&mean, stat_dtype), b.convert(&invstd, stat_dtype))
    } else {
        (empty(b, stat_dtype), empty(b, stat_dtype))
    };
    Ok(BnOut {
        out,
        save_mean,
        save_invstd,
        running,
    })
}

/// Writes the updated running statistics into arguments `at` and `at + 1` where the
/// schema marks them as mutated (native_batch_norm's schema does not: see the report).
fn write_running(ctx: &mut Ctx, at: usize, running: Option<(Value, Value)>) {
    let Some((m, v)) = running else { return };
    let writes = ctx.writes();
    let target = |arg: usize| writes.iter().position(|w| w.arg == arg && !w.is_out);
    if let Some(k) = target(at) {
        ctx.write(k, m);
    }
    if let Some(k) = target(at + 1) {
        ctx.write(k, v);
    }
}

/// `native_batch_norm` / `_native_batch_norm_legit(input, weight, bias, running_mean,
/// running_var, training, momentum, eps)` -> (out, save_mean, save_invstd).
fn native_batch_norm(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let args = BnArgs {
        stats: Some(3),
        training: Mode::Arg(5),
        momentum: 6,
    };
    let r = bn_forward(ctx, &args)?;
    write_running(ctx, 3, r.running);
    Ok(vec![Some(r.out), Some(r.save_mean), Some(r.save_invstd)])
}

/// `_native_batch_norm_legit.no_stats(input, weight, bias, training, momentum, eps)`.
fn batch_norm_no_stats(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let args = BnArgs {
        stats: None,
        training: Mode::Arg(3),
        momentum: 4,
    };
    let r = bn_forward(ctx, &args)?;
    Ok(vec![Some(r.out), Some(r.save_mean), Some(r.save_invstd)])
}

/// `_native_batch_norm_legit_no_training(input, weight, bias, running_mean, running_var,
/// momentum, eps)`.
fn batch_norm_no_training(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let args = BnArgs {
        stats: Some(3),
        training: Mode::Fixed(false),
        momentum: 5,
    };
    let r = bn_forward(ctx, &args)?;
    Ok(vec![Some(r.out), Some(r.save_mean), Some(r.save_invstd)])
}

/// `_native_batch_norm_legit_functional(...)` -> (out, save_mean, save_invstd,
/// running_mean_out, running_var_out).
fn batch_norm_functional(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let args = BnArgs {
        stats: Some(3),
        training: Mode::Arg(5),
        momentum: 6,
    };
    let r = bn_forward(ctx, &args)?;
    let (m, v) = match r.running {
        Some((m, v)) => (m, v),
        None => (ctx.tensor(3)?, ctx.tensor(4)?),
    };
    Ok(vec![
        Some(r.out),
        Some(r.save_mean),
        Some(r.save_invstd),
        Some(m),
        Some(v),
    ])
}

/// `_batch_norm_with_update(input, weight, bias, running_mean!, running_var!, momentum,
/// eps)` -> (out, save_mean, save_invstd, reserve).
fn batch_norm_with_update(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let args = BnArgs {
        stats: Some(3),
        training: Mode::Fixed(true),
        momentum: 5,
    };
    let r = bn_forward(ctx, &args)?;
    write_running(ctx, 3, r.running);
    let reserve = empty(&mut ctx.b, DType::U8);
    Ok(vec![
        Some(r.out),
        Some(r.save_mean),
        Some(r.save_invstd),
        Some(reserve),
    ])
}

/// `_batch_norm_no_update(input, weight, bias, running_mean?, running_var?, momentum, eps)`:
/// eval with running statistics, batch statistics without them.
fn batch_norm_no_update(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let args = BnArgs {
        stats: Some(3),
        training: Mode::Fixed(!ctx.has(3)),
        momentum: 5,
    };
    let r = bn_forward(ctx, &args)?;
    let reserve = empty(&mut ctx.b, DType::U8);
    Ok(vec![
        Some(r.out),
        Some(r.save_mean),
        Some(r.save_invstd),
        Some(reserve),
    ])
}

/// `native_batch_norm_backward(grad_out, input, weight, running_mean, running_var,
/// save_mean, save_invstd, train, eps, output_mask)` (also `batch_norm_backward`).
fn native_batch_norm_backward(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let train = ctx.bool_or(7, true)?;
    let eps = ctx.float(8)?;
    let mask = ctx.bool_list(9)?;
    let gy = ctx.tensor(0)?;
    let x = ctx.tensor(1)?;
    let w = ctx.opt_tensor(2)?;
    let (mean, var_or_invstd) = if train {
        (ctx.opt_tensor(5)?, ctx.opt_tensor(6)?)
    } else {
        (ctx.opt_tensor(3)?, ctx.opt_tensor(4)?)
    };
    let (Some(mean), Some(vi)) = (mean, var_or_invstd) else {
        return Err(Error::Runtime(
            "native_batch_norm_backward: missing saved or running statistics".into(),
        ));
    };
    let pdt = w.as_ref().map_or(x.dtype(), |w| w.dtype());
    let ct = opmath(x.dtype()).max_float(opmath(pdt));
    let b = &mut ctx.b;
    let shape = x.shape().to_vec();
    let dims = non_channel_dims(x.rank());
    let c = shape[1];
    let n = x.ty.numel() / c.max(1);
    let (gyc, xc) = (b.convert(&gy, ct), b.convert(&x, ct));
    let mean = b.convert(&mean, ct);
    let vi = b.convert(&vi, ct);
    let invstd = if train {
        vi
    } else {
        let e = b.splat(Literal::Float(eps), &TensorType::new(ct, [c]));
        let ve = b.add(&vi, &e)?;
        b.rsqrt(&ve)
    };
    let mb = per_channel(b, &mean, &shape)?;
    let diff = b.sub(&xc, &mb)?;
    let sum_gy = sum(b, &gyc, &dims);
    let prod = b.mul(&diff, &gyc)?;
    let dotp = sum(b, &prod, &dims);
    let gi = if mask.first().copied().unwrap_or(false) {
        let scale = match &w {
            Some(w) => {
                let wc = b.convert(w, ct);
                b.mul(&invstd, &wc)?
            }
            None => invstd.clone(),
        };
        let sb = per_channel(b, &scale, &shape)?;
        let g = if train {
            let inv_n = b.splat(Literal::Float(1.0 / n as f64), &TensorType::new(ct, [c]));
            let i2 = b.mul(&invstd, &invstd)?;
            let k = b.mul(&dotp, &i2)?;
            let k = b.mul(&k, &inv_n)?;
            let gm = b.mul(&sum_gy, &inv_n)?;
            let kb = per_channel(b, &k, &shape)?;
            let gmb = per_channel(b, &gm, &shape)?;
            let dx = b.mul(&diff, &kb)?;
            let g = b.sub(&gyc, &gmb)?;
            b.sub(&g, &dx)?
        } else {
            gyc.clone()
        };
        let g = b.mul(&g, &sb)?;
        Some(b.convert(&g, x.dtype()))
    } else {
        None
    };
    let gw = if mask.get(1).copied().unwrap_or(false) {
        let g = b.mul(&dotp, &invstd)?;
        Some(b.convert(&g, pdt))
    } else {
        None
    };
    let gb = if mask.get(2).copied().unwrap_or(false) {
        Some(b.convert(&sum_gy, pdt))
    } else {
        None
    };
    Ok(vec![gi, gw, gb])
}

/// The wider of two float compute types.
trait MaxFloat {
    /// `f64` if either is `f64`, else `self`.
    fn max_float(self, other: DType) -> DType;
}

impl MaxFloat for DType {
    fn max_float(self, other: DType) -> DType {
        if self == DType::F64 || other == DType::F64 {
            DType::F64
        } else if self.is_float() {
            self
        } else {
            other
        }
    }
}

/// Registers the convolution, pooling and batch-norm rules.
pub(crate) fn register(reg: &mut Registry) {
    reg.ops(
        &[
            "convolution",
            "convolution.out",
            "_convolution",
            "_convolution.out",
        ],
        convolution,
    );
    reg.ops(
        &["convolution_backward", "convolution_backward.out"],
        convolution_backward,
    );
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
    reg.ops(
        &[
            "native_batch_norm",
            "native_batch_norm.out",
            "_native_batch_norm_legit",
            "_native_batch_norm_legit.out",
        ],
        native_batch_norm,
    );
    reg.ops(
        &[
            "_native_batch_norm_legit.no_stats",
            "_native_batch_norm_legit.no_stats_out",
        ],
        batch_norm_no_stats,
    );
    reg.ops(
        &[
            "_native_batch_norm_legit_no_training",
            "_native_batch_norm_legit_no_training.out",
        ],
        batch_norm_no_training,
    );
    reg.ops(
        &["_native_batch_norm_legit_functional"],
        batch_norm_functional,
    );
    reg.ops(
        &["_batch_norm_with_update", "_batch_norm_with_update.out"],
        batch_norm_with_update,
    );
    reg.ops(
        &["_batch_norm_no_update", "_batch_norm_no_update.out"],
        batch_norm_no_update,
    );
    reg.ops(
        &[
            "native_batch_norm_backward",
            "native_batch_norm_backward.out",
            "batch_norm_backward",
        ],
        native_batch_norm_backward,
    );
}
