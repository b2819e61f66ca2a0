//! The fused optimizer steps `torch.optim` calls with `fused=True` (`_fused_adam_`,
//! `_fused_adamw_`, `_fused_sgd_`, `_fused_adagrad_`; Hugging Face's default optimizer is
//! `adamw_torch_fused`): every parameter's update in one program. The arithmetic follows
//! CPU's fused kernels (opmath for half types, their forms and order); step counts and the
//! learning rate are program inputs, so a schedule compiles nothing new.

use tpurs_hlo::{Builder, CompareDir, DType, Literal, Value};

use crate::ctx::{Ctx, Out};
use crate::dtype::{opmath, torch_name};
use crate::error::{runtime, Error, Result};
use crate::table::Registry;
use crate::Arg;

/// For one item, per mutated list: its old value and its new one (`None`: not written).
type Written = Vec<Option<(Value, Value)>>;

/// A number argument as a value of `dtype`: a program input in eager (the learning rate
/// changes every step under a scheduler), a constant in graphs, or a tensor (`tensor_lr`).
fn number(ctx: &mut Ctx, i: usize, dtype: DType) -> Result<Value> {
    let v = match ctx.arg(i) {
        Arg::Float(f) => ctx.b.constant(Literal::Float(*f), dtype),
        _ => ctx.tensor(i)?,
    };
    Ok(ctx.b.convert(&v, dtype))
}

/// CPU's checks: every list in `lists` as long as the parameters (list 0), parameters of a
/// floating dtype, and `same` lists of the parameters' dtype and shape.
fn check_lists(ctx: &Ctx, kernel: &str, lists: &[usize], same: &[usize]) -> Result<usize> {
    let n = ctx.list_len(0);
    for &i in lists {
        if ctx.list_len(i) != n {
            return runtime(format!(
                "Tensor lists must have the same number of tensors, got {n} and {}",
                ctx.list_len(i)
            ));
        }
    }
    for j in 0..n {
        let p = ctx.meta(0, Some(j))?;
        if !p.dtype.is_float() || p.dtype.is_float8() {
            return Err(Error::NotImplemented(format!(
                "\"{kernel}\" not implemented for '{}'",
                torch_name(p.dtype)
            )));
        }
        for &i in same {
            let t = ctx.meta(i, Some(j))?;
            if t.dtype != p.dtype || t.sizes != p.sizes {
                return runtime(
                    "params, grads and optimizer states must have the same dtype, device, and shape",
                );
            }
        }
    }
    Ok(n)
}

/// Lays out each item's written values as the mutated lists `mutated` in schema order. Where
/// `found_inf` (argument `inf_arg`) is 1 every tensor keeps its value: CPU skips the step.
fn lay_out(
    ctx: &mut Ctx,
    mutated: &[usize],
    inf_arg: usize,
    items: Vec<Written>,
) -> Result<Vec<Out>> {
    let skip = match ctx.opt_tensor(inf_arg)? {
        Some(inf) => {
            let inf = ctx.b.convert(&inf, DType::F32);
            let one = ctx.b.constant(Literal::Float(1.0), DType::F32);
            Some(ctx.b.compare(CompareDir::Eq, &inf, &one)?)
        }
        None => None,
    };
    let mut out = Vec::new();
    for (k, &list) in mutated.iter().enumerate() {
        for item in items.iter().take(ctx.list_len(list)) {
            out.push(match (&item[k], &skip) {
                (None, _) => None,
                (Some((_, new)), None) => Some(new.clone()),
                (Some((old, new)), Some(skip)) => {
                    let cond = ctx.b.broadcast_to(skip, old.shape())?;
                    Some(ctx.b.select(&cond, old, new)?)
                }
            });
        }
    }
    Ok(out)
}

