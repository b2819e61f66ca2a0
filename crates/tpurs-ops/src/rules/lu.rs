//! LU with partial pivoting and what is built on it: `linalg_lu_factor_ex`, `linalg_lu`,
//! `lu_unpack`, `linalg_lu_solve`, `linalg_inv_ex`, `_linalg_solve_ex`, `_linalg_det`,
//! `_linalg_slogdet`.
//!
//! The factorisation is LAPACK's unblocked `getf2` as one `stablehlo.while` over the
//! columns: the pivot is the first largest magnitude at or below the diagonal, rows swap,
//! the column below the diagonal is scaled by the pivot (left as is when the pivot is
//! zero, which sets `info`) and the trailing block gets the rank-1 update. Pivots are
//! 1-based `int32` as LAPACK returns them, so `LU` and `pivots` equal the CPU's.

use tpurs_hlo::{Builder, CompareDir, DType, GatherDims, Literal, TensorType, Value};

use super::complex::{conjugate, magnitude};
use super::complex_math::sgn_of;
use super::linalg::{
    broadcast_batches, float_matrices, identity_like, solve_triangular_of, square, transpose_last,
};
use super::{empty, try_while};
use crate::ctx::{Ctx, Out};
use crate::dtype::torch_name;
use crate::error::{runtime, Result};
use crate::table::Registry;

/// A 0-d int64 constant.
fn index(b: &mut Builder, v: i64) -> Value {
    b.constant(Literal::Int(v), DType::I64)
}

/// `x` (`[.., m]`) repeated along a new last dim of size `n`.
fn along_cols(b: &mut Builder, x: &Value, n: i64) -> Result<Value> {
    let mut shape = x.shape().to_vec();
    shape.push(n);
    let dims: Vec<i64> = (0..x.rank() as i64).collect();
    Ok(b.broadcast_in_dim(x, &shape, &dims)?)
}

/// `x` (`[.., n]`) repeated along a new second-to-last dim of size `m`.
fn along_rows(b: &mut Builder, x: &Value, m: i64) -> Result<Value> {
    let r = x.rank();
    let mut shape = x.shape().to_vec();
    shape.insert(r - 1, m);
    let mut dims: Vec<i64> = (0..r as i64 - 1).collect();
    dims.push(r as i64);
    Ok(b.broadcast_in_dim(x, &shape, &dims)?)
}

/// Item `j` (a 0-d int64 value) of the last dim of `x`, that dim dropped.
pub(super) fn item_last(b: &mut Builder, x: &Value, j: &Value) -> Result<Value> {
    let r = x.rank();
    let mut starts: Vec<Value> = (0..r - 1).map(|_| index(b, 0)).collect();
    starts.push(j.clone());
    let mut sizes = x.shape().to_vec();
    sizes[r - 1] = 1;
    let s = b.dynamic_slice(x, &starts, &sizes);
    Ok(b.reshape(&s, &x.shape()[..r - 1])?)
}

/// Sum over the last dim of `x` where `mask` holds (an exact gather of one item per row).
fn pick(b: &mut Builder, x: &Value, mask: &Value, dim: usize) -> Result<Value> {
    let zero = b.full_like(x, Literal::Int(0));
    let kept = b.select(mask, x, &zero)?;
    let init = b.scalar_like(x, Literal::Int(0));
    Ok(b.reduce(&kept, &init, &[dim as i64], |b, p, q| {
        b.add(p, q).expect("same types")
    }))
}

/// The size LAPACK compares pivots by: `|x|`, and `|re| + |im|` for complex `x` (`izamax`).
fn pivot_size(b: &mut Builder, x: &Value) -> Result<Value> {
    if !x.dtype().is_complex() {
        return Ok(b.abs(x));
    }
    let (re, im) = (b.real(x), b.imag(x));
    let (re, im) = (b.abs(&re), b.abs(&im));
    Ok(b.add(&re, &im)?)
}

