//! `linalg_matrix_exp` as ATen computes it (Bader, Blanes and Casas' optimized Taylor
//! polynomials): each matrix's 1-norm picks degree 1, 2, 4, 8 or 12, or above that degree
//! 18 of the matrix scaled by `2^-s`, squared `s` times. The choice is data, made per matrix
//! inside the program: every candidate is computed and selected, and a loop squares while
//! any matrix still needs it. The same formulas with the same coefficients keep rounding
//! close to CPU's, which matters where squaring amplifies it. Its backward is ATen's
//! composite one (a matrix exponential of a block matrix), which lands here again.

// ATen's coefficients are kept digit for digit, beyond what an f64 holds.
#![allow(clippy::excessive_precision)]

use tpurs_hlo::{Builder, CompareDir, DType, Literal, Value};

use super::combine::{add_c, max_c};
use super::linalg::{batch_matmul, identity_like};
use super::{one, try_while};
use crate::ctx::{Ctx, Out};
use crate::dtype::{opmath, torch_name};
use crate::error::{runtime, Error, Result};
use crate::table::Registry;

/// `sum_j c[j] * m[j]`, accumulated in order (ATen's `_compute_linear_combination`).
fn combine(b: &mut Builder, ms: &[&Value], c: &[f64]) -> Result<Value> {
    let mut acc: Option<Value> = None;
    for (m, &c) in ms.iter().zip(c) {
        let k = b.full_like(m, Literal::Float(c));
        let t = b.mul(m, &k)?;
        acc = Some(match acc {
            None => t,
            Some(a) => b.add(&a, &t)?,
        });
    }
    Ok(acc.expect("at least one term"))
}

/// ATen's Taylor approximants of degree 1, 2, 4, 8 and 12 of `x` (powers `x2 = x x`,
/// `x3 = x x2`), evaluated as `compute_T*` do (Bader, Blanes and Casas).
fn low_degrees(
    b: &mut Builder,
    i: &Value,
    x: &Value,
    x2: &Value,
    x3: &Value,
) -> Result<Vec<Value>> {
    let t1 = b.add(i, x)?;
    let half = combine(b, &[x2], &[0.5])?;
    let t2 = b.add(&t1, &half)?;
    let inner = combine(b, &[i, x, x2], &[1.0 / 2.0, 1.0 / 6.0, 1.0 / 24.0])?;
    let p = batch_matmul(b, x2, &inner)?;
    let t4 = combine(b, &[i, x, x2, &p], &[1.0, 1.0, 0.0, 1.0])?;
    let sqrt_177 = 0.1330413469565007072504e+2;
    let x3c = 2.0 / 3.0;
    let c1 = x3c * ((1.0 + sqrt_177) / 88.0);
    let c2 = x3c * ((1.0 + sqrt_177) / 352.0);
    let c4 = (-271.0 + 29.0 * sqrt_177) / (315.0 * x3c);
    let c5 = (-11.0 + 11.0 * sqrt_177) / (1260.0 * x3c);
    let c6 = (-99.0 + 11.0 * sqrt_177) / (5040.0 * x3c);
    let c7 = (89.0 - sqrt_177) / (5040.0 * x3c);
    let y2 = (857.0 - 58.0 * sqrt_177) / 630.0;
    let l = combine(b, &[x, x2], &[c1, c2])?;
    let a4 = batch_matmul(b, x2, &l)?;
    let l = combine(b, &[x2, &a4], &[x3c, 1.0])?;
    let r = combine(b, &[i, x, x2, &a4], &[c4, c5, c6, c7])?;
    let a8 = batch_matmul(b, &l, &r)?;
    let t8 = combine(b, &[i, x, x2, &a4, &a8], &[1.0, 1.0, y2, 0.0, 1.0])?;
    let t12 = degree12(b, &[i, x, x2, x3])?;
    Ok(vec![t1, t2, t4, t8, t12])
}

/// `compute_T12`.
fn degree12(b: &mut Builder, pows: &[&Value]) -> Result<Value> {
    const C: [[f64; 4]; 4] = [
        [
            9.0198e-16,
            0.46932117595418237389,
            -0.20099424927047284052,
            -0.04623946134063071740,
        ],
        [
            5.31597895759871264183,
            1.19926790417132231573,
            0.01179296240992997031,
            0.01108844528519167989,
        ],
        [
            0.18188869982170434744,
            0.05502798439925399070,
            0.09351590770535414968,
            0.00610700528898058230,
        ],
        [
            -2.0861320e-13,
            -0.13181061013830184015,
            -0.02027855540589259079,
            -0.00675951846863086359,
        ],
    ];
    let bs: Vec<Value> = C
        .iter()
        .map(|c| combine(b, pows, c))
        .collect::<Result<_>>()?;
    let sq = batch_matmul(b, &bs[3], &bs[3])?;
    let a6 = b.add(&bs[2], &sq)?;
    let l = b.add(&bs[1], &a6)?;
    let p = batch_matmul(b, &l, &a6)?;
    Ok(b.add(&bs[0], &p)?)
}

