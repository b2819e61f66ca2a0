//! Elementwise math: unary and binary arithmetic, comparisons, logical and bitwise ops,
//! `where`, `clamp`, `fill_` and `copy_`. Promotion and broadcasting come from `rules::*`.

use tpurs_hlo::{Builder, CompareDir, DType, Literal, Value};

use super::combine::extremum;
use super::complex::{div_of, exp_of, scale};
use super::complex_inverse::{inverse_of, Inverse};
use super::complex_math::{
    expm1_of, log1p_of, log_of, pow_of, real_sinh_cosh, sgn_of, sigmoid_of, sqrt_of, trig_of, Trig,
};
use super::division::{float_binary, number_opmath, trunc_of};
use super::erfc::erf_of;
use super::float_bits::with_sign_of;
use super::{common_dtype, float_dtype, full, one, operands};
use crate::ctx::{Arg, Ctx, Out};
use crate::dtype::{cast, cpp_name, opmath, torch_name};
use crate::error::{runtime, Error, Result};
use crate::table::Registry;

/// Expands `"exp"` into its functional, in-place and `out=` names.
macro_rules! variants {
    ($name:literal) => {
        &[$name, concat!($name, "_"), concat!($name, ".out")]
    };
}

/// Expands `"add"` into the Tensor and Scalar overloads with in-place and `out=` forms.
macro_rules! binary_variants {
    ($name:literal) => {
        &[
            concat!($name, ".Tensor"),
            concat!($name, "_.Tensor"),
            concat!($name, ".out"),
            concat!($name, ".Scalar"),
            concat!($name, "_.Scalar"),
            concat!($name, ".Scalar_out"),
        ]
    };
}

/// Expands ops whose Tensor `out=` overload is `Tensor_out` (comparisons, `remainder`,
/// `fmod`, bitwise ops) into their Tensor / Scalar overloads.
macro_rules! tensor_out_variants {
    ($name:literal) => {
        &[
            concat!($name, ".Tensor"),
            concat!($name, "_.Tensor"),
            concat!($name, ".Tensor_out"),
            concat!($name, ".Scalar"),
            concat!($name, "_.Scalar"),
            concat!($name, ".Scalar_out"),
        ]
    };
}

/// A unary op's values.
pub(super) type UnaryFn = fn(&mut Builder, &Value) -> Result<Value>;

/// `f` of `x` in the float type `x` computes in (ints promote to `default_float`), in that
/// type's opmath (half types in f32, rounded once at the end, as CPU kernels do). The
/// single-tensor rules and their `_foreach_` forms both compute this way.
pub(super) fn in_float_opmath(
    b: &mut Builder,
    x: &Value,
    default_float: DType,
    f: UnaryFn,
) -> Result<Value> {
    let dtype = float_dtype(x.dtype(), default_float);
    let xw = b.convert(x, opmath(dtype));
    let y = f(b, &xw)?;
    Ok(b.convert(&y, dtype))
}

/// Defines a rule for a unary op computed by [`in_float_opmath`].
macro_rules! float_unary {
    ($($fn:ident => $body:expr),* $(,)?) => {
        $(fn $fn(ctx: &mut Ctx) -> Result<Vec<Out>> {
            let x = ctx.tensor(0)?;
            let d = ctx.default_float();
            one(in_float_opmath(&mut ctx.b, &x, d, $body)?)
        })*
    };
}

/// Defines a rule for a unary op that keeps the input dtype.
macro_rules! same_unary {
    ($($fn:ident => $body:expr),* $(,)?) => {
        $(fn $fn(ctx: &mut Ctx) -> Result<Vec<Out>> {
            let x = ctx.tensor(0)?;
            let f: fn(&mut Builder, &Value) -> Result<Value> = $body;
            one(f(&mut ctx.b, &x)?)
        })*
    };
}

/// The values of the float unary ops `_foreach_*` has too (see [`in_float_opmath`]).
pub(super) mod value {
    use super::*;

    pub(in crate::rules) fn expm1(b: &mut Builder, x: &Value) -> Result<Value> {
        if x.dtype().is_complex() {
            expm1_of(b, x)
        } else {
            Ok(b.expm1(x))
        }
    }

    pub(in crate::rules) fn log1p(b: &mut Builder, x: &Value) -> Result<Value> {
        if x.dtype().is_complex() {
            log1p_of(b, x)
        } else {
            Ok(b.log1p(x))
        }
    }

