//! Singular value decomposition, `_linalg_svd` (behind `linalg.svd`, `svd`, `svdvals`,
//! `pinv`, `matrix_rank`, `matrix_norm`, `cond`): one-sided Jacobi (Hestenes) as StableHLO
//! loops. Column pairs of a tall A are rotated until every pair is orthogonal to working
//! precision; the column norms are then the singular values and the accumulated rotations
//! V. U is the normalised columns, re-orthonormalised (and completed for `full_matrices`)
//! by a Householder QR, so that zero singular values still get orthonormal vectors. A wide
//! A goes through its transpose. Singular values come in PyTorch's descending order; each
//! pair of singular vectors is unique only up to sign, as on every backend.

use tpurs_hlo::{Builder, CompareDir, DType, Literal, TensorType, Value};

use super::decomp::{corner, householder, q_of};
use super::linalg::{float_matrices, identity_like, transpose_last};
use super::lu::item_last;
use super::{empty, try_while};
use crate::ctx::{Ctx, Out};
use crate::error::{runtime, Result};
use crate::table::Registry;

/// Sweeps over all column pairs before giving up on convergence (Jacobi converges
/// quadratically: small matrices need 5-10).
const MAX_SWEEPS: i64 = 60;

fn index(b: &mut Builder, v: i64) -> Value {
    b.constant(Literal::Int(v), DType::I64)
}

/// Sum of `x` over `dim`.
fn sum(b: &mut Builder, x: &Value, dim: usize) -> Value {
    let init = b.scalar_like(x, Literal::Float(0.0));
    b.reduce(x, &init, &[dim as i64], |b, p, q| {
        b.add(p, q).expect("same types")
    })
}

/// `x` (`[..]`) repeated along a new dim at `at` of size `size`.
fn spread(b: &mut Builder, x: &Value, at: usize, size: i64) -> Result<Value> {
    let mut shape = x.shape().to_vec();
    shape.insert(at, size);
    let dims: Vec<i64> = (0..x.rank())
        .map(|d| if d < at { d } else { d + 1 } as i64)
        .collect();
    Ok(b.broadcast_in_dim(x, &shape, &dims)?)
}

/// Writes `col` (`[.., rows]`) as column `j` of `x`.
fn set_column(b: &mut Builder, x: &Value, col: &Value, j: &Value) -> Result<Value> {
    let r = x.rank();
    let col = spread(b, col, r - 1, 1)?;
    let mut starts: Vec<Value> = (0..r - 1).map(|_| index(b, 0)).collect();
    starts.push(j.clone());
    Ok(b.dynamic_update_slice(x, &col, &starts))
}

/// Rotates columns `p` and `q` of `x` by `(c, s)` (each `[..]`, one per matrix).
fn rotate(b: &mut Builder, x: &Value, p: &Value, q: &Value, c: &Value, s: &Value) -> Result<Value> {
    let rows = x.shape()[x.rank() - 2];
    let at = x.rank() - 2;
    let (c, s) = (spread(b, c, at, rows)?, spread(b, s, at, rows)?);
    let (xp, xq) = (item_last(b, x, p)?, item_last(b, x, q)?);
    let (cp, sq) = (b.mul(&c, &xp)?, b.mul(&s, &xq)?);
    let new_p = b.sub(&cp, &sq)?;
    let (sp, cq) = (b.mul(&s, &xp)?, b.mul(&c, &xq)?);
    let new_q = b.add(&sp, &cq)?;
    let x = set_column(b, x, &new_p, p)?;
    set_column(b, &x, &new_q, q)
}

