//! Complex inverse trigonometric and hyperbolic functions with the values CPU PyTorch gives
//! (C99's `casinh`, `cacos`, `catanh` and the functions built on them, with Annex G's
//! special values). Each is computed on the first quadrant `(|x|, |y|)` and mapped back by
//! the function's symmetry; Kahan's formulas for `asinh` and `acos` keep the accuracy near
//! the branch points and give exact zeros on the axes.

use std::f64::consts::{FRAC_PI_2, FRAC_PI_4, PI};

use tpurs_hlo::{Builder, CompareDir, DType, Value};

use super::complex::div_of;
use super::complex_math::sqrt_of;
use super::elementwise::asinh_of;
use super::float_bits::{sign_bit, with_sign_of};
use super::full;
use crate::error::Result;

/// Which inverse function.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Inverse {
    Asin,
    Acos,
    Atan,
    Asinh,
    Acosh,
    Atanh,
}

/// Above this magnitude `atanh`'s squares would overflow (f32) and its asymptotic form
/// `1/z + i pi/2` is exact to the last bit (f64).
const HUGE: f64 = 1e9;

/// The complex inverse function `f` of `z`.
pub(crate) fn inverse_of(b: &mut Builder, z: &Value, f: Inverse) -> Result<Value> {
    let (x, y) = (b.real(z), b.imag(z));
    let (re, im) = match f {
        Inverse::Asinh => odd_parts(b, &x, &y, asinh_quadrant)?,
        Inverse::Atanh => odd_parts(b, &x, &y, atanh_quadrant)?,
        // asin(z) = -i asinh(iz) and atan(z) = -i atanh(iz), with iz = (-y, x).
        Inverse::Asin | Inverse::Atan => {
            let quadrant = if f == Inverse::Asin {
                asinh_quadrant
            } else {
                atanh_quadrant
            };
            let ny = b.neg(&y);
            let (re, im) = odd_parts(b, &ny, &x, quadrant)?;
            (im, b.neg(&re))
        }
        Inverse::Acos => acos_parts(b, &x, &y)?,
        // acosh(z) = (|Im acos(z)|, Re acos(z) with y's sign).
        Inverse::Acosh => {
            let (u, v) = acos_parts(b, &x, &y)?;
            (b.abs(&v), with_sign_of(b, &u, &y)?)
        }
    };
    Ok(b.complex(&re, &im)?)
}

type Quadrant = fn(&mut Builder, &Value, &Value) -> Result<(Value, Value)>;

/// An odd, conjugate-symmetric function from its first-quadrant parts: the real part takes
/// the sign of `x`, the imaginary part that of `y`.
fn odd_parts(b: &mut Builder, x: &Value, y: &Value, quadrant: Quadrant) -> Result<(Value, Value)> {
    let (ax, ay) = (b.abs(x), b.abs(y));
    let (re, im) = quadrant(b, &ax, &ay)?;
    Ok((with_sign_of(b, &re, x)?, with_sign_of(b, &im, y)?))
}

/// What the special cases test, for `x, y >= 0`.
struct Kinds {
    x_nan: Value,
    x_inf: Value,
    y_nan: Value,
    y_inf: Value,
    y_finite: Value,
}

impl Kinds {
    fn of(b: &mut Builder, x: &Value, y: &Value) -> Result<Kinds> {
        let inf = full(b, x, f64::INFINITY);
        let x_nan = b.compare(CompareDir::Ne, x, x)?;
        let y_nan = b.compare(CompareDir::Ne, y, y)?;
        let x_inf = b.compare(CompareDir::Eq, x, &inf)?;
        let y_inf = b.compare(CompareDir::Eq, y, &inf)?;
        let y_finite = b.compare(CompareDir::Lt, y, &inf)?;
        Ok(Kinds {
            x_nan,
            x_inf,
            y_nan,
            y_inf,
            y_finite,
        })
    }

    /// NaN parts where either input part is NaN.
    fn nan_if_any(&self, b: &mut Builder, v: &Value) -> Result<Value> {
        let any = b.or(&self.x_nan, &self.y_nan)?;
        let nan = full(b, v, f64::NAN);
        Ok(b.select(&any, &nan, v)?)
    }
}

/// `v`, or the constant `c` where `pred` holds.
fn set(b: &mut Builder, pred: &Value, c: f64, v: &Value) -> Result<Value> {
    let k = full(b, v, c);
    Ok(b.select(pred, &k, v)?)
}