    pub(in crate::rules) fn rsqrt(b: &mut Builder, x: &Value) -> Result<Value> {
        if !x.dtype().is_complex() {
            return Ok(b.rsqrt(x));
        }
        let r = sqrt_of(b, x)?;
        let one = full(b, x, 1.0);
        div_of(b, &one, &r)
    }

    pub(in crate::rules) fn sin(b: &mut Builder, x: &Value) -> Result<Value> {
        if x.dtype().is_complex() {
            trig_of(b, x, Trig::Sin)
        } else {
            Ok(b.sin(x))
        }
    }

    pub(in crate::rules) fn cos(b: &mut Builder, x: &Value) -> Result<Value> {
        if x.dtype().is_complex() {
            trig_of(b, x, Trig::Cos)
        } else {
            Ok(b.cos(x))
        }
    }

    pub(in crate::rules) fn tan(b: &mut Builder, x: &Value) -> Result<Value> {
        Ok(b.tan(x))
    }

    pub(in crate::rules) fn tanh(b: &mut Builder, x: &Value) -> Result<Value> {
        Ok(b.tanh(x))
    }

    pub(in crate::rules) fn sigmoid(b: &mut Builder, x: &Value) -> Result<Value> {
        if x.dtype().is_complex() {
            sigmoid_of(b, x)
        } else {
            Ok(b.logistic(x))
        }
    }

    /// A complex tensor's magnitude is real (CPU's `hypot` of the parts).
    pub(in crate::rules) fn abs(b: &mut Builder, x: &Value) -> Result<Value> {
        Ok(match x.dtype() {
            DType::Bool => x.clone(),
            d if d.is_complex() => super::super::complex::magnitude(b, x)?,
            _ => b.abs(x),
        })
    }

    pub(in crate::rules) fn reciprocal(b: &mut Builder, x: &Value) -> Result<Value> {
        let one = full(b, x, 1.0);
        div_of(b, &one, x)
    }
}

float_unary! {
    exp => exp_of,
    exp2 => |b, x| { let y = scale(b, x, std::f64::consts::LN_2)?; exp_of(b, &y) },
    expm1 => value::expm1,
    log => log_of,
    log2 => |b, x| { let l = log_of(b, x)?; scale(b, &l, std::f64::consts::LOG2_E) },
    log10 => |b, x| { let l = log_of(b, x)?; scale(b, &l, std::f64::consts::LOG10_E) },
    log1p => value::log1p,
    sqrt => sqrt_of,
    rsqrt => value::rsqrt,
    sin => value::sin,
    cos => value::cos,
    tan => value::tan,
    tanh => value::tanh,
    sigmoid => value::sigmoid,
    reciprocal => value::reciprocal,
    erf => erf_of,
    sinh => |b, x| if x.dtype().is_complex() { trig_of(b, x, Trig::Sinh) } else { Ok(real_sinh_cosh(b, x)?.0) },
    cosh => |b, x| if x.dtype().is_complex() { trig_of(b, x, Trig::Cosh) } else { Ok(real_sinh_cosh(b, x)?.1) },
    atan => |b, x| if x.dtype().is_complex() { inverse_of(b, x, Inverse::Atan) } else { let one = full(b, x, 1.0); Ok(b.atan2(x, &one)?) },
    asin => |b, x| if x.dtype().is_complex() { inverse_of(b, x, Inverse::Asin) } else { let c = sqrt_one_minus_sq(b, x)?; Ok(b.atan2(x, &c)?) },
    acos => |b, x| if x.dtype().is_complex() { inverse_of(b, x, Inverse::Acos) } else { let c = sqrt_one_minus_sq(b, x)?; Ok(b.atan2(&c, x)?) },
    asinh => |b, x| if x.dtype().is_complex() { inverse_of(b, x, Inverse::Asinh) } else { asinh_of(b, x) },
    acosh => |b, x| if x.dtype().is_complex() { inverse_of(b, x, Inverse::Acosh) } else { acosh_of(b, x) },
    atanh => |b, x| {
        if x.dtype().is_complex() {
            return inverse_of(b, x, Inverse::Atanh);
        }
        // 0.5 * log1p(2|x| / (1 - |x|)) with x's sign (1 - |x| is exact near 1, 1 + x is
        // not near -1): inf at 1, NaN beyond.
        let a = b.abs(x);
        let one = full(b, x, 1.0);
        let d = b.sub(&one, &a)?;
        let t = b.add(&a, &a)?;
        let q = b.div(&t, &d)?;
        let l = b.log1p(&q);
        let h = full(b, x, 0.5);
        let r = b.mul(&h, &l)?;
        with_sign_of(b, &r, x)
    },
}

