//! Neural-network ops: layer norm (+backward), activations and their backwards (gelu, silu,
//! sigmoid/tanh/threshold backward, leaky_relu, hardtanh), dropout, embedding backward and
//! renorm, and `_safe_softmax` (used by the math attention path). Half types are computed in
//! f32 and rounded once, like PyTorch's CPU kernels.

use tpurs_hlo::{Builder, CompareDir, DType, Literal, ScatterDims, TensorType, Value};

use super::{common_dtype, full, one};
use crate::ctx::{Ctx, Out};
use crate::dtype::{opmath, torch_name};
use crate::error::{runtime, Error, Result};
use crate::table::Registry;

use super::complex::{conjugate, div_of, exp_of};
use super::erfc::erf_of;
use super::index::wrap_negative;
use super::norms::norm_of;
use super::unpool::scatter_into_planes;
use crate::checks::CheckKind;

/// Converts `x` to its compute dtype.
pub(crate) fn widen(b: &mut Builder, x: &Value) -> Value {
    b.convert(x, opmath(x.dtype()))
}

/// Sum of `x` over `dims`, keeping them as size-1 dimensions when `keep`.
pub(super) fn sum_dims(b: &mut Builder, x: &Value, dims: &[i64], keep: bool) -> Result<Value> {
    let zero = b.constant(Literal::Int(0), x.dtype());
    let r = b.reduce(x, &zero, dims, |b, p, q| b.add(p, q).expect("same type"));
    if !keep {
        return Ok(r);
    }
    let shape: Vec<i64> = (0..x.rank())
        .map(|i| {
            if dims.contains(&(i as i64)) {
                1
            } else {
                x.shape()[i]
            }
        })
        .collect();
    Ok(b.reshape(&r, &shape)?)
}

/// Sum of every element of `x` as a 0-d value.
pub(super) fn sum_all(b: &mut Builder, x: &Value) -> Result<Value> {
    let dims: Vec<i64> = (0..x.rank() as i64).collect();
    sum_dims(b, x, &dims, false)
}

/// Reads tensor argument `i` in compute precision, broadcast to `shape`.
pub(crate) fn read_wide(ctx: &mut Ctx, i: usize, shape: &[i64]) -> Result<Value> {
    let v = ctx.tensor(i)?;
    let v = widen(&mut ctx.b, &v);
    Ok(ctx.b.broadcast_to(&v, shape)?)
}

/// Reads a `Scalar` argument `i` as a value of `like`'s dtype and shape.
pub(crate) fn scalar_like(ctx: &mut Ctx, i: usize, like: &Value) -> Result<Value> {
    let v = ctx.tensor(i)?;
    let v = ctx.b.convert(&v, like.dtype());
    Ok(ctx.b.broadcast_in_dim(&v, like.shape(), &[])?)
}

/// Fails like PyTorch's CPU kernels for non-float inputs of float-only activations.
pub(crate) fn require_float(ctx: &Ctx, i: usize, kernel: &str) -> Result<DType> {
    let d = ctx.ty(i)?.dtype;
    if !d.is_float() {
        return Err(Error::NotImplemented(format!(
            "\"{kernel}\" not implemented for '{}'",
            torch_name(d)
        )));
    }
    Ok(d)
}

// ---------------------------------------------------------------- layer norm

/// Validates `normalized_shape` against the input and returns the first normalized axis.
fn layer_norm_axis(input: &[i64], normalized: &[i64]) -> Result<usize> {
    let k = normalized.len();
    if k == 0 {
        return runtime("Expected normalized_shape to be at least 1-dimensional, i.e., containing at least one element, but got normalized_shape = []");
    }
    if input.len() < k || input[input.len() - k..] != *normalized {
        let n: Vec<String> = normalized.iter().map(|d| d.to_string()).collect();
        let s: Vec<String> = input.iter().map(|d| d.to_string()).collect();
        return runtime(format!(
            "Given normalized_shape=[{}], expected input with shape [*, {}], but got input of size[{}]",
            n.join(", "),
            n.join(", "),
            s.join(", ")
        ));
    }
    Ok(input.len() - k)
}

