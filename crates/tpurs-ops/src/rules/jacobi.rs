//! Jacobi plane rotations as StableHLO loops, for real and complex matrices: the one-sided
//! (Hestenes) iteration behind the SVD, and the two-sided one that polishes float64
//! eigenvectors. Pairs `(p, q)` are visited in row-cyclic order, one `while` iteration
//! each; a complex pair is first turned by the phase that makes its coupling real, so that
//! every rotation itself is real.

use tpurs_hlo::{Builder, CompareDir, DType, Literal, TensorType, Value};

use super::complex::conjugate;
use super::complex_math::sgn_of;
use super::linalg::identity_like;
use super::try_while;
use crate::error::Result;

/// Sweeps over all column pairs before giving up on convergence (Jacobi converges
/// quadratically: small matrices need 5-10).
const MAX_SWEEPS: i64 = 60;

fn index(b: &mut Builder, v: i64) -> Value {
    b.constant(Literal::Int(v), DType::I64)
}

/// Sum of `x` over `dim`.
pub(super) fn sum(b: &mut Builder, x: &Value, dim: usize) -> Value {
    let init = b.scalar_like(x, Literal::Float(0.0));
    b.reduce(x, &init, &[dim as i64], |b, p, q| {
        b.add(p, q).expect("same types")
    })
}

/// `x` (`[..]`) repeated along a new dim at `at` of size `size`.
pub(super) fn spread(b: &mut Builder, x: &Value, at: usize, size: i64) -> Result<Value> {
    let mut shape = x.shape().to_vec();
    shape.insert(at, size);
    let dims: Vec<i64> = (0..x.rank())
        .map(|d| if d < at { d } else { d + 1 } as i64)
        .collect();
    Ok(b.broadcast_in_dim(x, &shape, &dims)?)
}

/// Column (`axis` = last) or row (`axis` = second to last) `j` of the matrices `x`, that
/// dim dropped.
fn line(b: &mut Builder, x: &Value, axis: usize, j: &Value) -> Result<Value> {
    let starts: Vec<Value> = (0..x.rank())
        .map(|d| if d == axis { j.clone() } else { index(b, 0) })
        .collect();
    let mut sizes = x.shape().to_vec();
    sizes[axis] = 1;
    let s = b.dynamic_slice(x, &starts, &sizes);
    let mut shape = x.shape().to_vec();
    shape.remove(axis);
    Ok(b.reshape(&s, &shape)?)
}

/// Writes `l` as line `j` of `x` along `axis` (see `line`).
fn set_line(b: &mut Builder, x: &Value, axis: usize, l: &Value, j: &Value) -> Result<Value> {
    let l = spread(b, l, axis, 1)?;
    let starts: Vec<Value> = (0..x.rank())
        .map(|d| if d == axis { j.clone() } else { index(b, 0) })
        .collect();
    Ok(b.dynamic_update_slice(x, &l, &starts))
}

/// The length of a line of `x` along `axis`: the other of its last two dims.
fn line_len(x: &Value, axis: usize) -> i64 {
    let r = x.rank();
    x.shape()[if axis == r - 1 { r - 2 } else { r - 1 }]
}

/// `x[.., i, j]`, one entry per matrix.
fn entry(b: &mut Builder, x: &Value, i: &Value, j: &Value) -> Result<Value> {
    let column = line(b, x, x.rank() - 1, j)?;
    line(b, &column, x.rank() - 2, i)
}

/// Rotates lines `p` and `q` of `x` along `axis` by `(c, s)` (each `[..]`, one per
/// matrix, `x`'s dtype): `p <- c p - s q`, `q <- s p + c q`.
fn rotate(
    b: &mut Builder,
    x: &Value,
    axis: usize,
    pair: (&Value, &Value),
    c: &Value,
    s: &Value,
) -> Result<Value> {
    let (p, q) = pair;
    let (at, len) = (x.rank() - 2, line_len(x, axis));
    let (c, s) = (spread(b, c, at, len)?, spread(b, s, at, len)?);
    let (xp, xq) = (line(b, x, axis, p)?, line(b, x, axis, q)?);
    let (cp, sq) = (b.mul(&c, &xp)?, b.mul(&s, &xq)?);
    let new_p = b.sub(&cp, &sq)?;
    let (sp, cq) = (b.mul(&s, &xp)?, b.mul(&c, &xq)?);
    let new_q = b.add(&sp, &cq)?;
    let x = set_line(b, x, axis, &new_p, p)?;
    set_line(b, &x, axis, &new_q, q)
}