/// `sqrt(1 - x^2)`.
fn sqrt_one_minus_sq(b: &mut Builder, x: &Value) -> Result<Value> {
    let one = full(b, x, 1.0);
    let x2 = b.mul(x, x)?;
    let d = b.sub(&one, &x2)?;
    Ok(b.sqrt(&d))
}

/// Above this magnitude `asinh` / `acosh` are `log(2|x|)` (the squares would overflow).
const HUGE: f64 = 1e9;

/// `sign(x) * log1p(|x| + x^2 / (1 + sqrt(1 + x^2)))`, accurate near 0 and for large `|x|`.
pub(crate) fn asinh_of(b: &mut Builder, x: &Value) -> Result<Value> {
    let a = b.abs(x);
    let one = full(b, x, 1.0);
    let a2 = b.mul(&a, &a)?;
    let r = b.add(&a2, &one)?;
    let r = b.sqrt(&r);
    let d = b.add(&one, &r)?;
    let t = b.div(&a2, &d)?;
    let t = b.add(&a, &t)?;
    let small = b.log1p(&t);
    let l = unless_huge(b, &a, small)?;
    let s = b.sign(x);
    Ok(b.mul(&s, &l)?)
}

/// `log1p((x - 1) + sqrt((x - 1)(x + 1)))`: NaN below 1.
fn acosh_of(b: &mut Builder, x: &Value) -> Result<Value> {
    let one = full(b, x, 1.0);
    let xm = b.sub(x, &one)?;
    let xp = b.add(x, &one)?;
    let p = b.mul(&xm, &xp)?;
    let r = b.sqrt(&p);
    let t = b.add(&xm, &r)?;
    let small = b.log1p(&t);
    unless_huge(b, x, small)
}

/// `value`, or `log(2 a)` (as `log(a) + log(2)`) where `a` exceeds [`HUGE`].
fn unless_huge(b: &mut Builder, a: &Value, value: Value) -> Result<Value> {
    let l = b.log(a);
    let ln2 = full(b, a, std::f64::consts::LN_2);
    let big = b.add(&l, &ln2)?;
    let huge = full(b, a, HUGE);
    let is_big = b.compare(CompareDir::Gt, a, &huge)?;
    Ok(b.select(&is_big, &big, &value)?)
}

/// `copysign(self, other)`: `|self|` with the sign bit of `other` (so -0.0 counts as
/// negative).
fn copysign(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let dtype = float_dtype(common_dtype(ctx, &[0, 1])?, ctx.default_float());
    let v = operands(ctx, &[0, 1], dtype)?;
    one(with_sign_of(&mut ctx.b, &v[0], &v[1])?)
}

/// `hypot(self, other)`: `sqrt(x^2 + y^2)`, with the larger magnitude factored out where
/// the squares would overflow or underflow; inf if either is infinite, even beside a NaN.
fn hypot(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let dtype = float_dtype(common_dtype(ctx, &[0, 1])?, ctx.default_float());
    let v = operands(ctx, &[0, 1], dtype)?;
    let b = &mut ctx.b;
    let wide = opmath(dtype);
    let (x, y) = (b.convert(&v[0], wide), b.convert(&v[1], wide));
    let (ax, ay) = (b.abs(&x), b.abs(&y));
    let big = b.max(&ax, &ay)?;
    let small = b.min(&ax, &ay)?;
    let ratio = b.div(&small, &big)?;
    let sq = b.mul(&ratio, &ratio)?;
    let unit = full(b, &sq, 1.0);
    let sum = b.add(&unit, &sq)?;
    let root = b.sqrt(&sum);
    let scaled = b.mul(&big, &root)?;
    // Where the squares cannot overflow or lose bits, the direct form rounds as CPU does.
    let (xx, yy) = (b.mul(&x, &x)?, b.mul(&y, &y)?);
    let squares = b.add(&xx, &yy)?;
    let direct = b.sqrt(&squares);
    let (lo, hi) = (full(b, &big, 2f64.powi(-60)), full(b, &big, 2f64.powi(60)));
    let above = b.compare(CompareDir::Gt, &big, &lo)?;
    let below = b.compare(CompareDir::Lt, &big, &hi)?;
    let safe = b.and(&above, &below)?;
    let scaled = b.select(&safe, &direct, &scaled)?;
    let zero = full(b, &big, 0.0);
    let is_zero = b.compare(CompareDir::Eq, &big, &zero)?;
    let r = b.select(&is_zero, &zero, &scaled)?;
    let inf = full(b, &big, f64::INFINITY);
    let x_inf = b.compare(CompareDir::Eq, &ax, &inf)?;
    let y_inf = b.compare(CompareDir::Eq, &ay, &inf)?;
    let any_inf = b.or(&x_inf, &y_inf)?;
    let r = b.select(&any_inf, &inf, &r)?;
    one(b.convert(&r, dtype))
}