/// `native_layer_norm(input, normalized_shape, weight, bias, eps) -> (out, mean, rstd)`.
fn native_layer_norm(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let ty = ctx.ty(0)?;
    let axis = layer_norm_axis(&ty.shape, &ctx.int_list(1)?)?;
    let eps = ctx.float(4)?;
    let dims: Vec<i64> = (axis as i64..ty.rank() as i64).collect();
    let n: i64 = ty.shape[axis..].iter().product();
    let x = read_wide(ctx, 0, &ty.shape)?;
    let b = &mut ctx.b;
    let s = sum_dims(b, &x, &dims, true)?;
    let inv_n = full(b, &s, 1.0 / n.max(1) as f64);
    let mean = b.mul(&s, &inv_n)?;
    let mean_b = b.broadcast_to(&mean, &ty.shape)?;
    let xc = b.sub(&x, &mean_b)?;
    let sq = b.mul(&xc, &xc)?;
    let var = sum_dims(b, &sq, &dims, true)?;
    let var = b.mul(&var, &inv_n)?;
    let e = full(b, &var, eps);
    let ve = b.add(&var, &e)?;
    let rstd = b.rsqrt(&ve);
    let rstd_b = b.broadcast_to(&rstd, &ty.shape)?;
    let mut y = b.mul(&xc, &rstd_b)?;
    if ctx.has(2) {
        let w = read_wide(ctx, 2, &ty.shape)?;
        y = ctx.b.mul(&y, &w)?;
    }
    if ctx.has(3) {
        let bias = read_wide(ctx, 3, &ty.shape)?;
        y = ctx.b.add(&y, &bias)?;
    }
    let b = &mut ctx.b;
    Ok(vec![
        Some(b.convert(&y, ty.dtype)),
        Some(b.convert(&mean, ty.dtype)),
        Some(b.convert(&rstd, ty.dtype)),
    ])
}

/// `native_layer_norm_backward(grad_out, input, normalized_shape, mean, rstd, weight, bias,
/// output_mask) -> (grad_input, grad_weight, grad_bias)`.
fn native_layer_norm_backward(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let ty = ctx.ty(1)?;
    let axis = layer_norm_axis(&ty.shape, &ctx.int_list(2)?)?;
    let mask = ctx.bool_list(7)?;
    let want = |k: usize| mask.get(k).copied().unwrap_or(true);
    let norm_dims: Vec<i64> = (axis as i64..ty.rank() as i64).collect();
    let batch_dims: Vec<i64> = (0..axis as i64).collect();
    let n: i64 = ty.shape[axis..].iter().product();
    let g = read_wide(ctx, 0, &ty.shape)?;
    let x = read_wide(ctx, 1, &ty.shape)?;
    let mean = read_wide(ctx, 3, &ty.shape)?;
    let rstd = read_wide(ctx, 4, &ty.shape)?;
    let w = if ctx.has(5) {
        Some(read_wide(ctx, 5, &ty.shape)?)
    } else {
        None
    };
    let b = &mut ctx.b;
    let xc = b.sub(&x, &mean)?;
    let xhat = b.mul(&xc, &rstd)?;
    let mut outs: Vec<Out> = vec![None, None, None];
    if want(0) {
        let gw = match &w {
            Some(w) => b.mul(&g, w)?,
            None => g.clone(),
        };
        let inv_n = full(b, &g, 1.0 / n.max(1) as f64);
        let s1 = sum_dims(b, &gw, &norm_dims, true)?;
        let s1 = b.broadcast_to(&s1, &ty.shape)?;
        let m1 = b.mul(&s1, &inv_n)?;
        let gx = b.mul(&gw, &xhat)?;
        let s2 = sum_dims(b, &gx, &norm_dims, true)?;
        let s2 = b.broadcast_to(&s2, &ty.shape)?;
        let m2 = b.mul(&s2, &inv_n)?;
        let t = b.mul(&xhat, &m2)?;
        let d = b.sub(&gw, &m1)?;
        let d = b.sub(&d, &t)?;
        let dx = b.mul(&d, &rstd)?;
        outs[0] = Some(b.convert(&dx, ty.dtype));
    }
    if want(1) && ctx.has(5) {
        let wd = ctx.ty(5)?.dtype;
        let b = &mut ctx.b;
        let gx = b.mul(&g, &xhat)?;
        let dw = sum_dims(b, &gx, &batch_dims, false)?;
        outs[1] = Some(b.convert(&dw, wd));
    }
    if want(2) && ctx.has(6) {
        let bd = ctx.ty(6)?.dtype;
        let b = &mut ctx.b;
        let db = sum_dims(b, &g, &batch_dims, false)?;
        outs[2] = Some(b.convert(&db, bd));
    }
    Ok(outs)
}

