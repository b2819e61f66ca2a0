//! Linear algebra with StableHLO's own kernels: Cholesky factorisation
//! (`linalg_cholesky_ex`, with LAPACK's `info`), triangular solves
//! (`linalg_solve_triangular`, `triangular_solve`) and what they build (`cholesky_solve`,
//! `cholesky_inverse`). Batch dims broadcast as in PyTorch.

use tpurs_hlo::{Builder, CompareDir, DType, Literal, TensorType, Value};

use super::complex::conjugate;
use super::{broadcast_shapes, one};
use crate::ctx::{Ctx, Out};
use crate::dtype::torch_name;
use crate::error::{runtime, Error, Result};
use crate::table::Registry;

/// Checks a float batch of square matrices and returns its order.
pub(super) fn square(ctx: &Ctx, i: usize, op: &str) -> Result<i64> {
    let ty = ctx.ty(i)?;
    if !ty.dtype.is_float() && !ty.dtype.is_complex() {
        return Err(Error::NotImplemented(format!(
            "{op}: expected a floating point tensor, got {}",
            torch_name(ty.dtype)
        )));
    }
    let r = ty.rank();
    if r < 2 || ty.shape[r - 1] != ty.shape[r - 2] {
        return runtime(format!(
            "{op}: A must be batches of square matrices, but they are {:?} matrices",
            &ty.shape[r.saturating_sub(2)..]
        ));
    }
    Ok(ty.shape[r - 1])
}

/// Checks input `i` is a float32/float64 (or, for rules that opt in, complex) batch of
/// matrices (what the decompositions take).
pub(super) fn float_matrices(ctx: &Ctx, i: usize, op: &str) -> Result<TensorType> {
    let ty = ctx.ty(i)?;
    // Complex types reach only the rules that opt in to them.
    if !matches!(ty.dtype, DType::F32 | DType::F64 | DType::C64 | DType::C128) {
        return Err(Error::NotImplemented(format!(
            "{op}: not implemented for '{}'",
            torch_name(ty.dtype)
        )));
    }
    if ty.rank() < 2 {
        return runtime(format!(
            "{op}: The input tensor A must have at least 2 dimensions."
        ));
    }
    Ok(ty)
}

/// The identity batch shaped like `a`.
pub(super) fn identity_like(b: &mut Builder, a: &Value) -> Result<Value> {
    let ty = TensorType::new(DType::I64, a.shape().to_vec());
    let r = a.rank();
    let (row, col) = (b.iota(&ty, r - 2), b.iota(&ty, r - 1));
    let eq = b.compare(CompareDir::Eq, &row, &col)?;
    Ok(b.convert(&eq, a.dtype()))
}

/// Zeroes the strict upper (`lower`) or lower triangle of the last two dims.
pub(super) fn triangle(b: &mut Builder, x: &Value, lower: bool) -> Result<Value> {
    let ty = TensorType::new(DType::I64, x.shape().to_vec());
    let r = x.rank();
    let row = b.iota(&ty, r - 2);
    let col = b.iota(&ty, r - 1);
    let dir = if lower {
        CompareDir::Ge
    } else {
        CompareDir::Le
    };
    let keep = b.compare(dir, &row, &col)?;
    let zero = b.full_like(x, Literal::Int(0));
    Ok(b.select(&keep, x, &zero)?)
}

/// `x @ y` over the trailing two dims of two batches of one shape prefix.
pub(super) fn batch_matmul(b: &mut Builder, x: &Value, y: &Value) -> Result<Value> {
    let r = x.rank() as i64;
    let batch: Vec<i64> = (0..r - 2).collect();
    Ok(b.dot_general(x, y, (&batch, &batch), (&[r - 1], &[r - 2]))?)
}

/// Swaps the last two dims.
pub(super) fn transpose_last(b: &mut Builder, x: &Value) -> Result<Value> {
    let r = x.rank() as i64;
    let mut perm: Vec<i64> = (0..r).collect();
    perm.swap(r as usize - 1, r as usize - 2);
    Ok(b.transpose(x, &perm)?)
}