/// One column step of the factorisation on `[j, a, pivots, info]`.
fn lu_step(b: &mut Builder, s: &[Value]) -> Result<Vec<Value>> {
    let (j, a, pivots, info) = (&s[0], &s[1], &s[2], &s[3]);
    let r = a.rank();
    let (m, n) = (a.shape()[r - 2], a.shape()[r - 1]);
    let ity = TensorType::new(DType::I64, a.shape().to_vec());
    let (row, col) = (b.iota(&ity, r - 2), b.iota(&ity, r - 1));
    let jj = b.broadcast_in_dim(j, a.shape(), &[])?;
    // Pivot: the first largest |a[i, j]| with i >= j.
    let col_j = item_last(b, a, j)?;
    let rows = TensorType::new(DType::I64, col_j.shape().to_vec());
    let row_v = b.iota(&rows, r - 2);
    let j_v = b.broadcast_in_dim(j, col_j.shape(), &[])?;
    let below = b.compare(CompareDir::Ge, &row_v, &j_v)?;
    let mag = pivot_size(b, &col_j)?;
    let minus = b.full_like(&mag, Literal::Float(-1.0));
    let cand = b.select(&below, &mag, &minus)?;
    let init = b.scalar_like(&cand, Literal::Float(f64::NEG_INFINITY));
    let best = b.reduce(&cand, &init, &[r as i64 - 2], |b, p, q| {
        b.max(p, q).expect("same types")
    });
    let best = along_cols(b, &best, m)?;
    let at_best = b.compare(CompareDir::Eq, &cand, &best)?;
    let none = b.full_like(&row_v, Literal::Int(m));
    let first = b.select(&at_best, &row_v, &none)?;
    let init = index(b, m);
    let p = b.reduce(&first, &init, &[r as i64 - 2], |b, x, y| {
        b.min(x, y).expect("same types")
    });
    // Swap rows j and p.
    let p_m = along_cols(b, &p, m)?;
    let p_full = along_cols(b, &p_m, n)?;
    let is_p = b.compare(CompareDir::Eq, &row, &p_full)?;
    let is_j = b.compare(CompareDir::Eq, &row, &jj)?;
    let row_p = pick(b, a, &is_p, r - 2)?;
    let row_j = pick(b, a, &is_j, r - 2)?;
    let (row_p_m, row_j_m) = (along_rows(b, &row_p, m)?, along_rows(b, &row_j, m)?);
    let a1 = b.select(&is_p, &row_j_m, a)?;
    let a1 = b.select(&is_j, &row_p_m, &a1)?;
    // Scale the column below the pivot (unless the pivot is zero) and update the rest.
    let d = item_last(b, &row_p, j)?;
    let zero_d = b.full_like(&d, Literal::Int(0));
    let singular = b.compare(CompareDir::Eq, &d, &zero_d)?;
    let col1 = item_last(b, &a1, j)?;
    let d_m = along_cols(b, &d, m)?;
    let scaled = b.div(&col1, &d_m)?;
    let singular_m = along_cols(b, &singular, m)?;
    let l = b.select(&singular_m, &col1, &scaled)?;
    let l_full = along_cols(b, &l, n)?;
    let (low, right) = (
        b.compare(CompareDir::Gt, &row, &jj)?,
        b.compare(CompareDir::Gt, &col, &jj)?,
    );
    let trailing = b.and(&low, &right)?;
    let prod = b.mul(&l_full, &row_p_m)?;
    let updated = b.sub(&a1, &prod)?;
    let a2 = b.select(&trailing, &updated, &a1)?;
    let at_j = b.compare(CompareDir::Eq, &col, &jj)?;
    let below_j = b.and(&low, &at_j)?;
    let a3 = b.select(&below_j, &l_full, &a2)?;
    // pivots[j] = p + 1; info = j + 1 at the first zero pivot.
    let one = b.full_like(&p, Literal::Int(1));
    let p1 = b.add(&p, &one)?;
    let p1 = b.convert(&p1, DType::I32);
    let mut piv_shape = p1.shape().to_vec();
    piv_shape.push(1);
    let p1 = b.reshape(&p1, &piv_shape)?;
    let mut starts: Vec<Value> = (0..r - 2).map(|_| index(b, 0)).collect();
    starts.push(j.clone());
    let pivots = b.dynamic_update_slice(pivots, &p1, &starts);
    let one_s = index(b, 1);
    let j1 = b.add(j, &one_s)?;
    let j1_i = b.convert(&j1, DType::I32);
    let j1_b = b.broadcast_in_dim(&j1_i, info.shape(), &[])?;
    let zero_i = b.full_like(info, Literal::Int(0));
    let unset = b.compare(CompareDir::Eq, info, &zero_i)?;
    let first_zero = b.and(&unset, &singular)?;
    let info = b.select(&first_zero, &j1_b, info)?;
    Ok(vec![j1, a3, pivots, info])
}

