//! Complex elementwise math whose special values (infinite and NaN parts) follow CPU
//! PyTorch, which calls C99's complex functions (Annex G): XLA's own complex `sqrt`, `pow`,
//! `sinh`, `cosh`, `sin` and `cos` give NaN or 0 where CPU gives infinities or signed
//! zeros. Each function builds the result from real parts and patches the special cases.

use tpurs_hlo::{Builder, CompareDir, Literal, Value};

use super::complex::{div_of, exp_of, magnitude, scale};
use super::float_bits::{sign_bit, with_sign_of};
use super::full;
use crate::error::Result;

/// `sqrt(x)`; for complex `x` C99's `csqrt` (what CPU PyTorch calls): the root with a
/// non-negative real part, `(inf, y)` for an infinite imaginary part `y`, and the values
/// Annex G gives for infinite real parts.
pub(crate) fn sqrt_of(b: &mut Builder, z: &Value) -> Result<Value> {
    if !z.dtype().is_complex() {
        return Ok(b.sqrt(z));
    }
    let (x, y) = (b.real(z), b.imag(z));
    // t = sqrt((|x| + |z|) / 2); where that overflows, 2 sqrt((|x| + |z|) / 8).
    let t = half_sum_root(b, z, 0.5)?;
    let t_big = half_sum_root(b, z, 0.125)?;
    let t_big = b.add(&t_big, &t_big)?;
    let fits = b.is_finite(&t);
    let t = b.select(&fits, &t, &t_big)?;
    // x >= 0: (t, y / 2t); x < 0: (|y| / 2t, t with y's sign).
    let two_t = b.add(&t, &t)?;
    let q = b.div(&y, &two_t)?;
    let aq = b.abs(&q);
    let signed_t = with_sign_of(b, &t, &y)?;
    let zero = b.full_like(&x, Literal::Float(0.0));
    let negative = b.compare(CompareDir::Lt, &x, &zero)?;
    let mut re = b.select(&negative, &aq, &t)?;
    let mut im = b.select(&negative, &signed_t, &q)?;
    // Both parts zero: (0, y) keeps the sign of a zero imaginary part.
    let t_zero = b.compare(CompareDir::Eq, &t, &zero)?;
    re = b.select(&t_zero, &zero, &re)?;
    im = b.select(&t_zero, &y, &im)?;
    // Special values, lowest precedence first: a NaN part, then an infinite real part, then
    // an infinite imaginary part.
    let nan = b.full_like(&x, Literal::Float(f64::NAN));
    let inf = b.full_like(&x, Literal::Float(f64::INFINITY));
    let any_nan = b.compare(CompareDir::Ne, z, z)?;
    re = b.select(&any_nan, &nan, &re)?;
    im = b.select(&any_nan, &nan, &im)?;
    let y_nan = b.compare(CompareDir::Ne, &y, &y)?;
    let zero_or_nan = b.select(&y_nan, &nan, &zero)?;
    let signed_zero = with_sign_of(b, &zero_or_nan, &y)?;
    let signed_inf = with_sign_of(b, &inf, &y)?;
    let pos_inf = b.compare(CompareDir::Eq, &x, &inf)?;
    re = b.select(&pos_inf, &inf, &re)?;
    im = b.select(&pos_inf, &signed_zero, &im)?;
    let ninf = b.neg(&inf);
    let neg_inf = b.compare(CompareDir::Eq, &x, &ninf)?;
    re = b.select(&neg_inf, &zero_or_nan, &re)?;
    im = b.select(&neg_inf, &signed_inf, &im)?;
    let ay = b.abs(&y);
    let y_inf = b.compare(CompareDir::Eq, &ay, &inf)?;
    re = b.select(&y_inf, &inf, &re)?;
    im = b.select(&y_inf, &y, &im)?;
    Ok(b.complex(&re, &im)?)
}

