//! CTC loss: `_ctc_loss` (the alpha recursion of Graves et al. over the blank-interleaved
//! targets) and `_ctc_loss_backward` (the beta recursion and the gradient), one time step
//! per loop iteration for the whole batch. The lengths are host integers (ATen's
//! `ctc_loss` reads its length tensors to the host before calling these), so every
//! per-sample mask is an iota compared with a small constant vector; each distinct set of
//! lengths is its own program.

use tpurs_hlo::{Builder, CompareDir, DType, GatherDims, Literal, ScatterDims, TensorType, Value};

use super::combine::{add_c, max_c};
use super::reduce::logsumexp_of;
use super::search::take;
use crate::ctx::{Ctx, Out};
use crate::dtype::torch_name;
use crate::error::{runtime, Error, Result};
use crate::table::Registry;

/// Where the checks name the arguments (as CPU PyTorch does).
const CHECKED: &str = "(while checking arguments for ctc_loss_allocate_outputs)";

/// The sizes and lengths of one CTC call.
struct Ctc {
    /// Time steps, batch, classes.
    t: i64,
    n: i64,
    c: i64,
    /// Length of the blank-interleaved targets, `2 * max target length + 1`.
    s: i64,
    blank: i64,
    input_lengths: Vec<i64>,
    target_lengths: Vec<i64>,
    /// Where each sample's targets start in the flattened targets.
    offsets: Vec<i64>,
}

/// Checks the arguments as CPU PyTorch does (`log_probs`, `targets` and the lengths at `i`,
/// `i + 1`, ...; `blank` at `blank_at`).
fn ctc_args(ctx: &Ctx, i: usize, blank_at: usize) -> Result<Ctc> {
    let (lp, tg) = (ctx.ty(i)?, ctx.ty(i + 1)?);
    if !matches!(lp.dtype, DType::F32 | DType::F64) {
        return Err(Error::NotImplemented(format!(
            "\"ctc_loss_cpu\" not implemented for '{}'",
            torch_name(lp.dtype)
        )));
    }
    if !matches!(tg.dtype, DType::I64 | DType::I32) {
        return runtime(format!(
            "Expected tensor for argument #2 'targets' to have scalar type Int; but got torch.{}Tensor instead {CHECKED}",
            torch_name(tg.dtype)
        ));
    }
    if lp.rank() != 3 {
        return runtime(format!(
            "Expected 3-dimensional tensor, but got {}-dimensional tensor for argument #1 'log_probs' {CHECKED}",
            lp.rank()
        ));
    }
    if !(1..=2).contains(&tg.rank()) {
        return runtime(format!(
            "Expected 1 to 2 dimensions, but got {}-dimensional tensor for argument #2 'targets' {CHECKED}",
            tg.rank()
        ));
    }
    let (t, n, c) = (lp.shape[0], lp.shape[1], lp.shape[2]);
    let blank = ctx.int(blank_at)?;
    if blank < 0 || blank >= c {
        return runtime("blank must be in label range");
    }
    let input_lengths = ctx.int_list(i + 2)?;
    let target_lengths = ctx.int_list(i + 3)?;
    if input_lengths.len() as i64 != n {
        return runtime("input_lengths must be of size batch_size");
    }
    if target_lengths.len() as i64 != n {
        return runtime("target_lengths must be of size batch_size");
    }
    if let Some(&l) = target_lengths.iter().find(|&&l| l < 0) {
        return runtime(format!(
            "Expected target_lengths to have value at least 0, but got value {l} {CHECKED}"
        ));
    }
    let max_target = target_lengths.iter().copied().max().unwrap_or(0);
    let offsets = if tg.rank() == 1 {
        let total: i64 = target_lengths.iter().sum();
        if tg.shape[0] != total {
            return runtime(format!(
                "Expected tensor to have size {total} at dimension 0, but got size {} for argument #2 'targets' {CHECKED}",
                tg.shape[0]
            ));
        }
        target_lengths
            .iter()
            .scan(0, |pos, &l| {
                *pos += l;
                Some(*pos - l)
            })
            .collect()
    } else {
        if tg.shape[0] != n {
            return runtime(format!(
                "Expected tensor to have size {n} at dimension 0, but got size {} for argument #2 'targets' {CHECKED}",
                tg.shape[0]
            ));
        }
        if tg.shape[1] < max_target {
            return runtime(format!(
                "Expected tensor to have size at least {max_target} at dimension 1, but got size {} for argument #2 'targets' {CHECKED}",
                tg.shape[1]
            ));
        }
        (0..n).map(|k| k * tg.shape[1]).collect()
    };
    for &l in &input_lengths {
        if l < 0 {
            return runtime(format!(
                "Expected input_lengths to have value at least 0, but got value {l} {CHECKED}"
            ));
        }
        if l > t {
            return runtime(format!(
                "Expected input_lengths to have value at most {t}, but got value {l} {CHECKED}"
            ));
        }
    }
    Ok(Ctc {
        t,
        n,
        c,
        s: 2 * max_target + 1,
        blank,
        input_lengths,
        target_lengths,
        offsets,
    })
}

