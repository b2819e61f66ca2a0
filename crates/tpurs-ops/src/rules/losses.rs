//! Losses: `nll_loss` / `nll_loss2d` forward and backward (class weights, `ignore_index`,
//! targets checked on the device) and `mse_loss` with its backward. Half types are computed
//! in f32 and rounded once, like PyTorch's CPU kernels.

use tpurs_hlo::{CompareDir, DType, Literal, TensorType, Value};

use super::nn::{sum_all, sum_dims, widen};
use super::{common_dtype, full, one};
use crate::checks::CheckKind;
use crate::ctx::{Ctx, Out};
use crate::dtype::{opmath, torch_name};
use crate::error::{runtime, Error, Result};
use crate::table::Registry;

/// Validates nll_loss arguments and returns (rows M, classes C, loss shape for "none").
fn nll_shapes(ctx: &Ctx, x: usize, t: usize, w: usize) -> Result<(i64, i64, Vec<i64>)> {
    let (xs, tt) = (ctx.ty(x)?.shape, ctx.ty(t)?);
    let td = tt.dtype;
    if td != DType::I64 && td != DType::U8 {
        return runtime(format!(
            "expected target dtype to be Long or Byte, but got {}",
            torch_name(td)
        ));
    }
    let two_d = ctx.name.starts_with("nll_loss2d");
    let ts = tt.shape;
    if two_d {
        if xs.len() != 4 {
            return runtime(format!(
                "only batches of spatial inputs supported (4D tensors), but got input of dimension: {}",
                xs.len()
            ));
        }
        if ts.len() != 3 {
            return runtime(format!(
                "only batches of spatial targets supported (3D tensors) but got targets of dimension: {}",
                ts.len()
            ));
        }
        if xs[0] != ts[0] || xs[2] != ts[1] || xs[3] != ts[2] {
            return runtime(format!("size mismatch (got input: {xs:?}, target: {ts:?})"));
        }
    } else {
        if xs.is_empty() || xs.len() > 2 {
            return runtime("input tensor should be 1D or 2D");
        }
        if ts.len() > 1 {
            return runtime("0D or 1D target tensor expected, multi-target not supported");
        }
        let n = if xs.len() == 2 { xs[0] } else { 1 };
        let tn = if ts.len() == 1 { ts[0] } else { 1 };
        if n != tn || (xs.len() == 1 && ts.len() == 1 && ts[0] != 1) {
            return runtime(format!("size mismatch (got input: {xs:?}, target: {ts:?})",));
        }
    }
    let c = if xs.len() == 1 { xs[0] } else { xs[1] };
    if ctx.has(w) {
        let wn = ctx.ty(w)?.numel();
        if wn != c {
            return runtime(format!(
                "weight tensor should be defined either for all {c} classes or no classes but got weight tensor of shape: {:?}",
                ctx.ty(w)?.shape
            ));
        }
    }
    let m = ts
        .iter()
        .product::<i64>()
        .max(if ts.is_empty() { 1 } else { 0 });
    Ok((m, c, ts))
}

/// Input `i` as a (M, C) matrix in compute precision (class dim moved last).
fn nll_rows(ctx: &mut Ctx, i: usize, m: i64, c: i64) -> Result<Value> {
    let x = ctx.tensor(i)?;
    let b = &mut ctx.b;
    let x = widen(b, &x);
    let x = if x.rank() > 2 {
        let mut perm: Vec<i64> = vec![0];
        perm.extend(2..x.rank() as i64);
        perm.push(1);
        b.transpose(&x, &perm)?
    } else {
        x
    };
    Ok(b.reshape(&x, &[m, c])?)
}