/// `(LU, pivots, info)` of `a` (`[.., m, n]`, float).
fn lu_factor(b: &mut Builder, a: &Value) -> Result<(Value, Value, Value)> {
    let r = a.rank();
    let (m, n) = (a.shape()[r - 2], a.shape()[r - 1]);
    let k = m.min(n);
    let batch = a.shape()[..r - 2].to_vec();
    let mut piv_shape = batch.clone();
    piv_shape.push(k);
    let zero_i = b.constant(Literal::Int(0), DType::I32);
    let pivots = b.broadcast_in_dim(&zero_i, &piv_shape, &[])?;
    let info = b.broadcast_in_dim(&zero_i, &batch, &[])?;
    if k == 0 {
        // Empty matrices: nothing to factor (and no column to slice).
        return Ok((a.clone(), pivots, info));
    }
    let j = index(b, 0);
    let out = try_while(
        b,
        &[&j, a, &pivots, &info],
        |b, s| {
            let k = index(b, k);
            Ok(b.compare(CompareDir::Lt, &s[0], &k)?)
        },
        lu_step,
    )?;
    Ok((out[1].clone(), out[2].clone(), out[3].clone()))
}

/// The row permutation of `pivots` (`[.., k]`, 1-based sequential swaps) over `m` rows:
/// row `i` of `P A` is row `perm[i]` of `A`.
fn permutation(b: &mut Builder, pivots: &Value, m: i64) -> Result<Value> {
    let r = pivots.rank();
    let k = pivots.shape()[r - 1];
    let mut shape = pivots.shape()[..r - 1].to_vec();
    shape.push(m);
    let ity = TensorType::new(DType::I64, shape);
    let perm = b.iota(&ity, r - 1);
    if k == 0 || m == 0 {
        return Ok(perm);
    }
    let piv = b.convert(pivots, DType::I64);
    let i0 = index(b, 0);
    let out = try_while(
        b,
        &[&i0, &perm],
        |b, s| {
            let k = index(b, k);
            Ok(b.compare(CompareDir::Lt, &s[0], &k)?)
        },
        |b, s| {
            let (i, perm) = (&s[0], &s[1]);
            let one = index(b, 1);
            let target = item_last(b, &piv, i)?;
            let ones = b.full_like(&target, Literal::Int(1));
            let target = b.sub(&target, &ones)?;
            let pos = b.iota(&perm.ty, r - 1);
            let t_m = along_cols(b, &target, m)?;
            let i_m = b.broadcast_in_dim(i, perm.shape(), &[])?;
            let (is_t, is_i) = (
                b.compare(CompareDir::Eq, &pos, &t_m)?,
                b.compare(CompareDir::Eq, &pos, &i_m)?,
            );
            let v_t = pick(b, perm, &is_t, r - 1)?;
            let v_t = along_cols(b, &v_t, m)?;
            let v_i = item_last(b, perm, i)?;
            let v_i = along_cols(b, &v_i, m)?;
            let swapped = b.select(&is_t, &v_i, perm)?;
            let swapped = b.select(&is_i, &v_t, &swapped)?;
            Ok(vec![b.add(i, &one)?, swapped])
        },
    )?;
    Ok(out[1].clone())
}