/// `x ** y` for complex `x`: C99's `cpow`, `exp(y log(x))` with the product taken as Annex G
/// multiplies (CPU PyTorch calls `std::pow`), so zero and infinite bases give CPU's values.
/// A number exponent of 0, 1, +-2, 3 or +-0.5 (and -1) takes CPU's shortcuts: a fill, a copy,
/// products, roots and reciprocals, whose special values differ from `cpow`'s.
pub(crate) fn pow_of(
    b: &mut Builder,
    x: &Value,
    y: &Value,
    number_exponent: bool,
) -> Result<Value> {
    let l = log_of(b, x)?;
    let p = annex_g_mul(b, y, &l)?;
    let mut r = exp_of(b, &p)?;
    if !number_exponent {
        return Ok(r);
    }
    let square = b.mul(x, x)?;
    let cube = b.mul(&square, x)?;
    let root = sqrt_of(b, x)?;
    let one = b.full_like(x, Literal::Float(1.0));
    let shortcuts = [
        (0.0, one.clone()),
        (1.0, x.clone()),
        (-1.0, div_of(b, &one, x)?),
        (2.0, square.clone()),
        (-2.0, div_of(b, &one, &square)?),
        (3.0, cube),
        (0.5, root.clone()),
        (-0.5, div_of(b, &one, &root)?),
    ];
    for (k, v) in shortcuts {
        let kv = b.full_like(y, Literal::Float(k));
        let hit = b.compare(CompareDir::Eq, y, &kv)?;
        r = b.select(&hit, &v, &r)?;
    }
    Ok(r)
}

/// The complex product `z w` as C99's Annex G defines it: where the plain formula gives NaN
/// in both parts but a factor or a partial product is infinite, the infinities come back.
fn annex_g_mul(b: &mut Builder, z: &Value, w: &Value) -> Result<Value> {
    let parts = |b: &mut Builder, v: &Value| (b.real(v), b.imag(v));
    let ((a, bb), (c, d)) = (parts(b, z), parts(b, w));
    let plain = |b: &mut Builder, a: &Value, bb: &Value, c: &Value, d: &Value| -> Result<_> {
        let (ac, bd) = (b.mul(a, c)?, b.mul(bb, d)?);
        let (ad, bc) = (b.mul(a, d)?, b.mul(bb, c)?);
        Ok((b.sub(&ac, &bd)?, b.add(&ad, &bc)?, [ac, bd, ad, bc]))
    };
    let (re, im, products) = plain(b, &a, &bb, &c, &d)?;
    let is_nan = |b: &mut Builder, v: &Value| b.compare(CompareDir::Ne, v, v);
    let is_inf = |b: &mut Builder, v: &Value| -> Result<Value> {
        let m = b.abs(v);
        let inf = full(b, v, f64::INFINITY);
        Ok(b.compare(CompareDir::Eq, &m, &inf)?)
    };
    // An infinite part becomes +-1, its partner part +-0, and NaN parts of the other factor
    // +-0: "boxed" infinities.
    let unit = |b: &mut Builder, v: &Value| -> Result<Value> {
        let inf = is_inf(b, v)?;
        let (one, zero) = (full(b, v, 1.0), full(b, v, 0.0));
        let m = b.select(&inf, &one, &zero)?;
        with_sign_of(b, &m, v)
    };
    let nan_to_zero = |b: &mut Builder, v: &Value, when: &Value| -> Result<Value> {
        let nan = is_nan(b, v)?;
        let both = b.and(&nan, when)?;
        let zero = full(b, v, 0.0);
        let z = with_sign_of(b, &zero, v)?;
        Ok(b.select(&both, &z, v)?)
    };
    let (ia, ib, ic, id) = (
        is_inf(b, &a)?,
        is_inf(b, &bb)?,
        is_inf(b, &c)?,
        is_inf(b, &d)?,
    );
    let z_inf = b.or(&ia, &ib)?;
    let w_inf = b.or(&ic, &id)?;
    let (ua, ub) = (unit(b, &a)?, unit(b, &bb)?);
    let (a1, b1) = (b.select(&z_inf, &ua, &a)?, b.select(&z_inf, &ub, &bb)?);
    let (c1, d1) = (nan_to_zero(b, &c, &z_inf)?, nan_to_zero(b, &d, &z_inf)?);
    let (uc, ud) = (unit(b, &c1)?, unit(b, &d1)?);
    let (c2, d2) = (b.select(&w_inf, &uc, &c1)?, b.select(&w_inf, &ud, &d1)?);
    let (a2, b2) = (nan_to_zero(b, &a1, &w_inf)?, nan_to_zero(b, &b1, &w_inf)?);
    // Neither factor infinite but a partial product overflowed: NaN parts become +-0.
    let mut overflow = is_inf(b, &products[0])?;
    for p in &products[1..] {
        let i = is_inf(b, p)?;
        overflow = b.or(&overflow, &i)?;
    }
    let any_inf = b.or(&z_inf, &w_inf)?;
    let no_inf = b.not(&any_inf);
    let late = b.and(&overflow, &no_inf)?;
    let (a3, b3) = (nan_to_zero(b, &a2, &late)?, nan_to_zero(b, &b2, &late)?);
    let (c3, d3) = (nan_to_zero(b, &c2, &late)?, nan_to_zero(b, &d2, &late)?);
    let (re2, im2, _) = plain(b, &a3, &b3, &c3, &d3)?;
    let inf = full(b, &re, f64::INFINITY);
    let (re2, im2) = (b.mul(&inf, &re2)?, b.mul(&inf, &im2)?);
    let (nr, ni) = (is_nan(b, &re)?, is_nan(b, &im)?);
    let both_nan = b.and(&nr, &ni)?;
    let recalc = b.or(&any_inf, &overflow)?;
    let fix = b.and(&both_nan, &recalc)?;
    let re = b.select(&fix, &re2, &re)?;
    let im = b.select(&fix, &im2, &im)?;
    Ok(b.complex(&re, &im)?)
}