/// Multiplies line `q` of `x` along `axis` by `turn` (`[..]`, one per matrix).
fn turn_line(b: &mut Builder, x: &Value, axis: usize, q: &Value, turn: &Value) -> Result<Value> {
    let turn = spread(b, turn, x.rank() - 2, line_len(x, axis))?;
    let l = line(b, x, axis, q)?;
    let l = b.mul(&l, &turn)?;
    set_line(b, x, axis, &l, q)
}

/// `sum_rows conj(x) y` of two column batches (`[.., rows]`).
fn inner(b: &mut Builder, x: &Value, y: &Value) -> Result<Value> {
    let x = conjugate(b, x)?;
    let xy = b.mul(&x, y)?;
    Ok(sum(b, &xy, xy.rank() - 1))
}

/// `(|g|, conj(g) / |g|)` of a complex coupling `g` (the turn is 1 where `g` is 0);
/// `(g, None)` of a real one.
fn split_phase(b: &mut Builder, g: &Value) -> Result<(Value, Option<Value>)> {
    if !g.dtype().is_complex() {
        return Ok((g.clone(), None));
    }
    let unit = sgn_of(b, g)?;
    let turn = conjugate(b, &unit)?;
    let size = b.magnitude(g);
    let zero = b.full_like(&size, Literal::Float(0.0));
    let at_zero = b.compare(CompareDir::Eq, &size, &zero)?;
    let one = b.full_like(&turn, Literal::Float(1.0));
    let turn = b.select(&at_zero, &one, &turn)?;
    Ok((size, Some(turn)))
}

/// The rotation `(c, s)` that zeroes the coupling `gamma` of the symmetric 2x2 problem
/// `[[alpha, gamma], [gamma, beta]]` (all real, `[..]`); `(1, 0)` where `act` is false.
/// `t = sign(zeta) / (|zeta| + sqrt(1 + zeta^2))`, `zeta = (beta - alpha) / (2 gamma)`:
/// the smaller root of `t^2 + 2 zeta t - 1 = 0`.
fn rotation(
    b: &mut Builder,
    (alpha, beta, gamma): (&Value, &Value, &Value),
    act: &Value,
) -> Result<(Value, Value)> {
    let zero = b.full_like(alpha, Literal::Float(0.0));
    let one = b.full_like(alpha, Literal::Float(1.0));
    let diff = b.sub(beta, alpha)?;
    let two_gamma = b.add(gamma, gamma)?;
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
    Ok((b.select(act, &c, &one)?, b.select(act, &s, &zero)?))
}

/// The pair after `(p, q)` in row-cyclic order over `n` lines: `(p, q + 1)`, or
/// `(p + 1, p + 2)` after the last.
fn next_pair(b: &mut Builder, p: &Value, q: &Value, n: i64) -> Result<(Value, Value)> {
    let one = index(b, 1);
    let q1 = b.add(q, &one)?;
    let n_i = index(b, n);
    let row_done = b.compare(CompareDir::Ge, &q1, &n_i)?;
    let p1 = b.add(p, &one)?;
    let p2 = b.add(&p1, &one)?;
    Ok((b.select(&row_done, &p1, p)?, b.select(&row_done, &p2, &q1)?))
}

/// One sweep over every pair of `n` lines: runs `step` on `[p, q, state..]` for each.
fn sweep(
    b: &mut Builder,
    n: i64,
    state: &[&Value],
    step: impl FnOnce(&mut Builder, &[Value]) -> Result<Vec<Value>>,
) -> Result<Vec<Value>> {
    let (p, q) = (index(b, 0), index(b, 1));
    let init: Vec<&Value> = [&p, &q].into_iter().chain(state.iter().copied()).collect();
    let out = try_while(
        b,
        &init,
        |b, s| {
            let last = index(b, n - 1);
            Ok(b.compare(CompareDir::Lt, &s[0], &last)?)
        },
        step,
    )?;
    Ok(out[2..].to_vec())
}

