//! Complex tensors: assembling them (`complex`, `polar`), conjugating, and the discrete
//! Fourier transforms torch's `torch.fft` functions reduce to (`_fft_r2c`, `_fft_c2c`,
//! `_fft_c2r`). Transforms run one dimension at a time with `stablehlo.fft`; XLA's inverse
//! transforms divide by `n`, so the scale torch's `normalization` asks for is applied
//! against that.

use tpurs_hlo::{Builder, CompareDir, DType, FftKind, Literal, Value};

use super::{one, operands, wrap_dim};
use crate::ctx::{Ctx, Out};
use crate::dtype::{opmath, torch_name};
use crate::error::{runtime, Result};
use crate::table::Registry;

/// `kind` along dimension `dim` of length `n` (the real signal's length for `Rfft` and
/// `Irfft`): the dimension goes last, is transformed, and comes back.
fn fft_along(b: &mut Builder, x: &Value, dim: usize, kind: FftKind, n: i64) -> Result<Value> {
    let last = x.rank() - 1;
    let mut perm: Vec<i64> = (0..x.rank() as i64).collect();
    perm.swap(dim, last);
    let moved = b.transpose(x, &perm)?;
    let y = b.fft(&moved, kind, &[n])?;
    Ok(b.transpose(&y, &perm)?)
}

/// torch's `normalization` code (0: none, 1: `1/sqrt(n)`, 2: `1/n`) as a factor, times
/// `n` for inverse transforms to undo XLA's own `1/n`.
fn norm_factor(mode: i64, n: i64, inverse: bool) -> Result<f64> {
    let n = n as f64;
    let wanted = match mode {
        0 => 1.0,
        1 => 1.0 / n.sqrt(),
        2 => 1.0 / n,
        _ => return runtime(format!("Invalid normalization mode: {mode}")),
    };
    Ok(if inverse { wanted * n } else { wanted })
}

fn dims_of(ctx: &Ctx, i: usize, rank: usize) -> Result<Vec<usize>> {
    ctx.int_list(i)?
        .into_iter()
        .map(|d| wrap_dim(d, rank))
        .collect()
}

/// The input as a complex value (real inputs get a zero imaginary part).
fn complex_input(ctx: &mut Ctx, i: usize) -> Result<Value> {
    let x = ctx.tensor(i)?;
    let dtype = x.dtype().to_complex();
    crate::dtype::cast(&mut ctx.b, &x, dtype)
}

/// `_fft_r2c(self, dim, normalization, onesided)`: the last listed dimension keeps
/// `n/2 + 1` frequencies when one-sided.
fn fft_r2c(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let rank = ctx.ty(0)?.rank();
    let dims = dims_of(ctx, 1, rank)?;
    let (mode, onesided) = (ctx.int(2)?, ctx.bool_or(3, true)?);
    let Some((&last, rest)) = dims.split_last() else {
        return one(complex_input(ctx, 0)?);
    };
    let x = ctx.tensor(0)?;
    let shape = x.shape().to_vec();
    let part = if x.dtype() == DType::F64 {
        DType::F64
    } else {
        DType::F32
    };
    let b = &mut ctx.b;
    let x = b.convert(&x, part);
    let mut y = if onesided {
        fft_along(b, &x, last, FftKind::Rfft, shape[last])?
    } else {
        let z = crate::dtype::cast(b, &x, part.to_complex())?;
        fft_along(b, &z, last, FftKind::Fft, shape[last])?
    };
    for &d in rest {
        y = fft_along(b, &y, d, FftKind::Fft, shape[d])?;
    }
    let n = dims.iter().map(|&d| shape[d]).product();
    one(scale(b, &y, norm_factor(mode, n, false)?)?)
}