// ---------------------------------------------------------------- activations

/// The `approximate` argument of gelu: true for "tanh".
fn gelu_tanh(ctx: &Ctx, i: usize) -> Result<bool> {
    match ctx.arg(i) {
        crate::Arg::Str(s) if s == "tanh" => Ok(true),
        crate::Arg::Str(s) if s == "none" => Ok(false),
        crate::Arg::None => Ok(false),
        crate::Arg::Str(s) => runtime(format!(
            "approximate argument must be either none or tanh, got {s}"
        )),
        _ => Ok(false),
    }
}

const SQRT_2_OVER_PI: f64 = 0.797_884_560_802_865_4;
const GELU_K: f64 = 0.044715;

/// `gelu(self, approximate)`.
fn gelu(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let d = require_float(ctx, 0, "GeluKernelImpl")?;
    let approx = gelu_tanh(ctx, 1)?;
    let x = ctx.tensor(0)?;
    let b = &mut ctx.b;
    let x = widen(b, &x);
    let half = full(b, &x, 0.5);
    let onev = full(b, &x, 1.0);
    let inner = if approx {
        let x3 = b.mul(&x, &x)?;
        let x3 = b.mul(&x3, &x)?;
        let k = full(b, &x, GELU_K);
        let kx3 = b.mul(&x3, &k)?;
        let s = b.add(&x, &kx3)?;
        let c = full(b, &x, SQRT_2_OVER_PI);
        let u = b.mul(&s, &c)?;
        b.tanh(&u)
    } else {
        let c = full(b, &x, std::f64::consts::FRAC_1_SQRT_2);
        let u = b.mul(&x, &c)?;
        erf_of(b, &u)?
    };
    let t = b.add(&onev, &inner)?;
    let y = b.mul(&x, &t)?;
    let y = b.mul(&y, &half)?;
    one(b.convert(&y, d))
}

/// `gelu_backward(grad_output, self, approximate)`.
fn gelu_backward(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let d = require_float(ctx, 1, "GeluKernelImpl")?;
    let approx = gelu_tanh(ctx, 2)?;
    let shape = ctx.ty(1)?.shape;
    let g = read_wide(ctx, 0, &shape)?;
    let x = read_wide(ctx, 1, &shape)?;
    let b = &mut ctx.b;
    let half = full(b, &x, 0.5);
    let onev = full(b, &x, 1.0);
    let dydx = if approx {
        // 0.5 (1 + t) + 0.5 x (1 - t^2) sqrt(2/pi) (1 + 3k x^2), t = tanh(sqrt(2/pi)(x + k x^3))
        let x2 = b.mul(&x, &x)?;
        let x3 = b.mul(&x2, &x)?;
        let k = full(b, &x, GELU_K);
        let kx3 = b.mul(&x3, &k)?;
        let s = b.add(&x, &kx3)?;
        let c = full(b, &x, SQRT_2_OVER_PI);
        let u = b.mul(&s, &c)?;
        let t = b.tanh(&u);
        let a = b.add(&onev, &t)?;
        let left = b.mul(&a, &half)?;
        let t2 = b.mul(&t, &t)?;
        let sech2 = b.sub(&onev, &t2)?;
        let k3 = full(b, &x, 3.0 * GELU_K);
        let k3x2 = b.mul(&x2, &k3)?;
        let du = b.add(&onev, &k3x2)?;
        let du = b.mul(&du, &c)?;
        let r = b.mul(&x, &half)?;
        let r = b.mul(&r, &sech2)?;
        let r = b.mul(&r, &du)?;
        b.add(&left, &r)?
    } else {
        // cdf(x) + x pdf(x)
        let c = full(b, &x, std::f64::consts::FRAC_1_SQRT_2);
        let u = b.mul(&x, &c)?;
        let e = erf_of(b, &u)?;
        let cdf = b.add(&onev, &e)?;
        let cdf = b.mul(&cdf, &half)?;
        let x2 = b.mul(&x, &x)?;
        let mh = full(b, &x, -0.5);
        let ex = b.mul(&x2, &mh)?;
        let ex = b.exp(&ex);
        let k = full(b, &x, 0.398_942_280_401_432_7);
        let pdf = b.mul(&ex, &k)?;
        let xp = b.mul(&x, &pdf)?;
        b.add(&cdf, &xp)?
    };
    let r = b.mul(&g, &dydx)?;
    one(b.convert(&r, d))
}