/// The Cholesky factor: lower `L` with `A = L L^H`, or upper `U = L^H`.
fn cholesky_of(b: &mut Builder, a: &Value, upper: bool) -> Result<Value> {
    let l = b.emit1("stablehlo.cholesky", &[a], "lower = true", a.ty.clone());
    let l = triangle(b, &l, true)?;
    if upper {
        adjoint(b, &l)
    } else {
        Ok(l)
    }
}

/// The conjugate transpose of the last two dims (the transpose for real values).
pub(super) fn adjoint(b: &mut Builder, x: &Value) -> Result<Value> {
    let c = conjugate(b, x)?;
    transpose_last(b, &c)
}

/// Per matrix of the batch: 1 where its factor `l` has a positive, finite diagonal (the
/// matrix is positive definite), else 0; shaped like the batch, int32.
fn factored(b: &mut Builder, l: &Value) -> Result<Value> {
    let r = l.rank();
    // A complex factor's diagonal is real.
    let l = &if l.dtype().is_complex() {
        b.real(l)
    } else {
        l.clone()
    };
    let ty = TensorType::new(DType::I64, l.shape().to_vec());
    let (row, col) = (b.iota(&ty, r - 2), b.iota(&ty, r - 1));
    let on_diag = b.compare(CompareDir::Eq, &row, &col)?;
    let one_v = b.full_like(l, Literal::Int(1));
    // Off the diagonal count as fine; NaN fails `> 0`.
    let d = b.select(&on_diag, l, &one_v)?;
    let zero = b.full_like(l, Literal::Int(0));
    let good = b.compare(CompareDir::Gt, &d, &zero)?;
    let good = b.convert(&good, DType::I32);
    let init = b.constant(Literal::Int(1), DType::I32);
    let dims = [r as i64 - 2, r as i64 - 1];
    Ok(b.reduce(&good, &init, &dims, |b, p, q| {
        b.mul(p, q).expect("same type")
    }))
}

/// `a` with everything outside its leading `k x k` block replaced by the identity (`k` per
/// matrix of the batch): positive definite exactly when that leading minor is.
fn leading_block(b: &mut Builder, a: &Value, k: &Value) -> Result<Value> {
    let r = a.rank();
    let ty = TensorType::new(DType::I32, a.shape().to_vec());
    let (row, col) = (b.iota(&ty, r - 2), b.iota(&ty, r - 1));
    let batch: Vec<i64> = (0..r as i64 - 2).collect();
    let k = b.broadcast_in_dim(k, a.shape(), &batch)?;
    let in_row = b.compare(CompareDir::Lt, &row, &k)?;
    let in_col = b.compare(CompareDir::Lt, &col, &k)?;
    let inside = b.and(&in_row, &in_col)?;
    let diag = b.compare(CompareDir::Eq, &row, &col)?;
    let eye = b.convert(&diag, a.dtype());
    Ok(b.select(&inside, a, &eye)?)
}

/// `linalg_cholesky_ex(self, *, upper, check_errors) -> (L, info)`: `info` is 0, or the
/// order of the first leading minor that is not positive definite, found by bisection
/// over leading blocks (log2(n) more factorisations); the factor is then undefined, as in
/// LAPACK.
fn cholesky_ex(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let n = square(ctx, 0, "linalg.cholesky")?;
    let upper = ctx.bool_or(1, false)?;
    let a = ctx.tensor(0)?;
    let b = &mut ctx.b;
    let l = cholesky_of(b, &a, false)?;
    let ok = factored(b, &l)?;
    // Invariant: the leading `lo` block is positive definite, the leading `hi` block not
    // (when the whole matrix fails).
    let mut lo = b.full_like(&ok, Literal::Int(0));
    let mut hi = b.full_like(&ok, Literal::Int(n));
    let mut span = n;
    while span > 1 {
        let sum = b.add(&lo, &hi)?;
        let two = b.full_like(&sum, Literal::Int(2));
        let mid = b.div(&sum, &two)?;
        let block = leading_block(b, &a, &mid)?;
        let lm = cholesky_of(b, &block, false)?;
        let pd = factored(b, &lm)?;
        let zero = b.full_like(&pd, Literal::Int(0));
        let pd = b.compare(CompareDir::Ne, &pd, &zero)?;
        lo = b.select(&pd, &mid, &lo)?;
        hi = b.select(&pd, &hi, &mid)?;
        span = (span + 1) / 2;
    }
    let zero = b.full_like(&ok, Literal::Int(0));
    let fine = b.compare(CompareDir::Ne, &ok, &zero)?;
    let one_i = b.full_like(&lo, Literal::Int(1));
    let failed = b.add(&lo, &one_i)?;
    let info = b.select(&fine, &zero, &failed)?;
    let l = if upper { adjoint(b, &l)? } else { l };
    Ok(vec![Some(l), Some(info)])
}