/// `angle(self)` of a real tensor: pi for negative values, 0 otherwise, NaN kept.
fn angle(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let dtype = float_dtype(ctx.ty(0)?.dtype, ctx.default_float());
    let x = ctx.tensor(0)?;
    let b = &mut ctx.b;
    if dtype.is_complex() {
        // `arg(z)`: atan2 of the parts, computed in the part's opmath.
        let (re, im) = (b.real(&x), b.imag(&x));
        let w = crate::dtype::opmath(re.dtype());
        let (re, im) = (b.convert(&re, w), b.convert(&im, w));
        let a = b.atan2(&im, &re)?;
        return one(b.convert(&a, dtype.real_part()));
    }
    let x = b.convert(&x, dtype);
    let zero = full(b, &x, 0.0);
    let pi = full(b, &x, std::f64::consts::PI);
    let negative = b.compare(CompareDir::Lt, &x, &zero)?;
    let r = b.select(&negative, &pi, &zero)?;
    let nan = b.compare(CompareDir::Ne, &x, &x)?;
    one(b.select(&nan, &x, &r)?)
}

/// `fmax` / `fmin`: the larger / smaller operand, ignoring a NaN unless both are NaN.
fn fmax_fmin(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let is_max = ctx.name.starts_with("fmax");
    let dtype = common_dtype(ctx, &[0, 1])?;
    let v = operands(ctx, &[0, 1], dtype)?;
    let b = &mut ctx.b;
    let m = if is_max {
        b.max(&v[0], &v[1])?
    } else {
        b.min(&v[0], &v[1])?
    };
    if !dtype.is_float() {
        return one(m);
    }
    let x_nan = b.compare(CompareDir::Ne, &v[0], &v[0])?;
    let y_nan = b.compare(CompareDir::Ne, &v[1], &v[1])?;
    let r = b.select(&x_nan, &v[1], &m)?;
    one(b.select(&y_nan, &v[0], &r)?)
}

same_unary! {
    abs_value => value::abs,
    neg => |b, x| Ok(b.neg(x)),
    sign => |b, x| Ok(if x.dtype() == DType::Bool { x.clone() } else { b.sign(x) }),
    sgn => |b, x| match x.dtype() {
        d if d.is_complex() => sgn_of(b, x),
        DType::Bool => Ok(x.clone()),
        _ => Ok(b.sign(x)),
    },
    floor => |b, x| Ok(if x.dtype().is_float() { b.floor(x) } else { x.clone() }),
    ceil => |b, x| Ok(if x.dtype().is_float() { b.ceil(x) } else { x.clone() }),
    round => |b, x| Ok(if x.dtype().is_float() { b.round_even(x) } else { x.clone() }),
    trunc => |b, x| Ok(if x.dtype().is_float() { trunc_of(b, x)? } else { x.clone() }),
    frac => frac_of,
    bitwise_not => |b, x| Ok(b.not(x)),
    relu => |b, x| { let z = full(b, x, 0.0); Ok(b.max(x, &z)?) },
}

/// `x - trunc(x)`; CPU has no `frac` kernel for integers.
pub(super) fn frac_of(b: &mut Builder, x: &Value) -> Result<Value> {
    if !x.dtype().is_float() {
        return Err(crate::Error::NotImplemented(format!(
            "\"frac_cpu\" not implemented for '{}'",
            torch_name(x.dtype())
        )));
    }
    let t = trunc_of(b, x)?;
    Ok(b.sub(x, &t)?)
}