/// `Im(conj(a) c) = Re a Im c - Im a Re c`, from the parts.
fn conj_product_imag(b: &mut Builder, a: &Value, c: &Value) -> Result<Value> {
    let (ar, ai) = (b.real(a), b.imag(a));
    let (cr, ci) = (b.real(c), b.imag(c));
    let p = b.mul(&ar, &ci)?;
    let q = b.mul(&ai, &cr)?;
    Ok(b.sub(&p, &q)?)
}

/// `asinh(x + iy)` for `x, y >= 0` by Kahan's formulas (`-i asin(iz)`): with
/// `a = sqrt(1 + y - ix)` and `c = sqrt(1 - y + ix)`, `asinh(Im(conj(a) c))` and
/// `atan2(y, Re(a c))`. Exact on the axes (the real part of `asinh(iy)`, `|y| <= 1`, is 0)
/// and free of overflow.
fn asinh_quadrant(b: &mut Builder, x: &Value, y: &Value) -> Result<(Value, Value)> {
    let one = full(b, x, 1.0);
    let (yp, ym) = (b.add(&one, y)?, b.sub(&one, y)?);
    let nx = b.neg(x);
    let a = b.complex(&yp, &nx)?;
    let a = sqrt_of(b, &a)?;
    let c = b.complex(&ym, x)?;
    let c = sqrt_of(b, &c)?;
    let d = conj_product_imag(b, &a, &c)?;
    let re = asinh_of(b, &d)?;
    let (ar, ai) = (b.real(&a), b.imag(&a));
    let (cr, ci) = (b.real(&c), b.imag(&c));
    let p = b.mul(&ar, &cr)?;
    let q = b.mul(&ai, &ci)?;
    let r = b.sub(&p, &q)?;
    let im = b.atan2(y, &r)?;
    let zero = full(b, x, 0.0);
    // Annex G: NaN + i0 -> NaN + i0; +inf + iy -> +inf + i0 (y finite), +inf + i NaN;
    // x + i inf -> +inf + i pi/2 (pi/4 for x = +inf, NaN for a NaN x).
    let k = Kinds::of(b, x, y)?;
    let (re, im) = (k.nan_if_any(b, &re)?, k.nan_if_any(b, &im)?);
    let y_zero = b.compare(CompareDir::Eq, y, &zero)?;
    let nan_zero = b.and(&k.x_nan, &y_zero)?;
    let im = set(b, &nan_zero, 0.0, &im)?;
    let re = set(b, &k.x_inf, f64::INFINITY, &re)?;
    let inf_finite = b.and(&k.x_inf, &k.y_finite)?;
    let im = set(b, &inf_finite, 0.0, &im)?;
    let re = set(b, &k.y_inf, f64::INFINITY, &re)?;
    let right = full(b, x, FRAC_PI_2);
    let at_inf = set(b, &k.x_inf, FRAC_PI_4, &right)?;
    let at_inf = set(b, &k.x_nan, f64::NAN, &at_inf)?;
    let im = b.select(&k.y_inf, &at_inf, &im)?;
    Ok((re, im))
}

/// `atanh(x + iy)` for `x, y >= 0`: `log1p(4x / ((1 - x)^2 + y^2)) / 4` and
/// `atan2(2y, (1 - x)(1 + x) - y^2) / 2`; past [`HUGE`], `1/z + i pi/2`.
fn atanh_quadrant(b: &mut Builder, x: &Value, y: &Value) -> Result<(Value, Value)> {
    let one = full(b, x, 1.0);
    let (xm, xp) = (b.sub(&one, x)?, b.add(&one, x)?);
    let y2 = b.mul(y, y)?;
    let xm2 = b.mul(&xm, &xm)?;
    let den = b.add(&xm2, &y2)?;
    let four = full(b, x, 4.0);
    let four_x = b.mul(&four, x)?;
    let q = b.div(&four_x, &den)?;
    let l = b.log1p(&q);
    let quarter = full(b, x, 0.25);
    let re = b.mul(&quarter, &l)?;
    let two_y = b.add(y, y)?;
    let c = b.mul(&xm, &xp)?;
    let c = b.sub(&c, &y2)?;
    let a = b.atan2(&two_y, &c)?;
    let half = full(b, x, 0.5);
    let im = b.mul(&half, &a)?;
    // Far out: 1/z's real part, computed without overflow.
    let zero = full(b, x, 0.0);
    let one_c = b.complex(&one, &zero)?;
    let z = b.complex(x, y)?;
    let inv = div_of(b, &one_c, &z)?;
    let inv_re = b.real(&inv);
    let m = b.max(x, y)?;
    let huge = full(b, x, HUGE);
    let is_big = b.compare(CompareDir::Gt, &m, &huge)?;
    let re = b.select(&is_big, &inv_re, &re)?;
    let inv_im = b.imag(&inv);
    let right = full(b, x, FRAC_PI_2);
    let far_im = b.add(&right, &inv_im)?;
    let im = b.select(&is_big, &far_im, &im)?;
    // Annex G: +0 + i NaN -> +0 + i NaN; infinite parts -> +0 + i pi/2 (+0 + i NaN for
    // +inf + i NaN, and NaN + i inf gives 0 + i pi/2).
    let k = Kinds::of(b, x, y)?;
    let (re, im) = (k.nan_if_any(b, &re)?, k.nan_if_any(b, &im)?);
    let x_zero = b.compare(CompareDir::Eq, x, &zero)?;
    let re = set(b, &x_zero, 0.0, &re)?;
    let re = set(b, &k.x_inf, 0.0, &re)?;
    let inf_number = b.and(&k.x_inf, &k.y_finite)?;
    let im = set(b, &inf_number, FRAC_PI_2, &im)?;
    let re = set(b, &k.y_inf, 0.0, &re)?;
    let im = set(b, &k.y_inf, FRAC_PI_2, &im)?;
    Ok((re, im))
}