/// One Jacobi rotation on `[p, q, off, w, v]`: orthogonalises columns `p` and `q` of `w`
/// (when they are not yet, relative to `tol`), applies the same rotation to `v`, records
/// the largest relative non-orthogonality seen and moves to the next pair.
fn pair_step(b: &mut Builder, st: &[Value], tol: f64) -> Result<Vec<Value>> {
    let (p, q, off, w, v) = (&st[0], &st[1], &st[2], &st[3], &st[4]);
    let n = w.shape()[w.rank() - 1];
    let rows = w.rank() - 2;
    let (wp, wq) = (item_last(b, w, p)?, item_last(b, w, q)?);
    let (pp, qq, pq) = (b.mul(&wp, &wp)?, b.mul(&wq, &wq)?, b.mul(&wp, &wq)?);
    let (alpha, beta, gamma) = (sum(b, &pp, rows), sum(b, &qq, rows), sum(b, &pq, rows));
    let zero = b.full_like(&alpha, Literal::Float(0.0));
    let one = b.full_like(&alpha, Literal::Float(1.0));
    let ab = b.mul(&alpha, &beta)?;
    let norm = b.sqrt(&ab);
    let mag = b.abs(&gamma);
    let ratio = b.div(&mag, &norm)?;
    let nonzero = b.compare(CompareDir::Gt, &norm, &zero)?;
    let rel = b.select(&nonzero, &ratio, &zero)?;
    let limit = b.full_like(&rel, Literal::Float(tol));
    let act = b.compare(CompareDir::Gt, &rel, &limit)?;
    // t = sign(zeta) / (|zeta| + sqrt(1 + zeta^2)), zeta = (beta - alpha) / (2 gamma): the
    // smaller root of t^2 + 2 zeta t - 1 = 0, which zeroes the rotated pair's inner product.
    let diff = b.sub(&beta, &alpha)?;
    let two_gamma = b.add(&gamma, &gamma)?;
    let zeta = b.div(&diff, &two_gamma)?;
    let non_negative = b.compare(CompareDir::Ge, &zeta, &zero)?;
    let minus = b.neg(&one);
    let sign = b.select(&non_negative, &one, &minus)?;
    let zz = b.mul(&zeta, &zeta)?;
    let zz1 = b.add(&one, &zz)?;
    let hyp = b.sqrt(&zz1);
    let az = b.abs(&zeta);
    let den = b.add(&az, &hyp)?;
    let t = b.div(&sign, &den)?;
    let tt = b.mul(&t, &t)?;
    let tt1 = b.add(&one, &tt)?;
    let c = b.rsqrt(&tt1);
    let s = b.mul(&c, &t)?;
    let (c, s) = (b.select(&act, &c, &one)?, b.select(&act, &s, &zero)?);
    let w = rotate(b, w, p, q, &c, &s)?;
    let v = rotate(b, v, p, q, &c, &s)?;
    let init = b.scalar_like(&rel, Literal::Float(0.0));
    let all: Vec<i64> = (0..rel.rank() as i64).collect();
    let worst = b.reduce(&rel, &init, &all, |b, x, y| {
        b.max(x, y).expect("same types")
    });
    let off = b.max(off, &worst)?;
    // Next pair in row-cyclic order: (p, q + 1), or (p + 1, p + 2) after the last column.
    let one_i = index(b, 1);
    let q1 = b.add(q, &one_i)?;
    let n_i = index(b, n);
    let row_done = b.compare(CompareDir::Ge, &q1, &n_i)?;
    let p1 = b.add(p, &one_i)?;
    let p2 = b.add(&p1, &one_i)?;
    let p = b.select(&row_done, &p1, p)?;
    let q = b.select(&row_done, &p2, &q1)?;
    Ok(vec![p, q, off, w, v])
}

/// One sweep over every column pair on `[sweep, off, w, v]`.
fn sweep(b: &mut Builder, st: &[Value], tol: f64) -> Result<Vec<Value>> {
    let n = st[2].shape()[st[2].rank() - 1];
    let (p, q) = (index(b, 0), index(b, 1));
    let off = b.scalar_like(&st[1], Literal::Float(0.0));
    let out = try_while(
        b,
        &[&p, &q, &off, &st[2], &st[3]],
        |b, s| {
            let last = index(b, n - 1);
            Ok(b.compare(CompareDir::Lt, &s[0], &last)?)
        },
        |b, s| pair_step(b, s, tol),
    )?;
    let one = index(b, 1);
    let next = b.add(&st[0], &one)?;
    Ok(vec![next, out[2].clone(), out[3].clone(), out[4].clone()])
}