/// `sgn(z)` of a complex `z`: `z / |z|`, 0 where `z` is 0 and NaN where `|z|` is infinite
/// (CPU divides by `|z|` as a complex number).
pub(crate) fn sgn_of(b: &mut Builder, z: &Value) -> Result<Value> {
    let m = magnitude(b, z)?;
    let finite = b.is_finite(&m);
    let nan = b.full_like(&m, Literal::Float(f64::NAN));
    let m = b.select(&finite, &m, &nan)?;
    let (re, im) = (b.real(z), b.imag(z));
    let (re, im) = (b.div(&re, &m)?, b.div(&im, &m)?);
    let zero = b.full_like(&m, Literal::Float(0.0));
    let at_zero = b.compare(CompareDir::Eq, &m, &zero)?;
    let (re, im) = (
        b.select(&at_zero, &zero, &re)?,
        b.select(&at_zero, &zero, &im)?,
    );
    Ok(b.complex(&re, &im)?)
}

/// `sqrt(k (|x| + |z|))` for complex `z = x + iy`, scaling before adding so that only the
/// root of a sum past the largest finite value overflows.
fn half_sum_root(b: &mut Builder, z: &Value, k: f64) -> Result<Value> {
    let scaled = scale(b, z, k)?;
    let m = b.magnitude(&scaled);
    let x = b.real(&scaled);
    let ax = b.abs(&x);
    let s = b.add(&ax, &m)?;
    Ok(b.sqrt(&s))
}

/// Complex `expm1` as CPU computes it:
/// `expm1(x) cos(y) - 2 sin(y/2)^2 + i e^x sin(y)`, accurate near 0.
pub(crate) fn expm1_of(b: &mut Builder, z: &Value) -> Result<Value> {
    let (x, y) = (b.real(z), b.imag(z));
    let half = full(b, &x, 0.5);
    let two = full(b, &x, 2.0);
    let hy = b.mul(&y, &half)?;
    let a = b.sin(&hy);
    let a2 = b.mul(&a, &a)?;
    let a2 = b.mul(&two, &a2)?;
    let em = b.expm1(&x);
    let c = b.cos(&y);
    let re = b.mul(&em, &c)?;
    let re = b.sub(&re, &a2)?;
    let e = b.exp(&x);
    let s = b.sin(&y);
    let im = b.mul(&e, &s)?;
    Ok(b.complex(&re, &im)?)
}