/// `abs`; a complex tensor's magnitude is real, so CPU refuses it in place.
fn abs(ctx: &mut Ctx) -> Result<Vec<Out>> {
    if ctx.name == "abs_" && ctx.ty(0)?.dtype.is_complex() {
        return runtime("In-place abs is not supported for complex tensors.");
    }
    abs_value(ctx)
}

/// `round(self, *, decimals)`: `nearbyint(x * 10^d) / 10^d` (`x / 10^-d` first for negative
/// `d`), with the power in the tensor's type as PyTorch computes it.
fn round_decimals(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let d = ctx.int(1)?;
    let x = ctx.tensor(0)?;
    if !x.dtype().is_float() {
        return Err(crate::Error::NotImplemented(format!(
            "\"round_cpu\" not implemented for '{}'",
            crate::dtype::torch_name(x.dtype())
        )));
    }
    let b = &mut ctx.b;
    let p = full(b, &x, 10f64.powi(d.unsigned_abs() as i32));
    let r = if d >= 0 {
        let y = b.mul(&x, &p)?;
        let y = b.round_even(&y);
        b.div(&y, &p)?
    } else {
        let y = b.div(&x, &p)?;
        let y = b.round_even(&y);
        b.mul(&y, &p)?
    };
    one(r)
}

fn logical_not(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let x = ctx.tensor(0)?;
    let z = ctx.b.full_like(&x, Literal::Int(0));
    one(ctx.b.compare(CompareDir::Eq, &x, &z)?)
}

/// `self op other` after promotion; `alpha` (argument 2, when present) scales `other`.
fn arith(
    ctx: &mut Ctx,
    f: fn(&mut Builder, &Value, &Value) -> tpurs_hlo::Result<Value>,
) -> Result<Vec<Out>> {
    let dtype = common_dtype(ctx, &[0, 1])?;
    let v = operands(ctx, &[0, 1], dtype)?;
    let Arg::Scalar(_) = ctx.arg(2) else {
        return one(f(&mut ctx.b, &v[0], &v[1])?);
    };
    // `self + alpha * other`; a half `self` takes it in float32 with `alpha` rounded to its
    // dtype, rounding once, as the CPU does.
    let wide = opmath(dtype);
    let alpha = ctx.tensor(2)?;
    let b = &mut ctx.b;
    let alpha = b.convert(&alpha, dtype);
    let alpha = b.convert(&alpha, wide);
    let (x, y) = (b.convert(&v[0], wide), b.convert(&v[1], wide));
    let alpha = b.broadcast_to(&alpha, y.shape())?;
    let scaled = b.mul(&y, &alpha)?;
    let r = f(b, &x, &scaled)?;
    one(b.convert(&r, dtype))
}

fn add(ctx: &mut Ctx) -> Result<Vec<Out>> {
    arith(ctx, |b, x, y| {
        if x.dtype() == DType::Bool {
            b.or(x, y)
        } else {
            b.add(x, y)
        }
    })
}

fn sub(ctx: &mut Ctx) -> Result<Vec<Out>> {
    if ctx.ty(0)?.dtype == DType::Bool && ctx.ty(1)?.dtype == DType::Bool {
        return Err(crate::Error::Runtime(
            "Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` or `logical_xor()` operator instead.".into(),
        ));
    }
    arith(ctx, Builder::sub)
}

fn mul(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let dtype = common_dtype(ctx, &[0, 1])?;
    let wide = number_opmath(ctx, dtype);
    if wide != dtype {
        let v = operands(ctx, &[0, 1], wide)?;
        let r = ctx.b.mul(&v[0], &v[1])?;
        return one(ctx.b.convert(&r, dtype));
    }
    arith(ctx, |b, x, y| {
        if x.dtype() == DType::Bool {
            b.and(x, y)
        } else {
            b.mul(x, y)
        }
    })
}

/// Binary op on the promoted type without alpha.
fn binary(ctx: &mut Ctx, f: fn(&mut Builder, &Value, &Value) -> Result<Value>) -> Result<Vec<Out>> {
    let dtype = common_dtype(ctx, &[0, 1])?;
    let v = operands(ctx, &[0, 1], dtype)?;
    one(f(&mut ctx.b, &v[0], &v[1])?)
}

/// `x ** y`; `number_exponent` when `y` came from a Python number.
pub(super) fn power(b: &mut Builder, x: &Value, y: &Value, number_exponent: bool) -> Result<Value> {
    if x.dtype().is_complex() {
        return pow_of(b, x, y, number_exponent);
    }
    Ok(b.pow(x, y)?)
}

