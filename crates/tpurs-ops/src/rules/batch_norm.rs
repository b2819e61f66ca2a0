//! Batch norm: the forwards (train / eval, running-statistics update) and the backward.

use tpurs_hlo::{DType, Literal, TensorType, Value};

use super::conv::{non_channel_dims, per_channel, sum};
use super::empty;
use crate::ctx::{Ctx, Out};
use crate::dtype::opmath;
use crate::error::{Error, Result};
use crate::table::Registry;

/// Argument positions of one batch-norm forward overload.
struct BnArgs {
    /// Position of running_mean (running_var follows), if the overload has them.
    stats: Option<usize>,
    /// Where the mode comes from.
    training: Mode,
    /// Position of momentum (eps follows).
    momentum: usize,
}

/// Whether a batch-norm overload normalises with batch statistics.
enum Mode {
    /// Read from the `training` argument at this position.
    Arg(usize),
    /// Fixed by the overload.
    Fixed(bool),
}

/// Results of a batch-norm forward.
struct BnOut {
    out: Value,
    save_mean: Value,
    save_invstd: Value,
    running: Option<(Value, Value)>,
}

/// The batch-norm forward: batch statistics (biased variance) in training, running
/// statistics otherwise; `out = x * (w * invstd) + (bias - mean * w * invstd)` like CPU.
fn bn_forward(ctx: &mut Ctx, a: &BnArgs) -> Result<BnOut> {
    let training = match a.training {
        Mode::Arg(i) => ctx.bool_or(i, false)?,
        Mode::Fixed(t) => t,
    };
    let momentum = ctx.opt_float(a.momentum)?.unwrap_or(0.1);
    let eps = ctx.float(a.momentum + 1)?;
    let x = ctx.tensor(0)?;
    let w = ctx.opt_tensor(1)?;
    let bias = ctx.opt_tensor(2)?;
    let (rm, rv) = match a.stats {
        Some(i) => (ctx.opt_tensor(i)?, ctx.opt_tensor(i + 1)?),
        None => (None, None),
    };
    if x.rank() < 2 {
        return Err(Error::Runtime(format!(
            "batch_norm: expected input with at least 2 dims, got {:?}",
            x.shape()
        )));
    }
    if !training && (rm.is_none() || rv.is_none()) {
        return Err(Error::Runtime(
            "running_mean and running_var must be defined in evaluation mode".into(),
        ));
    }
    let stat_dtype = [&w, &bias, &rm, &rv]
        .iter()
        .find_map(|v| v.as_ref().map(|v| v.dtype()))
        .unwrap_or(x.dtype());
    let ct = opmath(x.dtype()).max_float(opmath(stat_dtype));
    let b = &mut ctx.b;
    let shape = x.shape().to_vec();
    let dims = non_channel_dims(x.rank());
    let c = shape[1];
    let n = x.ty.numel() / c.max(1);
    let xc = b.convert(&x, ct);
    let eps_v = b.splat(Literal::Float(eps), &TensorType::new(ct, [c]));
    let (mean, invstd, running) = if training {
        let inv_n = b.splat(Literal::Float(1.0 / n as f64), &TensorType::new(ct, [c]));
        let s = sum(b, &xc, &dims);
        let mean = b.mul(&s, &inv_n)?;
        let mb = per_channel(b, &mean, &shape)?;
        let diff = b.sub(&xc, &mb)?;
        let sq = b.mul(&diff, &diff)?;
        let ss = sum(b, &sq, &dims);
        let var = b.mul(&ss, &inv_n)?;
        let ve = b.add(&var, &eps_v)?;
        let invstd = b.rsqrt(&ve);
        let running = match (&rm, &rv) {
            (Some(rm), Some(rv)) => {
                let m = b.splat(Literal::Float(momentum), &TensorType::new(ct, [c]));
                let keep = b.splat(Literal::Float(1.0 - momentum), &TensorType::new(ct, [c]));
                let unbias = n as f64 / (n - 1).max(1) as f64;
                let ub = b.splat(Literal::Float(unbias), &TensorType::new(ct, [c]));
                let (rmc, rvc) = (b.convert(rm, ct), b.convert(rv, ct));
                let a1 = b.mul(&mean, &m)?;
                let a2 = b.mul(&rmc, &keep)?;
                let new_m = b.add(&a1, &a2)?;
                let uv = b.mul(&var, &ub)?;
                let v1 = b.mul(&uv, &m)?;
                let v2 = b.mul(&rvc, &keep)?;
                let new_v = b.add(&v1, &v2)?;
                Some((b.convert(&new_m, rm.dtype()), b.convert(&new_v, rv.dtype())))
            }
            _ => None,
        };
        (mean, invstd, running)
    } else {
        let (rm, rv) = (rm.expect("checked"), rv.expect("checked"));
        let mean = b.convert(&rm, ct);
        let rvc = b.convert(&rv, ct);
        let ve = b.add(&rvc, &eps_v)?;
        (mean, b.rsqrt(&ve), None)
    };
    let alpha = match &w {
        Some(w) => {
            let wc = b.convert(w, ct);
            b.mul(&invstd, &wc)?
        }
        None => invstd.clone(),
    };
    let ma = b.mul(&mean, &alpha)?;
    let beta = match &bias {
        Some(bv) => {
            let bc = b.convert(bv, ct);
            b.sub(&bc, &ma)?
        }
        None => b.neg(&ma),
    };
    let ab = per_channel(b, &alpha, &shape)?;
    let bb = per_channel(b, &beta, &shape)?;
    let y = b.mul(&xc, &ab)?;
    let y = b.add(&y, &bb)?;
    let out = b.convert(&y, x.dtype());
    let (save_mean, save_invstd) = if training {
        (b.convert(&mean, stat_dtype), b.convert(&invstd, stat_dtype))
    } else {
        (empty(b, stat_dtype), empty(b, stat_dtype))
    };
    Ok(BnOut {
        out,
        save_mean,
        save_invstd,
        running,
    })
}