/// `log(z)`; for complex `z` C99's `clog`: `log|z| + i arg(z)` with `|z|` infinite when a
/// part is infinite, else NaN when a part is NaN (XLA's own complex log drops a NaN
/// imaginary part from the magnitude: `log(1 + nan i)` had a real part of 0.35), and
/// accurate near the unit circle as glibc's is.
pub(crate) fn log_of(b: &mut Builder, z: &Value) -> Result<Value> {
    if !z.dtype().is_complex() {
        return Ok(b.log(z));
    }
    let r = magnitude(b, z)?;
    let far = b.log(&r);
    // Near the unit circle, `log|z|` as `log1p(x^2 + y^2 - 1) / 2` with `x^2 - 1` formed as
    // `(x - 1)(x + 1)`: `log(hypot)` loses it there (`log|1 + 1e-8 i|` is 5e-17, not 0).
    let (x, y) = (b.real(z), b.imag(z));
    let one = full(b, &x, 1.0);
    let (xm, xp) = (b.sub(&x, &one)?, b.add(&x, &one)?);
    let x2m1 = b.mul(&xm, &xp)?;
    let y2 = b.mul(&y, &y)?;
    let d = b.add(&x2m1, &y2)?;
    let l = b.log1p(&d);
    let half = full(b, &x, 0.5);
    let near_v = b.mul(&l, &half)?;
    let two = full(b, &x, 2.0);
    let above = b.compare(CompareDir::Ge, &r, &half)?;
    let below = b.compare(CompareDir::Le, &r, &two)?;
    let near = b.and(&above, &below)?;
    let re = b.select(&near, &near_v, &far)?;
    let im = b.atan2(&y, &x)?;
    Ok(b.complex(&re, &im)?)
}

/// Complex `log1p` as CPU computes it (Kahan's trick): with `u = 1 + z`, `z` where `u`
/// rounds to 1, `log(u)` where `u - 1` is exactly `z`, else `log(u) z / (u - 1)`, which
/// corrects the rounding of `u`. Only the real part of `u` rounds.
pub(crate) fn log1p_of(b: &mut Builder, z: &Value) -> Result<Value> {
    let (x, y) = (b.real(z), b.imag(z));
    let one = full(b, &x, 1.0);
    let ux = b.add(&x, &one)?;
    let ux = b.barrier(&ux);
    let u = b.complex(&ux, &y)?;
    let log_u = log_of(b, &u)?;
    let dx = b.sub(&ux, &one)?;
    let rounded = b.complex(&dx, &y)?;
    let ratio = div_of(b, z, &rounded)?;
    let corrected = b.mul(&log_u, &ratio)?;
    // `u - 1 == z` as complex numbers: a NaN imaginary part compares unequal.
    let exact = b.compare(CompareDir::Eq, &dx, &x)?;
    let y_number = b.compare(CompareDir::Eq, &y, &y)?;
    let exact = b.and(&exact, &y_number)?;
    let r = b.select(&exact, &log_u, &corrected)?;
    let zero = full(b, &x, 0.0);
    let real_one = b.compare(CompareDir::Eq, &ux, &one)?;
    let no_imag = b.compare(CompareDir::Eq, &y, &zero)?;
    let unit = b.and(&real_one, &no_imag)?;
    Ok(b.select(&unit, z, &r)?)
}

