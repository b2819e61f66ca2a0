//! Group norm: `native_group_norm` and `native_group_norm_backward`, computed in the opmath
//! type over the `[N, group, C / group * HxW]` view of the input, as PyTorch's CPU kernels.

use tpurs_hlo::{Builder, Literal, Value};

use crate::ctx::{Ctx, Out};
use crate::dtype::opmath;
use crate::error::{runtime, Result};
use crate::table::Registry;

/// Mean of `x` (`[N, G, K]`) over its last dim, kept as `[N, G, 1]`.
fn group_mean(b: &mut Builder, x: &Value) -> Result<Value> {
    let (n, g, k) = (x.shape()[0], x.shape()[1], x.shape()[2]);
    let zero = b.constant(Literal::Int(0), x.dtype());
    let s = b.reduce(x, &zero, &[2], |b, p, q| b.add(p, q).expect("same type"));
    let count = b.splat(Literal::Int(k), &s.ty);
    let m = b.div(&s, &count)?;
    Ok(b.reshape(&m, &[n, g, 1])?)
}

/// Sum of `x` (`[N, C, HxW]`) over N and HxW: one value per channel.
fn channel_sum(b: &mut Builder, x: &Value) -> Value {
    let zero = b.constant(Literal::Int(0), x.dtype());
    b.reduce(x, &zero, &[0, 2], |b, p, q| b.add(p, q).expect("same type"))
}

/// Sizes `(N, C, HxW, group)` from the schema's arguments at `at..at + 4`, checked.
fn sizes(ctx: &Ctx, at: usize) -> Result<(i64, i64, i64, i64)> {
    let (n, c, hw, g) = (
        ctx.int(at)?,
        ctx.int(at + 1)?,
        ctx.int(at + 2)?,
        ctx.int(at + 3)?,
    );
    if g <= 0 || c % g != 0 {
        return runtime(format!(
            "Expected number of channels in input to be divisible by num_groups, but got input of shape with {c} channels and num_groups={g}"
        ));
    }
    Ok((n, c, hw, g))
}

/// Per-channel parameter `i` (weight or bias) broadcast over `[N, C, HxW]`, or `None`.
fn per_channel(
    ctx: &mut Ctx,
    i: usize,
    wide: tpurs_hlo::DType,
    shape: &[i64],
) -> Result<Option<Value>> {
    let Some(p) = ctx.opt_tensor(i)? else {
        return Ok(None);
    };
    let p = ctx.b.convert(&p, wide);
    Ok(Some(ctx.b.broadcast_in_dim(&p, shape, &[1])?))
}

/// `native_group_norm(input, weight?, bias?, N, C, HxW, group, eps) -> (out, mean, rstd)`.
fn native_group_norm(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let (n, c, hw, g) = sizes(ctx, 3)?;
    let eps = ctx.float(7)?;
    let x = ctx.tensor(0)?;
    let dtype = x.dtype();
    let wide = opmath(dtype);
    let flat = [n, c, hw];
    let weight = per_channel(ctx, 1, wide, &flat)?;
    let bias = per_channel(ctx, 2, wide, &flat)?;
    let b = &mut ctx.b;
    let xw = b.convert(&x, wide);
    let grouped = b.reshape(&xw, &[n, g, c / g * hw])?;
    let mean = group_mean(b, &grouped)?;
    let mb = b.broadcast_to(&mean, grouped.shape())?;
    let centered = b.sub(&grouped, &mb)?;
    let sq = b.mul(&centered, &centered)?;
    let var = group_mean(b, &sq)?;
    let e = b.splat(Literal::Float(eps), &var.ty);
    let ve = b.add(&var, &e)?;
    let rstd = b.rsqrt(&ve);
    let rb = b.broadcast_to(&rstd, grouped.shape())?;
    let normed = b.mul(&centered, &rb)?;
    let mut y = b.reshape(&normed, &flat)?;
    if let Some(w) = weight {
        y = b.mul(&y, &w)?;
    }
    if let Some(bi) = bias {
        y = b.add(&y, &bi)?;
    }
    let y = b.reshape(&y, x.shape())?;
    let mean = b.reshape(&mean, &[n, g])?;
    let rstd = b.reshape(&rstd, &[n, g])?;
    Ok(vec![
        Some(b.convert(&y, dtype)),
        Some(b.convert(&mean, dtype)),
        Some(b.convert(&rstd, dtype)),
    ])
}