/// `silu(self)`: `x * sigmoid(x)`; `x / (1 + e^-x)` for complex `x`, as CPU divides.
fn silu(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let x = ctx.tensor(0)?;
    // CPU has no complex32 kernel: that one is refused below.
    if matches!(x.dtype(), DType::C64 | DType::C128) {
        let b = &mut ctx.b;
        let minus = b.neg(&x);
        let e = exp_of(b, &minus)?;
        let onev = b.full_like(&e, Literal::Float(1.0));
        let den = b.add(&onev, &e)?;
        return one(div_of(b, &x, &den)?);
    }
    let d = require_float(ctx, 0, "silu_cpu")?;
    let b = &mut ctx.b;
    let x = widen(b, &x);
    let s = b.logistic(&x);
    let y = b.mul(&x, &s)?;
    one(b.convert(&y, d))
}

/// `silu_backward(grad_output, self)`: `g * s * (1 + x (1 - s))`.
fn silu_backward(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let d = common_dtype(ctx, &[0, 1])?;
    let shape = super::broadcast_shapes(&ctx.ty(0)?.shape, &ctx.ty(1)?.shape)?;
    let g = read_wide(ctx, 0, &shape)?;
    let x = read_wide(ctx, 1, &shape)?;
    let b = &mut ctx.b;
    let x = b.convert(&x, g.dtype());
    let s = b.logistic(&x);
    let onev = full(b, &x, 1.0);
    let oms = b.sub(&onev, &s)?;
    let t = b.mul(&x, &oms)?;
    let t = b.add(&onev, &t)?;
    let r = b.mul(&g, &s)?;
    let r = b.mul(&r, &t)?;
    one(b.convert(&r, d))
}

/// Reads `(grad, y)` promoted and broadcast in compute precision; returns the result dtype.
pub(crate) fn grad_pair(ctx: &mut Ctx) -> Result<(DType, Value, Value)> {
    let d = common_dtype(ctx, &[0, 1])?;
    let shape = super::broadcast_shapes(&ctx.ty(0)?.shape, &ctx.ty(1)?.shape)?;
    let w = opmath(d);
    let g = ctx.tensor(0)?;
    let y = ctx.tensor(1)?;
    let g = ctx.b.convert(&g, w);
    let y = ctx.b.convert(&y, w);
    let g = ctx.b.broadcast_to(&g, &shape)?;
    let y = ctx.b.broadcast_to(&y, &shape)?;
    Ok((d, g, y))
}

/// `sigmoid_backward(grad_output, output)`: `g * conj(y * (1 - y))`.
fn sigmoid_backward(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let (d, g, y) = grad_pair(ctx)?;
    let b = &mut ctx.b;
    let onev = full(b, &y, 1.0);
    let omy = b.sub(&onev, &y)?;
    let r = b.mul(&y, &omy)?;
    let r = conjugate(b, &r)?;
    let r = b.mul(&g, &r)?;
    one(b.convert(&r, d))
}

