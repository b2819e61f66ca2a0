//! Special functions: `lgamma` and `digamma` by the Lanczos approximation (g = 7, nine
//! terms; about 1e-7 relative in f32) with the reflection formula below 1/2, computed in
//! f32 or wider.

use tpurs_hlo::{Builder, CompareDir, DType, Value};

use super::{float_dtype, full, one};
use crate::ctx::{Ctx, Out};
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

/// `pi * x` reduced so that `sin` / `cos` of it stay accurate for large `|x|`.
fn pi_times_frac(b: &mut Builder, x: &Value) -> Result<Value> {
    let a = b.abs(x);
    let f = b.floor(&a);
    let frac = b.sub(&a, &f)?;
    let pi = full(b, x, std::f64::consts::PI);
    Ok(b.mul(&frac, &pi)?)
}

fn lgamma_of(b: &mut Builder, x: &Value) -> Result<Value> {
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
    let s = pi_times_frac(b, x)?;
    let s = b.sin(&s);
    let s = b.abs(&s);
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
    let s = pi_times_frac(b, x)?;
    let (sn, cs) = (b.sin(&s), b.cos(&s));
    let sign = b.sign(x);
    let cot = b.div(&cs, &sn)?;
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

/// Applies `f` in f32 (or f64) to argument 0 promoted to a float dtype.
fn special(ctx: &mut Ctx, f: fn(&mut Builder, &Value) -> Result<Value>) -> Result<Vec<Out>> {
    let d = float_dtype(ctx.ty(0)?.dtype, ctx.default_float());
    let wide = if d == DType::F64 {
        DType::F64
    } else {
        DType::F32
    };
    let x = ctx.tensor(0)?;
    let x = ctx.b.convert(&x, wide);
    let y = f(&mut ctx.b, &x)?;
    one(ctx.b.convert(&y, d))
}

pub(crate) fn register(reg: &mut Registry) {
    reg.ops(&["lgamma", "lgamma_", "lgamma.out"], |ctx| {
        special(ctx, lgamma_of)
    });
    reg.ops(&["digamma", "digamma_", "digamma.out"], |ctx| {
        special(ctx, digamma_of)
    });
}
