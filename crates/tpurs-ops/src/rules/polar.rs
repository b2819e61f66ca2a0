//! Matrix functions from a spectral decomposition: `linalg.polar` (`A = U H` from the thin
//! SVD `A = W S V^H`: `U = W V^H`, `H = V S V^H`) and `linalg.matrix_sqrth` (`V sqrt(L) V^H`
//! from `eigh` of the lower triangle, negative eigenvalues taken as 0, as on CPU), for real
//! and complex matrices.

use tpurs_hlo::{Builder, DType, Literal, TensorType, Value};

use super::eigh::eigh_of;
use super::linalg::{adjoint, batch_matmul};
use super::svd::thin_svd;
use crate::ctx::{Ctx, Out};
use crate::dtype::torch_name;
use crate::error::{runtime, Error, Result};
use crate::table::Registry;

/// Checks input 0 of `op` as CPU does: a float32/float64 (complex64/complex128) batch of
/// matrices.
fn matrices(ctx: &Ctx, op: &str) -> Result<TensorType> {
    let ty = ctx.ty(0)?;
    if !ty.dtype.is_float() && !ty.dtype.is_complex() {
        return Err(Error::NotImplemented(format!(
            "{op}: Expected a floating point or complex tensor as input. Got {}",
            torch_name(ty.dtype)
        )));
    }
    if ty.rank() < 2 {
        return runtime(format!(
            "{op}: The input tensor A must have at least 2 dimensions."
        ));
    }
    if !matches!(ty.dtype, DType::F32 | DType::F64 | DType::C64 | DType::C128) {
        return Err(Error::NotImplemented(format!(
            "{op}: Low precision dtypes not supported. Got {}",
            torch_name(ty.dtype)
        )));
    }
    Ok(ty)
}

/// `v diag(d) v^H` for eigen- or singular vectors `v` (`[.., n, n]`) and real values `d`.
fn congruence(b: &mut Builder, v: &Value, d: &Value) -> Result<Value> {
    let r = v.rank();
    let dims: Vec<i64> = (0..r as i64 - 2).chain([r as i64 - 1]).collect();
    let scale = b.broadcast_in_dim(d, v.shape(), &dims)?;
    let scale = b.convert(&scale, v.dtype());
    let scaled = b.mul(v, &scale)?;
    let vh = adjoint(b, v)?;
    batch_matmul(b, &scaled, &vh)
}

/// `linalg_polar(A)` -> `(U, H)` for `A` with at least as many rows as columns.
fn polar(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let ty = matrices(ctx, "linalg.polar")?;
    let r = ty.rank();
    let (m, n) = (ty.shape[r - 2], ty.shape[r - 1]);
    if m < n {
        return runtime(format!(
            "linalg.polar: input must have at least as many rows as columns, but got {m} by {n} matrices"
        ));
    }
    let a = ctx.tensor(0)?;
    let b = &mut ctx.b;
    if n == 0 {
        let mut h_shape = ty.shape.clone();
        h_shape[r - 2] = 0;
        let h = b.splat(Literal::Float(0.0), &TensorType::new(ty.dtype, h_shape));
        return Ok(vec![Some(a), Some(h)]);
    }
    let (w, s, v) = thin_svd(b, &a)?;
    let vh = adjoint(b, &v)?;
    let u = batch_matmul(b, &w, &vh)?;
    let h = congruence(b, &v, &s)?;
    Ok(vec![Some(u), Some(h)])
}

/// `linalg_matrix_sqrth(A)`: the square root of symmetric positive (semi)definite matrices,
/// reading their lower triangle.
fn matrix_sqrth(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let ty = matrices(ctx, "linalg.matrix_sqrth")?;
    let r = ty.rank();
    let (m, n) = (ty.shape[r - 2], ty.shape[r - 1]);
    if m != n {
        return runtime(format!(
            "linalg.matrix_sqrth: A must be batches of square matrices, but they are {m} by {n} matrices"
        ));
    }
    let a = ctx.tensor(0)?;
    if n == 0 {
        return Ok(vec![Some(a)]);
    }
    let b = &mut ctx.b;
    let (values, vectors) = eigh_of(b, &a, true)?;
    let zero = b.full_like(&values, Literal::Float(0.0));
    let clamped = b.max(&values, &zero)?;
    let roots = b.sqrt(&clamped);
    Ok(vec![Some(congruence(b, &vectors, &roots)?)])
}

pub(crate) fn register(reg: &mut Registry) {
    reg.ops(&["linalg_polar", "linalg_polar.out"], polar)
        .complex();
    reg.ops(
        &["linalg_matrix_sqrth", "linalg_matrix_sqrth.out"],
        matrix_sqrth,
    )
    .complex();
}