/// `tanh_backward(grad_output, output)`: `g * conj(1 - y^2)`.
fn tanh_backward(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let (d, g, y) = grad_pair(ctx)?;
    let b = &mut ctx.b;
    let onev = full(b, &y, 1.0);
    let y2 = b.mul(&y, &y)?;
    let r = b.sub(&onev, &y2)?;
    let r = conjugate(b, &r)?;
    let r = b.mul(&g, &r)?;
    one(b.convert(&r, d))
}

/// `threshold_backward(grad_output, self, threshold)`: zero where `self <= threshold`.
fn threshold_backward(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let (d, g, x) = grad_pair(ctx)?;
    let th = scalar_like(ctx, 2, &x)?;
    let b = &mut ctx.b;
    let le = b.compare(CompareDir::Le, &x, &th)?;
    let z = full(b, &g, 0.0);
    let r = b.select(&le, &z, &g)?;
    one(b.convert(&r, d))
}

/// `threshold(self, threshold, value)`: `value` where `self <= threshold`, else `self`.
fn threshold(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let x = ctx.tensor(0)?;
    let th = scalar_like(ctx, 1, &x)?;
    let v = scalar_like(ctx, 2, &x)?;
    let le = ctx.b.compare(CompareDir::Le, &x, &th)?;
    one(ctx.b.select(&le, &v, &x)?)
}

/// `leaky_relu(self, negative_slope)`.
fn leaky_relu(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let d = require_float(ctx, 0, "leaky_relu_cpu")?;
    let x = ctx.tensor(0)?;
    let x = widen(&mut ctx.b, &x);
    let slope = scalar_like(ctx, 1, &x)?;
    let b = &mut ctx.b;
    let z = full(b, &x, 0.0);
    let pos = b.compare(CompareDir::Gt, &x, &z)?;
    let neg = b.mul(&x, &slope)?;
    let r = b.select(&pos, &x, &neg)?;
    one(b.convert(&r, d))
}

/// `leaky_relu_backward(grad_output, self, negative_slope, self_is_result)`.
fn leaky_relu_backward(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let (d, g, x) = grad_pair(ctx)?;
    let slope = scalar_like(ctx, 2, &x)?;
    let b = &mut ctx.b;
    let z = full(b, &x, 0.0);
    let pos = b.compare(CompareDir::Gt, &x, &z)?;
    let neg = b.mul(&g, &slope)?;
    let r = b.select(&pos, &g, &neg)?;
    one(b.convert(&r, d))
}

/// `hardtanh(self, min_val, max_val)`: a clamp.
fn hardtanh(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let d = ctx.ty(0)?.dtype;
    if d == DType::Bool {
        return Err(Error::NotImplemented(
            "\"hardtanh_cpu\" not implemented for 'Bool'".into(),
        ));
    }
    let x = ctx.tensor(0)?;
    let lo = scalar_like(ctx, 1, &x)?;
    let hi = scalar_like(ctx, 2, &x)?;
    let r = ctx.b.max(&x, &lo)?;
    one(ctx.b.min(&r, &hi)?)
}

/// `hardtanh_backward(grad_output, self, min_val, max_val)`: zero outside `(min, max)`.
fn hardtanh_backward(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let (d, g, x) = grad_pair(ctx)?;
    let lo = scalar_like(ctx, 2, &x)?;
    let hi = scalar_like(ctx, 3, &x)?;
    let b = &mut ctx.b;
    let below = b.compare(CompareDir::Le, &x, &lo)?;
    let above = b.compare(CompareDir::Ge, &x, &hi)?;
    let out = b.or(&below, &above)?;
    let z = full(b, &g, 0.0);
    let r = b.select(&out, &z, &g)?;
    one(b.convert(&r, d))
}

// ---------------------------------------------------------------- dropout

