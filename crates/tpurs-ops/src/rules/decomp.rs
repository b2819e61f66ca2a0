//! Matrix decompositions through the compiler's own kernels: `linalg_qr` (the `Qr` and
//! `ProductOfElementaryHouseholderReflectors` custom calls: Householder QR with LAPACK's
//! sign convention) and `_linalg_eigh` (the `Eigh` custom call: Jacobi, eigenvalues in
//! ascending order). XLA expands both into StableHLO loops on every backend.

use tpurs_hlo::{Builder, Literal, TensorType, Value};

use super::empty;
use super::linalg::{float_matrices, triangle};
use crate::ctx::{Ctx, Out};
use crate::error::{runtime, Result};
use crate::table::Registry;

/// `x[..., rows, cols]` of the last two dims.
pub(super) fn corner(b: &mut Builder, x: &Value, rows: i64, cols: i64) -> Result<Value> {
    let r = x.rank();
    let mut limit = x.shape().to_vec();
    limit[r - 2] = rows;
    limit[r - 1] = cols;
    Ok(b.slice(x, &vec![0; r], &limit, &vec![1; r])?)
}

/// Pads the last dim of `x` with zeros up to `to`.
fn pad_last(b: &mut Builder, x: &Value, to: i64) -> Result<Value> {
    let r = x.rank();
    let mut high = vec![0; r];
    high[r - 1] = to - x.shape()[r - 1];
    let zero = b.constant(Literal::Float(0.0), x.dtype());
    Ok(b.pad(x, &zero, &vec![0; r], &high, &vec![0; r])?)
}

/// `linalg_qr(A, mode)`: `(Q, R)` with `mode` "reduced" (Q `m x k`, R `k x n`),
/// "complete" (Q `m x m`, R `m x n`) or "r" (R only, Q empty).
fn qr(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let ty = float_matrices(ctx, 0, "linalg.qr")?;
    let mode = ctx.str(1)?;
    if !matches!(mode, "reduced" | "complete" | "r") {
        return runtime(format!(
            "qr received unrecognized mode '{mode}' but expected one of 'reduced' (default), 'r', or 'complete'"
        ));
    }
    let a = ctx.tensor(0)?;
    let b = &mut ctx.b;
    let r = ty.rank();
    let (m, n) = (ty.shape[r - 2], ty.shape[r - 1]);
    let k = m.min(n);
    let (h, taus) = householder(b, &a);
    let complete = mode == "complete";
    let rows = if complete { m } else { k };
    let upper = corner(b, &h, rows, n)?;
    let rr = triangle(b, &upper, false)?;
    if mode == "r" {
        return Ok(vec![Some(empty(b, ty.dtype)), Some(rr)]);
    }
    let q = q_of(b, &h, &taus, if complete { m } else { k })?;
    Ok(vec![Some(q), Some(rr)])
}

/// The `Qr` custom call on `a` (`[.., m, n]`): R in and above the diagonal, the
/// Householder vectors below it, and their `min(m, n)` scales.
pub(super) fn householder(b: &mut Builder, a: &Value) -> (Value, Value) {
    let r = a.rank();
    let mut tau_shape = a.shape()[..r - 2].to_vec();
    tau_shape.push(a.shape()[r - 2].min(a.shape()[r - 1]));
    let mut out = b.emit(
        "stablehlo.custom_call",
        &[a],
        "call_target_name = \"Qr\"",
        &[],
        &[a.ty.clone(), TensorType::new(a.dtype(), tau_shape)],
    );
    let taus = out.remove(1);
    (out.remove(0), taus)
}

/// The first `cols` columns of Q from `householder`'s output (a complete Q of a tall
/// matrix, `cols = m`, pads the reflectors with identity ones).
pub(super) fn q_of(b: &mut Builder, h: &Value, taus: &Value, cols: i64) -> Result<Value> {
    let r = h.rank();
    let (m, n) = (h.shape()[r - 2], h.shape()[r - 1]);
    let (reflectors, taus) = if cols > n {
        (pad_last(b, h, cols)?, pad_last(b, taus, cols)?)
    } else {
        (corner(b, h, m, cols)?, taus.clone())
    };
    let mut q_shape = h.shape().to_vec();
    q_shape[r - 1] = cols;
    let q = b.emit(
        "stablehlo.custom_call",
        &[&reflectors, &taus],
        "call_target_name = \"ProductOfElementaryHouseholderReflectors\"",
        &[],
        &[TensorType::new(h.dtype(), q_shape)],
    );
    Ok(q[0].clone())
}

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
    let values_ty = TensorType::new(ty.dtype, ty.shape[..r - 1].to_vec());
    // backend_config: lower, sort eigenvalues, max Jacobi sweeps, tolerance (as JAX passes).
    let config = format!("backend_config = \"{},1,100,1e-6\"", lower as i32);
    let out = b.emit(
        "stablehlo.custom_call",
        &[&a],
        &format!("call_target_name = \"Eigh\", {config}"),
        &[],
        &[ty.clone(), values_ty],
    );
    let vectors = if compute_v {
        out[0].clone()
    } else {
        empty(b, ty.dtype)
    };
    Ok(vec![Some(out[1].clone()), Some(vectors)])
}

pub(crate) fn register(reg: &mut Registry) {
    reg.ops(&["linalg_qr", "linalg_qr.out"], qr);
    reg.ops(&["_linalg_eigh", "_linalg_eigh.eigenvalues"], eigh);
}