/// Complex `logaddexp(x, y)` as CPU computes it: with `min` and `max` the operands ordered
/// by real part (a NaN operand taking both places), `log1p(exp(min - max)) + max`; NaN
/// (both parts) for a NaN; `min` when both real parts are -inf and
/// `log(exp(min) + exp(max))` when both are +inf.
pub(crate) fn logaddexp_of(b: &mut Builder, x: &Value, y: &Value) -> Result<Value> {
    let (xr, yr) = (b.real(x), b.real(y));
    let x_nan = b.compare(CompareDir::Ne, x, x)?;
    let y_nan = b.compare(CompareDir::Ne, y, y)?;
    let x_first = b.compare(CompareDir::Lt, &xr, &yr)?;
    let lo = b.select(&x_first, x, y)?;
    let hi = b.select(&x_first, y, x)?;
    let lo = b.select(&x_nan, x, &lo)?;
    let hi = b.select(&x_nan, x, &hi)?;
    let lo = b.select(&y_nan, y, &lo)?;
    let hi = b.select(&y_nan, y, &hi)?;
    let d = b.sub(&lo, &hi)?;
    let e = exp_of(b, &d)?;
    let l = log1p_of(b, &e)?;
    let general = b.add(&l, &hi)?;
    let (el, eh) = (exp_of(b, &lo)?, exp_of(b, &hi)?);
    let sum = b.add(&el, &eh)?;
    let both_inf = log_of(b, &sum)?;
    let (lr, hr) = (b.real(&lo), b.real(&hi));
    let finite = b.is_finite(&lr);
    let same = b.compare(CompareDir::Eq, &lr, &hr)?;
    let infinite = b.not(&finite);
    let same_inf = b.and(&infinite, &same)?;
    let zero = full(b, &lr, 0.0);
    let negative = b.compare(CompareDir::Lt, &lr, &zero)?;
    let inf_case = b.select(&negative, &lo, &both_inf)?;
    let r = b.select(&same_inf, &inf_case, &general)?;
    let any_nan = b.or(&x_nan, &y_nan)?;
    let nan = b.full_like(&r, Literal::Complex(f64::NAN, f64::NAN));
    Ok(b.select(&any_nan, &nan, &r)?)
}

/// Complex `sigmoid` as CPU computes it: `1 / (1 + exp(-z))` with CPU's complex division.
pub(crate) fn sigmoid_of(b: &mut Builder, z: &Value) -> Result<Value> {
    let minus = b.neg(z);
    let e = exp_of(b, &minus)?;
    let one = full(b, z, 1.0);
    let d = b.add(&one, &e)?;
    div_of(b, &one, &d)
}

/// Real `sinh` and `cosh`: from `expm1` near 0 (no cancellation), and past 20 from
/// `e^|x| / 2` formed so that results up to the largest float do not overflow early.
pub(crate) fn real_sinh_cosh(b: &mut Builder, x: &Value) -> Result<(Value, Value)> {
    let (sh, ch, _) = sinh_cosh_over(b, x, 0.0)?;
    Ok((sh, ch))
}

/// `sinh x` and `cosh x`, divided by `e^shift` where `|x| > 20` (the third value), so a
/// product with a factor below 1 can be formed before it overflows.
fn sinh_cosh_over(b: &mut Builder, x: &Value, shift: f64) -> Result<(Value, Value, Value)> {
    let half = full(b, x, 0.5);
    let nx = b.neg(x);
    let (e1, e2) = (b.expm1(x), b.expm1(&nx));
    let d = b.sub(&e1, &e2)?;
    let sinh_small = b.mul(&d, &half)?;
    let (ex, enx) = (b.exp(x), b.exp(&nx));
    let s = b.add(&ex, &enx)?;
    let cosh_small = b.mul(&s, &half)?;
    // e^|x| / 2 as (e^(|x|/2) / 2) e^(|x|/2): no rounding of |x|, no early overflow.
    let ax = b.abs(x);
    let half_ax = b.mul(&ax, &half)?;
    let h = b.exp(&half_ax);
    let k = full(b, x, 0.5 * (-shift).exp());
    let big = b.mul(&h, &k)?;
    let big = b.mul(&big, &h)?;
    let sign = b.sign(x);
    let sinh_big = b.mul(&sign, &big)?;
    let twenty = full(b, x, 20.0);
    let is_big = b.compare(CompareDir::Gt, &ax, &twenty)?;
    Ok((
        b.select(&is_big, &sinh_big, &sinh_small)?,
        b.select(&is_big, &big, &cosh_small)?,
        is_big,
    ))
}

