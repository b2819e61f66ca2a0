//! The error function and its relatives: `erf`, `erfc` by Cephes' rational
//! approximations (with `exp(-x^2)` split so that its argument carries no rounding error),
//! `special_erfcx` (`exp(x^2) erfc(x)`: the same rationals without the exponential, and
//! ATen's continued fraction above 50) and `special_log_ndtr` built on both as ATen does.
//! Computed in f32 or f64; both sides of each range boundary are evaluated and `select`ed.

use tpurs_hlo::{Builder, CompareDir, DType, Literal, Value};

use super::special::special;
use super::{full, polevl};
use crate::error::Result;
use crate::table::Registry;

/// `erf(x) = x T(x^2) / U(x^2)` on `|x| < 1`.
const T: [f64; 5] = [
    9.604973739870516,
    90.02601972038427,
    2232.005345946843,
    7003.325141128051,
    55592.30130103949,
];
const U: [f64; 6] = [
    1.0,
    33.56171416475031,
    521.3579497801527,
    4594.323829709801,
    22629.000061389095,
    49267.39426086359,
];
/// `exp(x^2) erfc(x) = P(x) / Q(x)` on `[1, 8)`.
const P: [f64; 9] = [
    2.461969814735305e-10,
    0.5641895648310689,
    7.463210564422699,
    48.63719709856814,
    196.5208329560771,
    526.4451949954773,
    934.5285271719576,
    1027.5518868951572,
    557.5353353693994,
];
const Q: [f64; 9] = [
    1.0,
    13.228195115474499,
    86.70721408859897,
    354.9377788878199,
    975.7085017432055,
    1823.9091668790973,
    2246.3376081871097,
    1656.6630919416134,
    557.5353408177277,
];
/// `exp(x^2) erfc(x) = R(x) / S(x)` on `[8, 50]`.
const R: [f64; 6] = [
    0.5641895835477551,
    1.275366707599781,
    5.019050422511805,
    6.160210979930536,
    7.4097426995044895,
    2.9788666537210022,
];
const S: [f64; 7] = [
    1.0,
    2.2605286322011726,
    9.396035249380015,
    12.048953980809666,
    17.08144507475659,
    9.608968090632859,
    3.369076451000815,
];

/// `1 / sqrt(pi)`.
const ISPI: f64 = 0.5641895835477563;

fn ratio(b: &mut Builder, x: &Value, num: &[f64], den: &[f64]) -> Result<Value> {
    let n = polevl(b, x, num)?;
    let d = polevl(b, x, den)?;
    Ok(b.div(&n, &d)?)
}

/// `erf(x)` for `|x| < 1`.
fn erf_small(b: &mut Builder, x: &Value) -> Result<Value> {
    let z = b.mul(x, x)?;
    let r = ratio(b, &z, &T, &U)?;
    Ok(b.mul(x, &r)?)
}