fn compare(ctx: &mut Ctx, dir: CompareDir) -> Result<Vec<Out>> {
    let dtype = common_dtype(ctx, &[0, 1])?;
    let v = operands(ctx, &[0, 1], dtype)?;
    one(ctx.b.compare(dir, &v[0], &v[1])?)
}

macro_rules! compare_rules {
    ($($fn:ident => $dir:ident),*) => {
        $(fn $fn(ctx: &mut Ctx) -> Result<Vec<Out>> { compare(ctx, CompareDir::$dir) })*
    };
}
compare_rules!(eq => Eq, ne => Ne, lt => Lt, le => Le, gt => Gt, ge => Ge);

fn logical(
    ctx: &mut Ctx,
    f: fn(&mut Builder, &Value, &Value) -> tpurs_hlo::Result<Value>,
) -> Result<Vec<Out>> {
    let mut v = Vec::new();
    for i in 0..2 {
        let x = ctx.tensor(i)?;
        let z = ctx.b.full_like(&x, Literal::Int(0));
        v.push(ctx.b.compare(CompareDir::Ne, &x, &z)?);
    }
    let v = super::broadcast_all(&mut ctx.b, &v, DType::Bool)?;
    one(f(&mut ctx.b, &v[0], &v[1])?)
}

fn where_self(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let dtype = common_dtype(ctx, &[1, 2])?;
    let cond = ctx.tensor(0)?;
    let cond = if cond.dtype() == DType::Bool {
        cond
    } else {
        let z = ctx.b.full_like(&cond, Literal::Int(0));
        ctx.b.compare(CompareDir::Ne, &cond, &z)?
    };
    let a = ctx.tensor(1)?;
    let b2 = ctx.tensor(2)?;
    let v = super::broadcast_all(&mut ctx.b, &[a, b2], dtype)?;
    let shape = super::broadcast_shapes(v[0].shape(), cond.shape())?;
    let cond = ctx.b.broadcast_to(&cond, &shape)?;
    let x = ctx.b.broadcast_to(&v[0], &shape)?;
    let y = ctx.b.broadcast_to(&v[1], &shape)?;
    one(ctx.b.select(&cond, &x, &y)?)
}

/// CPU's checks of `clamp`, `clamp_min` and `clamp_max` with number bounds (and of the
/// foreach ops built on them), in its order and words: complex tensors and one-sided complex
/// bounds are refused, a float tensor reads a two-sided bound as a double, and an in-place
/// clamp must not promote (naming the tensor's dtype by its C++ type).
pub(super) fn check_number_clamp(
    x: DType,
    bounds: &[DType],
    result: DType,
    in_place: bool,
    two_sided: bool,
) -> Result<()> {
    let complex = || {
        Err(Error::NotImplemented(
            "clamp is not supported for complex types".into(),
        ))
    };
    let complex_bound = bounds.iter().any(|d| d.is_complex());
    if x.is_complex() || (complex_bound && !two_sided) {
        return complex();
    }
    if x.is_float() {
        if complex_bound {
            return runtime("value cannot be converted to type double without overflow");
        }
        return Ok(());
    }
    if in_place && result != x {
        return runtime(format!(
            "result type {} can't be cast to the desired output type {}",
            torch_name(result),
            cpp_name(x)
        ));
    }
    if result.is_complex() {
        return complex();
    }
    Ok(())
}