/// `sinh` (`cosh` when `cosh`) of `x + iy` as (real, imaginary) parts:
/// `sinh x cos y + i cosh x sin y` and `cosh x cos y + i sinh x sin y`, with C99's values
/// where a zero meets an infinity.
fn hyperbolic_parts(b: &mut Builder, x: &Value, y: &Value, cosh: bool) -> Result<(Value, Value)> {
    const SHIFT: f64 = 20.0;
    let (sh, ch, shifted) = sinh_cosh_over(b, x, SHIFT)?;
    let (c, s) = (b.cos(y), b.sin(y));
    let (p, q) = if cosh { (&ch, &sh) } else { (&sh, &ch) };
    let one = full(b, x, 1.0);
    let unshift = full(b, x, SHIFT.exp());
    let unshift = b.select(&shifted, &unshift, &one)?;
    let re = b.mul(p, &c)?;
    let mut re = b.mul(&re, &unshift)?;
    let im = b.mul(q, &s)?;
    let mut im = b.mul(&im, &unshift)?;
    let zero = full(b, x, 0.0);
    let x_finite = b.is_finite(x);
    let y_finite = b.is_finite(y);
    let x_inf = {
        let nan = b.compare(CompareDir::Ne, x, x)?;
        let finite_or_nan = b.or(&x_finite, &nan)?;
        b.not(&finite_or_nan)
    };
    let x_zero = b.compare(CompareDir::Eq, x, &zero)?;
    let y_zero = b.compare(CompareDir::Eq, y, &zero)?;
    let y_bad = b.not(&y_finite);
    // y = 0: the imaginary part is that zero (for cosh times sinh x's sign), also where
    // sinh x or cosh x overflowed and `inf * 0` gave NaN.
    let y_signed = if cosh {
        let x_neg = sign_bit(b, x)?;
        let ny = b.neg(y);
        b.select(&x_neg, &ny, y)?
    } else {
        y.clone()
    };
    im = b.select(&y_zero, &y_signed, &im)?;
    // x = 0 with y infinite or NaN: sinh's real part, cosh's imaginary part is 0.
    let case = b.and(&x_zero, &y_bad)?;
    if cosh {
        im = b.select(&case, &zero, &im)?;
    } else {
        re = b.select(&case, x, &re)?;
    }
    // x infinite with y infinite or NaN: the real part is infinite.
    let case = b.and(&x_inf, &y_bad)?;
    let real_inf = if cosh { b.abs(x) } else { x.clone() };
    re = b.select(&case, &real_inf, &re)?;
    Ok((re, im))
}

/// Complex `sinh`, `cosh`, `sin` (`-i sinh(iz)`) and `cos` (`cosh(iz)`).
pub(crate) fn trig_of(b: &mut Builder, z: &Value, f: Trig) -> Result<Value> {
    let (x, y) = (b.real(z), b.imag(z));
    let (re, im) = match f {
        Trig::Sinh => hyperbolic_parts(b, &x, &y, false)?,
        Trig::Cosh => hyperbolic_parts(b, &x, &y, true)?,
        Trig::Sin | Trig::Cos => {
            let ny = b.neg(&y);
            let (r, i) = hyperbolic_parts(b, &ny, &x, f == Trig::Cos)?;
            if f == Trig::Cos {
                (r, i)
            } else {
                (i, b.neg(&r))
            }
        }
    };
    Ok(b.complex(&re, &im)?)
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Trig {
    Sinh,
    Cosh,
    Sin,
    Cos,
}