/// `_fft_c2c(self, dim, normalization, forward)`.
fn fft_c2c(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let rank = ctx.ty(0)?.rank();
    let dims = dims_of(ctx, 1, rank)?;
    let (mode, forward) = (ctx.int(2)?, ctx.bool_or(3, true)?);
    let mut y = complex_input(ctx, 0)?;
    let shape = y.shape().to_vec();
    let kind = if forward { FftKind::Fft } else { FftKind::Ifft };
    for &d in &dims {
        y = fft_along(&mut ctx.b, &y, d, kind, shape[d])?;
    }
    let n = dims.iter().map(|&d| shape[d]).product();
    one(scale(&mut ctx.b, &y, norm_factor(mode, n, !forward)?)?)
}

/// `_fft_c2r(self, dim, normalization, last_dim_size)`: inverse transforms over the listed
/// dimensions, the last one from `n/2 + 1` one-sided frequencies to `last_dim_size` reals.
fn fft_c2r(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let rank = ctx.ty(0)?.rank();
    let dims = dims_of(ctx, 1, rank)?;
    let (mode, last_size) = (ctx.int(2)?, ctx.int(3)?);
    let mut y = complex_input(ctx, 0)?;
    let Some((&last, rest)) = dims.split_last() else {
        return runtime("_fft_c2r: expected at least one dimension");
    };
    let shape = y.shape().to_vec();
    let b = &mut ctx.b;
    for &d in rest {
        y = fft_along(b, &y, d, FftKind::Ifft, shape[d])?;
    }
    let y = fft_along(b, &y, last, FftKind::Irfft, last_size)?;
    let n = rest.iter().map(|&d| shape[d]).product::<i64>() * last_size;
    one(scale(b, &y, norm_factor(mode, n, true)?)?)
}

/// `complex(real, imag)`.
fn complex(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let a = check_parts(ctx)?;
    let v = operands(ctx, &[0, 1], a)?;
    let (re, im) = broadcast_pair(&mut ctx.b, &v[0], &v[1])?;
    let re = ctx.b.convert(&re, a.to_complex().real_part());
    let im = ctx.b.convert(&im, a.to_complex().real_part());
    one(ctx.b.complex(&re, &im)?)
}

/// CPU PyTorch's checks on the two parts of `complex` and `polar`: Half, Float or Double,
/// both of one type (Half parts make a ComplexHalf).
fn check_parts(ctx: &Ctx) -> Result<DType> {
    let (a, b) = (ctx.ty(0)?.dtype, ctx.ty(1)?.dtype);
    let part = |d: DType| matches!(d, DType::F16 | DType::F32 | DType::F64);
    if !part(a) || !part(b) {
        return runtime(format!(
            "Expected both inputs to be Half, Float or Double tensors but got {} and {}",
            torch_name(a),
            torch_name(b)
        ));
    }
    if a != b {
        return runtime(format!(
            "Expected object of scalar type {} but got scalar type {} for second argument",
            torch_name(a),
            torch_name(b)
        ));
    }
    Ok(a)
}

/// `polar(abs, angle)`: `abs * (cos(angle) + i sin(angle))`, computed in opmath and
/// rounded once, as CPU does for Half parts.
fn polar(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let d = check_parts(ctx)?;
    let v = operands(ctx, &[0, 1], opmath(d))?;
    let b = &mut ctx.b;
    let (r, t) = broadcast_pair(b, &v[0], &v[1])?;
    let (c, s) = (b.cos(&t), b.sin(&t));
    let re = b.mul(&r, &c)?;
    let im = b.mul(&r, &s)?;
    let part = d.to_complex().real_part();
    let (re, im) = (b.convert(&re, part), b.convert(&im, part));
    one(b.complex(&re, &im)?)
}