impl Ctc {
    /// `per_sample[k]` for each sample `k`, broadcast to `shape` along dimension `dim`.
    fn per_sample(
        &self,
        b: &mut Builder,
        values: impl Fn(usize) -> i64,
        shape: &[i64],
        dim: i64,
    ) -> Result<Value> {
        let lits: Vec<Literal> = (0..self.n as usize)
            .map(|k| Literal::Int(values(k)))
            .collect();
        let v = b.vector(&lits, DType::I64);
        Ok(b.broadcast_in_dim(&v, shape, &[dim])?)
    }

    /// Where a `[N, S]` position lies below a per-sample bound.
    fn below(&self, b: &mut Builder, bound: impl Fn(usize) -> i64) -> Result<Value> {
        let shape = [self.n, self.s];
        let pos = b.iota(&TensorType::new(DType::I64, shape), 1);
        let bound = self.per_sample(b, bound, &shape, 0)?;
        Ok(b.compare(CompareDir::Lt, &pos, &bound)?)
    }

    /// Where a `[N, S]` position is one of each sample's last two (its last label and the
    /// blank after it), where both the alpha and the beta recursion end.
    fn last_two(&self, b: &mut Builder, shape: &[i64], s_dim: usize, n_dim: i64) -> Result<Value> {
        let pos = b.iota(&TensorType::new(DType::I64, shape), s_dim);
        let tl = &self.target_lengths;
        let end = self.per_sample(b, |k| 2 * tl[k], shape, n_dim)?;
        let label = self.per_sample(b, |k| 2 * tl[k] - 1, shape, n_dim)?;
        let at_end = b.compare(CompareDir::Eq, &pos, &end)?;
        let at_label = b.compare(CompareDir::Eq, &pos, &label)?;
        Ok(b.or(&at_end, &at_label)?)
    }

    /// The blank-interleaved targets as flat indices into `log_probs`' `[N * C]` rows
    /// (`[N, S]`): blank at even positions, the labels at odd ones, blank past a sample's end.
    fn label_columns(&self, b: &mut Builder, targets: &Value) -> Result<Value> {
        let numel = targets.ty.numel();
        let flat = b.convert(targets, DType::I64);
        let flat = b.reshape(&flat, &[numel])?;
        let blank = b.vector(&[Literal::Int(self.blank)], DType::I64);
        let table = b.concatenate(&[&flat, &blank], 0)?;
        let mut at = Vec::with_capacity((self.n * self.s) as usize);
        for k in 0..self.n as usize {
            for s in 0..self.s {
                let label = s % 2 == 1 && s / 2 < self.target_lengths[k];
                at.push(Literal::Int(if label {
                    self.offsets[k] + s / 2
                } else {
                    numel
                }));
            }
        }
        let at = b.vector(&at, DType::I64);
        let at = b.reshape(&at, &[self.n, self.s])?;
        let labels = take(b, &table, &at)?;
        let rows = b.iota(&TensorType::new(DType::I64, [self.n, self.s]), 0);
        let c = b.full_like(&rows, Literal::Int(self.c));
        let rows = b.mul(&rows, &c)?;
        Ok(b.add(&rows, &labels)?)
    }