/// `erf(x)`. Below f64, the rational approximation XLA uses for f32 (about 1e-7 absolute)
/// in f32, kept inside [-1, 1] (it gave -1.0000008 near -4). In f64, Cephes' rational on
/// `|x| < 1` and `1 - erfc(x)` outside: the f32 rational was off by 7e-7 there, and erfinv's
/// Newton steps on it by 1e-5.
pub(crate) fn erf_of(b: &mut Builder, x: &Value) -> Result<Value> {
    let dtype = x.dtype();
    if dtype == DType::F64 {
        let e = erf_small(b, x)?;
        let c = erfc_of(b, x)?;
        let one_v = full(b, x, 1.0);
        let wide = b.sub(&one_v, &c)?;
        let a = b.abs(x);
        let inside = b.compare(CompareDir::Lt, &a, &one_v)?;
        return Ok(b.select(&inside, &e, &wide)?);
    }
    const ALPHA: [f64; 5] = [
        0.00022905065861350646,
        0.0034082910107109506,
        0.050_955_695_062_380_86,
        0.18520832239976145,
        1.128379143519084,
    ];
    const BETA: [f64; 7] = [
        -1.1791602954361697e-7,
        0.000023547966471313185,
        0.0010179625278914885,
        0.014070470171167667,
        0.11098505178285362,
        0.497_469_251_100_675_4,
        1.0,
    ];
    let xw = b.convert(x, DType::F32);
    let lo = b.constant(Literal::Float(-4.0), DType::F32);
    let hi = b.constant(Literal::Float(4.0), DType::F32);
    let xc = b.clamp(&lo, &xw, &hi);
    let x2 = b.mul(&xc, &xc)?;
    let poly = |b: &mut Builder, coeffs: &[f64]| -> Result<Value> {
        let mut acc = full(b, &x2, coeffs[0]);
        for &c in &coeffs[1..] {
            let m = b.mul(&acc, &x2)?;
            let k = full(b, &x2, c);
            acc = b.add(&m, &k)?;
        }
        Ok(acc)
    };
    let p = poly(b, &ALPHA)?;
    let q = poly(b, &BETA)?;
    let num = b.mul(&xc, &p)?;
    let r = b.div(&num, &q)?;
    let (lo, hi) = (
        b.full_like(&r, Literal::Float(-1.0)),
        b.full_like(&r, Literal::Float(1.0)),
    );
    let r = b.clamp(&lo, &r, &hi);
    Ok(b.convert(&r, dtype))
}

/// `exp(a^2) erfc(a)` for `a >= 1` (NaN stays NaN). Above 50 the rationals would overflow
/// in f32: ATen's five-term continued fraction, and its one-term form above 5e7.
fn erfcx_large(b: &mut Builder, a: &Value) -> Result<Value> {
    let pq = ratio(b, a, &P, &Q)?;
    let rs = ratio(b, a, &R, &S)?;
    let a2 = b.mul(a, a)?;
    let c = full(b, a, 4.5);
    let n = b.add(&a2, &c)?;
    let n = b.mul(&a2, &n)?;
    let c = full(b, a, 2.0);
    let n = b.add(&n, &c)?;
    let ispi = full(b, a, ISPI);
    let n = b.mul(&ispi, &n)?;
    let c = full(b, a, 5.0);
    let d = b.add(&a2, &c)?;
    let d = b.mul(&a2, &d)?;
    let c = full(b, a, 3.75);
    let d = b.add(&d, &c)?;
    let d = b.mul(a, &d)?;
    let cf = b.div(&n, &d)?;
    let one_term = b.div(&ispi, a)?;
    let eight = full(b, a, 8.0);
    let below = b.compare(CompareDir::Lt, a, &eight)?;
    let y = b.select(&below, &pq, &rs)?;
    let fifty = full(b, a, 50.0);
    let above = b.compare(CompareDir::Gt, a, &fifty)?;
    let y = b.select(&above, &cf, &y)?;
    let huge = full(b, a, 5e7);
    let above = b.compare(CompareDir::Gt, a, &huge)?;
    Ok(b.select(&above, &one_term, &y)?)
}

/// `exp(-a^2)` as `exp(-m^2) exp(-(2m + f) f)` with `m` = `a` rounded to 1/128 and
/// `f = a - m`: `m^2` is exact, so the large part of the exponent is not rounded (Cephes'
/// `expx2`).
fn exp_neg_sq(b: &mut Builder, a: &Value) -> Result<Value> {
    let k = full(b, a, 128.0);
    let half = full(b, a, 0.5);
    let m = b.mul(a, &k)?;
    let m = b.add(&m, &half)?;
    let m = b.floor(&m);
    let m = b.div(&m, &k)?;
    let f = b.sub(a, &m)?;
    let u = b.mul(&m, &m)?;
    let u = b.neg(&u);
    let t = b.add(&m, &m)?;
    let t = b.add(&t, &f)?;
    let t = b.mul(&t, &f)?;
    let t = b.neg(&t);
    let e1 = b.exp(&u);
    let e2 = b.exp(&t);
    Ok(b.mul(&e1, &e2)?)
}