/// Where `rel` is above `tol`, and the largest `rel` of the batch folded into `off`.
fn open_pairs(b: &mut Builder, rel: &Value, off: &Value, tol: f64) -> Result<(Value, Value)> {
    let limit = b.full_like(rel, Literal::Float(tol));
    let act = b.compare(CompareDir::Gt, rel, &limit)?;
    let init = b.scalar_like(rel, Literal::Float(0.0));
    let all: Vec<i64> = (0..rel.rank() as i64).collect();
    let worst = b.reduce(rel, &init, &all, |b, x, y| b.max(x, y).expect("same types"));
    Ok((act, b.max(off, &worst)?))
}

/// One one-sided rotation on `[p, q, off, w, v]`: orthogonalises columns `p` and `q` of
/// `w` (when they are not yet, relative to `tol`), applies the same rotation to `v`,
/// records the largest relative non-orthogonality seen and moves to the next pair.
fn one_sided_step(b: &mut Builder, st: &[Value], tol: f64) -> Result<Vec<Value>> {
    let (p, q, off, w, v) = (&st[0], &st[1], &st[2], &st[3], &st[4]);
    let cols = w.rank() - 1;
    let (wp, wq) = (line(b, w, cols, p)?, line(b, w, cols, q)?);
    let (pp, qq, pq) = (
        inner(b, &wp, &wp)?,
        inner(b, &wq, &wq)?,
        inner(b, &wp, &wq)?,
    );
    let (alpha, beta) = (b.real(&pp), b.real(&qq));
    let (gamma, turn) = split_phase(b, &pq)?;
    let zero = b.full_like(&alpha, Literal::Float(0.0));
    let ab = b.mul(&alpha, &beta)?;
    let norm = b.sqrt(&ab);
    let mag = b.abs(&gamma);
    let ratio = b.div(&mag, &norm)?;
    let nonzero = b.compare(CompareDir::Gt, &norm, &zero)?;
    let rel = b.select(&nonzero, &ratio, &zero)?;
    let (act, off) = open_pairs(b, &rel, off, tol)?;
    let (c, s) = rotation(b, (&alpha, &beta, &gamma), &act)?;
    let (c, s) = (b.convert(&c, w.dtype()), b.convert(&s, w.dtype()));
    let (mut w, mut v) = (w.clone(), v.clone());
    if let Some(turn) = turn {
        w = turn_line(b, &w, cols, q, &turn)?;
        v = turn_line(b, &v, cols, q, &turn)?;
    }
    let w = rotate(b, &w, cols, (p, q), &c, &s)?;
    let v = rotate(b, &v, cols, (p, q), &c, &s)?;
    let (p, q) = next_pair(b, p, q, w.shape()[cols])?;
    Ok(vec![p, q, off, w, v])
}

fn epsilon(dtype: DType) -> f64 {
    if dtype.real_part() == DType::F64 {
        f64::EPSILON
    } else {
        f32::EPSILON as f64
    }
}

/// One-sided Jacobi on a tall `a` (`[.., m, n]`, `m >= n`): `(w, v)` with `a v = w`, the
/// columns of `w` mutually orthogonal and `v` unitary.
pub(super) fn one_sided(b: &mut Builder, a: &Value) -> Result<(Value, Value)> {
    let r = a.rank();
    let n = a.shape()[r - 1];
    let mut v_shape = a.shape().to_vec();
    v_shape[r - 2] = n;
    let zeros = b.splat(Literal::Float(0.0), &TensorType::new(a.dtype(), v_shape));
    let v = identity_like(b, &zeros)?;
    if n < 2 {
        return Ok((a.clone(), v));
    }
    let tol = epsilon(a.dtype()) * a.shape()[r - 2] as f64;
    let s = index(b, 0);
    let off = b.constant(Literal::Float(f64::INFINITY), a.dtype().real_part());
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
        |b, s| {
            let off = b.scalar_like(&s[1], Literal::Float(0.0));
            let out = sweep(b, n, &[&off, &s[2], &s[3]], |b, st| {
                one_sided_step(b, st, tol)
            })?;
            let one = index(b, 1);
            let next = b.add(&s[0], &one)?;
            Ok([vec![next], out].concat())
        },
    )?;
    Ok((out[2].clone(), out[3].clone()))
}