/// `native_dropout(input, p, train) -> (output, mask)`; the mask keeps each element with
/// probability `1 - p` (from the device generator) and kept elements scale by `1 / (1 - p)`.
fn native_dropout(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let ty = ctx.ty(0)?;
    let p = ctx.float(1)?;
    let train = ctx.bool_or(2, true)?;
    let x = ctx.tensor(0)?;
    if !train {
        let mask = ctx
            .b
            .splat(Literal::Bool(true), &ty.with_dtype(DType::Bool));
        return Ok(vec![Some(x), Some(mask)]);
    }
    if !(0.0..=1.0).contains(&p) {
        return runtime(format!(
            "dropout probability has to be between 0 and 1, but got {p}"
        ));
    }
    if !ty.dtype.is_float() {
        return runtime(format!(
            "result type Float can't be cast to the desired output type {}",
            torch_name(ty.dtype)
        ));
    }
    let keep_p = 1.0 - p;
    let scale = if keep_p == 0.0 { 0.0 } else { 1.0 / keep_p };
    let bits = ctx.random_bits(&ty.shape);
    let b = &mut ctx.b;
    // 24 random bits -> uniform in [0, 1).
    let eight = b.full_like(&bits, Literal::Int(8));
    let top = b.shift_right_logical(&bits, &eight)?;
    let u = b.convert(&top, DType::F32);
    let k = full(b, &u, 1.0 / 16_777_216.0);
    let u = b.mul(&u, &k)?;
    let kp = full(b, &u, keep_p);
    let mask = b.compare(CompareDir::Lt, &u, &kp)?;
    let xw = widen(b, &x);
    let s = full(b, &xw, scale);
    let xs = b.mul(&xw, &s)?;
    let z = full(b, &xw, 0.0);
    let y = b.select(&mask, &xs, &z)?;
    Ok(vec![Some(b.convert(&y, ty.dtype)), Some(mask)])
}

/// `native_dropout_backward(grad_output, mask, scale)`: `grad * mask * scale`.
fn native_dropout_backward(ctx: &mut Ctx) -> Result<Vec<Out>> {
    // An integer gradient times the float scale promotes, as on CPU.
    let d = super::float_dtype(ctx.ty(0)?.dtype, ctx.default_float());
    let scale = ctx.float(2)?;
    let g = ctx.tensor(0)?;
    let m = ctx.tensor(1)?;
    let b = &mut ctx.b;
    let g = widen(b, &g);
    let m = b.convert(&m, g.dtype());
    let m = b.broadcast_to(&m, g.shape())?;
    let s = full(b, &g, scale);
    let r = b.mul(&g, &m)?;
    let r = b.mul(&r, &s)?;
    one(b.convert(&r, d))
}

// ---------------------------------------------------------------- embedding

/// `embedding_dense_backward(grad_output, indices, num_weights, padding_idx,
/// scale_grad_by_freq)`: scatter-adds gradient rows into a (num_weights, D) zero matrix.
fn embedding_dense_backward(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let gty = ctx.ty(0)?;
    let num = ctx.int(2)?;
    let padding = ctx.int(3)?;
    let by_freq = ctx.bool_or(4, false)?;
    let dim = *gty.shape.last().unwrap_or(&1);
    let m: i64 = ctx.ty(1)?.numel();
    let g = ctx.tensor(0)?;
    let idx = ctx.tensor(1)?;
    let b = &mut ctx.b;
    let g = widen(b, &g);
    let g = b.reshape(&g, &[m, dim])?;
    let idx = b.convert(&idx, DType::I64);
    let idx = b.reshape(&idx, &[m])?;
    let pad = b.full_like(&idx, Literal::Int(padding));
    let keep = b.compare(CompareDir::Ne, &idx, &pad)?;
    let keep2 = b.broadcast_in_dim(&keep, &[m, dim], &[0])?;
    let z = b.full_like(&g, Literal::Int(0));
    let upd = b.select(&keep2, &g, &z)?;
    let idx2 = b.reshape(&idx, &[m, 1])?;
    let zeros = b.splat(Literal::Int(0), &TensorType::new(g.dtype(), [num, dim]));
    let dims = ScatterDims {
        update_window_dims: vec![1],
        inserted_window_dims: vec![0],
        scatter_dims_to_operand_dims: vec![0],
        index_vector_dim: 1,
    };
    let add: fn(&mut Builder, &Value, &Value) -> Value = |b, p, q| b.add(p, q).expect("same type");
    let mut r = b.scatter(&zeros, &idx2, &upd, &dims, Some(add));
    if by_freq {
        let ones = b.splat(Literal::Int(1), &TensorType::new(g.dtype(), [m]));
        let czero = b.splat(Literal::Int(0), &TensorType::new(g.dtype(), [num]));
        let cdims = ScatterDims {
            update_window_dims: vec![],
            inserted_window_dims: vec![0],
            scatter_dims_to_operand_dims: vec![0],
            index_vector_dim: 1,
        };
        let counts = b.scatter(&czero, &idx2, &ones, &cdims, Some(add));
        let onec = b.full_like(&counts, Literal::Int(1));
        let counts = b.max(&counts, &onec)?;
        let counts = b.broadcast_in_dim(&counts, &[num, dim], &[0])?;
        r = b.div(&r, &counts)?;
    }
    one(b.convert(&r, gty.dtype))
}

