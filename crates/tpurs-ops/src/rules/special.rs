//! Special functions: `lgamma` and `digamma` by the Lanczos approximation (g = 7, nine
//! terms; about 1e-7 relative in f32) with the reflection formula below 1/2; the Hurwitz
//! zeta function (Cephes' Euler-Maclaurin sum, unrolled) and `polygamma` built on it.
//! Computed in f32 or wider.

use tpurs_hlo::{Builder, CompareDir, Value};

use super::erfc::{erf_of, erfc_of};
use super::float_bits::with_sign_of;
use super::{common_dtype, float_dtype, full, one, operands, polevl};
use crate::ctx::{Ctx, Out};
use crate::dtype::opmath;
use crate::error::Result;
use crate::table::Registry;

const LANCZOS_G: f64 = 7.0;
const LANCZOS_BASE: f64 = 0.999_999_999_999_809_9;
const LANCZOS: [f64; 8] = [
    676.520_368_121_885_1,
    -1_259.139_216_722_402_8,
    771.323_428_777_653_1,
    -176.615_029_162_140_6,
    12.507_343_278_686_905,
    -0.138_571_095_265_720_12,
    9.984_369_578_019_572e-6,
    1.505_632_735_149_311_6e-7,
];

/// `x` widened to f32 or f64, and whether `x < 1/2` (reflected), with `z = x - 1` or
/// `-x` accordingly: the argument of the Lanczos series.
fn lanczos_arg(b: &mut Builder, x: &Value) -> Result<(Value, Value)> {
    let half = full(b, x, 0.5);
    let reflect = b.compare(CompareDir::Lt, x, &half)?;
    let one_v = full(b, x, 1.0);
    let shifted = b.sub(x, &one_v)?;
    let negated = b.neg(x);
    Ok((b.select(&reflect, &negated, &shifted)?, reflect))
}

/// `log(t)` with `t = z + g + 1/2`, as `log(g + 1/2) + log1p(z / (g + 1/2))`.
fn log_t(b: &mut Builder, z: &Value) -> Result<(Value, Value)> {
    let gh = full(b, z, LANCZOS_G + 0.5);
    let t = b.add(z, &gh)?;
    let q = b.div(z, &gh)?;
    let l = b.log1p(&q);
    let c = full(b, z, (LANCZOS_G + 0.5).ln());
    Ok((t, b.add(&c, &l)?))
}

/// `pi * g` with `g` the distance from `|x|` to the nearest integer (exact): `|sin(pi x)| =
/// sin(pi g)` stays accurate for large arguments and near the integers, as glibc's lgamma
/// is (`pi * (1 - 1e-15)` has lost the offset's digits).
fn sin_pi_arg(b: &mut Builder, x: &Value) -> Result<Value> {
    let a = b.abs(x);
    let f = b.floor(&a);
    let frac = b.sub(&a, &f)?;
    let one_v = full(b, x, 1.0);
    let rest = b.sub(&one_v, &frac)?;
    let half = full(b, x, 0.5);
    let upper = b.compare(CompareDir::Gt, &frac, &half)?;
    let g = b.select(&upper, &rest, &frac)?;
    let pi = full(b, x, std::f64::consts::PI);
    Ok(b.mul(&g, &pi)?)
}

pub(crate) fn lgamma_of(b: &mut Builder, x: &Value) -> Result<Value> {
    let (z, reflect) = lanczos_arg(b, x)?;
    let mut sum = full(b, &z, LANCZOS_BASE);
    for (i, &c) in LANCZOS.iter().enumerate() {
        let k = full(b, &z, i as f64 + 1.0);
        let d = b.add(&z, &k)?;
        let c = full(b, &z, c);
        let term = b.div(&c, &d)?;
        sum = b.add(&sum, &term)?;
    }
    let (t, lt) = log_t(b, &z)?;
    let half = full(b, &z, 0.5);
    let zh = b.add(&z, &half)?;
    let a = b.mul(&zh, &lt)?;
    let a = b.sub(&a, &t)?;
    let ls = b.log(&sum);
    let c = full(b, &z, 0.5 * (2.0 * std::f64::consts::PI).ln());
    let y = b.add(&c, &a)?;
    let y = b.add(&y, &ls)?;
    // lgamma(x) = log(pi) - log|sin(pi x)| - lgamma(1 - x) for x < 1/2.
    let s = sin_pi_arg(b, x)?;
    let s = b.sin(&s);
    let ls = b.log(&s);
    let lpi = full(b, x, std::f64::consts::PI.ln());
    let r = b.sub(&lpi, &ls)?;
    let r = b.sub(&r, &y)?;
    let y = b.select(&reflect, &r, &y)?;
    // +inf at +-inf and at the poles (non-positive integers).
    let inf = full(b, x, f64::INFINITY);
    let ax = b.abs(x);
    let is_inf = b.compare(CompareDir::Eq, &ax, &inf)?;
    let fl = b.floor(x);
    let integer = b.compare(CompareDir::Eq, x, &fl)?;
    let zero = full(b, x, 0.0);
    let nonpos = b.compare(CompareDir::Le, x, &zero)?;
    let pole = b.and(&integer, &nonpos)?;
    let infinite = b.or(&is_inf, &pole)?;
    Ok(b.select(&infinite, &inf, &y)?)
}