/// Rows of `x` (`[.., m, c]`) in the order `perm` (`[.., m]`, same batch): `x[.., perm[i], :]`.
fn gather_rows(b: &mut Builder, x: &Value, perm: &Value) -> Result<Value> {
    let r = x.rank();
    let (m, c) = (x.shape()[r - 2], x.shape()[r - 1]);
    let batch: i64 = x.shape()[..r - 2].iter().product();
    if batch * m * c == 0 {
        return Ok(x.clone());
    }
    // Flatten the batch: row `perm[i]` of batch `t` is row `t * m + perm[i]`.
    let flat = b.reshape(x, &[batch * m, c])?;
    let pty = TensorType::new(DType::I64, vec![batch, m]);
    let perm2 = b.reshape(perm, &[batch, m])?;
    let base = b.iota(&pty, 0);
    let mm = b.full_like(&base, Literal::Int(m));
    let base = b.mul(&base, &mm)?;
    let idx = b.add(&base, &perm2)?;
    let idx = b.reshape(&idx, &[batch * m, 1])?;
    let dims = GatherDims {
        offset_dims: vec![1],
        collapsed_slice_dims: vec![0],
        start_index_map: vec![0],
        index_vector_dim: 1,
        slice_sizes: vec![1, c],
    };
    let rows = b.gather(&flat, &idx, &dims, &[batch * m, c]);
    Ok(b.reshape(&rows, x.shape())?)
}

/// The inverse of a permutation `perm` (`[.., m]`).
fn inverse_permutation(b: &mut Builder, perm: &Value) -> Result<Value> {
    let r = perm.rank();
    let m = perm.shape()[r - 1];
    // inv[j] = the i with perm[i] == j.
    let mut shape = perm.shape().to_vec();
    shape.push(m);
    let ity = TensorType::new(DType::I64, shape);
    let i = b.iota(&ity, r - 1);
    let jv = b.iota(&ity, r);
    let p = along_cols(b, perm, m)?;
    let hit = b.compare(CompareDir::Eq, &p, &jv)?;
    pick(b, &i, &hit, r - 1)
}

/// Solves `A X = B` (or `A^T X = B` with `transposed`, no conjugation) from `A`'s LU and
/// pivots.
fn lu_solve_left(
    b: &mut Builder,
    lu: &Value,
    perm: &Value,
    rhs: &Value,
    transposed: bool,
) -> Result<Value> {
    let (lu, rhs) = broadcast_batches(b, lu, rhs)?;
    let rb = rhs.rank() - 2;
    let perm = b.broadcast_to(perm, &rhs.shape()[..rb + 1])?;
    if !transposed {
        let pb = gather_rows(b, &rhs, &perm)?;
        let y = solve_triangular_of(b, &lu, &pb, true, true, true, false)?;
        return solve_triangular_of(b, &lu, &y, false, true, false, false);
    }
    let z = solve_triangular_of(b, &lu, &rhs, false, true, false, true)?;
    let w = solve_triangular_of(b, &lu, &z, true, true, true, true)?;
    let inv = inverse_permutation(b, &perm)?;
    gather_rows(b, &w, &inv)
}

/// `linalg_lu_factor_ex(A, pivot=True, check_errors=False)` -> `(LU, pivots, info)`.
fn lu_factor_ex(ctx: &mut Ctx) -> Result<Vec<Out>> {
    float_matrices(ctx, 0, "linalg.lu_factor")?;
    if !ctx.bool_or(1, true)? {
        return runtime("linalg.lu_factor: LU without pivoting is not implemented on the CPU");
    }
    let a = ctx.tensor(0)?;
    let (lu, pivots, info) = lu_factor(&mut ctx.b, &a)?;
    Ok(vec![Some(lu), Some(pivots), Some(info)])
}

