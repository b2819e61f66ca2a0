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
fn corner(b: &mut Builder, x: &Value, rows: i64, cols: i64) -> Result<Value> {
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
    let mut tau_shape = ty.shape[..r - 2].to_vec();
    tau_shape.push(k);
    let factored = b.emit(
        "stablehlo.custom_call",
        &[&a],
        "call_target_name = \"Qr\"",
        &[],
        &[ty.clone(), TensorType::new(ty.dtype, tau_shape)],
    );
    let (h, taus) = (&factored[0], &factored[1]);
    let complete = mode == "complete";
    let rows = if complete { m } else { k };
    let upper = corner(b, h, rows, n)?;
    let rr = triangle(b, &upper, false)?;
    if mode == "r" {
        return Ok(vec![Some(empty(b, ty.dtype)), Some(rr)]);
    }
    // Q from the reflectors: `cols` of them (a complete Q of a tall A needs m, padded).
    let cols = if complete { m } else { k };
    let (reflectors, taus) = if cols > n {
        (pad_last(b, h, cols)?, pad_last(b, taus, cols)?)
    } else {
        (corner(b, h, m, cols)?, taus.clone())
    };
    let mut q_shape = ty.shape.clone();
    q_shape[r - 1] = cols;
    let q = b.emit(
        "stablehlo.custom_call",
        &[&reflectors, &taus],
        "call_target_name = \"ProductOfElementaryHouseholderReflectors\"",
        &[],
        &[TensorType::new(ty.dtype, q_shape)],
    );
    Ok(vec![Some(q[0].clone()), Some(rr)])
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
