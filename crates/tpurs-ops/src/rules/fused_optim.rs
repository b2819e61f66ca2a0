//! `_fused_adam_` / `_fused_adamw_`: the whole Adam step over every parameter in one program,
//! as `torch.optim.Adam(fused=True)` and Hugging Face's default `adamw_torch_fused` call it.
//! The arithmetic follows CPU's fused kernel (opmath for half types, its lerp form and order),
//! with the bias corrections computed on the device from each item's step tensor.

use tpurs_hlo::{Builder, CompareDir, DType, Literal, Value};

use crate::ctx::{Ctx, Out};
use crate::dtype::{opmath, torch_name};
use crate::error::{runtime, Error, Result};
use crate::table::Registry;
use crate::Arg;

/// Argument positions of the schema.
const PARAMS: usize = 0;
const GRADS: usize = 1;
const EXP_AVGS: usize = 2;
const EXP_AVG_SQS: usize = 3;
const MAX_EXP_AVG_SQS: usize = 4;
const STEPS: usize = 5;
const LR: usize = 6;
const GRAD_SCALE: usize = 13;
const FOUND_INF: usize = 14;

/// The host-side settings of one call.
struct Settings {
    beta1: f64,
    beta2: f64,
    weight_decay: f64,
    eps: f64,
    amsgrad: bool,
    maximize: bool,
    decoupled: bool,
}

/// A number argument as a value of `dtype`: a program input in eager (the learning rate
/// changes every step under a scheduler), a constant in graphs, or a tensor (`tensor_lr`).
fn number(ctx: &mut Ctx, i: usize, dtype: DType) -> Result<Value> {
    let v = match ctx.arg(i) {
        Arg::Float(f) => ctx.b.constant(Literal::Float(*f), dtype),
        _ => ctx.tensor(i)?,
    };
    Ok(ctx.b.convert(&v, dtype))
}

/// `1 - beta^step` as `-expm1(step * ln(beta))`: accurate where `beta^step` is near 1.
fn bias_correction(b: &mut Builder, step: &Value, beta: f64) -> Result<Value> {
    let ln = b.full_like(step, Literal::Float(beta.ln()));
    let x = b.mul(step, &ln)?;
    let e = b.expm1(&x);
    Ok(b.neg(&e))
}

/// Checks CPU's foreach restrictions: every list as long as the parameters, same dtypes.
fn check_lists(ctx: &Ctx, n: usize, amsgrad: bool) -> Result<()> {
    let mut lists = vec![GRADS, EXP_AVGS, EXP_AVG_SQS, STEPS];
    if amsgrad {
        lists.push(MAX_EXP_AVG_SQS);
    }
    for i in lists {
        if ctx.list_len(i) != n {
            return runtime(format!(
                "Tensor lists must have the same number of tensors, got {n} and {}",
                ctx.list_len(i)
            ));
        }
    }
    for j in 0..n {
        let p = ctx.meta(PARAMS, Some(j))?;
        if !p.dtype.is_float() || p.dtype.is_float8() {
            return Err(Error::NotImplemented(format!(
                "\"fused_adam_kernel\" not implemented for '{}'",
                torch_name(p.dtype)
            )));
        }
        for i in [GRADS, EXP_AVGS, EXP_AVG_SQS] {
            let t = ctx.meta(i, Some(j))?;
            if t.dtype != p.dtype || t.sizes != p.sizes {
                return runtime(
                    "params, grads, exp_avgs, and exp_avg_sqs must have same dtype, device, and layout",
                );
            }
        }
    }
    Ok(())
}

