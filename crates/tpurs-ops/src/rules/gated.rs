//! Gated and parametric activations: `glu` (`a * sigmoid(b)` of the two halves of `dim`)
//! and PReLU's kernel (`x` or `weight * x`), with their backward ops. Computed in opmath.

use tpurs_hlo::{Builder, CompareDir, Literal, Value};

use super::{common_dtype, one, operands, wrap_dim};
use crate::ctx::{Ctx, Out};
use crate::dtype::opmath;
use crate::error::{runtime, Result};
use crate::table::Registry;

/// The wrapped `dim` of argument `i`'s rank, checked to have an even size.
fn halving_dim(ctx: &Ctx, i: usize, dim_at: usize) -> Result<usize> {
    let ty = ctx.ty(i)?;
    let rank = ty.rank() as i64;
    if rank == 0 {
        return runtime("glu does not support scalars because halving size must be even");
    }
    let d = wrap_dim(ctx.int_or(dim_at, -1)?, rank as usize)?;
    if ty.shape[d] % 2 != 0 {
        return runtime(format!(
            "Halving dimension must be even, but dimension {d} is size {}",
            ty.shape[d]
        ));
    }
    Ok(d)
}

/// The two halves of `x` along `d`.
fn halves(b: &mut Builder, x: &Value, d: usize) -> Result<(Value, Value)> {
    let h = x.shape()[d] / 2;
    Ok((b.slice_dim(x, d, 0, h, 1)?, b.slice_dim(x, d, h, 2 * h, 1)?))
}

/// `glu(self, dim=-1)`.
fn glu(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let d = halving_dim(ctx, 0, 1)?;
    let dtype = ctx.ty(0)?.dtype;
    let x = ctx.tensor(0)?;
    let b = &mut ctx.b;
    let x = b.convert(&x, opmath(dtype));
    let (a, g) = halves(b, &x, d)?;
    let s = b.logistic(&g);
    let y = b.mul(&a, &s)?;
    one(b.convert(&y, dtype))
}

/// `glu_backward(grad_output, self, dim)`: `[g * s, g * a * s * (1 - s)]`, `s = sigmoid(b)`.
fn glu_backward(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let d = halving_dim(ctx, 1, 2)?;
    let dtype = ctx.ty(1)?.dtype;
    let (g, x) = (ctx.tensor(0)?, ctx.tensor(1)?);
    let b = &mut ctx.b;
    let wide = opmath(dtype);
    let (g, x) = (b.convert(&g, wide), b.convert(&x, wide));
    let (a, h) = halves(b, &x, d)?;
    let s = b.logistic(&h);
    let ga = b.mul(&g, &s)?;
    let one_v = b.full_like(&s, Literal::Float(1.0));
    let ds = b.sub(&one_v, &s)?;
    let ds = b.mul(&s, &ds)?;
    let gb = b.mul(&g, &a)?;
    let gb = b.mul(&gb, &ds)?;
    let grad = b.concatenate(&[&ga, &gb], d)?;
    one(b.convert(&grad, dtype))
}

/// `_prelu_kernel(self, weight)`: `self` where positive, else `weight * self` (broadcast).
fn prelu(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let dtype = common_dtype(ctx, &[0, 1])?;
    let v = operands(ctx, &[0, 1], opmath(dtype))?;
    let b = &mut ctx.b;
    let zero = b.full_like(&v[0], Literal::Float(0.0));
    let pos = b.compare(CompareDir::Gt, &v[0], &zero)?;
    let scaled = b.mul(&v[1], &v[0])?;
    let y = b.select(&pos, &v[0], &scaled)?;
    one(b.convert(&y, dtype))
}

/// `_prelu_kernel_backward(grad_output, self, weight)` -> `(grad_self, grad_weight)`, both of
/// the broadcast shape (autograd sums `grad_weight` down to the weight's shape).
fn prelu_backward(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let dtype = common_dtype(ctx, &[1, 2])?;
    let v = operands(ctx, &[0, 1, 2], opmath(dtype))?;
    let b = &mut ctx.b;
    let (g, x, w) = (&v[0], &v[1], &v[2]);
    let zero = b.full_like(x, Literal::Float(0.0));
    let pos = b.compare(CompareDir::Gt, x, &zero)?;
    let wg = b.mul(w, g)?;
    let gx = b.select(&pos, g, &wg)?;
    let xg = b.mul(x, g)?;
    let gw = b.select(&pos, &zero, &xg)?;
    Ok(vec![
        Some(b.convert(&gx, dtype)),
        Some(b.convert(&gw, dtype)),
    ])
}

pub(crate) fn register(reg: &mut Registry) {
    reg.ops(&["glu", "glu.out"], glu);
    reg.ops(&["glu_backward", "glu_backward.grad_input"], glu_backward);
    reg.ops(&["_prelu_kernel"], prelu);
    reg.ops(&["_prelu_kernel_backward"], prelu_backward);
}