/// One item's gradient in opmath: unscaled by `grad_scale` (returned too, rounded, as CPU
/// writes it back), negated under `maximize`.
fn gradient(
    b: &mut Builder,
    grad: &Value,
    scale: Option<&Value>,
    maximize: bool,
) -> Result<(Value, Option<Value>)> {
    let mut g = b.convert(grad, opmath(grad.dtype()));
    let mut unscaled = None;
    if let Some(scale) = scale {
        let s = b.convert(scale, g.dtype());
        let s = b.broadcast_to(&s, g.shape())?;
        g = b.div(&g, &s)?;
        unscaled = Some(b.convert(&g, grad.dtype()));
    }
    if maximize {
        g = b.neg(&g);
    }
    Ok((g, unscaled))
}

/// `x + p * c` for a host number `c` (weight decay added to a gradient).
fn add_scaled(b: &mut Builder, x: &Value, p: &Value, c: f64) -> Result<Value> {
    let c = b.full_like(p, Literal::Float(c));
    let pc = b.mul(p, &c)?;
    Ok(b.add(x, &pc)?)
}

/// `0-d` value `s` spread to `x`'s shape.
fn spread(b: &mut Builder, s: &Value, x: &Value) -> Result<Value> {
    Ok(b.broadcast_to(s, x.shape())?)
}

/// `1 - beta^step` as `-expm1(step * ln(beta))`: accurate where `beta^step` is near 1.
fn bias_correction(b: &mut Builder, step: &Value, beta: f64) -> Result<Value> {
    let ln = b.full_like(step, Literal::Float(beta.ln()));
    let x = b.mul(step, &ln)?;
    let e = b.expm1(&x);
    Ok(b.neg(&e))
}

/// `_fused_adam_` (`decoupled`: `_fused_adamw_`): params, grads, exp_avgs, exp_avg_sqs,
/// max_exp_avg_sqs, state_steps, lr, beta1, beta2, weight_decay, eps, amsgrad, maximize,
/// grad_scale, found_inf.
fn adam(ctx: &mut Ctx, decoupled: bool) -> Result<Vec<Out>> {
    let (beta1, beta2) = (ctx.float(7)?, ctx.float(8)?);
    let (weight_decay, eps) = (ctx.float(9)?, ctx.float(10)?);
    let (amsgrad, maximize) = (ctx.bool_or(11, false)?, ctx.bool_or(12, false)?);
    let lists: &[usize] = if amsgrad {
        &[1, 2, 3, 4, 5]
    } else {
        &[1, 2, 3, 5]
    };
    let n = check_lists(ctx, "fused_adam_kernel", lists, &[1, 2, 3])?;
    let scale = ctx.opt_tensor(13)?;
    let [params, grads, avgs, sqs, maxes, steps] = [0, 1, 2, 3, 4, 5].map(|i| ctx.list(i));
    let (params, grads, avgs, sqs, maxes, steps) = (params?, grads?, avgs?, sqs?, maxes?, steps?);
    let mut items = Vec::with_capacity(n);
    for j in 0..n {
        let (p_old, m_old, v_old) = (req(&params[j])?, req(&avgs[j])?, req(&sqs[j])?);
        let dtype = p_old.dtype();
        let w = opmath(dtype);
        let lr = number(ctx, 6, w)?;
        let b = &mut ctx.b;
        let (mut g, unscaled) = gradient(b, req(&grads[j])?, scale.as_ref(), maximize)?;
        let mut p = b.convert(p_old, w);
        if weight_decay != 0.0 && decoupled {
            let (one, wd) = (
                b.constant(Literal::Float(1.0), w),
                b.constant(Literal::Float(weight_decay), w),
            );
            let lr_wd = b.mul(&lr, &wd)?;
            let factor = b.sub(&one, &lr_wd)?;
            let factor = spread(b, &factor, &p)?;
            p = b.mul(&p, &factor)?;
        } else if weight_decay != 0.0 {
            g = add_scaled(b, &g, &p, weight_decay)?;
        }
        // exp_avg.lerp_(grad, 1 - beta1), in the form CPU picks for the weight.
        let m = b.convert(m_old, w);
        let diff = b.sub(&g, &m)?;
        let weight = 1.0 - beta1;
        let m = if weight.abs() < 0.5 {
            add_scaled(b, &m, &diff, weight)?
        } else {
            let (one, c) = (
                b.constant(Literal::Float(1.0), w),
                b.constant(Literal::Float(weight), w),
            );
            let c = b.sub(&one, &c)?;
            let c = spread(b, &c, &diff)?;
            let d = b.mul(&diff, &c)?;
            b.sub(&g, &d)?
        };
        let v = b.convert(v_old, w);
        let beta2_v = b.full_like(&v, Literal::Float(beta2));
        let coef = b.full_like(&g, Literal::Float(1.0 - beta2));
        let decayed = b.mul(&v, &beta2_v)?;
        let cg = b.mul(&coef, &g)?;
        let cgg = b.mul(&cg, &g)?;
        let v = b.add(&decayed, &cgg)?;
        // As CPU, the step uses the moments before they are rounded to the stored dtype.
        let max = match (amsgrad, &maxes.get(j)) {
            (true, Some(Some(old))) => {
                let old_w = b.convert(old, w);
                Some((old.clone(), b.max(&old_w, &v)?))
            }
            _ => None,
        };
        let t = b.convert(req(&steps[j])?, w);
        let bc1 = bias_correction(b, &t, beta1)?;
        let bc2 = bias_correction(b, &t, beta2)?;
        let bc2_sqrt = b.sqrt(&bc2);
        let step_size = b.div(&lr, &bc1)?;
        let root = b.sqrt(max.as_ref().map_or(&v, |(_, m)| m));
        let bc2_sqrt = spread(b, &bc2_sqrt, &root)?;
        let scaled = b.div(&root, &bc2_sqrt)?;
        let eps = b.full_like(&scaled, Literal::Float(eps));
        let denom = b.add(&scaled, &eps)?;
        let step_size = spread(b, &step_size, &m)?;
        let num = b.mul(&step_size, &m)?;
        let delta = b.div(&num, &denom)?;
        let p = b.sub(&p, &delta)?;
        let grad_old = req(&grads[j])?.clone();
        items.push(vec![
            Some((p_old.clone(), b.convert(&p, dtype))),
            unscaled.map(|u| (grad_old, u)),
            Some((m_old.clone(), b.convert(&m, dtype))),
            Some((v_old.clone(), b.convert(&v, dtype))),
            max.map(|(old, m)| (old, b.convert(&m, dtype))),
        ]);
    }
    lay_out(ctx, &[0, 1, 2, 3, 4], 14, items)
}