fn digamma_of(b: &mut Builder, x: &Value) -> Result<Value> {
    let (z, reflect) = lanczos_arg(b, x)?;
    let mut num = full(b, &z, 0.0);
    let mut den = full(b, &z, LANCZOS_BASE);
    for (i, &c) in LANCZOS.iter().enumerate() {
        let k = full(b, &z, i as f64 + 1.0);
        let d = b.add(&z, &k)?;
        let d2 = b.mul(&d, &d)?;
        let c = full(b, &z, c);
        let t2 = b.div(&c, &d2)?;
        num = b.sub(&num, &t2)?;
        let t1 = b.div(&c, &d)?;
        den = b.add(&den, &t1)?;
    }
    let (t, lt) = log_t(b, &z)?;
    let g = full(b, &z, LANCZOS_G);
    let q = b.div(&num, &den)?;
    let y = b.add(&lt, &q)?;
    let gt = b.div(&g, &t)?;
    let y = b.sub(&y, &gt)?;
    // digamma(x) = digamma(1 - x) - pi / tan(pi x) for x < 1/2 (reduced argument, with the
    // sign of x restored).
    // CPU takes `tan(pi x)` of the unreduced product, which loses the offset from a nearby
    // integer; `pi * frac(|x|)` loses it the same way, so the two agree there.
    let a = b.abs(x);
    let f = b.floor(&a);
    let frac = b.sub(&a, &f)?;
    let pi = full(b, x, std::f64::consts::PI);
    let s = b.mul(&frac, &pi)?;
    let (sn, cs) = (b.sin(&s), b.cos(&s));
    let cot = b.div(&cs, &sn)?;
    let sign = b.sign(x);
    let cot = b.mul(&cot, &sign)?;
    let pi = full(b, x, std::f64::consts::PI);
    let p = b.mul(&pi, &cot)?;
    let r = b.sub(&y, &p)?;
    let y = b.select(&reflect, &r, &y)?;
    // NaN at the poles (non-positive integers), as PyTorch; -inf at 0 from either side.
    let fl = b.floor(x);
    let integer = b.compare(CompareDir::Eq, x, &fl)?;
    let zero = full(b, x, 0.0);
    let nonpos = b.compare(CompareDir::Lt, x, &zero)?;
    let pole = b.and(&integer, &nonpos)?;
    let nan = full(b, x, f64::NAN);
    let y = b.select(&pole, &nan, &y)?;
    let at_zero = b.compare(CompareDir::Eq, x, &zero)?;
    let ninf = full(b, x, f64::NEG_INFINITY);
    Ok(b.select(&at_zero, &ninf, &y)?)
}

/// Euler-Maclaurin coefficients of Cephes' `zeta`.
const ZETA_A: [f64; 12] = [
    12.0,
    -720.0,
    30240.0,
    -1209600.0,
    47900160.0,
    -1.892_437_580_318_379_2e9,
    7.472_424_96e10,
    -2.950_130_727_918_164e12,
    1.164_678_281_435_006_7e14,
    -4.597_978_722_407_473e15,
    1.815_210_540_194_354_7e17,
    -7.166_165_256_175_667e18,
];

/// Terms summed directly before the Euler-Maclaurin tail (Cephes sums until the base
/// passes 9; a fixed count keeps the program static and covers `q >= -(DIRECT - 9)`; below
/// that the result is NaN).
const DIRECT: usize = 40;