/// `|x|` of a complex tensor as CPU's `hypot(re, im)`: infinite when a part is infinite,
/// else NaN when a part is NaN (XLA's own abs gives 0 for `nan * 1j`).
pub(super) fn magnitude(b: &mut Builder, x: &Value) -> Result<Value> {
    let r = b.magnitude(x);
    // A complex value with a NaN part differs from itself (what `isnan` reads too).
    let nan = b.compare(CompareDir::Ne, x, x)?;
    let infinite = part_infinite(b, x)?;
    let nan_v = b.full_like(&r, Literal::Float(f64::NAN));
    let inf = b.full_like(&r, Literal::Float(f64::INFINITY));
    let r = b.select(&nan, &nan_v, &r)?;
    Ok(b.select(&infinite, &inf, &r)?)
}

/// Whether either part of each complex element is infinite (CPU's `isinf` for complex).
pub(super) fn part_infinite(b: &mut Builder, x: &Value) -> Result<Value> {
    let (re, im) = (b.real(x), b.imag(x));
    let (re, im) = (b.abs(&re), b.abs(&im));
    let inf = b.full_like(&re, Literal::Float(f64::INFINITY));
    let re_inf = b.compare(CompareDir::Eq, &re, &inf)?;
    let im_inf = b.compare(CompareDir::Eq, &im, &inf)?;
    Ok(b.or(&re_inf, &im_inf)?)
}

fn broadcast_pair(b: &mut Builder, x: &Value, y: &Value) -> Result<(Value, Value)> {
    let shape = super::broadcast_shapes(x.shape(), y.shape())?;
    Ok((b.broadcast_to(x, &shape)?, b.broadcast_to(y, &shape)?))
}

/// `x * c` for a real constant `c`: a complex `x` scales each part, so an infinite part
/// times `c` does not meet a zero imaginary part (complex `(inf, 0) * (c, 0)` is NaN).
pub(crate) fn scale(b: &mut Builder, x: &Value, c: f64) -> Result<Value> {
    if c == 1.0 {
        return Ok(x.clone());
    }
    if !x.dtype().is_complex() {
        let k = b.full_like(x, Literal::Float(c));
        return Ok(b.mul(x, &k)?);
    }
    let (re, im) = (b.real(x), b.imag(x));
    let k = b.full_like(&re, Literal::Float(c));
    let (re, im) = (b.mul(&re, &k)?, b.mul(&im, &k)?);
    Ok(b.complex(&re, &im)?)
}

/// `x / y`; for complex values CPU PyTorch's division (NumPy's): scaled by the larger part of
/// `y`, `(a / 0, b / 0)` for a zero `y`. XLA's own complex division gives other infinities
/// and zeros where a part is infinite, NaN or zero (`0 / (inf + inf j)` is 0 there, NaN on CPU).
pub(crate) fn div_of(b: &mut Builder, x: &Value, y: &Value) -> Result<Value> {
    if !x.dtype().is_complex() {
        return Ok(b.div(x, y)?);
    }
    let (re, im) = (b.real(x), b.imag(x));
    let (c, d) = (b.real(y), b.imag(y));
    let (abs_c, abs_d) = (b.abs(&c), b.abs(&d));
    let one = b.full_like(&c, Literal::Float(1.0));
    // |c| >= |d|: rat = d / c, scl = 1 / (c + d rat), ((a + b rat) scl, (b - a rat) scl).
    let rat = b.div(&d, &c)?;
    let t = b.mul(&d, &rat)?;
    let t = b.add(&c, &t)?;
    let scl = b.div(&one, &t)?;
    let br = b.mul(&im, &rat)?;
    let ar = b.mul(&re, &rat)?;
    let wide_re = b.add(&re, &br)?;
    let wide_re = b.mul(&wide_re, &scl)?;
    let wide_im = b.sub(&im, &ar)?;
    let wide_im = b.mul(&wide_im, &scl)?;
    // Otherwise rat = c / d, scl = 1 / (d + c rat), ((a rat + b) scl, (b rat - a) scl).
    let rat = b.div(&c, &d)?;
    let t = b.mul(&c, &rat)?;
    let t = b.add(&d, &t)?;
    let scl = b.div(&one, &t)?;
    let ar = b.mul(&re, &rat)?;
    let br = b.mul(&im, &rat)?;
    let tall_re = b.add(&ar, &im)?;
    let tall_re = b.mul(&tall_re, &scl)?;
    let tall_im = b.sub(&br, &re)?;
    let tall_im = b.mul(&tall_im, &scl)?;
    // A zero divisor: (a / |c|, b / |d|).
    let zero_re = b.div(&re, &abs_c)?;
    let zero_im = b.div(&im, &abs_d)?;
    let zero = b.full_like(&c, Literal::Float(0.0));
    let c0 = b.compare(CompareDir::Eq, &abs_c, &zero)?;
    let d0 = b.compare(CompareDir::Eq, &abs_d, &zero)?;
    let by_zero = b.and(&c0, &d0)?;
    let wide = b.compare(CompareDir::Ge, &abs_c, &abs_d)?;
    let re = b.select(&by_zero, &zero_re, &wide_re)?;
    let im = b.select(&by_zero, &zero_im, &wide_im)?;
    let re = b.select(&wide, &re, &tall_re)?;
    let im = b.select(&wide, &im, &tall_im)?;
    Ok(b.complex(&re, &im)?)
}