/// `compute_T18`.
fn degree18(b: &mut Builder, i: &Value, x: &Value) -> Result<Value> {
    const C: [[f64; 5]; 5] = [
        [
            0.0,
            -1.00365581030144618291e-01,
            -8.02924648241156932449e-03,
            -8.92138498045729985177e-04,
            0.0,
        ],
        [
            0.0,
            3.97849749499645077844e-01,
            1.36783778460411720168e+00,
            4.98289622525382669416e-01,
            -6.37898194594723280150e-04,
        ],
        [
            -1.09676396052962061844e+01,
            1.68015813878906206114e+00,
            5.71779846478865511061e-02,
            -6.98210122488052056106e-03,
            3.34975017086070470649e-05,
        ],
        [
            -9.04316832390810593223e-02,
            -6.76404519071381882256e-02,
            6.75961301770459654925e-02,
            2.95552570429315521194e-02,
            -1.39180257516060693404e-05,
        ],
        [
            0.0,
            0.0,
            -9.23364619367118555360e-02,
            -1.69364939002081722752e-02,
            -1.40086798182036094347e-05,
        ],
    ];
    let x2 = batch_matmul(b, x, x)?;
    let x3 = batch_matmul(b, x, &x2)?;
    let x6 = batch_matmul(b, &x3, &x3)?;
    let pows = [i, x, &x2, &x3, &x6];
    let bs: Vec<Value> = C
        .iter()
        .map(|c| combine(b, &pows, c))
        .collect::<Result<_>>()?;
    let a9 = batch_matmul(b, &bs[0], &bs[4])?;
    let b3 = b.add(&bs[3], &a9)?;
    let l = b.add(&bs[2], &b3)?;
    let p = batch_matmul(b, &l, &b3)?;
    Ok(b.add(&bs[1], &p)?)
}

/// The norm bounds up to which degrees 1, 2, 4, 8, 12 and 18 are accurate (ATen's, float32
/// ones for float32 and complex64, float64 ones otherwise).
fn thetas(d: DType) -> [f64; 6] {
    if matches!(d, DType::F32 | DType::C64) {
        [
            1.192092800768788e-07,
            5.978858893805233e-04,
            5.116619363445086e-02,
            5.800524627688768e-01,
            1.461661507209034e+00,
            3.010066362817634e+00,
        ]
    } else {
        [
            2.220446049250313e-16,
            2.580956802971767e-08,
            3.397168839976962e-04,
            4.991228871115323e-02,
            2.996158913811580e-01,
            1.090863719290036e+00,
        ]
    }
}

/// `linalg_matrix_exp(self)` and `out=`.
fn linalg_matrix_exp(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let op = "linalg.matrix_exp";
    let ty = ctx.ty(0)?;
    let r = ty.rank();
    if r < 2 {
        return runtime(format!(
            "{op}: The input tensor A must have at least 2 dimensions."
        ));
    }
    let n = ty.shape[r - 1];
    if ty.shape[r - 2] != n {
        return runtime(format!(
            "{op}: A must be batches of square matrices, but they are {} by {n} matrices",
            ty.shape[r - 2]
        ));
    }
    if !ty.dtype.is_float() && !ty.dtype.is_complex() {
        return Err(Error::NotImplemented(format!(
            "{op}: Expected a floating point or complex tensor as input. Got {}",
            torch_name(ty.dtype)
        )));
    }
    let x = ctx.tensor(0)?;
    if ty.numel() == 0 {
        return one(x);
    }
    let b = &mut ctx.b;
    if n == 1 {
        return one(super::complex::exp_of(b, &x)?);
    }
    let ct = opmath(ty.dtype);
    let x = b.convert(&x, ct);
    // The 1-norm (largest column sum of magnitudes) of each matrix picks its approximant.
    let a = b.abs(&x);
    let zero = b.constant(Literal::Float(0.0), ct.real_part());
    let cols = b.reduce(&a, &zero, &[r as i64 - 2], add_c);
    let low = b.constant(Literal::Float(f64::NEG_INFINITY), ct.real_part());
    let norm = b.reduce(&cols, &low, &[r as i64 - 2], max_c);
    let th = thetas(ty.dtype);
    let batch: Vec<i64> = (0..r as i64 - 2).collect();
    let i = identity_like(b, &x)?;
    let x2 = batch_matmul(b, &x, &x)?;
    let x3 = batch_matmul(b, &x, &x2)?;
    let lows = low_degrees(b, &i, &x, &x2, &x3)?;
    let big = scale_and_square(b, &x, &i, &norm, th[5])?;
    // A NaN norm matches no interval: NaN results.
    let mut res = b.full_like(&x, Literal::Float(f64::NAN));
    for (k, t) in lows.iter().enumerate() {
        let lo = if k == 0 { -1.0 } else { th[k - 1] };
        let lo = b.full_like(&norm, Literal::Float(lo));
        let hi = b.full_like(&norm, Literal::Float(th[k]));
        let above = b.compare(CompareDir::Gt, &norm, &lo)?;
        let below = b.compare(CompareDir::Le, &norm, &hi)?;
        let here = b.and(&above, &below)?;
        let here = b.broadcast_in_dim(&here, &ty.shape, &batch)?;
        res = b.select(&here, t, &res)?;
    }
    let hi = b.full_like(&norm, Literal::Float(th[4]));
    let here = b.compare(CompareDir::Ge, &norm, &hi)?;
    let here = b.broadcast_in_dim(&here, &ty.shape, &batch)?;
    let res = b.select(&here, &big, &res)?;
    one(b.convert(&res, ty.dtype))
}