/// The Hurwitz zeta function `sum_k (q + k)^-x`, elementwise over `x` and `q` (one shape).
fn zeta_of(b: &mut Builder, x: &Value, q: &Value) -> Result<Value> {
    let nx = b.neg(x);
    let one_v = full(b, x, 1.0);
    let mut a = q.clone();
    let mut s = b.pow(&a, &nx)?;
    for _ in 0..DIRECT {
        a = b.add(&a, &one_v)?;
        let t = b.pow(&a, &nx)?;
        s = b.add(&s, &t)?;
    }
    let w = a;
    let mut bw = b.pow(&w, &nx)?;
    let xm1 = b.sub(x, &one_v)?;
    let tail = b.mul(&bw, &w)?;
    let tail = b.div(&tail, &xm1)?;
    s = b.add(&s, &tail)?;
    let half = full(b, x, 0.5);
    let hb = b.mul(&half, &bw)?;
    s = b.sub(&s, &hb)?;
    let mut acc = one_v.clone();
    let mut k = 0.0;
    for c in ZETA_A {
        let xk = full(b, x, k);
        let xk = b.add(x, &xk)?;
        acc = b.mul(&acc, &xk)?;
        bw = b.div(&bw, &w)?;
        let t = b.mul(&acc, &bw)?;
        // For large x, `acc` overflows where `bw` has underflowed: the term is 0, not NaN
        // (Cephes stops the series before it gets there).
        let lost = b.compare(CompareDir::Ne, &t, &t)?;
        let zero_t = full(b, x, 0.0);
        let t = b.select(&lost, &zero_t, &t)?;
        let c = full(b, x, c);
        let t = b.div(&t, &c)?;
        s = b.add(&s, &t)?;
        let xk1 = full(b, x, k + 1.0);
        let xk1 = b.add(x, &xk1)?;
        acc = b.mul(&acc, &xk1)?;
        bw = b.div(&bw, &w)?;
        k += 2.0;
    }
    // Cephes' domain: inf at x == 1 and at poles q = 0, -1, ...; NaN for x < 1 and for
    // negative q with a non-integer x.
    let inf = full(b, x, f64::INFINITY);
    let nan = full(b, x, f64::NAN);
    let zero = full(b, x, 0.0);
    let fq = b.floor(q);
    let q_int = b.compare(CompareDir::Eq, q, &fq)?;
    let q_nonpos = b.compare(CompareDir::Le, q, &zero)?;
    let pole = b.and(&q_int, &q_nonpos)?;
    let fx = b.floor(x);
    let x_frac = b.compare(CompareDir::Ne, x, &fx)?;
    let q_neg = b.compare(CompareDir::Lt, q, &zero)?;
    let bad_q = b.and(&q_neg, &x_frac)?;
    let x_lt1 = b.compare(CompareDir::Lt, x, &one_v)?;
    let x_eq1 = b.compare(CompareDir::Eq, x, &one_v)?;
    // Below this the fixed number of direct terms no longer reaches the tail's range:
    // NaN rather than a silently inaccurate value.
    let reach = full(b, q, 9.0 - DIRECT as f64);
    let beyond = b.compare(CompareDir::Lt, q, &reach)?;
    let bad_q = b.or(&bad_q, &beyond)?;
    let s = b.select(&bad_q, &nan, &s)?;
    let s = b.select(&pole, &inf, &s)?;
    let s = b.select(&x_lt1, &nan, &s)?;
    Ok(b.select(&x_eq1, &inf, &s)?)
}

/// `special_zeta(self, other)` in its Tensor / Scalar overloads: `zeta(x = self, q = other)`.
fn zeta(ctx: &mut Ctx) -> Result<Vec<Out>> {
    special_binary(ctx, zeta_of)
}

/// `polygamma(n, self)`: digamma for `n = 0`, else `(-1)^(n+1) n! zeta(n + 1, x)`.
fn polygamma(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let n = ctx.int(0)?;
    if n < 0 {
        return Err(crate::Error::Runtime(
            "polygamma(n, x) does not support negative n.".into(),
        ));
    }
    let d = float_dtype(ctx.ty(1)?.dtype, ctx.default_float());
    let wide = opmath(d);
    let x = ctx.tensor(1)?;
    let b = &mut ctx.b;
    let x = b.convert(&x, wide);
    let y = if n == 0 {
        digamma_of(b, &x)?
    } else {
        let order = full(b, &x, n as f64 + 1.0);
        let z = zeta_of(b, &order, &x)?;
        let factorial: f64 = (1..=n).map(|k| k as f64).product();
        let sign = if n % 2 == 1 { 1.0 } else { -1.0 };
        let c = full(b, &x, sign * factorial);
        b.mul(&c, &z)?
    };
    one(b.convert(&y, d))
}