/// `exp(x)`; for complex `x` with a real part of -inf and an infinite or NaN imaginary
/// part, 0 as CPU PyTorch gives, and `(inf, NaN)` for a real part of +inf (XLA gives NaN).
pub(crate) fn exp_of(b: &mut Builder, x: &Value) -> Result<Value> {
    let e = b.exp(x);
    if !x.dtype().is_complex() {
        return Ok(e);
    }
    let (re, im) = (b.real(x), b.imag(x));
    let ninf = b.full_like(&re, Literal::Float(f64::NEG_INFINITY));
    let re_ninf = b.compare(CompareDir::Eq, &re, &ninf)?;
    let im_finite = b.is_finite(&im);
    let im_bad = b.not(&im_finite);
    let zero_case = b.and(&re_ninf, &im_bad)?;
    let zero = b.full_like(&e, Literal::Float(0.0));
    let e = b.select(&zero_case, &zero, &e)?;
    // A real part of +inf with such an imaginary part: (inf, NaN) (XLA gives NaN for both).
    let inf = b.full_like(&re, Literal::Float(f64::INFINITY));
    let re_inf = b.compare(CompareDir::Eq, &re, &inf)?;
    let inf_case = b.and(&re_inf, &im_bad)?;
    let inf_nan = b.full_like(&e, Literal::Complex(f64::INFINITY, f64::NAN));
    Ok(b.select(&inf_case, &inf_nan, &e)?)
}

/// The conjugate of `x` (a real tensor is its own conjugate).
pub(super) fn conjugate(b: &mut Builder, x: &Value) -> Result<Value> {
    if !x.dtype().is_complex() {
        return Ok(x.clone());
    }
    let (re, im) = (b.real(x), b.imag(x));
    let im = b.neg(&im);
    Ok(b.complex(&re, &im)?)
}

/// `conj_physical`: the conjugate, computed.
fn conj_physical(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let x = ctx.tensor(0)?;
    one(conjugate(&mut ctx.b, &x)?)
}

pub(crate) fn register(reg: &mut Registry) {
    reg.ops(&["_fft_r2c", "_fft_r2c.out"], fft_r2c).complex();
    reg.ops(&["_fft_c2c", "_fft_c2c.out"], fft_c2c).complex();
    reg.ops(&["_fft_c2r", "_fft_c2r.out"], fft_c2r).complex();
    reg.ops(&["complex", "complex.out"], complex).complex();
    reg.ops(&["polar", "polar.out"], polar).complex();
    reg.ops(
        &[
            "_conj_physical",
            "conj_physical",
            "conj_physical.out",
            "conj_physical_",
        ],
        conj_physical,
    )
    .complex()
    .same_dtype_out();
}