    /// Where position `s` may be reached from `s - 2` (skipping a blank): its label differs
    /// from the one two before (`[N, S]`).
    fn may_skip(&self, b: &mut Builder, cols: &Value) -> Result<Value> {
        let before = shift(b, cols, 2, Literal::Int(-1))?;
        Ok(b.compare(CompareDir::Ne, cols, &before)?)
    }
}

/// `x` (`[N, S]`) moved `by` positions along S (right for `by > 0`, left for `by < 0`), the
/// vacated positions `fill`.
fn shift(b: &mut Builder, x: &Value, by: i64, fill: Literal) -> Result<Value> {
    let (n, s) = (x.shape()[0], x.shape()[1]);
    let k = by.abs().min(s);
    let pad = b.splat(fill, &TensorType::new(x.dtype(), [n, k]));
    if by > 0 {
        let kept = b.slice(x, &[0, 0], &[n, s - k], &[1, 1])?;
        Ok(b.concatenate(&[&pad, &kept], 1)?)
    } else {
        let kept = b.slice(x, &[0, k], &[n, s], &[1, 1])?;
        Ok(b.concatenate(&[&kept, &pad], 1)?)
    }
}

fn neg_inf(b: &mut Builder, like: &Value) -> Value {
    b.full_like(like, Literal::Float(f64::NEG_INFINITY))
}

/// `m` with -inf replaced by 0: the shift of a log-sum-exp whose terms are all -inf.
fn finite_shift(b: &mut Builder, m: &Value) -> Result<Value> {
    let inf = neg_inf(b, m);
    let none = b.compare(CompareDir::Eq, m, &inf)?;
    let zero = b.full_like(m, Literal::Float(0.0));
    Ok(b.select(&none, &zero, m)?)
}

/// `log(exp(x) + exp(y) + exp(z))`, shifted by the largest term like the CPU kernel.
fn log_add3(b: &mut Builder, x: &Value, y: &Value, z: &Value) -> Result<Value> {
    let m = b.max(x, y)?;
    let m = b.max(&m, z)?;
    let m = finite_shift(b, &m)?;
    let mut sum = b.full_like(x, Literal::Float(0.0));
    for v in [x, y, z] {
        let d = b.sub(v, &m)?;
        let e = b.exp(&d);
        sum = b.add(&sum, &e)?;
    }
    let l = b.log(&sum);
    Ok(b.add(&l, &m)?)
}

/// `log_probs` (`[T, N, C]`) at the interleaved targets: `[T, N, S]`.
fn at_labels(b: &mut Builder, lp: &Value, cols: &Value) -> Result<Value> {
    let (t, n, c) = (lp.shape()[0], lp.shape()[1], lp.shape()[2]);
    let s = cols.shape()[1];
    let rows = b.reshape(lp, &[t, n * c])?;
    let at = b.reshape(cols, &[n * s, 1])?;
    let dims = GatherDims {
        offset_dims: vec![0],
        collapsed_slice_dims: vec![1],
        start_index_map: vec![1],
        index_vector_dim: 1,
        slice_sizes: vec![t, 1],
    };
    let picked = b.gather(&rows, &at, &dims, &[t, n * s]);
    Ok(b.reshape(&picked, &[t, n, s])?)
}

/// Row `t` (a 0-d i64) of a `[T, N, S]` value, as `[N, S]`.
fn step(b: &mut Builder, x: &Value, t: &Value) -> Result<Value> {
    let (n, s) = (x.shape()[1], x.shape()[2]);
    let zero = b.constant(Literal::Int(0), DType::I64);
    let row = b.dynamic_slice(x, &[t.clone(), zero.clone(), zero], &[1, n, s]);
    Ok(b.reshape(&row, &[n, s])?)
}