/// Applies `f` in the float's opmath dtype (f32, or f64) to argument 0 promoted to a float
/// dtype.
pub(crate) fn special(
    ctx: &mut Ctx,
    f: fn(&mut Builder, &Value) -> Result<Value>,
) -> Result<Vec<Out>> {
    let d = float_dtype(ctx.ty(0)?.dtype, ctx.default_float());
    let wide = opmath(d);
    let x = ctx.tensor(0)?;
    let x = ctx.b.convert(&x, wide);
    let y = f(&mut ctx.b, &x)?;
    one(ctx.b.convert(&y, d))
}

/// Applies `f` in the opmath dtype to arguments 0 and 1, promoted together to a float
/// dtype and broadcast.
pub(crate) fn special_binary(
    ctx: &mut Ctx,
    f: fn(&mut Builder, &Value, &Value) -> Result<Value>,
) -> Result<Vec<Out>> {
    let d = float_dtype(common_dtype(ctx, &[0, 1])?, ctx.default_float());
    let v = operands(ctx, &[0, 1], opmath(d))?;
    let y = f(&mut ctx.b, &v[0], &v[1])?;
    one(ctx.b.convert(&y, d))
}

/// `erfinv(y)` as CPU PyTorch computes it: Pavlis' rational approximation (one form for
/// `|y| <= 0.7`, one for the tails), then two Newton steps; `+-inf` at `+-1`, NaN outside
/// `[-1, 1]`. (A closed-form start with three Newton steps on `erf` was wrong by far in the
/// tails: erfinv(1 - 1e-9) came out as -74.)
fn erfinv_of(b: &mut Builder, y: &Value) -> Result<Value> {
    let one_v = full(b, y, 1.0);
    let a = b.abs(y);
    let rest = b.sub(&one_v, &a)?;
    erfinv_with_rest(b, y, &rest)
}

/// `erfinv(y)` given `1 - |y|` (`rest`), which a caller may know more precisely than `y`.
fn erfinv_with_rest(b: &mut Builder, y: &Value, rest_full: &Value) -> Result<Value> {
    const A: [f64; 4] = [0.886226899, -1.645349621, 0.914624893, -0.140543331];
    const B: [f64; 4] = [-2.118377725, 1.442710462, -0.329097515, 0.012229801];
    const C: [f64; 4] = [-1.970840454, -1.624906493, 3.429567803, 1.641345311];
    const D: [f64; 2] = [3.543889200, 1.637067800];
    let one_v = full(b, y, 1.0);
    let a = b.abs(y);
    // Central range: y * A(z) / (B(z) z + 1) with z = y^2.
    let z = b.mul(y, y)?;
    let num = polevl(b, &z, &[A[3], A[2], A[1], A[0]])?;
    let den = polevl(b, &z, &[B[3], B[2], B[1], B[0]])?;
    let den = b.mul(&den, &z)?;
    let den = b.add(&den, &one_v)?;
    let central = b.mul(y, &num)?;
    let central = b.div(&central, &den)?;
    // Tails: C(z) / (D(z) z + 1) with z = sqrt(-log((1 - |y|) / 2)), y's sign.
    let half = full(b, y, 0.5);
    let rest = b.mul(rest_full, &half)?;
    let l = b.log(&rest);
    let l = b.neg(&l);
    let z = b.sqrt(&l);
    let num = polevl(b, &z, &[C[3], C[2], C[1], C[0]])?;
    let den = polevl(b, &z, &[D[1], D[0]])?;
    let den = b.mul(&den, &z)?;
    let den = b.add(&den, &one_v)?;
    let num = with_sign_of(b, &num, y)?;
    let tail = b.div(&num, &den)?;
    let limit = full(b, y, 0.7);
    let in_center = b.compare(CompareDir::Le, &a, &limit)?;
    let x = b.select(&in_center, &central, &tail)?;
    // Newton steps on |x|; in the tails on `erf(x) - |y| = (1 - |y|) - erfc(x)`, which does
    // not cancel (`erf(x) - |y|` loses all digits of a float there).
    let mut x = b.abs(&x);
    let two_over_sqrt_pi = full(b, y, std::f64::consts::FRAC_2_SQRT_PI);
    for _ in 0..2 {
        let e = erf_of(b, &x)?;
        let near = b.sub(&e, &a)?;
        let c = erfc_of(b, &x)?;
        let far = b.sub(rest_full, &c)?;
        let diff = b.select(&in_center, &near, &far)?;
        let xx = b.mul(&x, &x)?;
        let nxx = b.neg(&xx);
        let slope = b.exp(&nxx);
        let slope = b.mul(&two_over_sqrt_pi, &slope)?;
        let step = b.div(&diff, &slope)?;
        x = b.sub(&x, &step)?;
    }
    let x = with_sign_of(b, &x, y)?;
    // The ends and beyond, from `rest` (ndtri's 2p - 1 rounds to -1 long before p is 0).
    let zero = full(b, y, 0.0);
    let at_one = b.compare(CompareDir::Eq, rest_full, &zero)?;
    let inf = full(b, y, f64::INFINITY);
    let signed_inf = with_sign_of(b, &inf, y)?;
    let x = b.select(&at_one, &signed_inf, &x)?;
    let outside = b.compare(CompareDir::Lt, rest_full, &zero)?;
    let nan = full(b, y, f64::NAN);
    Ok(b.select(&outside, &nan, &x)?)
}