/// One two-sided rotation on `[p, q, off, h, v]`: zeroes `h[p, q]` of the Hermitian `h`
/// by `h <- J^H h J`, `v <- v J`, and moves to the next pair.
fn two_sided_step(b: &mut Builder, st: &[Value], tol: f64) -> Result<Vec<Value>> {
    let (p, q, off, h, v) = (&st[0], &st[1], &st[2], &st[3], &st[4]);
    let (cols, rows) = (h.rank() - 1, h.rank() - 2);
    let (pp, qq, pq) = (entry(b, h, p, p)?, entry(b, h, q, q)?, entry(b, h, p, q)?);
    let (alpha, beta) = (b.real(&pp), b.real(&qq));
    let (gamma, turn) = split_phase(b, &pq)?;
    // Relative to the pair's diagonal, so that tiny eigenvalues keep their accuracy.
    let ab = b.mul(&alpha, &beta)?;
    let ab = b.abs(&ab);
    let norm = b.sqrt(&ab);
    let mag = b.abs(&gamma);
    let zero = b.full_like(&mag, Literal::Float(0.0));
    let nonzero = b.compare(CompareDir::Gt, &norm, &zero)?;
    let ratio = b.div(&mag, &norm)?;
    let inf = b.full_like(&mag, Literal::Float(f64::INFINITY));
    let coupled = b.compare(CompareDir::Gt, &mag, &zero)?;
    let unscaled = b.select(&coupled, &inf, &zero)?;
    let rel = b.select(&nonzero, &ratio, &unscaled)?;
    let (act, off) = open_pairs(b, &rel, off, tol)?;
    let (c, s) = rotation(b, (&alpha, &beta, &gamma), &act)?;
    let (c, s) = (b.convert(&c, h.dtype()), b.convert(&s, h.dtype()));
    let (mut h, mut v) = (h.clone(), v.clone());
    if let Some(turn) = turn {
        let back = conjugate(b, &turn)?;
        h = turn_line(b, &h, cols, q, &turn)?;
        h = turn_line(b, &h, rows, q, &back)?;
        v = turn_line(b, &v, cols, q, &turn)?;
    }
    let h = rotate(b, &h, cols, (p, q), &c, &s)?;
    let h = rotate(b, &h, rows, (p, q), &c, &s)?;
    let v = rotate(b, &v, cols, (p, q), &c, &s)?;
    let (p, q) = next_pair(b, p, q, h.shape()[cols])?;
    Ok(vec![p, q, off, h, v])
}

/// Two-sided Jacobi on the Hermitian `h` (`[.., n, n]`) from the unitary `v`, until every
/// coupling is below working precision relative to its pair's diagonal (at most `sweeps`
/// sweeps): `(h, v)` with the new `h` nearly diagonal and `v` updated by the same
/// rotations.
pub(super) fn two_sided(
    b: &mut Builder,
    h: &Value,
    v: &Value,
    sweeps: i64,
) -> Result<(Value, Value)> {
    let n = h.shape()[h.rank() - 1];
    if n < 2 {
        return Ok((h.clone(), v.clone()));
    }
    let tol = epsilon(h.dtype()) * n as f64;
    let s = index(b, 0);
    let off = b.constant(Literal::Float(f64::INFINITY), h.dtype().real_part());
    let out = try_while(
        b,
        &[&s, &off, h, v],
        |b, s| {
            let cap = index(b, sweeps);
            let more = b.compare(CompareDir::Lt, &s[0], &cap)?;
            let limit = b.scalar_like(&s[1], Literal::Float(tol));
            let open = b.compare(CompareDir::Gt, &s[1], &limit)?;
            Ok(b.and(&more, &open)?)
        },
        |b, s| {
            let off = b.scalar_like(&s[1], Literal::Float(0.0));
            let out = sweep(b, n, &[&off, &s[2], &s[3]], |b, st| {
                two_sided_step(b, st, tol)
            })?;
            let one = index(b, 1);
            let next = b.add(&s[0], &one)?;
            Ok([vec![next], out].concat())
        },
    )?;
    Ok((out[2].clone(), out[3].clone()))
}