/// Broadcasts the batch dims of `a` (`[.., n, n]`) and `x` (`[.., r, c]`) together.
pub(super) fn broadcast_batches(b: &mut Builder, a: &Value, x: &Value) -> Result<(Value, Value)> {
    let (ra, rx) = (a.rank(), x.rank());
    let batch = broadcast_shapes(&a.shape()[..ra - 2], &x.shape()[..rx - 2])?;
    let with = |v: &Value, b: &mut Builder| -> Result<Value> {
        let mut s = batch.clone();
        s.extend_from_slice(&v.shape()[v.rank() - 2..]);
        Ok(b.broadcast_to(v, &s)?)
    };
    Ok((with(a, b)?, with(x, b)?))
}

/// Solves `op(A) X = B` (`left`) or `X op(A) = B` with `A` triangular.
pub(super) fn solve_triangular_of(
    b: &mut Builder,
    a: &Value,
    rhs: &Value,
    lower: bool,
    left: bool,
    unit: bool,
    transpose: bool,
) -> Result<Value> {
    let (a, rhs) = broadcast_batches(b, a, rhs)?;
    let attrs = format!(
        "left_side = {left}, lower = {lower}, unit_diagonal = {unit}, transpose_a = #stablehlo<transpose {}>",
        if transpose { "TRANSPOSE" } else { "NO_TRANSPOSE" }
    );
    Ok(b.emit1(
        "stablehlo.triangular_solve",
        &[&a, &rhs],
        &attrs,
        rhs.ty.clone(),
    ))
}

/// The promoted float operands of a solve (`A` at `ia`, the right-hand side at `ib`).
fn solve_operands(ctx: &mut Ctx, ia: usize, ib: usize, op: &str) -> Result<(Value, Value)> {
    square(ctx, ia, op)?;
    let (ta, tb) = (ctx.ty(ia)?, ctx.ty(ib)?);
    if tb.rank() < 2 {
        return runtime(format!("{op}: expected B to have at least 2 dimensions"));
    }
    if ta.dtype != tb.dtype {
        return runtime(format!(
            "{op}: Expected A and B to have the same dtype, but found A of type {} and B of type {} instead",
            torch_name(ta.dtype),
            torch_name(tb.dtype)
        ));
    }
    Ok((ctx.tensor(ia)?, ctx.tensor(ib)?))
}

/// `linalg_solve_triangular(A, B, *, upper, left, unitriangular)` and `out=`.
fn linalg_solve_triangular(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let (a, rhs) = solve_operands(ctx, 0, 1, "linalg.solve_triangular")?;
    let upper = ctx.bool_or(2, false)?;
    let left = ctx.bool_or(3, true)?;
    let unit = ctx.bool_or(4, false)?;
    one(solve_triangular_of(
        &mut ctx.b, &a, &rhs, !upper, left, unit, false,
    )?)
}

/// `triangular_solve(b, A, upper, transpose, unitriangular) -> (X, A)` and `.X`.
fn triangular_solve(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let (a, rhs) = solve_operands(ctx, 1, 0, "triangular_solve")?;
    let upper = ctx.bool_or(2, true)?;
    let transpose = ctx.bool_or(3, false)?;
    let unit = ctx.bool_or(4, false)?;
    let x = solve_triangular_of(&mut ctx.b, &a, &rhs, !upper, true, unit, transpose)?;
    // The coefficient comes back as given (broadcast to the batch).
    let (a, _) = broadcast_batches(&mut ctx.b, &a, &rhs)?;
    Ok(vec![Some(x), Some(a)])
}

