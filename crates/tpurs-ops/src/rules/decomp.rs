//! QR and its relatives through the compiler's own kernels: `linalg_qr`, `geqrf`,
//! `householder_product` and `ormqr` (the `Qr` and `ProductOfElementaryHouseholderReflectors`
//! custom calls: Householder QR with LAPACK's sign convention, real diagonal of R for
//! complex matrices too). XLA expands both into StableHLO loops on every backend.

use tpurs_hlo::{Builder, DType, Literal, TensorType, Value};

use super::empty;
use super::linalg::{adjoint, float_matrices, triangle};
use crate::ctx::{Ctx, Out};
use crate::dtype::torch_name;
use crate::error::{runtime, Error, Result};
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

/// The matrices of a LAPACK-style rule, checked with the CPU's messages (`kernel` names
/// the CPU kernel in its dtype error).
fn lapack_matrices(ctx: &Ctx, i: usize, op: &str, kernel: &str) -> Result<TensorType> {
    let ty = ctx.ty(i)?;
    if ty.rank() < 2 {
        return runtime(format!("{op}: input must have at least 2 dimensions."));
    }
    match ty.dtype {
        DType::F32 | DType::F64 | DType::C64 | DType::C128 => Ok(ty),
        other => Err(Error::NotImplemented(format!(
            "\"{kernel}\" not implemented for '{}'",
            torch_name(other)
        ))),
    }
}

/// `geqrf(A)`: LAPACK's compact QR, `(a, tau)`: R in and above the diagonal, the
/// Householder vectors below it, and their scales.
fn geqrf(ctx: &mut Ctx) -> Result<Vec<Out>> {
    lapack_matrices(ctx, 0, "torch.geqrf", "geqrf_cpu")?;
    let a = ctx.tensor(0)?;
    let (h, taus) = householder(&mut ctx.b, &a);
    Ok(vec![Some(h), Some(taus)])
}

/// The first `cols` columns of the product of the reflectors in `input`'s columns, scaled
/// by `tau` (`[.., k]`, `k <= n`); missing scales are zeros (identity reflectors).
fn reflector_product(b: &mut Builder, input: &Value, tau: &Value, cols: i64) -> Result<Value> {
    let n = input.shape()[input.rank() - 1];
    let taus = pad_last(b, tau, n)?;
    q_of(b, input, &taus, cols)
}

/// Checks `tau` against `input` as `op` does on the CPU: one dim fewer, the same batch dims,
/// the same dtype (each caller checks the number of scales in its own words).
fn check_tau(op: &str, input: &TensorType, tau: &TensorType) -> Result<()> {
    let r = input.rank();
    if tau.rank() + 1 != r {
        return runtime(format!(
            "{op}: Expected tau to have one dimension less than input, but got tau.ndim equal to {} and input.ndim is equal to {r}",
            tau.rank()
        ));
    }
    if tau.shape[..r - 2] != input.shape[..r - 2] {
        return runtime(format!(
            "{op}: Expected batch dimensions of tau to be equal to input.shape[:-2], but got {:?}",
            &tau.shape[..r - 2]
        ));
    }
    if tau.dtype != input.dtype {
        return runtime(format!(
            "{op}: tau dtype {} does not match input dtype {}",
            torch_name(tau.dtype),
            torch_name(input.dtype)
        ));
    }
    Ok(())
}

/// `linalg_householder_product(input, tau)`: the first `n` columns of `H_1 ... H_k`.
fn householder_product(ctx: &mut Ctx) -> Result<Vec<Out>> {
    const OP: &str = "torch.linalg.householder_product";
    let ty = lapack_matrices(ctx, 0, OP, "orgqr_cpu")?;
    let tau_ty = ctx.ty(1)?;
    let r = ty.rank();
    let (m, n) = (ty.shape[r - 2], ty.shape[r - 1]);
    if m < n {
        return runtime(format!(
            "{OP}: input.shape[-2] must be greater than or equal to input.shape[-1]"
        ));
    }
    check_tau(OP, &ty, &tau_ty)?;
    if tau_ty.shape[r - 2] > n {
        return runtime(format!(
            "{OP}: input.shape[-1] must be greater than or equal to tau.shape[-1]"
        ));
    }
    let (input, tau) = (ctx.tensor(0)?, ctx.tensor(1)?);
    Ok(vec![Some(reflector_product(&mut ctx.b, &input, &tau, n)?)])
}