/// `_fused_sgd_`: params, grads, momentum_buffer_list, weight_decay, momentum, lr,
/// dampening, nesterov, maximize, is_first_step, grad_scale, found_inf.
fn sgd(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let (weight_decay, momentum) = (ctx.float(3)?, ctx.float(4)?);
    let dampening = ctx.float(6)?;
    let (nesterov, maximize) = (ctx.bool_or(7, false)?, ctx.bool_or(8, false)?);
    let first = ctx.bool_or(9, false)?;
    let with_buffers = momentum != 0.0;
    let lists: &[usize] = if with_buffers { &[1, 2] } else { &[1] };
    let n = check_lists(ctx, "fused_sgd_kernel", lists, &[1])?;
    let scale = ctx.opt_tensor(10)?;
    let (params, grads, bufs) = (ctx.list(0)?, ctx.list(1)?, ctx.list(2)?);
    let mut items = Vec::with_capacity(n);
    for j in 0..n {
        let p_old = req(&params[j])?;
        let dtype = p_old.dtype();
        let w = opmath(dtype);
        let lr = number(ctx, 5, w)?;
        let b = &mut ctx.b;
        let (mut g, unscaled) = gradient(b, req(&grads[j])?, scale.as_ref(), maximize)?;
        let p = b.convert(p_old, w);
        if weight_decay != 0.0 {
            g = add_scaled(b, &g, &p, weight_decay)?;
        }
        let mut buf = None;
        if with_buffers {
            let old = req(&bufs[j])?;
            let new = if first {
                g.clone()
            } else {
                let o = b.convert(old, w);
                let mom = b.full_like(&o, Literal::Float(momentum));
                let decayed = b.mul(&o, &mom)?;
                add_scaled(b, &decayed, &g, 1.0 - dampening)?
            };
            g = if nesterov {
                add_scaled(b, &g, &new, momentum)?
            } else {
                new.clone()
            };
            buf = Some((old.clone(), b.convert(&new, dtype)));
        }
        let lr = spread(b, &lr, &g)?;
        let delta = b.mul(&g, &lr)?;
        let p = b.sub(&p, &delta)?;
        let grad_old = req(&grads[j])?.clone();
        items.push(vec![
            Some((p_old.clone(), b.convert(&p, dtype))),
            unscaled.map(|u| (grad_old, u)),
            buf,
        ]);
    }
    lay_out(ctx, &[0, 1, 2], 11, items)
}