/// Writes the updated running statistics into arguments `at` and `at + 1` where the
/// schema marks them as mutated (native_batch_norm's schema does not: see the report).
fn write_running(ctx: &mut Ctx, at: usize, running: Option<(Value, Value)>) {
    let Some((m, v)) = running else { return };
    let writes = ctx.writes();
    let target = |arg: usize| writes.iter().position(|w| w.arg == arg && !w.is_out);
    if let Some(k) = target(at) {
        ctx.write(k, m);
    }
    if let Some(k) = target(at + 1) {
        ctx.write(k, v);
    }
}

/// `native_batch_norm` / `_native_batch_norm_legit(input, weight, bias, running_mean,
/// running_var, training, momentum, eps)` -> (out, save_mean, save_invstd).
fn native_batch_norm(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let args = BnArgs {
        stats: Some(3),
        training: Mode::Arg(5),
        momentum: 6,
    };
    let r = bn_forward(ctx, &args)?;
    write_running(ctx, 3, r.running);
    Ok(vec![Some(r.out), Some(r.save_mean), Some(r.save_invstd)])
}

/// `_native_batch_norm_legit.no_stats(input, weight, bias, training, momentum, eps)`.
fn batch_norm_no_stats(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let args = BnArgs {
        stats: None,
        training: Mode::Arg(3),
        momentum: 4,
    };
    let r = bn_forward(ctx, &args)?;
    Ok(vec![Some(r.out), Some(r.save_mean), Some(r.save_invstd)])
}

/// `_native_batch_norm_legit_no_training(input, weight, bias, running_mean, running_var,
/// momentum, eps)`.
fn batch_norm_no_training(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let args = BnArgs {
        stats: Some(3),
        training: Mode::Fixed(false),
        momentum: 5,
    };
    let r = bn_forward(ctx, &args)?;
    Ok(vec![Some(r.out), Some(r.save_mean), Some(r.save_invstd)])
}

/// `_native_batch_norm_legit_functional(...)` -> (out, save_mean, save_invstd,
/// running_mean_out, running_var_out).
fn batch_norm_functional(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let args = BnArgs {
        stats: Some(3),
        training: Mode::Arg(5),
        momentum: 6,
    };
    let r = bn_forward(ctx, &args)?;
    let (m, v) = match r.running {
        Some((m, v)) => (m, v),
        None => (ctx.tensor(3)?, ctx.tensor(4)?),
    };
    Ok(vec![
        Some(r.out),
        Some(r.save_mean),
        Some(r.save_invstd),
        Some(m),
        Some(v),
    ])
}

/// `_batch_norm_with_update(input, weight, bias, running_mean!, running_var!, momentum,
/// eps)` -> (out, save_mean, save_invstd, reserve).
fn batch_norm_with_update(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let args = BnArgs {
        stats: Some(3),
        training: Mode::Fixed(true),
        momentum: 5,
    };
    let r = bn_forward(ctx, &args)?;
    write_running(ctx, 3, r.running);
    let reserve = empty(&mut ctx.b, DType::U8);
    Ok(vec![
        Some(r.out),
        Some(r.save_mean),
        Some(r.save_invstd),
        Some(reserve),
    ])
}

/// `_batch_norm_no_update(input, weight, bias, running_mean?, running_var?, momentum, eps)`:
/// eval with running statistics, batch statistics without them.
fn batch_norm_no_update(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let args = BnArgs {
        stats: Some(3),
        training: Mode::Fixed(!ctx.has(3)),
        momentum: 5,
    };
    let r = bn_forward(ctx, &args)?;
    let reserve = empty(&mut ctx.b, DType::U8);
    Ok(vec![
        Some(r.out),
        Some(r.save_mean),
        Some(r.save_invstd),
        Some(reserve),
    ])
}

