//! Orthogonal polynomials of `torch.special` (`*_polynomial_*(x, n)`): Chebyshev T, U, V, W
//! and their shifted forms, Hermite H and He, Laguerre L and Legendre P, by their three-term
//! recurrences in one `stablehlo.while` that runs to the largest degree of the batch (each
//! element keeps its value once its own degree is reached). `n` is truncated to an integer;
//! a negative degree gives 0.

use tpurs_hlo::{Builder, CompareDir, DType, Literal, Value};

use super::{common_dtype, float_dtype, one, operands, try_while};
use crate::ctx::{Ctx, Out};
use crate::dtype::opmath;
use crate::error::Result;
use crate::table::Registry;

/// A family: its degree-1 polynomial and its step `P_{k+1}` from `k`, `x`, `P_{k-1}`, `P_k`.
struct Family {
    first: fn(&mut Builder, &Value) -> Result<Value>,
    next: fn(&mut Builder, &Value, &Value, &Value, &Value) -> Result<Value>,
    /// The shifted Chebyshev forms evaluate at `2x - 1`.
    shifted: bool,
}

fn c(b: &mut Builder, like: &Value, v: f64) -> Value {
    b.full_like(like, Literal::Float(v))
}

fn x1(_: &mut Builder, x: &Value) -> Result<Value> {
    Ok(x.clone())
}

fn two_x(b: &mut Builder, x: &Value) -> Result<Value> {
    Ok(b.add(x, x)?)
}

fn two_x_minus_1(b: &mut Builder, x: &Value) -> Result<Value> {
    let t = b.add(x, x)?;
    let one_v = c(b, x, 1.0);
    Ok(b.sub(&t, &one_v)?)
}

fn two_x_plus_1(b: &mut Builder, x: &Value) -> Result<Value> {
    let t = b.add(x, x)?;
    let one_v = c(b, x, 1.0);
    Ok(b.add(&t, &one_v)?)
}

fn one_minus_x(b: &mut Builder, x: &Value) -> Result<Value> {
    let one_v = c(b, x, 1.0);
    Ok(b.sub(&one_v, x)?)
}

/// `2x q - p` (Chebyshev).
fn chebyshev(b: &mut Builder, _k: &Value, x: &Value, p: &Value, q: &Value) -> Result<Value> {
    let t = b.add(x, x)?;
    let t = b.mul(&t, q)?;
    Ok(b.sub(&t, p)?)
}

/// `2x q - 2k p` (physicists' Hermite).
fn hermite_h(b: &mut Builder, k: &Value, x: &Value, p: &Value, q: &Value) -> Result<Value> {
    let t = b.add(x, x)?;
    let t = b.mul(&t, q)?;
    let kk = b.add(k, k)?;
    let s = b.mul(&kk, p)?;
    Ok(b.sub(&t, &s)?)
}

/// `x q - k p` (probabilists' Hermite).
fn hermite_he(b: &mut Builder, k: &Value, x: &Value, p: &Value, q: &Value) -> Result<Value> {
    let t = b.mul(x, q)?;
    let s = b.mul(k, p)?;
    Ok(b.sub(&t, &s)?)
}

/// `((2k + 1 - x) q - k p) / (k + 1)` (Laguerre).
fn laguerre(b: &mut Builder, k: &Value, x: &Value, p: &Value, q: &Value) -> Result<Value> {
    let one_v = c(b, x, 1.0);
    let kk = b.add(k, k)?;
    let a = b.add(&kk, &one_v)?;
    let a = b.sub(&a, x)?;
    let t = b.mul(&a, q)?;
    let s = b.mul(k, p)?;
    let num = b.sub(&t, &s)?;
    let den = b.add(k, &one_v)?;
    Ok(b.div(&num, &den)?)
}

/// `((2k + 1) x q - k p) / (k + 1)` (Legendre).
fn legendre(b: &mut Builder, k: &Value, x: &Value, p: &Value, q: &Value) -> Result<Value> {
    let one_v = c(b, x, 1.0);
    let kk = b.add(k, k)?;
    let a = b.add(&kk, &one_v)?;
    let t = b.mul(&a, x)?;
    let t = b.mul(&t, q)?;
    let s = b.mul(k, p)?;
    let num = b.sub(&t, &s)?;
    let den = b.add(k, &one_v)?;
    Ok(b.div(&num, &den)?)
}