/// Jacobi on a tall `a` (`[.., m, n]`, `m >= n >= 2`): `(w, v)` with `a v = w`, the columns
/// of `w` mutually orthogonal and `v` orthogonal.
fn jacobi(b: &mut Builder, a: &Value) -> Result<(Value, Value)> {
    let r = a.rank();
    let n = a.shape()[r - 1];
    let mut v_shape = a.shape().to_vec();
    v_shape[r - 2] = n;
    let zeros = b.splat(Literal::Float(0.0), &TensorType::new(a.dtype(), v_shape));
    let v = identity_like(b, &zeros)?;
    if n < 2 {
        return Ok((a.clone(), v));
    }
    let eps = if a.dtype() == DType::F64 {
        f64::EPSILON
    } else {
        f32::EPSILON as f64
    };
    let tol = eps * a.shape()[r - 2] as f64;
    let s = index(b, 0);
    let off = b.constant(Literal::Float(f64::INFINITY), a.dtype());
    let out = try_while(
        b,
        &[&s, &off, a, &v],
        |b, s| {
            let cap = index(b, MAX_SWEEPS);
            let more = b.compare(CompareDir::Lt, &s[0], &cap)?;
            let limit = b.scalar_like(&s[1], Literal::Float(tol));
            let open = b.compare(CompareDir::Gt, &s[1], &limit)?;
            Ok(b.and(&more, &open)?)
        },
        |b, s| sweep(b, s, tol),
    )?;
    Ok((out[2].clone(), out[3].clone()))
}

/// Sorts the columns of `x` by `key` (`[.., cols]`), largest first.
fn by_key_descending(b: &mut Builder, x: &Value, key: &Value) -> Result<Value> {
    let r = x.rank();
    let keys = spread(b, key, r - 2, x.shape()[r - 2])?;
    let out = b.sort(&[&keys, x], r - 1, |b, s| {
        b.compare(CompareDir::Gt, &s[0], &s[1]).expect("same types")
    });
    Ok(out[1].clone())
}

/// `cols` orthonormal columns whose first `s.len()` are `w`'s columns scaled to unit norm
/// (up to sign where a singular value is zero or tiny: QR makes them orthonormal).
fn orthonormal(b: &mut Builder, w: &Value, s: &Value, cols: i64) -> Result<Value> {
    let r = w.rank();
    let (m, k) = (w.shape()[r - 2], w.shape()[r - 1]);
    let s_rows = spread(b, s, r - 2, m)?;
    let zero = b.full_like(w, Literal::Float(0.0));
    let nonzero = b.compare(CompareDir::Gt, &s_rows, &zero)?;
    let scaled = b.div(w, &s_rows)?;
    let u = b.select(&nonzero, &scaled, &zero)?;
    let (h, taus) = householder(b, &u);
    let q = q_of(b, &h, &taus, cols)?;
    // Q's column i is u's times the sign of R[i, i] (zero for a zero column: keep Q's).
    let square = corner(b, &h, k, k)?;
    let eye = identity_like(b, &square)?;
    let diag_only = b.mul(&square, &eye)?;
    let d = sum(b, &diag_only, r - 2);
    let zero_d = b.full_like(&d, Literal::Float(0.0));
    let one_d = b.full_like(&d, Literal::Float(1.0));
    let negative = b.compare(CompareDir::Lt, &d, &zero_d)?;
    let minus = b.neg(&one_d);
    let sign = b.select(&negative, &minus, &one_d)?;
    let one = b.scalar_like(&sign, Literal::Float(1.0));
    let mut high = vec![0; sign.rank()];
    high[sign.rank() - 1] = cols - k;
    let lows = vec![0; sign.rank()];
    let sign = b.pad(&sign, &one, &lows, &high, &lows)?;
    let sign = spread(b, &sign, r - 2, m)?;
    Ok(b.mul(&q, &sign)?)
}