/// `x` written at row `t` of `rows` (`[T, N, S]`).
fn set_step(b: &mut Builder, rows: &Value, x: &Value, t: &Value) -> Result<Value> {
    let (n, s) = (x.shape()[0], x.shape()[1]);
    let x = b.reshape(x, &[1, n, s])?;
    let zero = b.constant(Literal::Int(0), DType::I64);
    Ok(b.dynamic_update_slice(rows, &x, &[t.clone(), zero.clone(), zero]))
}

/// Where `t` (0-d) compares by `dir` with each sample's `bound` (`[N, S]`).
fn time_is(
    b: &mut Builder,
    cfg: &Ctc,
    t: &Value,
    dir: CompareDir,
    bound: impl Fn(usize) -> i64,
) -> Result<Value> {
    let shape = [cfg.n, cfg.s];
    let tb = b.broadcast_in_dim(t, &shape, &[])?;
    let bound = cfg.per_sample(b, bound, &shape, 0)?;
    Ok(b.compare(dir, &tb, &bound)?)
}

/// Runs `body(t, state)` for `t` in `0..count`, the state's first value being the counter.
fn for_steps(
    b: &mut Builder,
    count: i64,
    state: &[&Value],
    body: impl FnOnce(&mut Builder, &Value, &[Value]) -> Result<Vec<Value>>,
) -> Result<Vec<Value>> {
    let first = b.constant(Literal::Int(0), DType::I64);
    let mut init = vec![&first];
    init.extend(state);
    let out = super::try_while(
        b,
        &init,
        |b, s| {
            let end = b.constant(Literal::Int(count), DType::I64);
            Ok(b.compare(CompareDir::Lt, &s[0], &end)?)
        },
        |b, s| {
            let mut next = body(b, &s[0], &s[1..])?;
            let one = b.constant(Literal::Int(1), DType::I64);
            next.insert(0, b.add(&s[0], &one)?);
            Ok(next)
        },
    )?;
    Ok(out[1..].to_vec())
}

/// `_ctc_loss(log_probs, targets, input_lengths, target_lengths, blank, zero_infinity)`:
/// the negative log likelihood per sample and log alpha (`[N, T, S]`, -inf where the
/// recursion does not reach).
fn ctc_loss(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let cfg = ctc_args(ctx, 0, 4)?;
    let (lp, targets) = (ctx.tensor(0)?, ctx.tensor(1)?);
    let b = &mut ctx.b;
    let d = lp.dtype();
    let (il, tl) = (&cfg.input_lengths, &cfg.target_lengths);
    // A sample with no input steps: likelihood 1 for an empty target, else 0.
    let empty_nll: Vec<Literal> = (0..cfg.n as usize)
        .map(|k| Literal::Float(if tl[k] == 0 { 0.0 } else { f64::INFINITY }))
        .collect();
    let empty_nll = b.vector(&empty_nll, d);
    let alpha_ty = TensorType::new(d, [cfg.t, cfg.n, cfg.s]);
    if cfg.t == 0 || cfg.n == 0 {
        let alpha = b.splat(
            Literal::Float(f64::NEG_INFINITY),
            &TensorType::new(d, [cfg.n, cfg.t, cfg.s]),
        );
        return Ok(vec![Some(empty_nll), Some(alpha)]);
    }
    let cols = cfg.label_columns(b, &targets)?;
    let lpt = at_labels(b, &lp, &cols)?;
    let skip = cfg.may_skip(b, &cols)?;
    let inside = cfg.below(b, |k| 2 * tl[k] + 1)?;
    let start = cfg.below(b, |k| match (il[k], tl[k]) {
        (0, _) => 0,
        (_, 0) => 1,
        _ => 2,
    })?;
    let zero = b.constant(Literal::Int(0), DType::I64);
    let first = step(b, &lpt, &zero)?;
    let none = neg_inf(b, &first);
    let first = b.select(&start, &first, &none)?;
    let alpha = b.splat(Literal::Float(f64::NEG_INFINITY), &alpha_ty);
    let alpha = set_step(b, &alpha, &first, &zero)?;
    let out = for_steps(b, cfg.t - 1, &[&first, &alpha], |b, k, s| {
        let (prev, alpha) = (&s[0], &s[1]);
        let one = b.constant(Literal::Int(1), DType::I64);
        let t = b.add(k, &one)?;
        let none = neg_inf(b, prev);
        let from_prev = shift(b, prev, 1, Literal::Float(f64::NEG_INFINITY))?;
        let from_skip = shift(b, prev, 2, Literal::Float(f64::NEG_INFINITY))?;
        let from_skip = b.select(&skip, &from_skip, &none)?;
        let sum = log_add3(b, prev, &from_prev, &from_skip)?;
        let here = step(b, &lpt, &t)?;
        let next = b.add(&sum, &here)?;
        let live = time_is(b, &cfg, &t, CompareDir::Lt, |k| il[k])?;
        let live = b.and(&live, &inside)?;
        let next = b.select(&live, &next, &none)?;
        let alpha = set_step(b, alpha, &next, &t)?;
        Ok(vec![next, alpha])
    })?;
    let alpha = &out[1];
    let shape = [cfg.t, cfg.n, cfg.s];
    let last = cfg.last_two(b, &shape, 2, 1)?;
    let time = b.iota(&TensorType::new(DType::I64, shape), 0);
    let final_step = cfg.per_sample(b, |k| il[k] - 1, &shape, 1)?;
    let at_final = b.compare(CompareDir::Eq, &time, &final_step)?;
    let ends = b.and(&last, &at_final)?;
    let none = neg_inf(b, alpha);
    let ends = b.select(&ends, alpha, &none)?;
    let log_likelihood = logsumexp_of(b, &ends, &[0, 2], false)?;
    let nll = b.neg(&log_likelihood);
    let no_input = cfg.per_sample(b, |k| (il[k] == 0) as i64, &[cfg.n], 0)?;
    let one = b.full_like(&no_input, Literal::Int(1));
    let no_input = b.compare(CompareDir::Eq, &no_input, &one)?;
    let nll = b.select(&no_input, &empty_nll, &nll)?;
    let alpha = b.transpose(alpha, &[1, 0, 2])?;
    Ok(vec![Some(nll), Some(alpha)])
}