/// `_cholesky_solve_helper(b, L, upper)` (behind `cholesky_solve`): two triangular solves.
fn cholesky_solve(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let (l, rhs) = solve_operands(ctx, 1, 0, "cholesky_solve")?;
    let upper = ctx.bool_or(2, false)?;
    one(factor_solve(&mut ctx.b, &l, &rhs, upper)?)
}

/// `X` with `A X = B` for `A = L L^H` (or `U^H U`): a solve with the factor, then one with
/// its conjugate transpose.
fn factor_solve(b: &mut Builder, l: &Value, rhs: &Value, upper: bool) -> Result<Value> {
    let lc = conjugate(b, l)?;
    let (first, second) = if upper { (&lc, l) } else { (l, &lc) };
    let y = solve_triangular_of(b, first, rhs, !upper, true, false, upper)?;
    solve_triangular_of(b, second, &y, !upper, true, false, !upper)
}

/// `cholesky_inverse(L, upper)`: `(L L^T)^-1` by solving against the identity.
fn cholesky_inverse(ctx: &mut Ctx) -> Result<Vec<Out>> {
    square(ctx, 0, "cholesky_inverse")?;
    let upper = ctx.bool_or(1, false)?;
    let l = ctx.tensor(0)?;
    let b = &mut ctx.b;
    let ty = TensorType::new(DType::I64, l.shape().to_vec());
    let r = l.rank();
    let (row, col) = (b.iota(&ty, r - 2), b.iota(&ty, r - 1));
    let diag = b.compare(CompareDir::Eq, &row, &col)?;
    let eye = b.convert(&diag, l.dtype());
    one(factor_solve(b, &l, &eye, upper)?)
}

/// `linalg_cross(self, other, dim=-1)`: the cross product of 3-vectors along `dim`, the
/// other dims broadcast.
fn cross(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let (ta, tb) = (ctx.ty(0)?, ctx.ty(1)?);
    if ta.rank() != tb.rank() {
        return runtime("linalg.cross: inputs must have the same number of dimensions.");
    }
    if ta.dtype != tb.dtype {
        return runtime(format!(
            "expected scalar type {} but found {}",
            torch_name(ta.dtype),
            torch_name(tb.dtype)
        ));
    }
    let dim = ctx.int_or(2, -1)?;
    if ta.rank() == 0 {
        return Err(Error::Index(format!(
            "Dimension specified as {dim} but tensor has no dimensions"
        )));
    }
    let d = super::wrap_dim(dim, ta.rank())?;
    if ta.shape[d] != 3 || tb.shape[d] != 3 {
        return runtime(format!(
            "linalg.cross: inputs dimension {dim} must have length 3. Got {} and {}",
            ta.shape[d], tb.shape[d]
        ));
    }
    let v = super::operands(ctx, &[0, 1], ta.dtype)?;
    let b = &mut ctx.b;
    let mut parts = Vec::with_capacity(6);
    for x in &v {
        for i in 0..3 {
            parts.push(b.slice_dim(x, d, i, i + 1, 1)?);
        }
    }
    let (a, c) = (&parts[..3], &parts[3..]);
    let mut out = Vec::with_capacity(3);
    for (i, j) in [(1, 2), (2, 0), (0, 1)] {
        let p = b.mul(&a[i], &c[j])?;
        let q = b.mul(&a[j], &c[i])?;
        out.push(b.sub(&p, &q)?);
    }
    let refs: Vec<&Value> = out.iter().collect();
    one(b.concatenate(&refs, d)?)
}

pub(crate) fn register(reg: &mut Registry) {
    reg.ops(&["linalg_cholesky_ex", "linalg_cholesky_ex.L"], cholesky_ex)
        .complex();
    reg.ops(
        &["linalg_solve_triangular", "linalg_solve_triangular.out"],
        linalg_solve_triangular,
    )
    .complex();
    reg.ops(
        &["triangular_solve", "triangular_solve.X"],
        triangular_solve,
    )
    .complex();
    reg.ops(
        &["_cholesky_solve_helper", "_cholesky_solve_helper.out"],
        cholesky_solve,
    )
    .complex();
    reg.ops(
        &["cholesky_inverse", "cholesky_inverse.out"],
        cholesky_inverse,
    )
    .complex();
    reg.ops(&["linalg_cross", "linalg_cross.out"], cross)
        .complex();
}