/// `native_batch_norm_backward(grad_out, input, weight, running_mean, running_var,
/// save_mean, save_invstd, train, eps, output_mask)` (also `batch_norm_backward`).
fn native_batch_norm_backward(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let train = ctx.bool_or(7, true)?;
    let eps = ctx.float(8)?;
    let mask = ctx.bool_list(9)?;
    let gy = ctx.tensor(0)?;
    let x = ctx.tensor(1)?;
    let w = ctx.opt_tensor(2)?;
    let (mean, var_or_invstd) = if train {
        (ctx.opt_tensor(5)?, ctx.opt_tensor(6)?)
    } else {
        (ctx.opt_tensor(3)?, ctx.opt_tensor(4)?)
    };
    let (Some(mean), Some(vi)) = (mean, var_or_invstd) else {
        return Err(Error::Runtime(
            "native_batch_norm_backward: missing saved or running statistics".into(),
        ));
    };
    let pdt = w.as_ref().map_or(x.dtype(), |w| w.dtype());
    let ct = opmath(x.dtype()).max_float(opmath(pdt));
    let b = &mut ctx.b;
    let shape = x.shape().to_vec();
    let dims = non_channel_dims(x.rank());
    let c = shape[1];
    let n = x.ty.numel() / c.max(1);
    let (gyc, xc) = (b.convert(&gy, ct), b.convert(&x, ct));
    let mean = b.convert(&mean, ct);
    let vi = b.convert(&vi, ct);
    let invstd = if train {
        vi
    } else {
        let e = b.splat(Literal::Float(eps), &TensorType::new(ct, [c]));
        let ve = b.add(&vi, &e)?;
        b.rsqrt(&ve)
    };
    let mb = per_channel(b, &mean, &shape)?;
    let diff = b.sub(&xc, &mb)?;
    let sum_gy = sum(b, &gyc, &dims);
    let prod = b.mul(&diff, &gyc)?;
    let dotp = sum(b, &prod, &dims);
    let gi = if mask.first().copied().unwrap_or(false) {
        let scale = match &w {
            Some(w) => {
                let wc = b.convert(w, ct);
                b.mul(&invstd, &wc)?
            }
            None => invstd.clone(),
        };
        let sb = per_channel(b, &scale, &shape)?;
        let g = if train {
            let inv_n = b.splat(Literal::Float(1.0 / n as f64), &TensorType::new(ct, [c]));
            let i2 = b.mul(&invstd, &invstd)?;
            let k = b.mul(&dotp, &i2)?;
            let k = b.mul(&k, &inv_n)?;
            let gm = b.mul(&sum_gy, &inv_n)?;
            let kb = per_channel(b, &k, &shape)?;
            let gmb = per_channel(b, &gm, &shape)?;
            let dx = b.mul(&diff, &kb)?;
            let g = b.sub(&gyc, &gmb)?;
            b.sub(&g, &dx)?
        } else {
            gyc.clone()
        };
        let g = b.mul(&g, &sb)?;
        Some(b.convert(&g, x.dtype()))
    } else {
        None
    };
    let gw = if mask.get(1).copied().unwrap_or(false) {
        let g = b.mul(&dotp, &invstd)?;
        Some(b.convert(&g, pdt))
    } else {
        None
    };
    let gb = if mask.get(2).copied().unwrap_or(false) {
        Some(b.convert(&sum_gy, pdt))
    } else {
        None
    };
    Ok(vec![gi, gw, gb])
}

/// The wider of two float compute types.
trait MaxFloat {
    /// `f64` if either is `f64`, else `self`.
    fn max_float(self, other: DType) -> DType;
}

impl MaxFloat for DType {
    fn max_float(self, other: DType) -> DType {
        if self == DType::F64 || other == DType::F64 {
            DType::F64
        } else if self.is_float() {
            self
        } else {
            other
        }
    }
}

pub(crate) fn register(reg: &mut Registry) {
    reg.ops(
        &[
            "native_batch_norm",
            "native_batch_norm.out",
            "_native_batch_norm_legit",
            "_native_batch_norm_legit.out",
        ],
        native_batch_norm,
    );
    reg.ops(
        &[
            "_native_batch_norm_legit.no_stats",
            "_native_batch_norm_legit.no_stats_out",
        ],
        batch_norm_no_stats,
    );
    reg.ops(
        &[
            "_native_batch_norm_legit_no_training",
            "_native_batch_norm_legit_no_training.out",
        ],
        batch_norm_no_training,
    );
    reg.ops(
        &["_native_batch_norm_legit_functional"],
        batch_norm_functional,
    );
    reg.ops(
        &["_batch_norm_with_update", "_batch_norm_with_update.out"],
        batch_norm_with_update,
    );
    reg.ops(
        &["_batch_norm_no_update", "_batch_norm_no_update.out"],
        batch_norm_no_update,
    );
    reg.ops(
        &[
            "native_batch_norm_backward",
            "native_batch_norm_backward.out",
            "batch_norm_backward",
        ],
        native_batch_norm_backward,
    );
}