fn family(name: &str) -> Family {
    let shifted = name.contains("shifted");
    let (first, next): (fn(&mut Builder, &Value) -> Result<Value>, _) = match name {
        n if n.contains("chebyshev_polynomial_t") => (x1 as _, chebyshev as _),
        n if n.contains("chebyshev_polynomial_u") => (two_x as _, chebyshev as _),
        n if n.contains("chebyshev_polynomial_v") => (two_x_minus_1 as _, chebyshev as _),
        n if n.contains("chebyshev_polynomial_w") => (two_x_plus_1 as _, chebyshev as _),
        n if n.contains("hermite_polynomial_he") => (x1 as _, hermite_he as _),
        n if n.contains("hermite_polynomial_h") => (two_x as _, hermite_h as _),
        n if n.contains("laguerre") => (one_minus_x as _, laguerre as _),
        _ => (x1 as _, legendre as _),
    };
    Family {
        first,
        next,
        shifted,
    }
}

fn polynomial(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let fam = family(ctx.name);
    let dtype = float_dtype(common_dtype(ctx, &[0, 1])?, ctx.default_float());
    let wide = opmath(dtype);
    let v = operands(ctx, &[0, 1], wide)?;
    let b = &mut ctx.b;
    let x = if fam.shifted {
        two_x_minus_1(b, &v[0])?
    } else {
        v[0].clone()
    };
    let n = b.convert(&v[1], DType::I64);
    let n = b.convert(&n, wide); // truncated degree
    let p0 = c(b, &x, 1.0);
    let p1 = (fam.first)(b, &x)?;
    let init = b.scalar_like(&n, Literal::Float(0.0));
    let top = b.reduce(
        &n,
        &init,
        &(0..n.rank() as i64).collect::<Vec<_>>(),
        |b, p, q| b.max(p, q).expect("same types"),
    );
    let k0 = b.constant(Literal::Float(1.0), wide);
    let out = try_while(
        b,
        &[&k0, &p0, &p1],
        |b, s| Ok(b.compare(CompareDir::Lt, &s[0], &top)?),
        |b, s| {
            let k = b.broadcast_in_dim(&s[0], x.shape(), &[])?;
            let r = (fam.next)(b, &k, &x, &s[1], &s[2])?;
            let going = b.compare(CompareDir::Lt, &k, &n)?;
            let p = b.select(&going, &s[2], &s[1])?;
            let q = b.select(&going, &r, &s[2])?;
            let one_s = b.constant(Literal::Float(1.0), k.dtype());
            Ok(vec![b.add(&s[0], &one_s)?, p, q])
        },
    )?;
    let zero = c(b, &n, 0.0);
    let is_zero = b.compare(CompareDir::Eq, &n, &zero)?;
    let negative = b.compare(CompareDir::Lt, &n, &zero)?;
    let y = b.select(&is_zero, &p0, &out[2])?;
    let y = b.select(&negative, &zero, &y)?;
    one(b.convert(&y, dtype))
}

pub(crate) fn register(reg: &mut Registry) {
    let families = [
        "special_chebyshev_polynomial_t",
        "special_chebyshev_polynomial_u",
        "special_chebyshev_polynomial_v",
        "special_chebyshev_polynomial_w",
        "special_shifted_chebyshev_polynomial_t",
        "special_shifted_chebyshev_polynomial_u",
        "special_shifted_chebyshev_polynomial_v",
        "special_shifted_chebyshev_polynomial_w",
        "special_hermite_polynomial_h",
        "special_hermite_polynomial_he",
        "special_laguerre_polynomial_l",
        "special_legendre_polynomial_p",
    ];
    for f in families {
        let names: Vec<&'static str> = [
            "",
            ".out",
            ".x_scalar",
            ".x_scalar_out",
            ".n_scalar",
            ".n_scalar_out",
        ]
        .iter()
        .map(|o| &*Box::leak(format!("{f}{o}").into_boxed_str()))
        .collect();
        reg.ops(&names, polynomial);
    }
}