fn clamp(ctx: &mut Ctx) -> Result<Vec<Out>> {
    // clamp(self, min, max), clamp_min(self, min), clamp_max(self, max).
    let base = ctx
        .name
        .split('.')
        .next()
        .unwrap_or("")
        .trim_end_matches('_');
    let (lo_i, hi_i) = match base {
        "clamp_min" => (Some(1), None),
        "clamp_max" => (None, Some(1)),
        _ => (
            Some(1).filter(|&i| ctx.has(i)),
            Some(2).filter(|&i| ctx.has(i)),
        ),
    };
    if lo_i.is_none() && hi_i.is_none() {
        return Err(crate::Error::Runtime(
            "torch.clamp: At least one of 'min' or 'max' must not be None".into(),
        ));
    }
    let idxs: Vec<usize> = [Some(0), lo_i, hi_i].into_iter().flatten().collect();
    let dtype = common_dtype(ctx, &idxs)?;
    if !ctx.overload().starts_with("Tensor") {
        let bounds: Vec<DType> = idxs[1..]
            .iter()
            .map(|&i| Ok(ctx.ty(i)?.dtype))
            .collect::<Result<_>>()?;
        let two_sided = base == "clamp";
        check_number_clamp(
            ctx.ty(0)?.dtype,
            &bounds,
            dtype,
            ctx.is_inplace(),
            two_sided,
        )?;
    }
    let v = operands(ctx, &idxs, dtype)?;
    let mut x = v[0].clone();
    let bounds = [lo_i.map(|i| (i, true)), hi_i.map(|i| (i, false))];
    for ((i, is_lo), bound) in bounds.into_iter().flatten().zip(&v[1..]) {
        // CPU keeps `x` on a tie with a number bound, the bound on a tie with a tensor one
        // (which differs for signed zeros).
        x = if matches!(ctx.arg(i), crate::ctx::Arg::Scalar(_)) {
            extremum(&mut ctx.b, bound, &x, is_lo)?
        } else {
            extremum(&mut ctx.b, &x, bound, is_lo)?
        };
    }
    one(x)
}

fn fill(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let ty = ctx.ty(0)?;
    let v = ctx.tensor(1)?;
    let v = ctx.b.convert(&v, ty.dtype);
    one(ctx.b.broadcast_in_dim(&v, &ty.shape, &[])?)
}

fn zero(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let ty = ctx.ty(0)?;
    one(ctx.b.splat(Literal::Int(0), &ty))
}

/// `copy_(self, src)`: cast and broadcast `src` into `self`.
pub(super) fn copy(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let ty = ctx.ty(0)?;
    let src = ctx.tensor(1)?;
    let src = cast(&mut ctx.b, &src, ty.dtype)?;
    one(ctx.b.broadcast_to(&src, &ty.shape)?)
}