/// `acos(x + iy)` by Kahan's formulas on the first quadrant, `2 atan2(Re sqrt(1 - z),
/// Re sqrt(1 + z))` and `asinh(Im(conj(sqrt(1 + z)) sqrt(1 - z)))`, then
/// `acos(-z) = pi - acos(z)` and `acos(conj z) = conj acos(z)`.
fn acos_parts(b: &mut Builder, x: &Value, y: &Value) -> Result<(Value, Value)> {
    let (ax, ay) = (b.abs(x), b.abs(y));
    let one = full(b, &ax, 1.0);
    let (xm, xp) = (b.sub(&one, &ax)?, b.add(&one, &ax)?);
    let nay = b.neg(&ay);
    let one_minus = b.complex(&xm, &nay)?;
    let one_plus = b.complex(&xp, &ay)?;
    let sm = sqrt_of(b, &one_minus)?;
    let sp = sqrt_of(b, &one_plus)?;
    let (smr, spr) = (b.real(&sm), b.real(&sp));
    let a = b.atan2(&smr, &spr)?;
    let re = b.add(&a, &a)?;
    let d = conj_product_imag(b, &sp, &sm)?;
    let im = asinh_of(b, &d)?;
    // Annex G: +0 + i NaN -> pi/2 + i NaN; +inf + iy -> +0 - i inf (y finite);
    // x + i inf -> pi/2 - i inf (pi/4 for x = +inf, NaN for a NaN x); +inf + i NaN ->
    // NaN + i inf.
    let k = Kinds::of(b, &ax, &ay)?;
    let (re, im) = (k.nan_if_any(b, &re)?, k.nan_if_any(b, &im)?);
    let zero = full(b, &ax, 0.0);
    let x_zero = b.compare(CompareDir::Eq, &ax, &zero)?;
    let zero_nan = b.and(&x_zero, &k.y_nan)?;
    let re = set(b, &zero_nan, FRAC_PI_2, &re)?;
    let inf_number = b.and(&k.x_inf, &k.y_finite)?;
    let re = set(b, &inf_number, 0.0, &re)?;
    let im = set(b, &k.x_inf, f64::NEG_INFINITY, &im)?;
    let right = full(b, &ax, FRAC_PI_2);
    let at_inf = set(b, &k.x_inf, FRAC_PI_4, &right)?;
    let at_inf = set(b, &k.x_nan, f64::NAN, &at_inf)?;
    let re = b.select(&k.y_inf, &at_inf, &re)?;
    let im = set(b, &k.y_inf, f64::NEG_INFINITY, &im)?;
    // Back from the first quadrant.
    let negative = sign_bit(b, x)?;
    let pi = full(b, &re, PI);
    let mirrored = b.sub(&pi, &re)?;
    let re = b.select(&negative, &mirrored, &re)?;
    let ny = b.neg(y);
    let im = with_sign_of(b, &im, &ny)?;
    if x.dtype() == DType::F64 {
        // CPU's complex128 kernel computes `pi/2 - asin(z)` as a complex subtraction, so a
        // zero imaginary part comes out +0 whatever the sign of y.
        let zero = full(b, &im, 0.0);
        let is_zero = b.compare(CompareDir::Eq, &im, &zero)?;
        return Ok((re, b.select(&is_zero, &zero, &im)?));
    }
    Ok((re, im))
}