/// `erfc(x)`: `1 - erf(x)` inside `(-1, 1)`, `exp(-x^2) erfcx(|x|)` outside (reflected as
/// `2 - erfc(-x)` for negative x); `|x|` is capped at 30, where erfc is 0 in f64 too.
pub(crate) fn erfc_of(b: &mut Builder, x: &Value) -> Result<Value> {
    let a = b.abs(x);
    let one_v = full(b, x, 1.0);
    let e = erf_small(b, x)?;
    let small = b.sub(&one_v, &e)?;
    let cap = full(b, x, 30.0);
    let capped = b.compare(CompareDir::Gt, &a, &cap)?;
    let ac = b.select(&capped, &cap, &a)?;
    let g = exp_neg_sq(b, &ac)?;
    let r = erfcx_large(b, &ac)?;
    let big = b.mul(&g, &r)?;
    let two = full(b, x, 2.0);
    let reflected = b.sub(&two, &big)?;
    let zero = full(b, x, 0.0);
    let negative = b.compare(CompareDir::Lt, x, &zero)?;
    let big = b.select(&negative, &reflected, &big)?;
    let inside = b.compare(CompareDir::Lt, &a, &one_v)?;
    Ok(b.select(&inside, &small, &big)?)
}

/// `erfcx(x) = exp(x^2) erfc(x)`; `2 exp(x^2) - erfcx(-x)` for negative x (inf once the
/// exponential overflows, as in ATen).
pub(crate) fn erfcx_of(b: &mut Builder, x: &Value) -> Result<Value> {
    let a = b.abs(x);
    let one_v = full(b, x, 1.0);
    let x2 = b.mul(x, x)?;
    let ex2 = b.exp(&x2);
    let e = erf_small(b, &a)?;
    let small = b.sub(&one_v, &e)?;
    let small = b.mul(&ex2, &small)?;
    let large = erfcx_large(b, &a)?;
    let inside = b.compare(CompareDir::Lt, &a, &one_v)?;
    let pos = b.select(&inside, &small, &large)?;
    let twice = b.add(&ex2, &ex2)?;
    let neg = b.sub(&twice, &pos)?;
    let zero = full(b, x, 0.0);
    let negative = b.compare(CompareDir::Lt, x, &zero)?;
    Ok(b.select(&negative, &neg, &pos)?)
}

/// `log(ndtr(x))` as ATen: `log(erfcx(-t) / 2) - t^2` with `t = x / sqrt(2)` below -1 (no
/// underflow in the far tail), `log1p(-erfc(t) / 2)` above.
fn log_ndtr_of(b: &mut Builder, x: &Value) -> Result<Value> {
    let s = full(b, x, std::f64::consts::FRAC_1_SQRT_2);
    let t = b.mul(x, &s)?;
    let half = full(b, x, 0.5);
    let nt = b.neg(&t);
    let ex = erfcx_of(b, &nt)?;
    let ex = b.mul(&ex, &half)?;
    let l = b.log(&ex);
    let t2 = b.mul(&t, &t)?;
    let lower = b.sub(&l, &t2)?;
    let ec = erfc_of(b, &t)?;
    let ec = b.mul(&ec, &half)?;
    let ec = b.neg(&ec);
    let upper = b.log1p(&ec);
    let m1 = full(b, x, -1.0);
    let below = b.compare(CompareDir::Lt, x, &m1)?;
    Ok(b.select(&below, &lower, &upper)?)
}

pub(crate) fn register(reg: &mut Registry) {
    reg.ops(&["erfc", "erfc_", "erfc.out"], |ctx| special(ctx, erfc_of));
    unary!(reg, erfcx_of, "special_erfcx");
    unary!(reg, log_ndtr_of, "special_log_ndtr");
}