/// The (M, C) one-hot of the target, the per-row weights (0 for ignored rows) and validity.
fn nll_weights(
    ctx: &mut Ctx,
    t: usize,
    w: usize,
    ignore: i64,
    m: i64,
    c: i64,
    dtype: DType,
) -> Result<(Value, Value)> {
    let target = ctx.tensor(t)?;
    ctx.check_range_ignoring(
        &target,
        (0, c),
        ignore,
        CheckKind::Index,
        "Target {} is out of bounds.",
    )?;
    let weight = ctx.opt_tensor(w)?;
    let b = &mut ctx.b;
    let target = b.convert(&target, DType::I64);
    let target = b.reshape(&target, &[m])?;
    let cls = b.iota(&TensorType::new(DType::I64, [m, c]), 1);
    let tb = b.broadcast_in_dim(&target, &[m, c], &[0])?;
    let onehot = b.compare(CompareDir::Eq, &cls, &tb)?;
    let ig = b.full_like(&target, Literal::Int(ignore));
    let valid = b.compare(CompareDir::Ne, &target, &ig)?;
    let ones = b.splat(Literal::Int(1), &TensorType::new(dtype, [m]));
    let wi = match weight {
        Some(wv) => {
            let wv = b.convert(&wv, dtype);
            let wv = b.reshape(&wv, &[c])?;
            let wb = b.broadcast_in_dim(&wv, &[m, c], &[1])?;
            let z = b.full_like(&wb, Literal::Int(0));
            let picked = b.select(&onehot, &wb, &z)?;
            sum_dims(b, &picked, &[1], false)?
        }
        None => ones,
    };
    let z = b.full_like(&wi, Literal::Int(0));
    let wi = b.select(&valid, &wi, &z)?;
    Ok((onehot, wi))
}

/// `nll_loss_forward(self, target, weight, reduction, ignore_index) -> (output, total_weight)`
/// (also `nll_loss2d_forward`).
fn nll_loss_forward(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let (m, c, tshape) = nll_shapes(ctx, 0, 1, 2)?;
    let d = ctx.ty(0)?.dtype;
    let reduction = ctx.int(3)?;
    let ignore = ctx.int(4)?;
    let x = nll_rows(ctx, 0, m, c)?;
    let (onehot, wi) = nll_weights(ctx, 1, 2, ignore, m, c, x.dtype())?;
    let b = &mut ctx.b;
    let z = b.full_like(&x, Literal::Int(0));
    let picked = b.select(&onehot, &x, &z)?;
    let picked = sum_dims(b, &picked, &[1], false)?;
    let nw = b.neg(&wi);
    let loss = b.mul(&picked, &nw)?;
    let zr = b.full_like(&loss, Literal::Int(0));
    let keep = b.compare(CompareDir::Ne, &wi, &zr)?;
    let loss = b.select(&keep, &loss, &zr)?;
    let (out, total) = if reduction == 0 {
        let total = b.constant(Literal::Int(0), d);
        (b.reshape(&loss, &tshape)?, total)
    } else {
        let s = sum_all(b, &loss)?;
        let tw = sum_all(b, &wi)?;
        let out = if reduction == 1 { b.div(&s, &tw)? } else { s };
        (out, b.convert(&tw, d))
    };
    Ok(vec![Some(b.convert(&out, d)), Some(total)])
}

/// `nll_loss_backward(grad_output, self, target, weight, reduction, ignore_index,
/// total_weight)` (also `nll_loss2d_backward`).
fn nll_loss_backward(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let (m, c, _) = nll_shapes(ctx, 1, 2, 3)?;
    let xty = ctx.ty(1)?;
    let reduction = ctx.int(4)?;
    let ignore = ctx.int(5)?;
    let w = opmath(xty.dtype);
    let (onehot, wi) = nll_weights(ctx, 2, 3, ignore, m, c, w)?;
    let g = ctx.tensor(0)?;
    let tw = ctx.tensor(6)?;
    let b = &mut ctx.b;
    let g = b.convert(&g, w);
    let g = if reduction == 0 {
        b.reshape(&g, &[m])?
    } else {
        let g = b.reshape(&g, &[])?;
        let g = if reduction == 1 {
            let tw = b.convert(&tw, w);
            let tw = b.reshape(&tw, &[])?;
            b.div(&g, &tw)?
        } else {
            g
        };
        b.broadcast_in_dim(&g, &[m], &[])?
    };
    let rowg = b.mul(&g, &wi)?;
    let rowg = b.neg(&rowg);
    let rg = b.broadcast_in_dim(&rowg, &[m, c], &[0])?;
    let z = b.full_like(&rg, Literal::Int(0));
    let grad = b.select(&onehot, &rg, &z)?;
    // Back to the input layout (class dim 1).
    let grad = if xty.rank() > 2 {
        let mut moved: Vec<i64> = vec![xty.shape[0]];
        moved.extend(&xty.shape[2..]);
        moved.push(c);
        let g4 = b.reshape(&grad, &moved)?;
        let r = xty.rank() as i64;
        let mut perm: Vec<i64> = vec![0, r - 1];
        perm.extend(1..r - 1);
        b.transpose(&g4, &perm)?
    } else {
        b.reshape(&grad, &xty.shape)?
    };
    one(b.convert(&grad, xty.dtype))
}