/// `embedding_renorm_(self, indices, max_norm, norm_type)` (and the functional and `out=`
/// forms): each row of `self` that `indices` names, once however often it is named, whose
/// norm exceeds `max_norm` is scaled by `max_norm / (norm + 1e-7)`, as CPU's kernel does.
fn embedding_renorm(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let (ty, it) = (ctx.ty(0)?, ctx.ty(1)?);
    let why = "(while checking arguments for embedding_renorm_)";
    if ty.rank() != 2 {
        return runtime(format!(
            "Expected 2-dimensional tensor, but got {}-dimensional tensor for argument #1 'self' {why}",
            ty.rank()
        ));
    }
    if !matches!(it.dtype, DType::I64 | DType::I32) {
        return runtime(format!(
            "Expected tensor for argument #2 'indices' to have one of the following scalar types: Long, Int; but got torch.{}Tensor instead {why}",
            torch_name(it.dtype)
        ));
    }
    if !ty.dtype.is_float() {
        return Err(Error::NotImplemented(format!(
            "norm(): input dtype should be either floating point or complex. Got {} instead.",
            torch_name(ty.dtype)
        )));
    }
    let (max_norm, ord) = (ctx.float(2)?, ctx.float(3)?);
    let rows = ty.shape[0];
    let (w, idx) = (ctx.tensor(0)?, ctx.tensor(1)?);
    let idx = ctx.b.convert(&idx, DType::I64);
    let idx = ctx.b.reshape(&idx, &[it.numel()])?;
    let msg = format!(
        "select(): index {{}} out of range for tensor of size {:?} at dimension 0",
        ty.shape
    );
    ctx.check_range(&idx, -rows, rows, CheckKind::Index, msg)?;
    let b = &mut ctx.b;
    let idx = wrap_negative(b, &idx, rows)?;
    // Which rows are named: a scatter, so a row named twice is still scaled once.
    let ones = b.full_like(&idx, Literal::Int(1));
    let named = scatter_into_planes(b, &ones, &idx, 1, rows, None)?;
    let named = b.reshape(&named, &[rows])?;
    let zero = b.full_like(&named, Literal::Int(0));
    let named = b.compare(CompareDir::Ne, &named, &zero)?;
    let x = widen(b, &w);
    let norm = norm_of(b, &x, ord, &[1], false)?;
    let limit = full(b, &norm, max_norm);
    let over = b.compare(CompareDir::Gt, &norm, &limit)?;
    let over = b.and(&over, &named)?;
    let eps = full(b, &norm, 1e-7);
    let padded = b.add(&norm, &eps)?;
    let scale = b.div(&limit, &padded)?;
    let onef = full(b, &norm, 1.0);
    let scale = b.select(&over, &scale, &onef)?;
    let scale = b.broadcast_in_dim(&scale, &ty.shape, &[0])?;
    let y = b.mul(&x, &scale)?;
    one(b.convert(&y, ty.dtype))
}

// ---------------------------------------------------------------- attention helpers