/// `(U, S, Vh)` of matrices with no singular value (`m` or `n` is 0): U and Vh are
/// identities where `full_matrices` asks for square ones.
fn no_values(b: &mut Builder, ty: &TensorType, full: bool) -> Result<Vec<Out>> {
    let r = ty.rank();
    let (m, n) = (ty.shape[r - 2], ty.shape[r - 1]);
    let batch = &ty.shape[..r - 2];
    let side = |rows: i64, cols: i64| TensorType::new(ty.dtype, [batch, &[rows, cols]].concat());
    let u = b.splat(Literal::Float(0.0), &side(m, if full { m } else { 0 }));
    let vh = b.splat(Literal::Float(0.0), &side(if full { n } else { 0 }, n));
    let s = b.splat(
        Literal::Float(0.0),
        &TensorType::new(ty.dtype, [batch, &[0]].concat()),
    );
    let (u, vh) = (identity_like(b, &u)?, identity_like(b, &vh)?);
    Ok(vec![Some(u), Some(s), Some(vh)])
}

/// Jacobi on a tall `a` with its columns sorted: `(w, s, v)` with `a v = w`, `s` the
/// singular values (descending) and `w`'s columns of norms `s`.
fn singular_values(b: &mut Builder, a: &Value) -> Result<(Value, Value, Value)> {
    let r = a.rank();
    let (w, v) = jacobi(b, a)?;
    let sq = b.mul(&w, &w)?;
    let ss = sum(b, &sq, r - 2);
    let norms = b.sqrt(&ss);
    let (w, v) = (
        by_key_descending(b, &w, &norms)?,
        by_key_descending(b, &v, &norms)?,
    );
    let s = b.sort(&[&norms], r - 2, |b, s| {
        b.compare(CompareDir::Gt, &s[0], &s[1]).expect("same types")
    })[0]
        .clone();
    Ok((w, s, v))
}

/// The thin SVD `a = U diag(S) V^T` of a tall `a` (`[.., m, n]`, `m >= n >= 1`): `(U, S, V)`.
pub(super) fn thin_svd(b: &mut Builder, a: &Value) -> Result<(Value, Value, Value)> {
    let (w, s, v) = singular_values(b, a)?;
    let n = a.shape()[a.rank() - 1];
    let u = orthonormal(b, &w, &s, n)?;
    Ok((u, s, v))
}

/// `_linalg_svd(A, full_matrices=False, compute_uv=True, *, driver=None)` -> `(U, S, Vh)`.
fn svd(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let ty = float_matrices(ctx, 0, "linalg.svd")?;
    if ctx.has(3) {
        return runtime(
            "torch.linalg.svd: keyword argument `driver=` is only supported on CUDA inputs with cuSOLVER backend.",
        );
    }
    let full = ctx.bool_or(1, false)?;
    let compute_uv = ctx.bool_or(2, true)?;
    let a = ctx.tensor(0)?;
    let b = &mut ctx.b;
    let r = ty.rank();
    let (m, n) = (ty.shape[r - 2], ty.shape[r - 1]);
    if m.min(n) == 0 {
        let mut out = no_values(b, &ty, full)?;
        if !compute_uv {
            out[0] = Some(empty(b, ty.dtype));
            out[2] = Some(empty(b, ty.dtype));
        }
        return Ok(out);
    }
    // A wide A = (A^T)^T: decompose the tall A^T = U' S V'^T, then U = V', Vh = U'^T.
    let wide = m < n;
    let tall = if wide { transpose_last(b, &a)? } else { a };
    let tall_rows = m.max(n);
    let (w, s, v) = singular_values(b, &tall)?;
    if !compute_uv {
        let none = empty(b, ty.dtype);
        return Ok(vec![Some(none.clone()), Some(s), Some(none)]);
    }
    let cols = if full { tall_rows } else { m.min(n) };
    let u = orthonormal(b, &w, &s, cols)?;
    let (u, vh) = if wide {
        (v, transpose_last(b, &u)?)
    } else {
        (u, transpose_last(b, &v)?)
    };
    Ok(vec![Some(u), Some(s), Some(vh)])
}

pub(crate) fn register(reg: &mut Registry) {
    reg.ops(&["_linalg_svd", "_linalg_svd.U"], svd);
}
