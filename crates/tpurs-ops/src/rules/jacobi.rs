//! Jacobi plane rotations as StableHLO loops, for real and complex matrices: the one-sided
//! (Hestenes) iteration behind the SVD, and the two-sided one that polishes float64
//! eigenvectors. A sweep visits every pair of lines in the round-robin ("chess tournament")
//! order: `m - 1` rounds, each rotating `m / 2` disjoint pairs at once, so a loop iteration
//! does O(m^2) work and a sweep O(m^3) (one pair per iteration copied the whole state each
//! time: O(m^4)). A complex pair is first turned by the phase that makes its coupling real,
//! so that every rotation itself is real.

use tpurs_hlo::{Builder, CompareDir, DType, Literal, TensorType, Value};

use super::complex::conjugate;
use super::complex_math::sgn_of;
use super::index::select_rows;
use super::linalg::identity_like;
use super::reduce::squared_magnitude;
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

/// The round-robin schedule over `m` (even) lines, flattened: round `r` is
/// `order[r * m..(r + 1) * m]`, the lines as pairs `(p0, q0, p1, q1, ..)`; `inverse` puts
/// them back. Line 0 stays, the others turn one place per round.
fn schedule(m: i64) -> (Vec<Literal>, Vec<Literal>) {
    let (mut order, mut inverse) = (Vec::new(), Vec::new());
    for r in 0..m - 1 {
        let line = |i: i64| if i == 0 { 0 } else { 1 + (i - 1 + r) % (m - 1) };
        let round: Vec<i64> = (0..m / 2)
            .flat_map(|i| [line(i), line(m - 1 - i)])
            .collect();
        let mut back = vec![0; m as usize];
        for (at, &l) in round.iter().enumerate() {
            back[l as usize] = at as i64;
        }
        order.extend(round.into_iter().map(Literal::Int));
        inverse.extend(back.into_iter().map(Literal::Int));
    }
    (order, inverse)
}

/// Row `r` (a 0-d int64 value) of a schedule table flattened as `m` entries per round.
fn round_of(b: &mut Builder, table: &Value, r: &Value, m: i64) -> Value {
    let width = index(b, m);
    let start = b.mul(r, &width).expect("int64");
    b.dynamic_slice(table, &[start], &[m])
}

/// The even and odd lines of `x` along `axis` (`[.., m, ..]` to two `[.., m / 2, ..]`).
fn halves(b: &mut Builder, x: &Value, axis: usize) -> Result<(Value, Value)> {
    let mut paired = x.shape().to_vec();
    paired[axis] /= 2;
    paired.insert(axis + 1, 2);
    let xr = b.reshape(x, &paired)?;
    let mut out = paired.clone();
    out.remove(axis + 1);
    let p = b.slice_dim(&xr, axis + 1, 0, 1, 1)?;
    let q = b.slice_dim(&xr, axis + 1, 1, 2, 1)?;
    Ok((b.reshape(&p, &out)?, b.reshape(&q, &out)?))
}

/// The inverse of `halves`: `p` and `q` interleaved along `axis`.
fn interleave(b: &mut Builder, p: &Value, q: &Value, axis: usize) -> Result<Value> {
    let mut one = p.shape().to_vec();
    one.insert(axis + 1, 1);
    let (p1, q1) = (b.reshape(p, &one)?, b.reshape(q, &one)?);
    let both = b.concatenate(&[&p1, &q1], axis + 1)?;
    let mut shape = p.shape().to_vec();
    shape[axis] *= 2;
    Ok(b.reshape(&both, &shape)?)
}

/// `v` (`[batch.., m / 2]`, one per pair) laid along `axis` of a line half shaped like
/// `like` (`[batch.., a, b]`).
fn along(b: &mut Builder, v: &Value, like: &Value, axis: usize) -> Result<Value> {
    let batch = like.rank() - 2;
    let dims: Vec<i64> = (0..batch).chain([axis]).map(|d| d as i64).collect();
    Ok(b.broadcast_in_dim(v, like.shape(), &dims)?)
}