/// `compute_T18_scale_square`: degree 18 of `x / 2^s`, squared `s` times, with
/// `s = max(0, ceil(log2(norm / theta)))` per matrix. A loop squares while any matrix
/// still needs it; the others keep their value.
fn scale_and_square(
    b: &mut Builder,
    x: &Value,
    i: &Value,
    norm: &Value,
    theta: f64,
) -> Result<Value> {
    let r = x.rank();
    let batch: Vec<i64> = (0..r as i64 - 2).collect();
    let th = b.full_like(norm, Literal::Float(theta));
    let q = b.div(norm, &th)?;
    let l = b.log(&q);
    let k = b.full_like(&l, Literal::Float(std::f64::consts::LOG2_E));
    let l = b.mul(&l, &k)?;
    let s = b.ceil(&l);
    // At least 0 (also for NaN), at most what the largest finite norm needs.
    let z = b.full_like(&s, Literal::Float(0.0));
    let pos = b.compare(CompareDir::Gt, &s, &z)?;
    let s = b.select(&pos, &s, &z)?;
    let cap = if x.dtype().real_part() == DType::F64 {
        1100.0
    } else {
        200.0
    };
    let cap = b.full_like(&s, Literal::Float(cap));
    let s = b.min(&s, &cap)?;
    // x * 2^-s in two halves, so that no factor leaves the type's range: exact, as the
    // CPU's division by 2^s.
    let two = b.full_like(&s, Literal::Float(2.0));
    let half = b.full_like(&s, Literal::Float(0.5));
    let h1 = b.mul(&s, &half)?;
    let h1 = b.floor(&h1);
    let h2 = b.sub(&s, &h1)?;
    let mut y = x.clone();
    for h in [h1, h2] {
        let nh = b.neg(&h);
        let f = b.pow(&two, &nh)?;
        let f = b.broadcast_in_dim(&f, x.shape(), &batch)?;
        let f = b.convert(&f, x.dtype());
        y = b.mul(&y, &f)?;
    }
    let e = degree18(b, i, &y)?;
    let si = b.convert(&s, DType::I64);
    let i0 = b.constant(Literal::Int(0), DType::I64);
    let most = b.reduce(&si, &i0, &batch, |b, p, q| b.max(p, q).expect("i64"));
    let shape = x.shape().to_vec();
    let out = try_while(
        b,
        &[&i0, &e],
        |b, v| Ok(b.compare(CompareDir::Lt, &v[0], &most)?),
        |b, v| {
            let sq = batch_matmul(b, &v[1], &v[1])?;
            let i = b.broadcast_in_dim(&v[0], si.shape(), &[])?;
            let more = b.compare(CompareDir::Lt, &i, &si)?;
            let more = b.broadcast_in_dim(&more, &shape, &batch)?;
            let next = b.select(&more, &sq, &v[1])?;
            let one = b.constant(Literal::Int(1), DType::I64);
            Ok(vec![b.add(&v[0], &one)?, next])
        },
    )?;
    Ok(out[1].clone())
}

pub(crate) fn register(reg: &mut Registry) {
    reg.ops(
        &["linalg_matrix_exp", "linalg_matrix_exp.out"],
        linalg_matrix_exp,
    )
    .complex();
}