/// `native_group_norm_backward(grad_out, input, mean, rstd, weight?, N, C, HxW, group,
/// output_mask)`: `dx = rstd (g' - mean(g') - x_hat mean(g' x_hat))` with `g' = grad * w`,
/// `dweight = sum(grad x_hat)`, `dbias = sum(grad)` per channel.
fn native_group_norm_backward(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let (n, c, hw, g) = sizes(ctx, 5)?;
    let mask = ctx.bool_list(9)?;
    let want = |i: usize| mask.get(i).copied().unwrap_or(true);
    let grad = ctx.tensor(0)?;
    let x = ctx.tensor(1)?;
    let mean = ctx.tensor(2)?;
    let rstd = ctx.tensor(3)?;
    let dtype = x.dtype();
    let wide = opmath(dtype);
    let flat = [n, c, hw];
    let weight = per_channel(ctx, 4, wide, &flat)?;
    let w_dtype = if ctx.has(4) { ctx.ty(4)?.dtype } else { dtype };
    let b = &mut ctx.b;
    let gw = b.convert(&grad, wide);
    let gw = b.reshape(&gw, &flat)?;
    let xw = b.convert(&x, wide);
    let grouped_shape = [n, g, c / g * hw];
    let xg = b.reshape(&xw, &grouped_shape)?;
    let as_groups = |b: &mut Builder, v: &Value| -> Result<Value> {
        let v = b.convert(v, wide);
        let v = b.reshape(&v, &[n, g, 1])?;
        Ok(b.broadcast_to(&v, &grouped_shape)?)
    };
    let mb = as_groups(b, &mean)?;
    let rb = as_groups(b, &rstd)?;
    let centered = b.sub(&xg, &mb)?;
    let x_hat = b.mul(&centered, &rb)?;
    let x_hat_flat = b.reshape(&x_hat, &flat)?;
    let mut out = vec![None, None, None];
    if want(0) {
        let gp = match &weight {
            Some(w) => b.mul(&gw, w)?,
            None => gw.clone(),
        };
        let gp = b.reshape(&gp, &grouped_shape)?;
        let m1 = group_mean(b, &gp)?;
        let m1 = b.broadcast_to(&m1, &grouped_shape)?;
        let gx = b.mul(&gp, &x_hat)?;
        let m2 = group_mean(b, &gx)?;
        let m2 = b.broadcast_to(&m2, &grouped_shape)?;
        let t = b.sub(&gp, &m1)?;
        let u = b.mul(&x_hat, &m2)?;
        let t = b.sub(&t, &u)?;
        let dx = b.mul(&t, &rb)?;
        let dx = b.reshape(&dx, x.shape())?;
        out[0] = Some(b.convert(&dx, dtype));
    }
    if want(1) {
        let p = b.mul(&gw, &x_hat_flat)?;
        let dw = channel_sum(b, &p);
        out[1] = Some(b.convert(&dw, w_dtype));
    }
    if want(2) {
        let db = channel_sum(b, &gw);
        out[2] = Some(b.convert(&db, w_dtype));
    }
    Ok(out)
}

pub(crate) fn register(reg: &mut Registry) {
    reg.ops(
        &["native_group_norm", "native_group_norm.out"],
        native_group_norm,
    );
    reg.ops(
        &[
            "native_group_norm_backward",
            "native_group_norm_backward.out",
        ],
        native_group_norm_backward,
    );
}