/// Registers the family.
pub(crate) fn register(reg: &mut Registry) {
    // Complex values, with CPU's special values (infinite and NaN parts).
    reg.ops(variants!("exp"), exp).complex();
    reg.ops(variants!("exp2"), exp2).complex();
    reg.ops(variants!("expm1"), expm1).complex();
    reg.ops(variants!("log"), log).complex();
    reg.ops(variants!("log2"), log2).complex();
    reg.ops(variants!("log10"), log10).complex();
    reg.ops(variants!("log1p"), log1p).complex();
    reg.ops(variants!("sqrt"), sqrt).complex();
    reg.ops(variants!("rsqrt"), rsqrt).complex();
    reg.ops(variants!("sin"), sin).complex();
    reg.ops(variants!("cos"), cos).complex();
    reg.ops(variants!("tan"), tan).complex();
    reg.ops(variants!("tanh"), tanh).complex();
    reg.ops(variants!("sinh"), sinh).complex();
    reg.ops(variants!("cosh"), cosh).complex();
    reg.ops(variants!("atan"), atan).complex();
    reg.ops(variants!("asin"), asin).complex();
    reg.ops(variants!("acos"), acos).complex();
    reg.ops(variants!("asinh"), asinh).complex();
    reg.ops(variants!("acosh"), acosh).complex();
    reg.ops(variants!("atanh"), atanh).complex();
    reg.ops(binary_variants!("copysign"), copysign);
    reg.ops(&["hypot", "hypot_", "hypot.out"], hypot);
    reg.ops(&["angle", "angle.out"], angle).complex();
    reg.ops(&["fmax", "fmax.out", "fmin", "fmin.out"], fmax_fmin);
    reg.ops(variants!("sigmoid"), sigmoid).complex();
    reg.ops(variants!("reciprocal"), reciprocal).complex();
    reg.ops(variants!("erf"), erf);
    reg.ops(variants!("abs"), abs)
        .complex()
        .real_of_complex_out();
    // ATen's ops without type promotion write only into an out= of their own dtype.
    reg.ops(variants!("neg"), neg).complex().same_dtype_out();
    reg.ops(variants!("sign"), sign).same_dtype_out();
    // For real tensors sgn is sign.
    reg.ops(variants!("sgn"), sgn).complex().same_dtype_out();
    reg.ops(variants!("floor"), floor).same_dtype_out();
    reg.ops(variants!("ceil"), ceil).same_dtype_out();
    reg.ops(variants!("round"), round).same_dtype_out();
    reg.ops(
        &["round.decimals", "round_.decimals", "round.decimals_out"],
        round_decimals,
    )
    .same_dtype_out();
    reg.ops(variants!("trunc"), trunc).same_dtype_out();
    reg.ops(variants!("frac"), frac).same_dtype_out();
    reg.ops(variants!("bitwise_not"), bitwise_not)
        .same_dtype_out();
    reg.ops(&["relu", "relu_"], relu);
    // Logical ops test values against zero, which complex values support.
    reg.ops(variants!("logical_not"), logical_not).complex();

    reg.ops(binary_variants!("add"), add).complex();
    reg.ops(binary_variants!("sub"), sub).complex();
    reg.ops(binary_variants!("mul"), mul).complex();
    reg.ops(
        &[
            "pow.Tensor_Tensor",
            "pow_.Tensor",
            "pow.Tensor_Tensor_out",
            "pow.Scalar",
            "pow.Scalar_out",
        ],
        |ctx| binary(ctx, |b, x, y| power(b, x, y, false)),
    )
    .complex();
    reg.ops(
        &["pow.Tensor_Scalar", "pow_.Scalar", "pow.Tensor_Scalar_out"],
        |ctx| binary(ctx, |b, x, y| power(b, x, y, true)),
    )
    .complex();
    reg.ops(&["maximum", "maximum.out"], |ctx| {
        binary(ctx, |b, x, y| extremum(b, x, y, true))
    });
    reg.ops(&["minimum", "minimum.out"], |ctx| {
        binary(ctx, |b, x, y| extremum(b, x, y, false))
    });
    reg.ops(&["atan2", "atan2_", "atan2.out"], |ctx| {
        float_binary(ctx, |b, x, y| Ok(b.atan2(x, y)?))
    });
    reg.ops(tensor_out_variants!("bitwise_and"), |ctx| {
        binary(ctx, |b, x, y| Ok(b.and(x, y)?))
    });
    reg.ops(tensor_out_variants!("bitwise_or"), |ctx| {
        binary(ctx, |b, x, y| Ok(b.or(x, y)?))
    });
    reg.ops(tensor_out_variants!("bitwise_xor"), |ctx| {
        binary(ctx, |b, x, y| Ok(b.xor(x, y)?))
    });
    reg.ops(variants!("logical_and"), |ctx| logical(ctx, Builder::and))
        .complex();
    reg.ops(variants!("logical_or"), |ctx| logical(ctx, Builder::or))
        .complex();
    reg.ops(variants!("logical_xor"), |ctx| logical(ctx, Builder::xor))
        .complex();

    // Equality is defined for complex values (both parts equal); ordering is not.
    reg.ops(tensor_out_variants!("eq"), eq).complex();
    reg.ops(tensor_out_variants!("ne"), ne).complex();
    reg.ops(tensor_out_variants!("lt"), lt);
    reg.ops(tensor_out_variants!("le"), le);
    reg.ops(tensor_out_variants!("gt"), gt);
    reg.ops(tensor_out_variants!("ge"), ge);

    reg.ops(&["where.self", "where.self_out"], where_self)
        .complex()
        .same_dtype_out_as(|out, result| {
            format!(
                "Expected out type to be {} but got {}",
                torch_name(result),
                torch_name(out)
            )
        });
    // Scalar bounds take part in the result type but the out= must have it; tensor bounds
    // promote as binary ops do.
    reg.ops(
        &[
            "clamp",
            "clamp_",
            "clamp.out",
            "clamp_min",
            "clamp_min_",
            "clamp_min.out",
            "clamp_max",
            "clamp_max_",
            "clamp_max.out",
        ],
        clamp,
    )
    .complex()
    .same_dtype_out();
    reg.ops(
        &[
            "clamp.Tensor",
            "clamp_.Tensor",
            "clamp.Tensor_out",
            "clamp_min.Tensor",
            "clamp_min_.Tensor",
            "clamp_max.Tensor",
            "clamp_max_.Tensor",
        ],
        clamp,
    );
    reg.ops(&["fill_.Scalar"], fill).any_cast().complex();
    reg.ops(&["fill_.Tensor"], fill).any_cast();
    reg.ops(&["zero_"], zero).any_cast().complex();
    // Internal (not an ATen name): torch routes copy_ through `_copy_from` in the bridge.
    reg.ops(&["tpurs::copy_"], copy).any_cast().complex();
    reg.ops(&["clone"], |ctx| one(ctx.tensor(0)?)).complex();
}
