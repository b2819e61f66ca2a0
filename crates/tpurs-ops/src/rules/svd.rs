//! Singular value decomposition, `_linalg_svd` (behind `linalg.svd`, `svd`, `svdvals`,
//! `pinv`, `matrix_rank`, `matrix_norm`, `cond`): one-sided Jacobi (Hestenes, `jacobi.rs`).
//! Column pairs of a tall A are rotated until every pair is orthogonal to working
//! precision; the column norms are then the singular values and the accumulated rotations
//! V. U is the normalised columns, re-orthonormalised (and completed for `full_matrices`)
//! by a Householder QR, so that zero singular values still get orthonormal vectors. A wide
//! A goes through its conjugate transpose. Singular values
//! come in PyTorch's descending order; each pair of singular vectors is unique only up to
//! sign (a unit phase for complex ones), as on every backend.

use tpurs_hlo::{Builder, CompareDir, Literal, TensorType, Value};

use super::decomp::{corner, householder, q_of};
use super::empty;
use super::jacobi::{diagonal, one_sided, spread, sum};
use super::linalg::{adjoint, float_matrices, identity_like};
use super::reduce::squared_magnitude;
use crate::ctx::{Ctx, Out};
use crate::error::{runtime, Result};
use crate::table::Registry;

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
    let zero_s = b.full_like(&s_rows, Literal::Float(0.0));
    let nonzero = b.compare(CompareDir::Gt, &s_rows, &zero_s)?;
    let s_like_w = b.convert(&s_rows, w.dtype());
    let scaled = b.div(w, &s_like_w)?;
    let zero = b.full_like(w, Literal::Float(0.0));
    let u = b.select(&nonzero, &scaled, &zero)?;
    let (h, taus) = householder(b, &u);
    let q = q_of(b, &h, &taus, cols)?;
    // Q's column i is u's times the sign of R[i, i] (zero for a zero column: keep Q's).
    let square = corner(b, &h, k, k)?;
    let d = diagonal(b, &square, 0)?;
    // R's diagonal is real for complex matrices too (LAPACK's convention, as XLA's).
    let d = b.real(&d);
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
    let sign = b.convert(&sign, q.dtype());
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
        &TensorType::new(ty.dtype.real_part(), [batch, &[0]].concat()),
    );
    let (u, vh) = (identity_like(b, &u)?, identity_like(b, &vh)?);
    Ok(vec![Some(u), Some(s), Some(vh)])
}

/// Jacobi on a tall `a` with its columns sorted: `(w, s, v)` with `a v = w`, `s` the
/// singular values (descending) and `w`'s columns of norms `s`.
fn singular_values(b: &mut Builder, a: &Value) -> Result<(Value, Value, Value)> {
    let r = a.rank();
    let (w, v) = one_sided(b, a)?;
    let sq = squared_magnitude(b, &w)?;
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

/// The thin SVD `a = U diag(S) V^H` of a tall `a` (`[.., m, n]`, `m >= n >= 1`): `(U, S, V)`.
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
    // A wide A = (A^H)^H: decompose the tall A^H = U' S V'^H, then U = V', Vh = U'^H.
    let wide = m < n;
    let tall = if wide { adjoint(b, &a)? } else { a };
    let tall_rows = m.max(n);
    let (w, s, v) = singular_values(b, &tall)?;
    if !compute_uv {
        let none = empty(b, ty.dtype);
        return Ok(vec![Some(none.clone()), Some(s), Some(none)]);
    }
    let cols = if full { tall_rows } else { m.min(n) };
    let u = orthonormal(b, &w, &s, cols)?;
    let (u, vh) = if wide {
        (v, adjoint(b, &u)?)
    } else {
        (u, adjoint(b, &v)?)
    };
    Ok(vec![Some(u), Some(s), Some(vh)])
}

pub(crate) fn register(reg: &mut Registry) {
    reg.ops(&["_linalg_svd", "_linalg_svd.U"], svd).complex();
}