/// `_safe_softmax(self, dim, dtype)`: softmax whose fully `-inf` rows give zeros (the math
/// attention path's softmax).
fn safe_softmax(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let ty = ctx.ty(0)?;
    let dim = super::wrap_dim(ctx.int(1)?, ty.rank())?;
    let out_d = ctx.opt_dtype(2)?.unwrap_or(ty.dtype);
    let out_d = super::float_dtype(out_d, ctx.default_float());
    let x = ctx.tensor(0)?;
    let b = &mut ctx.b;
    if ty.rank() == 0 {
        let x = b.convert(&x, out_d);
        let r = b.full_like(&x, Literal::Int(1));
        let ninf = b.full_like(&x, Literal::Float(f64::NEG_INFINITY));
        let is_ninf = b.compare(CompareDir::Eq, &x, &ninf)?;
        let z = b.full_like(&x, Literal::Int(0));
        return one(b.select(&is_ninf, &z, &r)?);
    }
    let x = b.convert(&x, out_d);
    let x = widen(b, &x);
    let ninf = b.constant(Literal::Float(f64::NEG_INFINITY), x.dtype());
    let mx = b.reduce(&x, &ninf, &[dim as i64], |b, p, q| {
        b.max(p, q).expect("same type")
    });
    let keep_shape: Vec<i64> = (0..ty.rank())
        .map(|i| if i == dim { 1 } else { ty.shape[i] })
        .collect();
    let mx = b.reshape(&mx, &keep_shape)?;
    let mx = b.broadcast_to(&mx, &ty.shape)?;
    let ninf_b = b.full_like(&mx, Literal::Float(f64::NEG_INFINITY));
    let dead = b.compare(CompareDir::Eq, &mx, &ninf_b)?;
    let z = b.full_like(&mx, Literal::Int(0));
    let safe_mx = b.select(&dead, &z, &mx)?;
    let sh = b.sub(&x, &safe_mx)?;
    let e = b.exp(&sh);
    let s = sum_dims(b, &e, &[dim as i64], true)?;
    let s = b.broadcast_to(&s, &ty.shape)?;
    let r = b.div(&e, &s)?;
    let r = b.select(&dead, &z, &r)?;
    one(b.convert(&r, out_d))
}

/// Registers the family.
pub(crate) fn register(reg: &mut Registry) {
    reg.ops(
        &["native_layer_norm", "native_layer_norm.out"],
        native_layer_norm,
    );
    reg.ops(
        &[
            "native_layer_norm_backward",
            "native_layer_norm_backward.out",
        ],
        native_layer_norm_backward,
    );
    reg.ops(&["gelu", "gelu_", "gelu.out"], gelu);
    reg.ops(
        &["gelu_backward", "gelu_backward.grad_input"],
        gelu_backward,
    );
    reg.ops(&["silu", "silu_", "silu.out"], silu).complex();
    reg.ops(
        &["silu_backward", "silu_backward.grad_input"],
        silu_backward,
    );
    reg.ops(
        &["sigmoid_backward", "sigmoid_backward.grad_input"],
        sigmoid_backward,
    )
    .complex();
    reg.ops(
        &["tanh_backward", "tanh_backward.grad_input"],
        tanh_backward,
    )
    .complex();
    reg.ops(
        &["threshold_backward", "threshold_backward.grad_input"],
        threshold_backward,
    );
    reg.ops(&["threshold", "threshold_", "threshold.out"], threshold);
    reg.ops(&["leaky_relu", "leaky_relu_", "leaky_relu.out"], leaky_relu);
    reg.ops(
        &["leaky_relu_backward", "leaky_relu_backward.grad_input"],
        leaky_relu_backward,
    );
    reg.ops(&["hardtanh", "hardtanh_", "hardtanh.out"], hardtanh);
    reg.ops(
        &["hardtanh_backward", "hardtanh_backward.grad_input"],
        hardtanh_backward,
    );
    reg.ops(&["native_dropout", "native_dropout.out"], native_dropout);
    reg.ops(
        &["native_dropout_backward", "native_dropout_backward.out"],
        native_dropout_backward,
    );
    reg.ops(
        &["embedding_dense_backward", "embedding_dense_backward.out"],
        embedding_dense_backward,
    );
    reg.ops(
        &[
            "embedding_renorm_",
            "embedding_renorm",
            "embedding_renorm.out",
        ],
        embedding_renorm,
    );
    reg.ops(&["_safe_softmax"], safe_softmax);
}