/// `_ctc_loss_backward(grad, log_probs, targets, input_lengths, target_lengths, nll,
/// log_alpha, blank, zero_infinity)`: the gradient with respect to `log_probs`.
fn ctc_loss_backward(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let cfg = ctc_args(ctx, 1, 7)?;
    let zero_infinity = ctx.bool_or(8, false)?;
    let (grad, lp, targets) = (ctx.tensor(0)?, ctx.tensor(1)?, ctx.tensor(2)?);
    let (nll, alpha) = (ctx.tensor(5)?, ctx.tensor(6)?);
    let b = &mut ctx.b;
    let d = lp.dtype();
    let (il, tl) = (&cfg.input_lengths, &cfg.target_lengths);
    if cfg.t == 0 || cfg.n == 0 {
        return super::one(b.splat(Literal::Float(0.0), &lp.ty));
    }
    let cols = cfg.label_columns(b, &targets)?;
    let lpt = at_labels(b, &lp, &cols)?;
    let skip = cfg.may_skip(b, &cols)?;
    let skip_ahead = shift(b, &skip, -2, Literal::Bool(false))?;
    let inside = cfg.below(b, |k| 2 * tl[k] + 1)?;
    let last = cfg.last_two(b, &[cfg.n, cfg.s], 1, 0)?;
    let beta = b.splat(
        Literal::Float(f64::NEG_INFINITY),
        &TensorType::new(d, [cfg.t, cfg.n, cfg.s]),
    );
    let after = b.splat(
        Literal::Float(f64::NEG_INFINITY),
        &TensorType::new(d, [cfg.n, cfg.s]),
    );
    let out = for_steps(b, cfg.t, &[&after, &beta], |b, k, s| {
        let (next, beta) = (&s[0], &s[1]);
        let top = b.constant(Literal::Int(cfg.t - 1), DType::I64);
        let t = b.sub(&top, k)?;
        let none = neg_inf(b, next);
        let here = step(b, &lpt, &t)?;
        let from_next = shift(b, next, -1, Literal::Float(f64::NEG_INFINITY))?;
        let from_skip = shift(b, next, -2, Literal::Float(f64::NEG_INFINITY))?;
        let from_skip = b.select(&skip_ahead, &from_skip, &none)?;
        let sum = log_add3(b, next, &from_next, &from_skip)?;
        let rec = b.add(&sum, &here)?;
        let rec = b.select(&inside, &rec, &none)?;
        let ends = b.select(&last, &here, &none)?;
        let at_end = time_is(b, &cfg, &t, CompareDir::Eq, |k| il[k] - 1)?;
        let before = time_is(b, &cfg, &t, CompareDir::Lt, |k| il[k] - 1)?;
        let rec = b.select(&before, &rec, &none)?;
        let cur = b.select(&at_end, &ends, &rec)?;
        let beta = set_step(b, beta, &cur, &t)?;
        Ok(vec![cur, beta])
    })?;
    let alpha = b.convert(&alpha, d);
    let alpha = b.transpose(&alpha, &[1, 0, 2])?;
    let both = b.add(&alpha, &out[1])?;
    // log(sum of exp(alpha + beta)) over the positions of each class, by a scatter-add of
    // the shifted exponentials into `[T, N * C]`.
    let (t, n, c, s) = (cfg.t, cfg.n, cfg.c, cfg.s);
    let init = b.constant(Literal::Float(f64::NEG_INFINITY), d);
    let m = b.reduce(&both, &init, &[2], max_c);
    let m = finite_shift(b, &m)?;
    let mb = b.broadcast_in_dim(&m, &[t, n, s], &[0, 1])?;
    let shifted = b.sub(&both, &mb)?;
    let e = b.exp(&shifted);
    let e = b.reshape(&e, &[t, n * s])?;
    let at = b.reshape(&cols, &[n * s, 1])?;
    let sums = b.splat(Literal::Float(0.0), &TensorType::new(d, [t, n * c]));
    let dims = ScatterDims {
        update_window_dims: vec![0],
        inserted_window_dims: vec![1],
        scatter_dims_to_operand_dims: vec![1],
        index_vector_dim: 1,
    };
    let sums = b.scatter(&sums, &at, &e, &dims, Some(add_c));
    let sums = b.reshape(&sums, &[t, n, c])?;
    let logs = b.log(&sums);
    let mb = b.broadcast_in_dim(&m, &[t, n, c], &[0, 1])?;
    let per_class = b.add(&logs, &mb)?;
    // (exp(lp) - exp(per_class + nll - lp)) * grad, per sample, inside its input length.
    let nll = b.convert(&nll, d);
    let nll_b = b.broadcast_in_dim(&nll, &[t, n, c], &[1])?;
    let g = b.convert(&grad, d);
    let g = b.broadcast_in_dim(&g, &[t, n, c], &[1])?;
    let p = b.exp(&lp);
    let r = b.add(&per_class, &nll_b)?;
    let r = b.sub(&r, &lp)?;
    let r = b.exp(&r);
    let r = b.sub(&p, &r)?;
    let r = b.mul(&r, &g)?;
    let time = b.iota(&TensorType::new(DType::I64, [t, n, c]), 0);
    let length = cfg.per_sample(b, |k| il[k], &[t, n, c], 1)?;
    let live = b.compare(CompareDir::Lt, &time, &length)?;
    let zero = b.full_like(&r, Literal::Float(0.0));
    let mut r = b.select(&live, &r, &zero)?;
    if zero_infinity {
        let inf = b.full_like(&nll_b, Literal::Float(f64::INFINITY));
        let infinite = b.compare(CompareDir::Eq, &nll_b, &inf)?;
        r = b.select(&infinite, &zero, &r)?;
    }
    super::one(r)
}

pub(crate) fn register(reg: &mut Registry) {
    reg.ops(&["_ctc_loss"], ctc_loss);
    reg.ops(&["_ctc_loss_backward"], ctc_loss_backward);
}