/// `linalg_lu_solve(LU, pivots, B, left=True, adjoint=False)`.
fn lu_solve(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let n = square(ctx, 0, "linalg.lu_solve")?;
    let (left, adjoint) = (ctx.bool_or(3, true)?, ctx.bool_or(4, false)?);
    let (lu, piv, rhs) = (ctx.tensor(0)?, ctx.tensor(1)?, ctx.tensor(2)?);
    let b = &mut ctx.b;
    let perm = permutation(b, &piv, n)?;
    // A^H = conj(A)^T; for real A conjugating does nothing.
    let lu = if adjoint { conjugate(b, &lu)? } else { lu };
    if left {
        return Ok(vec![Some(lu_solve_left(b, &lu, &perm, &rhs, adjoint)?)]);
    }
    // X A = B  <=>  A^T X^T = B^T (and X A^H = B  <=>  conj(A) X^T = B^T).
    let bt = transpose_last(b, &rhs)?;
    let xt = lu_solve_left(b, &lu, &perm, &bt, !adjoint)?;
    Ok(vec![Some(transpose_last(b, &xt)?)])
}

/// `linalg_inv_ex(A, check_errors=False)` -> `(inverse, info)`.
fn inv_ex(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let n = square(ctx, 0, "linalg.inv")?;
    float_matrices(ctx, 0, "linalg.inv")?;
    let a = ctx.tensor(0)?;
    let b = &mut ctx.b;
    let (lu, piv, info) = lu_factor(b, &a)?;
    let perm = permutation(b, &piv, n)?;
    let eye = identity_like(b, &a)?;
    Ok(vec![
        Some(lu_solve_left(b, &lu, &perm, &eye, false)?),
        Some(info),
    ])
}

/// `_linalg_solve_ex(A, B, left=True, check_errors=False)` -> `(result, LU, pivots, info)`;
/// `B` may be a (batch of) vector(s).
fn solve_ex(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let n = square(ctx, 0, "linalg.solve")?;
    let ta = float_matrices(ctx, 0, "linalg.solve")?;
    let tb = ctx.ty(1)?;
    if tb.dtype != ta.dtype {
        return runtime(format!(
            "linalg.solve: Expected A and B to have the same dtype, but found A of type {} and B of type {} instead",
            torch_name(ta.dtype),
            torch_name(tb.dtype)
        ));
    }
    let left = ctx.bool_or(2, true)?;
    let vector =
        tb.rank() == 1 || (tb.rank() == ta.rank() - 1 && tb.shape == ta.shape[..ta.rank() - 1]);
    let (a, rhs) = (ctx.tensor(0)?, ctx.tensor(1)?);
    let b = &mut ctx.b;
    let (lu, piv, info) = lu_factor(b, &a)?;
    let perm = permutation(b, &piv, n)?;
    let x = if vector {
        let mut col = rhs.shape().to_vec();
        col.push(1);
        let rhs = b.reshape(&rhs, &col)?;
        let x = lu_solve_left(b, &lu, &perm, &rhs, !left)?;
        let r = x.rank();
        b.reshape(&x, &x.shape()[..r - 1])?
    } else if left {
        lu_solve_left(b, &lu, &perm, &rhs, false)?
    } else {
        let bt = transpose_last(b, &rhs)?;
        let xt = lu_solve_left(b, &lu, &perm, &bt, true)?;
        transpose_last(b, &xt)?
    };
    Ok(vec![Some(x), Some(lu), Some(piv), Some(info)])
}

/// The diagonal of `lu` and the parity (`+-1`) of its row swaps.
fn diagonal_and_parity(b: &mut Builder, lu: &Value, piv: &Value) -> Result<(Value, Value)> {
    let r = lu.rank();
    let ty = TensorType::new(DType::I64, lu.shape().to_vec());
    let (row, col) = (b.iota(&ty, r - 2), b.iota(&ty, r - 1));
    let on_diag = b.compare(CompareDir::Eq, &row, &col)?;
    let diag = pick(b, lu, &on_diag, r - 1)?;
    let pty = TensorType::new(DType::I32, piv.shape().to_vec());
    let pos = b.iota(&pty, piv.rank() - 1);
    let ones = b.full_like(&pos, Literal::Int(1));
    let pos1 = b.add(&pos, &ones)?;
    let swapped = b.compare(CompareDir::Ne, piv, &pos1)?;
    let swaps = b.convert(&swapped, DType::I32);
    let init = b.constant(Literal::Int(0), DType::I32);
    let count = b.reduce(&swaps, &init, &[piv.rank() as i64 - 1], |b, p, q| {
        b.add(p, q).expect("same types")
    });
    let two = b.full_like(&count, Literal::Int(2));
    let odd = b.rem(&count, &two)?;
    let zero = b.full_like(&odd, Literal::Int(0));
    let even = b.compare(CompareDir::Eq, &odd, &zero)?;
    let plus = b.full_like(&count, Literal::Int(1));
    let plus = crate::dtype::cast(b, &plus, lu.dtype())?;
    let minus = b.neg(&plus);
    Ok((diag, b.select(&even, &plus, &minus)?))
}

