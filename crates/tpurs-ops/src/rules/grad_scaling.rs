//! The two ops `torch.amp.GradScaler` runs every step (float16 training, Hugging Face's
//! `fp16=True`): unscaling the gradients while looking for infs and NaNs, and updating the
//! scale. Both stay on the device (GradScaler itself still reads `found_inf` on the host
//! before a step of an optimizer that is not fused, as on CUDA).

use tpurs_hlo::{CompareDir, DType, Literal};

use super::combine::or_c;
use super::conv::not_for;
use crate::ctx::{Ctx, Out};
use crate::dtype::opmath;
use crate::error::{runtime, Result};
use crate::table::Registry;

/// CPU's checks on a one-element state tensor of `dtype` (`what` names it in the message).
fn check_state(ctx: &Ctx, i: usize, what: &str, dtype: DType, kind: &str) -> Result<()> {
    let t = ctx.meta(i, None)?;
    if t.numel() != 1 {
        return runtime(format!("{what} must be a 1-element tensor."));
    }
    if t.dtype != dtype {
        return runtime(format!("{what} must be a{kind} tensor."));
    }
    Ok(())
}

/// `_amp_foreach_non_finite_check_and_unscale_(grads, found_inf, inv_scale)`: every gradient
/// times `inv_scale` in place; `found_inf` becomes 1 when any gradient held an inf or NaN.
fn unscale(ctx: &mut Ctx) -> Result<Vec<Out>> {
    check_state(ctx, 2, "inv_scale", DType::F32, " float")?;
    check_state(ctx, 1, "found_inf", DType::F32, " float")?;
    let grads = ctx.tensors(0)?;
    let found_inf = ctx.tensor(1)?;
    let inv_scale = ctx.tensor(2)?;
    let b = &mut ctx.b;
    let mut out = Vec::with_capacity(grads.len() + 1);
    let mut any = b.constant(Literal::Bool(false), DType::Bool);
    for g in &grads {
        if !g.dtype().is_float() {
            return Err(not_for(
                "_amp_foreach_non_finite_check_and_unscale_",
                g.dtype(),
            ));
        }
        let w = opmath(g.dtype());
        let x = b.convert(g, w);
        let finite = b.is_finite(&x);
        let not_finite = b.not(&finite);
        let dims: Vec<i64> = (0..x.rank() as i64).collect();
        let init = b.constant(Literal::Bool(false), DType::Bool);
        let found = b.reduce(&not_finite, &init, &dims, or_c);
        any = b.or(&any, &found)?;
        let s = b.convert(&inv_scale, w);
        let s = b.reshape(&s, &[])?;
        let s = b.broadcast_to(&s, x.shape())?;
        let scaled = b.mul(&x, &s)?;
        out.push(Some(b.convert(&scaled, g.dtype())));
    }
    let one = b.full_like(&found_inf, Literal::Float(1.0));
    let any = b.broadcast_to(&any, found_inf.shape())?;
    out.push(Some(b.select(&any, &one, &found_inf)?));
    Ok(out)
}

/// `_amp_update_scale_(scale, growth_tracker, found_inf, growth_factor, backoff_factor,
/// growth_interval)`: back off after an inf, grow after `growth_interval` clean steps (unless
/// the grown scale overflows), as CPU's kernel.
fn update_scale(ctx: &mut Ctx) -> Result<Vec<Out>> {
    check_state(ctx, 1, "growth_tracker", DType::I32, "n int")?;
    check_state(ctx, 0, "current_scale", DType::F32, " float")?;
    check_state(ctx, 2, "found_inf", DType::F32, " float")?;
    let (growth, backoff) = (ctx.float(3)?, ctx.float(4)?);
    let interval = ctx.int(5)?;
    let [scale_in, tracker_in, found_inf] = [0, 1, 2].map(|i| ctx.tensor(i));
    let (scale_in, tracker_in, found_inf) = (scale_in?, tracker_in?, found_inf?);
    let b = &mut ctx.b;
    // One-element tensors of any rank: computed as 0-d values, written back in their shapes.
    let scale = b.reshape(&scale_in, &[])?;
    let tracker = b.reshape(&tracker_in, &[])?;
    let found_inf = b.reshape(&found_inf, &[])?;
    let zero = b.full_like(&found_inf, Literal::Float(0.0));
    let found = b.compare(CompareDir::Ne, &found_inf, &zero)?;
    let backoff = b.full_like(&scale, Literal::Float(backoff));
    let backed_off = b.mul(&scale, &backoff)?;
    let one = b.full_like(&tracker, Literal::Int(1));
    let successful = b.add(&tracker, &one)?;
    let every = b.full_like(&tracker, Literal::Int(interval));
    let grow = b.compare(CompareDir::Eq, &successful, &every)?;
    let growth = b.full_like(&scale, Literal::Float(growth));
    let grown = b.mul(&scale, &growth)?;
    let fits = b.is_finite(&grown);
    let grows = b.and(&grow, &fits)?;
    let kept = b.select(&grows, &grown, &scale)?;
    let new_scale = b.select(&found, &backed_off, &kept)?;
    let restart = b.full_like(&tracker, Literal::Int(0));
    let counted = b.select(&grow, &restart, &successful)?;
    let new_tracker = b.select(&found, &restart, &counted)?;
    let new_tracker = b.reshape(&new_tracker, tracker_in.shape())?;
    let new_scale = b.reshape(&new_scale, scale_in.shape())?;
    ctx.write(1, new_tracker);
    Ok(vec![Some(new_scale)])
}

/// Registers the family.
pub(crate) fn register(reg: &mut Registry) {
    reg.ops(&["_amp_foreach_non_finite_check_and_unscale_"], unscale);
    reg.ops(&["_amp_update_scale_"], update_scale);
}