/// One Adam step; results are the mutated lists in schema order (params, grads, exp_avgs,
/// exp_avg_sqs, max_exp_avg_sqs), grads only when `grad_scale` unscales them.
fn adam(ctx: &mut Ctx, decoupled: bool) -> Result<Vec<Out>> {
    let s = Settings {
        beta1: ctx.float(7)?,
        beta2: ctx.float(8)?,
        weight_decay: ctx.float(9)?,
        eps: ctx.float(10)?,
        amsgrad: ctx.bool_or(11, false)?,
        maximize: ctx.bool_or(12, false)?,
        decoupled,
    };
    let n = ctx.list_len(PARAMS);
    check_lists(ctx, n, s.amsgrad)?;
    let grad_scale = ctx.opt_tensor(GRAD_SCALE)?;
    let found_inf = ctx.opt_tensor(FOUND_INF)?;
    let params = ctx.tensors(PARAMS)?;
    let grads = ctx.tensors(GRADS)?;
    let avgs = ctx.tensors(EXP_AVGS)?;
    let sqs = ctx.tensors(EXP_AVG_SQS)?;
    let maxes = if s.amsgrad {
        ctx.tensors(MAX_EXP_AVG_SQS)?
    } else {
        Vec::new()
    };
    let steps = ctx.tensors(STEPS)?;
    let mut out = vec![None; 4 * n + maxes.len()];
    for j in 0..n {
        let w = opmath(params[j].dtype());
        let lr = number(ctx, LR, w)?;
        let item = Item {
            param: &params[j],
            grad: &grads[j],
            avg: &avgs[j],
            sq: &sqs[j],
            max: maxes.get(j),
            step: &steps[j],
        };
        let new = step(&mut ctx.b, &s, &item, &lr, grad_scale.as_ref())?;
        let kept = match &found_inf {
            // CPU skips the whole step (grads stay scaled) when found_inf is 1.
            Some(inf) => keep_on_inf(&mut ctx.b, inf, &item, new)?,
            None => new,
        };
        out[j] = Some(kept.param);
        out[n + j] = kept.grad;
        out[2 * n + j] = Some(kept.avg);
        out[3 * n + j] = Some(kept.sq);
        if let Some(m) = kept.max {
            out[4 * n + j] = Some(m);
        }
    }
    Ok(out)
}

/// The values of one parameter's state.
struct Item<'a> {
    param: &'a Value,
    grad: &'a Value,
    avg: &'a Value,
    sq: &'a Value,
    max: Option<&'a Value>,
    step: &'a Value,
}

/// The updated state of one parameter (`grad` only when it was unscaled).
struct Updated {
    param: Value,
    grad: Option<Value>,
    avg: Value,
    sq: Value,
    max: Option<Value>,
}