/// `special_ndtri(p)`: the standard normal quantile, `sqrt(2) erfinv(2p - 1)`.
fn ndtri_of(b: &mut Builder, p: &Value) -> Result<Value> {
    let two = full(b, p, 2.0);
    let one_v = full(b, p, 1.0);
    let t = b.mul(p, &two)?;
    let t = b.sub(&t, &one_v)?;
    // 1 - |2p - 1| is 2 min(p, 1 - p), exact where 2p - 1 has lost p's low digits.
    let q = b.sub(&one_v, p)?;
    let m = b.min(p, &q)?;
    let rest = b.mul(&m, &two)?;
    let y = erfinv_with_rest(b, &t, &rest)?;
    let r2 = full(b, p, std::f64::consts::SQRT_2);
    Ok(b.mul(&y, &r2)?)
}

/// `special_spherical_bessel_j0(x)`: `sin(x) / x`, 1 at 0, 0 at infinity.
fn spherical_j0_of(b: &mut Builder, x: &Value) -> Result<Value> {
    let s = b.sin(x);
    let q = b.div(&s, x)?;
    let zero = full(b, x, 0.0);
    let at_zero = b.compare(CompareDir::Eq, x, &zero)?;
    let one_v = full(b, x, 1.0);
    let q = b.select(&at_zero, &one_v, &q)?;
    let a = b.abs(x);
    let inf = full(b, x, f64::INFINITY);
    let at_inf = b.compare(CompareDir::Eq, &a, &inf)?;
    Ok(b.select(&at_inf, &zero, &q)?)
}

/// `special_entr(x)`: `-x ln x` for `x > 0`, 0 at 0, `-inf` below (NaN stays NaN).
fn entr_of(b: &mut Builder, x: &Value) -> Result<Value> {
    let l = b.log(x);
    let p = b.mul(x, &l)?;
    let v = b.neg(&p);
    let zero = full(b, x, 0.0);
    let is_zero = b.compare(CompareDir::Eq, x, &zero)?;
    let negative = b.compare(CompareDir::Lt, x, &zero)?;
    let v = b.select(&is_zero, &zero, &v)?;
    let ninf = full(b, x, f64::NEG_INFINITY);
    Ok(b.select(&negative, &ninf, &v)?)
}

pub(crate) fn register(reg: &mut Registry) {
    reg.ops(&["erfinv", "erfinv_", "erfinv.out"], |ctx| {
        special(ctx, erfinv_of)
    });
    reg.ops(&["special_ndtri", "special_ndtri.out"], |ctx| {
        special(ctx, ndtri_of)
    });
    reg.ops(
        &[
            "special_spherical_bessel_j0",
            "special_spherical_bessel_j0.out",
        ],
        |ctx| special(ctx, spherical_j0_of),
    );
    reg.ops(&["special_entr", "special_entr.out"], |ctx| {
        special(ctx, entr_of)
    });
    reg.ops(&["lgamma", "lgamma_", "lgamma.out"], |ctx| {
        special(ctx, lgamma_of)
    });
    reg.ops(&["digamma", "digamma_", "digamma.out"], |ctx| {
        special(ctx, digamma_of)
    });
    reg.ops(&["polygamma", "polygamma.out"], polygamma);
    reg.ops(
        &[
            "special_zeta",
            "special_zeta.other_scalar",
            "special_zeta.self_scalar",
            "special_zeta.out",
            "special_zeta.self_scalar_out",
            "special_zeta.other_scalar_out",
        ],
        zeta,
    );
}
