//! `_linalg_eigh` (behind `linalg.eigh`, `eigvalsh`, and `pinv`/`matrix_rank` with
//! `hermitian=True`) of real symmetric and complex Hermitian matrices: XLA's `Eigh` kernel
//! (Jacobi, eigenvalues ascending). In float64 its vectors reconstruct A only to about
//! 1e-8 relative, so they are polished by our own two-sided Jacobi on `V^H A V` until the
//! couplings reach working precision. Complex vectors get LAPACK's phase convention.

use tpurs_hlo::{Builder, CompareDir, DType, TensorType, Value};

use super::complex::conjugate;
use super::empty;
use super::jacobi::{diagonal, split_phase, spread, two_sided};
use super::linalg::{adjoint, batch_matmul, float_matrices, transpose_last};
use crate::ctx::{Ctx, Out};
use crate::error::{runtime, Result};
use crate::table::Registry;

/// Polishing sweeps at most: from XLA's vectors two normally reach working precision.
const POLISH_SWEEPS: i64 = 6;

/// `_linalg_eigh(A, UPLO, compute_v)`: eigenvalues (ascending) and eigenvectors (columns)
/// of a symmetric matrix, reading only the `UPLO` triangle.
fn eigh(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let ty = float_matrices(ctx, 0, "linalg.eigh")?;
    let r = ty.rank();
    if ty.shape[r - 1] != ty.shape[r - 2] {
        return runtime(format!(
            "linalg.eigh: A must be batches of square matrices, but they are {:?} matrices",
            &ty.shape[r - 2..]
        ));
    }
    let uplo = ctx.str(1)?;
    let lower = match uplo {
        "L" | "l" => true,
        "U" | "u" => false,
        _ => {
            return runtime(format!(
                "Expected UPLO argument to be 'L' or 'U', but got {uplo}"
            ))
        }
    };
    let compute_v = ctx.bool_or(2, true)?;
    let a = ctx.tensor(0)?;
    let b = &mut ctx.b;
    let (values, vectors) = eigh_of(b, &a, lower)?;
    let vectors = if compute_v {
        vectors
    } else {
        empty(b, ty.dtype)
    };
    Ok(vec![Some(values), Some(vectors)])
}

/// `(eigenvalues ascending, eigenvectors as columns)` of the symmetric (Hermitian) matrices
/// `a` (`[.., n, n]`), reading the lower or upper triangle.
pub(super) fn eigh_of(b: &mut Builder, a: &Value, lower: bool) -> Result<(Value, Value)> {
    let r = a.rank();
    let values_ty = TensorType::new(a.dtype().real_part(), a.shape()[..r - 1].to_vec());
    // backend_config: lower, sort eigenvalues, max Jacobi sweeps, tolerance (as JAX passes).
    let config = format!("backend_config = \"{},1,100,1e-6\"", lower as i32);
    let out = b.emit(
        "stablehlo.custom_call",
        &[a],
        &format!("call_target_name = \"Eigh\", {config}"),
        &[],
        &[a.ty.clone(), values_ty],
    );
    let (mut values, mut vectors) = (out[1].clone(), out[0].clone());
    if a.dtype().real_part() == DType::F64 {
        let full = hermitian(b, a, lower)?;
        (values, vectors) = polish(b, &full, &vectors)?;
    }
    let n = a.shape()[r - 1];
    if a.dtype().is_complex() && n > 0 {
        let row = if lower { 0 } else { n - 1 };
        vectors = real_in_row(b, &vectors, row)?;
    }
    Ok((values, vectors))
}

/// The Hermitian matrices that the `lower` (or upper) triangle of `a` stands for: the
/// other triangle conjugated across, the diagonal's real part.
fn hermitian(b: &mut Builder, a: &Value, lower: bool) -> Result<Value> {
    let r = a.rank();
    let ty = TensorType::new(DType::I64, a.shape().to_vec());
    let (row, col) = (b.iota(&ty, r - 2), b.iota(&ty, r - 1));
    let dir = if lower {
        CompareDir::Gt
    } else {
        CompareDir::Lt
    };
    let stored = b.compare(dir, &row, &col)?;
    let diagonal = b.compare(CompareDir::Eq, &row, &col)?;
    let t = transpose_last(b, a)?;
    let mirrored = conjugate(b, &t)?;
    let re = b.real(a);
    let re = b.convert(&re, a.dtype());
    let rest = b.select(&diagonal, &re, &mirrored)?;
    Ok(b.select(&stored, a, &rest)?)
}

/// Two-sided Jacobi on `V^H A V` from the vectors `v` of the Hermitian `a`: the refined
/// `(eigenvalues ascending, eigenvectors)`.
fn polish(b: &mut Builder, a: &Value, v: &Value) -> Result<(Value, Value)> {
    let r = a.rank();
    let av = batch_matmul(b, a, v)?;
    let vh = adjoint(b, v)?;
    let h = batch_matmul(b, &vh, &av)?;
    let (h, v) = two_sided(b, &h, v, POLISH_SWEEPS)?;
    let values = diagonal(b, &h, 0)?;
    let values = b.real(&values);
    let ascending =
        |b: &mut Builder, s: &[Value]| b.compare(CompareDir::Lt, &s[0], &s[1]).expect("same types");
    let keys = spread(b, &values, r - 2, a.shape()[r - 2])?;
    let v = b.sort(&[&keys, &v], r - 1, ascending)[1].clone();
    let values = b.sort(&[&values], r - 2, ascending)[0].clone();
    Ok((values, v))
}

/// Turns each complex eigenvector (column of `v`) by a unit phase so that its entry in
/// `row` is real and non-negative. LAPACK's vectors are real in that row (the first for
/// the lower triangle, the last for the upper), so ours differ from CPU's by a sign at most.
fn real_in_row(b: &mut Builder, v: &Value, row: i64) -> Result<Value> {
    let r = v.rank();
    let mut start = vec![0; r];
    start[r - 2] = row;
    let mut limit = v.shape().to_vec();
    limit[r - 2] = row + 1;
    let entries = b.slice(v, &start, &limit, &vec![1; r])?;
    // A zero entry leaves its vector as it is.
    let (_, turn) = split_phase(b, &entries)?;
    let turn = turn.expect("complex eigenvectors");
    let all: Vec<i64> = (0..r as i64).collect();
    let turn = b.broadcast_in_dim(&turn, v.shape(), &all)?;
    Ok(b.mul(v, &turn)?)
}

pub(crate) fn register(reg: &mut Registry) {
    reg.ops(&["_linalg_eigh", "_linalg_eigh.eigenvalues"], eigh)
        .complex();
}