/// The LU factors `_linalg_det` and `_linalg_slogdet` return: of `A^T` for a contiguous
/// real `A`, else of `A`, as PyTorch factors them (their backwards solve with these
/// factors and make the same choice).
fn det_factors(ctx: &mut Ctx) -> Result<(Value, Value)> {
    let transposed = ctx.is_contiguous(0) && !ctx.ty(0)?.dtype.is_complex();
    let a = ctx.tensor(0)?;
    let b = &mut ctx.b;
    let a = if transposed {
        transpose_last(b, &a)?
    } else {
        a
    };
    let (lu, piv, _) = lu_factor(b, &a)?;
    Ok((lu, piv))
}

/// `_linalg_det(A)` -> `(det, LU, pivots)`.
fn det(ctx: &mut Ctx) -> Result<Vec<Out>> {
    square(ctx, 0, "linalg.det")?;
    float_matrices(ctx, 0, "linalg.det")?;
    let (lu, piv) = det_factors(ctx)?;
    let b = &mut ctx.b;
    let (diag, parity) = diagonal_and_parity(b, &lu, &piv)?;
    let init = b.scalar_like(&diag, Literal::Float(1.0));
    let prod = b.reduce(&diag, &init, &[diag.rank() as i64 - 1], |b, p, q| {
        b.mul(p, q).expect("same types")
    });
    Ok(vec![Some(b.mul(&prod, &parity)?), Some(lu), Some(piv)])
}

/// `_linalg_slogdet(A)` -> `(sign, logabsdet, LU, pivots)`.
fn slogdet(ctx: &mut Ctx) -> Result<Vec<Out>> {
    square(ctx, 0, "linalg.slogdet")?;
    float_matrices(ctx, 0, "linalg.slogdet")?;
    let (lu, piv) = det_factors(ctx)?;
    let b = &mut ctx.b;
    let (diag, parity) = diagonal_and_parity(b, &lu, &piv)?;
    let last = diag.rank() as i64 - 1;
    // Complex determinants have a phase for a sign.
    let signs = if diag.dtype().is_complex() {
        sgn_of(b, &diag)?
    } else {
        b.sign(&diag)
    };
    let one = b.scalar_like(&diag, Literal::Float(1.0));
    let sign = b.reduce(&signs, &one, &[last], |b, p, q| {
        b.mul(p, q).expect("same types")
    });
    let sign = b.mul(&sign, &parity)?;
    let mag = if diag.dtype().is_complex() {
        magnitude(b, &diag)?
    } else {
        b.abs(&diag)
    };
    let logs = b.log(&mag);
    let zero = b.scalar_like(&mag, Literal::Float(0.0));
    let logabs = b.reduce(&logs, &zero, &[last], |b, p, q| {
        b.add(p, q).expect("same types")
    });
    Ok(vec![Some(sign), Some(logabs), Some(lu), Some(piv)])
}