/// Reads `self` and `target` of an mse loss, promoted and broadcast in compute precision.
fn mse_operands(ctx: &mut Ctx, x: usize, t: usize) -> Result<(DType, Value, Value)> {
    let d = common_dtype(ctx, &[x, t])?;
    let shape = super::broadcast_shapes(&ctx.ty(x)?.shape, &ctx.ty(t)?.shape)?;
    let w = opmath(d);
    let a = ctx.tensor(x)?;
    let bv = ctx.tensor(t)?;
    let a = ctx.b.convert(&a, w);
    let bv = ctx.b.convert(&bv, w);
    let a = ctx.b.broadcast_to(&a, &shape)?;
    let bv = ctx.b.broadcast_to(&bv, &shape)?;
    Ok((d, a, bv))
}

/// `mse_loss(self, target, reduction)`.
fn mse_loss(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let reduction = ctx.int(2)?;
    let (d, x, t) = mse_operands(ctx, 0, 1)?;
    if !d.is_float() {
        return Err(Error::NotImplemented(format!(
            "\"mse_cpu\" not implemented for '{}'",
            torch_name(d)
        )));
    }
    let b = &mut ctx.b;
    let diff = b.sub(&x, &t)?;
    let sq = b.mul(&diff, &diff)?;
    let r = match reduction {
        0 => sq,
        _ => {
            let s = sum_all(b, &sq)?;
            if reduction == 1 {
                let n = full(b, &s, x.ty.numel() as f64);
                b.div(&s, &n)?
            } else {
                s
            }
        }
    };
    one(b.convert(&r, d))
}

/// `mse_loss_backward(grad_output, self, target, reduction)`: `2 (x - t) g [/ numel]`.
fn mse_loss_backward(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let reduction = ctx.int(3)?;
    let (d, x, t) = mse_operands(ctx, 1, 2)?;
    let g = ctx.tensor(0)?;
    let b = &mut ctx.b;
    let g = b.convert(&g, x.dtype());
    let g = b.broadcast_to(&g, x.shape())?;
    let diff = b.sub(&x, &t)?;
    let k = if reduction == 1 {
        2.0 / x.ty.numel().max(1) as f64
    } else {
        2.0
    };
    let k = full(b, &diff, k);
    let r = b.mul(&diff, &k)?;
    let r = b.mul(&r, &g)?;
    one(b.convert(&r, d))
}

pub(crate) fn register(reg: &mut Registry) {
    reg.ops(
        &[
            "nll_loss_forward",
            "nll_loss_forward.output",
            "nll_loss2d_forward",
            "nll_loss2d_forward.output",
        ],
        nll_loss_forward,
    );
    reg.ops(
        &[
            "nll_loss_backward",
            "nll_loss_backward.grad_input",
            "nll_loss2d_backward",
            "nll_loss2d_backward.grad_input",
        ],
        nll_loss_backward,
    );
    reg.ops(&["mse_loss", "mse_loss.out"], mse_loss);
    reg.ops(
        &["mse_loss_backward", "mse_loss_backward.grad_input"],
        mse_loss_backward,
    );
}