/// CPU's per-element arithmetic, in opmath, results rounded to the parameter's dtype.
fn step(
    b: &mut Builder,
    s: &Settings,
    it: &Item,
    lr: &Value,
    grad_scale: Option<&Value>,
) -> Result<Updated> {
    let dtype = it.param.dtype();
    let w = opmath(dtype);
    let shape = it.param.shape().to_vec();
    let wide = |b: &mut Builder, v: &Value| b.convert(v, w);
    let (mut p, mut g) = (wide(b, it.param), wide(b, it.grad));
    let (m, v) = (wide(b, it.avg), wide(b, it.sq));
    let k = |b: &mut Builder, x: f64| b.constant(Literal::Float(x), w);
    let spread = |b: &mut Builder, x: &Value| b.broadcast_to(x, &shape);

    let mut unscaled = None;
    if let Some(scale) = grad_scale {
        let scale = b.convert(scale, w);
        let scale = spread(b, &scale)?;
        g = b.div(&g, &scale)?;
        unscaled = Some(b.convert(&g, dtype));
    }
    if s.maximize {
        g = b.neg(&g);
    }
    if s.weight_decay != 0.0 {
        let wd = k(b, s.weight_decay);
        if s.decoupled {
            let one = k(b, 1.0);
            let lr_wd = b.mul(lr, &wd)?;
            let factor = b.sub(&one, &lr_wd)?;
            let factor = spread(b, &factor)?;
            p = b.mul(&p, &factor)?;
        } else {
            let wd = spread(b, &wd)?;
            let decay = b.mul(&p, &wd)?;
            g = b.add(&g, &decay)?;
        }
    }
    // exp_avg.lerp_(grad, 1 - beta1), in the form CPU picks for the weight.
    let weight = 1.0 - s.beta1;
    let diff = b.sub(&g, &m)?;
    let m = if weight.abs() < 0.5 {
        let c = b.full_like(&diff, Literal::Float(weight));
        let d = b.mul(&c, &diff)?;
        b.add(&m, &d)?
    } else {
        let (one, wc) = (k(b, 1.0), k(b, weight));
        let c = b.sub(&one, &wc)?;
        let c = spread(b, &c)?;
        let d = b.mul(&diff, &c)?;
        b.sub(&g, &d)?
    };
    let beta2 = b.full_like(&v, Literal::Float(s.beta2));
    let coef = b.full_like(&g, Literal::Float(1.0 - s.beta2));
    let decayed = b.mul(&v, &beta2)?;
    let cg = b.mul(&coef, &g)?;
    let cgg = b.mul(&cg, &g)?;
    let v = b.add(&decayed, &cgg)?;
    // As CPU, the step uses the moments before they are rounded to the stored dtype.
    let max = match it.max {
        Some(old) => {
            let old = wide(b, old);
            Some(b.max(&old, &v)?)
        }
        None => None,
    };

    let t = b.convert(it.step, w);
    let bc1 = bias_correction(b, &t, s.beta1)?;
    let bc2 = bias_correction(b, &t, s.beta2)?;
    let bc2_sqrt = b.sqrt(&bc2);
    let step_size = b.div(lr, &bc1)?;
    let root = b.sqrt(max.as_ref().unwrap_or(&v));
    let bc2_sqrt = spread(b, &bc2_sqrt)?;
    let scaled = b.div(&root, &bc2_sqrt)?;
    let eps = b.full_like(&scaled, Literal::Float(s.eps));
    let denom = b.add(&scaled, &eps)?;
    let step_size = spread(b, &step_size)?;
    let num = b.mul(&step_size, &m)?;
    let delta = b.div(&num, &denom)?;
    let p = b.sub(&p, &delta)?;
    Ok(Updated {
        param: b.convert(&p, dtype),
        grad: unscaled,
        avg: b.convert(&m, dtype),
        sq: b.convert(&v, dtype),
        max: max.map(|x| b.convert(&x, dtype)),
    })
}

/// Where `found_inf` is 1 every tensor keeps its value.
fn keep_on_inf(b: &mut Builder, found_inf: &Value, it: &Item, new: Updated) -> Result<Updated> {
    let inf = b.convert(found_inf, DType::F32);
    let one = b.constant(Literal::Float(1.0), DType::F32);
    let skip = b.compare(CompareDir::Eq, &inf, &one)?;
    let pick = |b: &mut Builder, old: &Value, new: Value| -> Result<Value> {
        let cond = b.broadcast_to(&skip, old.shape())?;
        Ok(b.select(&cond, old, &new)?)
    };
    Ok(Updated {
        param: pick(b, it.param, new.param)?,
        grad: match new.grad {
            Some(g) => Some(pick(b, it.grad, g)?),
            None => None,
        },
        avg: pick(b, it.avg, new.avg)?,
        sq: pick(b, it.sq, new.sq)?,
        max: match (it.max, new.max) {
            (Some(old), Some(m)) => Some(pick(b, old, m)?),
            _ => None,
        },
    })
}

/// Registers the family.
pub(crate) fn register(reg: &mut Registry) {
    reg.ops(&["_fused_adam_", "_fused_adam_.tensor_lr"], |c| {
        adam(c, false)
    })
    .float_inputs(&[LR]);
    reg.ops(&["_fused_adamw_", "_fused_adamw_.tensor_lr"], |c| {
        adam(c, true)
    })
    .float_inputs(&[LR]);
}