/// `_fused_adagrad_`: params, grads, state_sums, state_steps, lr, lr_decay, weight_decay,
/// eps, maximize, grad_scale, found_inf.
fn adagrad(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let (lr_decay, weight_decay) = (ctx.float(5)?, ctx.float(6)?);
    let (eps, maximize) = (ctx.float(7)?, ctx.bool_or(8, false)?);
    let n = check_lists(ctx, "fused_adagrad_kernel", &[1, 2, 3], &[1, 2])?;
    let scale = ctx.opt_tensor(9)?;
    let [params, grads, sums, steps] = [0, 1, 2, 3].map(|i| ctx.list(i));
    let (params, grads, sums, steps) = (params?, grads?, sums?, steps?);
    let mut items = Vec::with_capacity(n);
    for j in 0..n {
        let (p_old, s_old) = (req(&params[j])?, req(&sums[j])?);
        let dtype = p_old.dtype();
        let w = opmath(dtype);
        let lr = number(ctx, 4, w)?;
        let b = &mut ctx.b;
        let (mut g, unscaled) = gradient(b, req(&grads[j])?, scale.as_ref(), maximize)?;
        let p = b.convert(p_old, w);
        if weight_decay != 0.0 {
            g = add_scaled(b, &g, &p, weight_decay)?;
        }
        let s = b.convert(s_old, w);
        let gg = b.mul(&g, &g)?;
        let s = b.add(&s, &gg)?;
        // clr = lr / (1 + (step - 1) * lr_decay)
        let t = b.convert(req(&steps[j])?, w);
        let one = b.full_like(&t, Literal::Float(1.0));
        let t1 = b.sub(&t, &one)?;
        let denom = add_scaled(b, &one, &t1, lr_decay)?;
        let clr = b.div(&lr, &denom)?;
        let root = b.sqrt(&s);
        let eps = b.full_like(&root, Literal::Float(eps));
        let std = b.add(&root, &eps)?;
        let clr = spread(b, &clr, &g)?;
        let num = b.mul(&clr, &g)?;
        let delta = b.div(&num, &std)?;
        let p = b.sub(&p, &delta)?;
        let grad_old = req(&grads[j])?.clone();
        items.push(vec![
            Some((p_old.clone(), b.convert(&p, dtype))),
            unscaled.map(|u| (grad_old, u)),
            Some((s_old.clone(), b.convert(&s, dtype))),
        ]);
    }
    lay_out(ctx, &[0, 1, 2], 10, items)
}

/// A required list item.
fn req(v: &Option<Value>) -> Result<&Value> {
    v.as_ref()
        .ok_or_else(|| Error::Type("fused optimizer: undefined tensor in list".into()))
}

/// Registers the family.
pub(crate) fn register(reg: &mut Registry) {
    reg.ops(&["_fused_adam_", "_fused_adam_.tensor_lr"], |c| {
        adam(c, false)
    })
    .float_inputs(&[6]);
    reg.ops(&["_fused_adamw_", "_fused_adamw_.tensor_lr"], |c| {
        adam(c, true)
    })
    .float_inputs(&[6]);
    reg.ops(&["_fused_sgd_", "_fused_sgd_.tensor_lr"], sgd)
        .float_inputs(&[5]);
    reg.ops(&["_fused_adagrad_", "_fused_adagrad_.tensor_lr"], adagrad)
        .float_inputs(&[4]);
}