/// `ormqr(input, tau, other, left, transpose)`: `other` multiplied by the complete Q of
/// the reflectors (`m x m`), from the left or the right, transposed or not.
fn ormqr(ctx: &mut Ctx) -> Result<Vec<Out>> {
    const OP: &str = "torch.ormqr";
    let ty = lapack_matrices(ctx, 0, OP, "ormqr_cpu")?;
    let tau_ty = ctx.ty(1)?;
    let other_ty = ctx.ty(2)?;
    let (left, transpose) = (ctx.bool_or(3, true)?, ctx.bool_or(4, false)?);
    let r = ty.rank();
    if other_ty.rank() < 2 {
        return runtime(format!("{OP}: other must have at least 2 dimensions."));
    }
    let m = ty.shape[r - 2];
    let cond = if left { -2 } else { -1 };
    let side = other_ty.shape[(other_ty.rank() as i64 + cond) as usize];
    if side != m {
        return runtime(format!(
            "{OP}: other.shape[{cond}] must be equal to input.shape[-2]"
        ));
    }
    if tau_ty.rank() == 0 || tau_ty.shape[tau_ty.rank() - 1] != side.min(ty.shape[r - 1]) {
        return runtime(format!(
            "{OP}: tau.shape[-1] must be equal to min(other.shape[{cond}], input.shape[-1])"
        ));
    }
    check_tau(OP, &ty, &tau_ty)?;
    if other_ty.rank() != r {
        return runtime(format!(
            "{OP}: Expected other to have the same number of dimensions as input, but got other.ndim equal to {} and input.ndim is equal to {r}",
            other_ty.rank()
        ));
    }
    if other_ty.shape[..r - 2] != ty.shape[..r - 2] {
        return runtime(format!(
            "{OP}: Expected batch dimensions of other to be equal to input.shape[:-2], but got {:?}",
            &other_ty.shape[..r - 2]
        ));
    }
    if other_ty.dtype != ty.dtype {
        return runtime(format!(
            "{OP}: Expected input and other to have the same dtype, but input has dtype{} and other has dtype {}",
            torch_name(ty.dtype),
            torch_name(other_ty.dtype)
        ));
    }
    let (input, tau, other) = (ctx.tensor(0)?, ctx.tensor(1)?, ctx.tensor(2)?);
    let b = &mut ctx.b;
    // The reflectors of a wide input are its first m columns.
    let square = corner(b, &input, m, m.min(ty.shape[r - 1]))?;
    let q = reflector_product(b, &square, &tau, m)?;
    // PyTorch's `transpose` is the conjugate transpose for complex values.
    let q = if transpose { adjoint(b, &q)? } else { q };
    let batch: Vec<i64> = (0..r as i64 - 2).collect();
    let (lhs, rhs) = if left { (&q, &other) } else { (&other, &q) };
    let out = b.dot_general(
        lhs,
        rhs,
        (&batch, &batch),
        (&[r as i64 - 1], &[r as i64 - 2]),
    )?;
    Ok(vec![Some(out)])
}

pub(crate) fn register(reg: &mut Registry) {
    reg.ops(&["linalg_qr", "linalg_qr.out"], qr).complex();
    reg.ops(&["geqrf", "geqrf.a"], geqrf).complex();
    reg.ops(
        &[
            "linalg_householder_product",
            "linalg_householder_product.out",
        ],
        householder_product,
    )
    .complex();
    reg.ops(&["ormqr", "ormqr.out"], ormqr).complex();
}