/// One rotation of every pair of lines of `x` along `axis` (`x` in schedule order, pairs
/// adjacent): `q` is first multiplied by `turn`, then `p <- c p - s q`, `q <- s p + c q`
/// (`c`, `s`, `turn`: `[batch.., m / 2]`, `x`'s dtype).
fn rotate_pairs(
    b: &mut Builder,
    x: &Value,
    axis: usize,
    (c, s): (&Value, &Value),
    turn: Option<&Value>,
) -> Result<Value> {
    let (p, mut q) = halves(b, x, axis)?;
    if let Some(turn) = turn {
        let t = along(b, turn, &q, axis)?;
        q = b.mul(&q, &t)?;
    }
    let (c, s) = (along(b, c, &p, axis)?, along(b, s, &p, axis)?);
    let (cp, sq) = (b.mul(&c, &p)?, b.mul(&s, &q)?);
    let new_p = b.sub(&cp, &sq)?;
    let (sp, cq) = (b.mul(&s, &p)?, b.mul(&c, &q)?);
    let new_q = b.add(&sp, &cq)?;
    interleave(b, &new_p, &new_q, axis)
}

/// `(|g|, conj(g) / |g|)` of a complex coupling `g` (the turn is 1 where `g` is 0);
/// `(g, None)` of a real one.
pub(super) fn split_phase(b: &mut Builder, g: &Value) -> Result<(Value, Option<Value>)> {
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

/// The rotations of one round, from each pair's real diagonal (or squared column norms)
/// `alpha`, `beta` and its coupling `pq`: the largest relative coupling folded into `off`,
/// `(c, s)` in `dtype` (the identity where the coupling is below `tol`), and the turn of
/// line `q` that makes a complex coupling real.
#[allow(clippy::type_complexity)]
fn pair_rotations(
    b: &mut Builder,
    (alpha, beta, pq): (&Value, &Value, &Value),
    off: &Value,
    tol: f64,
    dtype: DType,
) -> Result<(Value, (Value, Value), Option<Value>)> {
    let (gamma, turn) = split_phase(b, pq)?;
    let rel = relative(b, alpha, beta, &gamma)?;
    let (act, off) = open_pairs(b, &rel, off, tol)?;
    let (c, s) = rotation(b, (alpha, beta, &gamma), &act)?;
    Ok((off, (b.convert(&c, dtype), b.convert(&s, dtype)), turn))
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

/// `|gamma| / sqrt(|alpha beta|)`: a coupling relative to its pair's diagonal (or column
/// norms); 0 where `gamma` is 0 and infinite where only the diagonal is.
fn relative(b: &mut Builder, alpha: &Value, beta: &Value, gamma: &Value) -> Result<Value> {
    let ab = b.mul(alpha, beta)?;
    let ab = b.abs(&ab);
    let norm = b.sqrt(&ab);
    let mag = b.abs(gamma);
    let zero = b.full_like(&mag, Literal::Float(0.0));
    let ratio = b.div(&mag, &norm)?;
    let nonzero = b.compare(CompareDir::Gt, &norm, &zero)?;
    let inf = b.full_like(&mag, Literal::Float(f64::INFINITY));
    let coupled = b.compare(CompareDir::Gt, &mag, &zero)?;
    let unscaled = b.select(&coupled, &inf, &zero)?;
    Ok(b.select(&nonzero, &ratio, &unscaled)?)
}

fn epsilon(dtype: DType) -> f64 {
    if dtype.real_part() == DType::F64 {
        f64::EPSILON
    } else {
        f32::EPSILON as f64
    }
}

/// `x` padded with zero lines up to an even count along each of `axes`.
fn pad_even(b: &mut Builder, x: &Value, axes: &[usize]) -> Result<Value> {
    let mut high = vec![0; x.rank()];
    for &a in axes {
        high[a] = x.shape()[a] % 2;
    }
    let zero = b.constant(Literal::Float(0.0), x.dtype());
    let low = vec![0; x.rank()];
    Ok(b.pad(x, &zero, &low, &high, &low)?)
}

/// Sweeps of `step` over the rounds of the schedule of `m` lines on `[off, state..]`,
/// until the largest coupling a sweep saw is at most `tol` or after `sweeps` sweeps.
fn sweeps(
    b: &mut Builder,
    m: i64,
    state: &[&Value],
    (tol, sweeps): (f64, i64),
    step: impl Fn(&mut Builder, &Value, &Value, &[Value]) -> Result<Vec<Value>>,
) -> Result<Vec<Value>> {
    let (order, inverse) = schedule(m);
    let order = b.vector(&order, DType::I64);
    let inverse = b.vector(&inverse, DType::I64);
    let s = index(b, 0);
    let off = b.constant(Literal::Float(f64::INFINITY), state[0].dtype().real_part());
    let init: Vec<&Value> = [&s, &off]
        .into_iter()
        .chain(state.iter().copied())
        .collect();
    let out = try_while(
        b,
        &init,
        |b, s| {
            let cap = index(b, sweeps);
            let more = b.compare(CompareDir::Lt, &s[0], &cap)?;
            let limit = b.scalar_like(&s[1], Literal::Float(tol));
            let open = b.compare(CompareDir::Gt, &s[1], &limit)?;
            Ok(b.and(&more, &open)?)
        },
        |b, s| {
            let r = index(b, 0);
            let off = b.scalar_like(&s[1], Literal::Float(0.0));
            let init: Vec<&Value> = [&r, &off].into_iter().chain(&s[2..]).collect();
            let out = try_while(
                b,
                &init,
                |b, s| {
                    let rounds = index(b, m - 1);
                    Ok(b.compare(CompareDir::Lt, &s[0], &rounds)?)
                },
                |b, s| {
                    let perm = round_of(b, &order, &s[0], m);
                    let back = round_of(b, &inverse, &s[0], m);
                    let mut next = step(b, &perm, &back, &s[1..])?;
                    let one = index(b, 1);
                    next.insert(0, b.add(&s[0], &one)?);
                    Ok(next)
                },
            )?;
            let one = index(b, 1);
            let next = b.add(&s[0], &one)?;
            Ok([vec![next], out[1..].to_vec()].concat())
        },
    )?;
    Ok(out[2..].to_vec())
}

/// One round of one-sided rotations on `[off, w, v]`: orthogonalises the columns of each
/// pair of `w` (when they are not yet, relative to `tol`) and applies the same rotations
/// to `v`.
fn one_sided_round(
    b: &mut Builder,
    (perm, back): (&Value, &Value),
    st: &[Value],
    tol: f64,
) -> Result<Vec<Value>> {
    let (off, w, v) = (&st[0], &st[1], &st[2]);
    let cols = w.rank() - 1;
    let wp = select_rows(b, w, cols, perm)?;
    let vp = select_rows(b, v, cols, perm)?;
    let (a, c) = halves(b, &wp, cols)?;
    let rows = w.rank() - 2;
    let (aa, cc) = (squared_magnitude(b, &a)?, squared_magnitude(b, &c)?);
    let (alpha, beta) = (sum(b, &aa, rows), sum(b, &cc, rows));
    let a = conjugate(b, &a)?;
    let ac = b.mul(&a, &c)?;
    let ac = sum(b, &ac, rows);
    let (off, (cs, sn), turn) = pair_rotations(b, (&alpha, &beta, &ac), off, tol, w.dtype())?;
    let wp = rotate_pairs(b, &wp, cols, (&cs, &sn), turn.as_ref())?;
    let vp = rotate_pairs(b, &vp, cols, (&cs, &sn), turn.as_ref())?;
    Ok(vec![
        off,
        select_rows(b, &wp, cols, back)?,
        select_rows(b, &vp, cols, back)?,
    ])
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
    // An odd count gets a zero column, which no rotation touches.
    let (w0, v0) = (pad_even(b, a, &[r - 1])?, pad_even(b, &v, &[r - 1])?);
    let m = w0.shape()[r - 1];
    let tol = epsilon(a.dtype()) * a.shape()[r - 2] as f64;
    let out = sweeps(b, m, &[&w0, &v0], (tol, MAX_SWEEPS), |b, perm, back, st| {
        one_sided_round(b, (perm, back), st, tol)
    })?;
    let w = b.slice_dim(&out[0], r - 1, 0, n, 1)?;
    let v = b.slice_dim(&out[1], r - 1, 0, n, 1)?;
    Ok((w, v))
}

/// The diagonal `[.., m]` of `x` shifted by `k` columns: `x[.., j - k, j]` (0 where that
/// falls outside).
pub(super) fn diagonal(b: &mut Builder, x: &Value, k: i64) -> Result<Value> {
    let r = x.rank();
    let ty = TensorType::new(DType::I64, x.shape().to_vec());
    let (row, col) = (b.iota(&ty, r - 2), b.iota(&ty, r - 1));
    let shift = b.full_like(&row, Literal::Int(k));
    let row = b.add(&row, &shift)?;
    let on = b.compare(CompareDir::Eq, &row, &col)?;
    let zero = b.full_like(x, Literal::Float(0.0));
    let kept = b.select(&on, x, &zero)?;
    Ok(sum(b, &kept, r - 2))
}

/// One round of two-sided rotations on `[off, h, v]`: zeroes the coupling of each pair in
/// the Hermitian `h` by `h <- J^H h J`, `v <- v J`.
fn two_sided_round(
    b: &mut Builder,
    (perm, back): (&Value, &Value),
    st: &[Value],
    tol: f64,
) -> Result<Vec<Value>> {
    let (off, h, v) = (&st[0], &st[1], &st[2]);
    let (cols, rows) = (h.rank() - 1, h.rank() - 2);
    let hp = select_rows(b, h, rows, perm)?;
    let hp = select_rows(b, &hp, cols, perm)?;
    let vp = select_rows(b, v, cols, perm)?;
    let d = diagonal(b, &hp, 0)?;
    let (pp, qq) = halves(b, &d, cols - 1)?;
    let above = diagonal(b, &hp, 1)?;
    let (_, pq) = halves(b, &above, cols - 1)?;
    let (alpha, beta) = (b.real(&pp), b.real(&qq));
    let (off, (cs, sn), turn) = pair_rotations(b, (&alpha, &beta, &pq), off, tol, h.dtype())?;
    let back_turn = turn.as_ref().map(|t| conjugate(b, t)).transpose()?;
    let hp = rotate_pairs(b, &hp, cols, (&cs, &sn), turn.as_ref())?;
    let hp = rotate_pairs(b, &hp, rows, (&cs, &sn), back_turn.as_ref())?;
    let vp = rotate_pairs(b, &vp, cols, (&cs, &sn), turn.as_ref())?;
    let h = select_rows(b, &hp, rows, back)?;
    Ok(vec![
        off,
        select_rows(b, &h, cols, back)?,
        select_rows(b, &vp, cols, back)?,
    ])
}

/// Two-sided Jacobi on the Hermitian `h` (`[.., n, n]`) from the unitary `v`, until every
/// coupling is below working precision relative to its pair's diagonal (at most `sweeps`
/// sweeps): `(h, v)` with the new `h` nearly diagonal and `v` updated by the same
/// rotations.
pub(super) fn two_sided(
    b: &mut Builder,
    h: &Value,
    v: &Value,
    sweeps_at_most: i64,
) -> Result<(Value, Value)> {
    let r = h.rank();
    let n = h.shape()[r - 1];
    if n < 2 {
        return Ok((h.clone(), v.clone()));
    }
    let (h0, v0) = (pad_even(b, h, &[r - 2, r - 1])?, pad_even(b, v, &[r - 1])?);
    let m = h0.shape()[r - 1];
    let tol = epsilon(h.dtype()) * n as f64;
    let out = sweeps(
        b,
        m,
        &[&h0, &v0],
        (tol, sweeps_at_most),
        |b, perm, back, st| two_sided_round(b, (perm, back), st, tol),
    )?;
    let h = b.slice_dim(&out[0], r - 2, 0, n, 1)?;
    let h = b.slice_dim(&h, r - 1, 0, n, 1)?;
    let v = b.slice_dim(&out[1], r - 1, 0, n, 1)?;
    Ok((h, v))
}