/// `(P, L, U)` with `A = P L U` from `A`'s LU and pivots; `data` / `pivots` false leave
/// `L, U` / `P` empty, as `lu_unpack` does.
fn unpack(b: &mut Builder, lu: &Value, piv: &Value, data: bool, pivots: bool) -> Result<Vec<Out>> {
    let r = lu.rank();
    let (m, n) = (lu.shape()[r - 2], lu.shape()[r - 1]);
    let k = m.min(n);
    let p = if pivots {
        // P[row, col] = 1 where perm[col] == row.
        let perm = permutation(b, piv, m)?;
        let mut shape = perm.shape().to_vec();
        shape.insert(r - 2, m);
        let ity = TensorType::new(DType::I64, shape);
        let rows = b.iota(&ity, r - 2);
        let perm_rows = along_rows(b, &perm, m)?;
        let hit = b.compare(CompareDir::Eq, &perm_rows, &rows)?;
        b.convert(&hit, lu.dtype())
    } else {
        empty(b, lu.dtype())
    };
    if !data {
        return Ok(vec![
            Some(p),
            Some(empty(b, lu.dtype())),
            Some(empty(b, lu.dtype())),
        ]);
    }
    let mut lim = lu.shape().to_vec();
    lim[r - 1] = k;
    let l = b.slice(lu, &vec![0; r], &lim, &vec![1; r])?;
    let ity = TensorType::new(DType::I64, l.shape().to_vec());
    let (row, col) = (b.iota(&ity, r - 2), b.iota(&ity, r - 1));
    let strict = b.compare(CompareDir::Gt, &row, &col)?;
    let diag = b.compare(CompareDir::Eq, &row, &col)?;
    let zero = b.full_like(&l, Literal::Int(0));
    let one = b.full_like(&l, Literal::Int(1));
    let l = b.select(&strict, &l, &zero)?;
    let l = b.select(&diag, &one, &l)?;
    let mut lim = lu.shape().to_vec();
    lim[r - 2] = k;
    let u = b.slice(lu, &vec![0; r], &lim, &vec![1; r])?;
    let ity = TensorType::new(DType::I64, u.shape().to_vec());
    let (row, col) = (b.iota(&ity, r - 2), b.iota(&ity, r - 1));
    let upper = b.compare(CompareDir::Le, &row, &col)?;
    let zero = b.full_like(&u, Literal::Int(0));
    let u = b.select(&upper, &u, &zero)?;
    Ok(vec![Some(p), Some(l), Some(u)])
}

/// `linalg_lu(A, pivot=True)` -> `(P, L, U)`.
fn linalg_lu(ctx: &mut Ctx) -> Result<Vec<Out>> {
    float_matrices(ctx, 0, "linalg.lu")?;
    if !ctx.bool_or(1, true)? {
        return runtime("linalg.lu: LU without pivoting is not implemented on the CPU");
    }
    let a = ctx.tensor(0)?;
    let b = &mut ctx.b;
    let (lu, piv, _) = lu_factor(b, &a)?;
    unpack(b, &lu, &piv, true, true)
}

/// `lu_unpack(LU_data, LU_pivots, unpack_data=True, unpack_pivots=True)` -> `(P, L, U)`.
fn lu_unpack(ctx: &mut Ctx) -> Result<Vec<Out>> {
    float_matrices(ctx, 0, "lu_unpack")?;
    let (data, pivots) = (ctx.bool_or(2, true)?, ctx.bool_or(3, true)?);
    let (lu, piv) = (ctx.tensor(0)?, ctx.tensor(1)?);
    unpack(&mut ctx.b, &lu, &piv, data, pivots)
}

pub(crate) fn register(reg: &mut Registry) {
    reg.ops(
        &["linalg_lu_factor_ex", "linalg_lu_factor_ex.out"],
        lu_factor_ex,
    )
    .complex();
    reg.ops(&["linalg_lu_solve", "linalg_lu_solve.out"], lu_solve)
        .complex();
    reg.ops(&["linalg_inv_ex", "linalg_inv_ex.inverse"], inv_ex)
        .complex();
    reg.ops(&["_linalg_solve_ex", "_linalg_solve_ex.result"], solve_ex)
        .complex();
    reg.ops(&["_linalg_det", "_linalg_det.result"], det)
        .complex();
    reg.ops(&["_linalg_slogdet", "_linalg_slogdet.sign"], slogdet)
        .complex();
    reg.ops(&["linalg_lu", "linalg_lu.out"], linalg_lu)
        .complex();
    reg.ops(&["lu_unpack", "lu_unpack.out"], lu_unpack)
        .complex();
}
