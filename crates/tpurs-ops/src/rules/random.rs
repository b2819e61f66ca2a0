//! Random numbers from the per-device generator (`ctx.random_bits`): `uniform_`, `normal_`
//! (and the `normal` Tensor overloads), `random_` (all overloads), `bernoulli` / `bernoulli_`,
//! `exponential_`, `log_normal_`, `cauchy_`, `geometric_`, `multinomial` and `randperm`.
//! `torch.rand` / `randn` /
//! `randint` and their `_like` forms decompose into these.

use tpurs_hlo::{Builder, CompareDir, DType, Literal, TensorType, Value};

use super::{broadcast_all, broadcast_shapes, one};
use crate::checks::CheckKind;
use crate::ctx::{Ctx, Out};
use crate::dtype::opmath;
use crate::dtype::torch_name;
use crate::error::{runtime, Error, Result};
use crate::table::Registry;

/// A `NotImplementedError` worded like PyTorch's dispatch error.
fn not_for(kernel: &str, dtype: DType) -> Error {
    Error::NotImplemented(format!(
        "\"{kernel}\" not implemented for '{}'",
        torch_name(dtype)
    ))
}

/// Fails unless `dtype` is a float type (the kernels of continuous distributions).
fn need_float(kernel: &str, dtype: DType) -> Result<()> {
    if dtype.is_float() {
        Ok(())
    } else {
        Err(not_for(kernel, dtype))
    }
}

/// Uniform floats of type `w` (F32 or F64) and `shape` in `[0, 1)`, or in `(0, 1]` when
/// `open_zero` (safe for `log`): 24 random bits per f32, 53 per f64.
fn unit(ctx: &mut Ctx, shape: &[i64], w: DType, open_zero: bool) -> Result<Value> {
    let bits = ctx.random_bits(shape);
    let b = &mut ctx.b;
    let shr = |b: &mut Builder, x: &Value, n: i64| -> Result<Value> {
        let k = b.full_like(x, Literal::Int(n));
        Ok(b.shift_right_logical(x, &k)?)
    };
    let (k, scale) = if w == DType::F64 {
        let hi = shr(b, &bits, 5)?;
        let lo_bits = ctx.random_bits(shape);
        let b = &mut ctx.b;
        let lo = shr(b, &lo_bits, 6)?;
        let hi = b.convert(&hi, DType::F64);
        let lo = b.convert(&lo, DType::F64);
        let m = b.full_like(&hi, Literal::Float(67_108_864.0));
        let hm = b.mul(&hi, &m)?;
        (b.add(&hm, &lo)?, 2f64.powi(-53))
    } else {
        let k = shr(b, &bits, 8)?;
        (b.convert(&k, w), 2f64.powi(-24))
    };
    let b = &mut ctx.b;
    let k = if open_zero {
        let onev = b.full_like(&k, Literal::Float(1.0));
        b.add(&k, &onev)?
    } else {
        k
    };
    let s = b.full_like(&k, Literal::Float(scale));
    Ok(b.mul(&k, &s)?)
}

/// `from + (to - from) * u` with `u` uniform in `[0, 1)`, rounded to `dtype` and kept
/// below `to` (a value that rounds up to `to` becomes `from`).
pub(super) fn uniform_of(ctx: &mut Ctx, ty: &TensorType, from: f64, to: f64) -> Result<Value> {
    let w = if ty.dtype == DType::F64 {
        DType::F64
    } else {
        DType::F32
    };
    let u = unit(ctx, &ty.shape, w, false)?;
    let b = &mut ctx.b;
    let range = b.full_like(&u, Literal::Float(to - from));
    let lo = b.full_like(&u, Literal::Float(from));
    let x = b.mul(&u, &range)?;
    let x = b.add(&x, &lo)?;
    let x = b.convert(&x, ty.dtype);
    let hi = b.full_like(&x, Literal::Float(to));
    let lo = b.full_like(&x, Literal::Float(from));
    let over = b.compare(CompareDir::Ge, &x, &hi)?;
    Ok(b.select(&over, &lo, &x)?)
}

/// A complex `ty` filled as CPU PyTorch fills one: its (real, imaginary) pairs are real
/// draws of `draw`, as through `view_as_real`.
fn complex_draw(
    ctx: &mut Ctx,
    ty: &TensorType,
    draw: impl FnOnce(&mut Ctx, &TensorType) -> Result<Value>,
) -> Result<Value> {
    let mut pairs = ty.shape.clone();
    pairs.push(2);
    let v = draw(ctx, &TensorType::new(ty.dtype.real_part(), pairs))?;
    let b = &mut ctx.b;
    let rank = v.rank();
    let mut parts = Vec::new();
    for k in 0..2 {
        let mut start = vec![0; rank];
        start[rank - 1] = k;
        let mut limit = v.shape().to_vec();
        limit[rank - 1] = k + 1;
        let part = b.slice(&v, &start, &limit, &vec![1; rank])?;
        parts.push(b.reshape(&part, &ty.shape)?);
    }
    Ok(b.complex(&parts[0], &parts[1])?)
}

/// `uniform_(self, from, to)`.
fn uniform(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let ty = ctx.ty(0)?;
    if !ty.dtype.is_complex() {
        need_float("check_uniform_bounds", ty.dtype)?;
    }
    let (from, to) = (ctx.float(1)?, ctx.float(2)?);
    let max = crate::dtype::finfo_max(ty.dtype.real_part());
    for (name, v) in [("from", from), ("to", to)] {
        if !(-max..=max).contains(&v) {
            return runtime(format!(
                "{name} is out of bounds for {}",
                crate::dtype::cpp_name(ty.dtype.real_part())
            ));
        }
    }
    if from > to {
        return runtime(format!(
            "uniform_ expects to return a [from, to) range, but found from={from} > to={to}"
        ));
    }
    if to - from > max {
        return runtime(format!(
            "uniform_ expects to-from <= std::numeric_limits<{}>::max(), but found to={to} and from={from} which result in to-from to exceed the limit",
            torch_name(ty.dtype.real_part())
        ));
    }
    if ty.dtype.is_complex() {
        return one(complex_draw(ctx, &ty, |ctx, part| {
            uniform_of(ctx, part, from, to)
        })?);
    }
    one(uniform_of(ctx, &ty, from, to)?)
}

/// Standard normal samples of type `w` by Box-Muller (`u1` in `(0, 1]`, so no `log(0)`).
fn standard_normal(ctx: &mut Ctx, shape: &[i64], w: DType) -> Result<Value> {
    let u1 = unit(ctx, shape, w, true)?;
    let u2 = unit(ctx, shape, w, false)?;
    let b = &mut ctx.b;
    let l = b.log(&u1);
    let m2 = b.full_like(&l, Literal::Float(-2.0));
    let r = b.mul(&l, &m2)?;
    let r = b.sqrt(&r);
    let tau = b.full_like(&u2, Literal::Float(std::f64::consts::TAU));
    let t = b.mul(&u2, &tau)?;
    let c = b.cos(&t);
    Ok(b.mul(&r, &c)?)
}

/// PyTorch's check on a normal's standard deviation.
fn check_std(std: f64) -> Result<()> {
    if std >= 0.0 {
        Ok(())
    } else {
        runtime(format!("normal expects std >= 0.0, but found std {std}"))
    }
}

/// `mean + std * z` of type `ty` with `z` standard normal.
fn normal_of(ctx: &mut Ctx, ty: &TensorType, mean: f64, std: f64) -> Result<Value> {
    let z = standard_normal(ctx, &ty.shape, opmath(ty.dtype))?;
    let b = &mut ctx.b;
    let s = b.full_like(&z, Literal::Float(std));
    let m = b.full_like(&z, Literal::Float(mean));
    let x = b.mul(&z, &s)?;
    let x = b.add(&x, &m)?;
    Ok(b.convert(&x, ty.dtype))
}

/// `normal_(self, mean, std)`. A complex tensor's parts each get half the variance.
fn normal(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let ty = ctx.ty(0)?;
    let (mean, std) = (ctx.float(1)?, ctx.float(2)?);
    if ty.dtype.is_complex() {
        check_std(std)?;
        let std = std / std::f64::consts::SQRT_2;
        return one(complex_draw(ctx, &ty, |ctx, part| {
            normal_of(ctx, part, mean, std)
        })?);
    }
    need_float("normal_kernel_cpu", ty.dtype)?;
    check_std(std)?;
    one(normal_of(ctx, &ty, mean, std)?)
}

/// `normal.Tensor_float` / `float_Tensor` / `Tensor_Tensor`: `mean + std * z`, broadcast,
/// in the dtype of the tensor argument (of `mean` when both are tensors).
fn normal_tensor(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let tensor_arg = if matches!(ctx.arg(0), crate::Arg::Tensor(_)) {
        0
    } else {
        1
    };
    let dtype = ctx.ty(tensor_arg)?.dtype;
    need_float("normal_kernel_cpu", dtype)?;
    let mut vs = Vec::new();
    for i in 0..2 {
        vs.push(match ctx.arg(i) {
            crate::Arg::Float(v) => {
                if i == 1 {
                    check_std(*v)?;
                }
                ctx.b.constant(Literal::Float(*v), dtype)
            }
            _ => ctx.tensor(i)?,
        });
    }
    if !matches!(ctx.arg(1), crate::Arg::Float(_)) {
        // PyTorch checks every element of a std tensor (NaN fails too) with a host read on
        // every device; here on the device, read at the op.
        let zero = ctx.b.full_like(&vs[1], Literal::Int(0));
        let ok = ctx.b.compare(CompareDir::Ge, &vs[1], &zero)?;
        let message = "normal expects all elements of std >= 0.0";
        ctx.check_all_at_op(&ok, CheckKind::Runtime, message)?;
    }
    let w = opmath(dtype);
    let shape = broadcast_shapes(vs[0].shape(), vs[1].shape())?;
    let vs = broadcast_all(&mut ctx.b, &vs, w)?;
    let z = standard_normal(ctx, &shape, w)?;
    let b = &mut ctx.b;
    let x = b.mul(&z, &vs[1])?;
    let x = b.add(&x, &vs[0])?;
    one(b.convert(&x, dtype))
}

/// The largest integer `random_` draws for `dtype` without `to` (2^digits for floats).
fn max_of(dtype: DType) -> i128 {
    match dtype {
        DType::Bool => 1,
        DType::U8 => u8::MAX as i128,
        DType::I8 => i8::MAX as i128,
        DType::I16 => i16::MAX as i128,
        DType::U16 => u16::MAX as i128,
        DType::I32 => i32::MAX as i128,
        DType::U32 => u32::MAX as i128,
        DType::I64 => i64::MAX as i128,
        DType::U64 => u64::MAX as i128,
        DType::F16 | DType::C32 => 1 << 11,
        DType::BF16 => 1 << 8,
        DType::F8E5M2 | DType::F8E5M2FNUZ => 1 << 3,
        DType::F8E4M3FN | DType::F8E4M3FNUZ => 1 << 4,
        DType::F32 | DType::C64 => 1 << 24,
        DType::F64 | DType::C128 => 1 << 53,
    }
}

/// The smallest value of an integer `dtype`.
fn min_of(dtype: DType) -> i128 {
    match dtype {
        DType::I8 => i8::MIN as i128,
        DType::I16 => i16::MIN as i128,
        DType::I32 => i32::MIN as i128,
        DType::I64 => i64::MIN as i128,
        _ => 0,
    }
}

/// Integers uniform in `[lo, lo + range)` (`1 <= range <= 2^64`) as i64: `bits % range + lo`,
/// from one 32-bit word per element when `range <= 2^32`, else from two.
fn random_ints(ctx: &mut Ctx, shape: &[i64], lo: i64, range: i128) -> Result<Value> {
    let x = if range <= 1 << 32 {
        let bits = ctx.random_bits(shape);
        let b = &mut ctx.b;
        let x = b.convert(&bits, DType::I64);
        let r = b.full_like(&x, Literal::Int(range as i64));
        b.rem(&x, &r)?
    } else {
        let hi = ctx.random_bits(shape);
        let lo_bits = ctx.random_bits(shape);
        let b = &mut ctx.b;
        let hi = b.convert(&hi, DType::U64);
        let lo_w = b.convert(&lo_bits, DType::U64);
        let k = b.full_like(&hi, Literal::Int(32));
        let hi = b.shift_left(&hi, &k)?;
        let mut x = b.or(&hi, &lo_w)?;
        if range < 1 << 64 {
            let r = b.splat(Literal::Int(0), &x.ty);
            // `Literal::Int` cannot hold values >= 2^63: build `range` as two halves.
            let rh = b.full_like(&r, Literal::Int((range >> 32) as i64));
            let rl = b.full_like(&r, Literal::Int((range & 0xFFFF_FFFF) as i64));
            let rh = b.shift_left(&rh, &k)?;
            let rv = b.or(&rh, &rl)?;
            x = b.rem(&x, &rv)?;
        }
        b.bitcast_convert(&x, DType::I64)
    };
    let b = &mut ctx.b;
    let l = b.full_like(&x, Literal::Int(lo));
    Ok(b.add(&x, &l)?)
}

/// The C++ name PyTorch's range errors give `dtype`, and the range they check (finite
/// values for floats).
fn bounds_of(dtype: DType) -> (&'static str, i128, i128) {
    match dtype {
        DType::Bool => ("bool", 0, 1),
        DType::U8 => ("unsigned char", 0, max_of(dtype)),
        DType::I8 => ("signed char", min_of(dtype), max_of(dtype)),
        DType::I16 => ("short int", min_of(dtype), max_of(dtype)),
        DType::I32 => ("int", min_of(dtype), max_of(dtype)),
        DType::F16 => ("c10::Half", -65504, 65504),
        DType::BF16 | DType::F32 | DType::F64 => ("float", i128::MIN, i128::MAX),
        _ => ("long int", min_of(dtype), max_of(dtype)),
    }
}

/// PyTorch's range checks of `random_(from, to)` (`to` exclusive) for `dtype`.
fn check_from_to(dtype: DType, from: i128, to: i128) -> Result<()> {
    if from >= to {
        return runtime(format!(
            "random_ expects 'from' to be less than 'to', but got from={from} >= to={to}"
        ));
    }
    let (name, lo, hi) = bounds_of(dtype);
    if from < lo || from > hi {
        return runtime(format!("from is out of bounds for {name}"));
    }
    if to - 1 < lo || to - 1 > hi {
        return runtime(format!("to - 1 is out of bounds for {name}"));
    }
    Ok(())
}

/// `random_()`, `random_.from(from, to?)`, `random_.to(to)`: integers in `[from, to)`
/// (up to the dtype's largest value when `to` is omitted).
fn random(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let ty = ctx.ty(0)?;
    let (from, to) = match ctx.overload().trim_end_matches("_out") {
        "from" => {
            let from = ctx.int(1)? as i128;
            let to = match ctx.opt_int(2)? {
                Some(t) => t as i128,
                None => max_of(ty.dtype) + 1,
            };
            (from, to)
        }
        "to" => (0, ctx.int(1)? as i128),
        _ => (0, max_of(ty.dtype) + 1),
    };
    check_from_to(ty.dtype, from, to)?;
    let x = random_ints(ctx, &ty.shape, from as i64, to - from)?;
    one(ctx.b.convert(&x, ty.dtype))
}

/// `u < p` as `dtype`, with `u` uniform in `[0, 1)` and `p` broadcast to `ty`'s shape.
fn bernoulli_of(ctx: &mut Ctx, ty: &TensorType, p: &Value) -> Result<Value> {
    let w = if p.dtype() == DType::F64 {
        DType::F64
    } else {
        DType::F32
    };
    let u = unit(ctx, &ty.shape, w, false)?;
    let b = &mut ctx.b;
    let p = b.convert(p, w);
    let p = b.broadcast_to(&p, &ty.shape)?;
    let hit = b.compare(CompareDir::Lt, &u, &p)?;
    Ok(b.convert(&hit, ty.dtype))
}

/// `bernoulli_.float(self, p)` and `bernoulli.p(self, p)`: ones with probability `p`.
fn bernoulli_float(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let ty = ctx.ty(0)?;
    let p = ctx.float(1)?;
    if !(0.0..=1.0).contains(&p) {
        return runtime(format!(
            "bernoulli_ expects p to be in [0, 1], but got p={p}"
        ));
    }
    let pv = ctx.b.constant(Literal::Float(p), DType::F32);
    one(bernoulli_of(ctx, &ty, &pv)?)
}

/// `bernoulli_.Tensor(self, p)` / `bernoulli.Tensor` (probabilities `p` broadcast to
/// `self`) and `bernoulli(self)` (the probabilities are `self`).
fn bernoulli_tensor(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let ty = ctx.ty(0)?;
    let p_arg = usize::from(matches!(
        ctx.arg(1),
        crate::Arg::Tensor(_) | crate::Arg::Scalar(_)
    ));
    let p = ctx.tensor(p_arg)?;
    if p_arg == 0 {
        need_float("bernoulli_tensor_cpu_self_", ty.dtype)?;
    }
    one(bernoulli_of(ctx, &ty, &p)?)
}

/// A continuous distribution filled in place: `f(u)` for `u` uniform in `(0, 1]` (or
/// `[0, 1)`), computed in the opmath type of `self`.
fn fill_from_unit(
    ctx: &mut Ctx,
    open_zero: bool,
    f: impl Fn(&mut Builder, &Value) -> Result<Value>,
) -> Result<Vec<Out>> {
    let ty = ctx.ty(0)?;
    let w = if ty.dtype == DType::F64 {
        DType::F64
    } else {
        DType::F32
    };
    let u = unit(ctx, &ty.shape, w, open_zero)?;
    let x = f(&mut ctx.b, &u)?;
    one(ctx.b.convert(&x, ty.dtype))
}

/// `exponential_(self, lambd)`: `-log(u) / lambd` with `u` in `(0, 1]`.
fn exponential(ctx: &mut Ctx) -> Result<Vec<Out>> {
    need_float("exponential_cpu", ctx.ty(0)?.dtype)?;
    let lambd = ctx.float(1)?;
    if lambd <= 0.0 {
        return runtime(format!(
            "exponential_ expects lambda > 0.0, but found lambda={lambd}"
        ));
    }
    fill_from_unit(ctx, true, move |b, u| {
        let l = b.log(u);
        let k = b.full_like(&l, Literal::Float(-1.0 / lambd));
        Ok(b.mul(&l, &k)?)
    })
}

/// `cauchy_(self, median, sigma)`: `median + sigma * tan(pi * (u - 0.5))`.
fn cauchy(ctx: &mut Ctx) -> Result<Vec<Out>> {
    need_float("cauchy_cpu", ctx.ty(0)?.dtype)?;
    let (median, sigma) = (ctx.float(1)?, ctx.float(2)?);
    if sigma <= 0.0 {
        return runtime(format!(
            "cauchy_ expects sigma > 0.0, but found sigma={sigma}"
        ));
    }
    fill_from_unit(ctx, true, move |b, u| {
        let h = b.full_like(u, Literal::Float(0.5));
        let c = b.sub(u, &h)?;
        let pi = b.full_like(u, Literal::Float(std::f64::consts::PI));
        let t = b.mul(&c, &pi)?;
        let t = b.tan(&t);
        let s = b.full_like(u, Literal::Float(sigma));
        let m = b.full_like(u, Literal::Float(median));
        let x = b.mul(&t, &s)?;
        Ok(b.add(&x, &m)?)
    })
}

/// `geometric_(self, p)`: `ceil(log(u) / log(1 - p))`, trials until the first success.
fn geometric(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let p = ctx.float(1)?;
    if !(p > 0.0 && p < 1.0) {
        return runtime(format!(
            "geometric_ expects p to be in (0, 1), but got p={p}"
        ));
    }
    fill_from_unit(ctx, true, move |b, u| {
        let l = b.log(u);
        let k = b.full_like(&l, Literal::Float(1.0 / (1.0 - p).ln()));
        let x = b.mul(&l, &k)?;
        let x = b.ceil(&x);
        let onev = b.full_like(&x, Literal::Float(1.0));
        Ok(b.max(&x, &onev)?)
    })
}

/// `log_normal_(self, mean, std)`: `exp(mean + std * z)`.
fn log_normal(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let ty = ctx.ty(0)?;
    need_float("log_normal_cpu", ty.dtype)?;
    let (mean, std) = (ctx.float(1)?, ctx.float(2)?);
    if std <= 0.0 {
        return runtime(format!(
            "log_normal_ expects std > 0.0, but found std={std}"
        ));
    }
    let z = standard_normal(ctx, &ty.shape, opmath(ty.dtype))?;
    let b = &mut ctx.b;
    let s = b.full_like(&z, Literal::Float(std));
    let m = b.full_like(&z, Literal::Float(mean));
    let x = b.mul(&z, &s)?;
    let x = b.add(&x, &m)?;
    let x = b.exp(&x);
    one(b.convert(&x, ty.dtype))
}

/// Registers the family.
/// `multinomial(self, num_samples, replacement=False)`: draws category indices from each row
/// of unnormalised probabilities. Without replacement, the `num_samples` largest of
/// `p / E` (`E` exponential: the same distribution as sequential draws, the CPU's method);
/// with replacement, each sample is the largest of its own `p / E`. Rows with a negative,
/// infinite or NaN entry, or summing to zero, raise CPU's error at the next host wait.
fn multinomial(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let ty = ctx.ty(0)?;
    let (n, replacement) = (ctx.int(1)?, ctx.bool_or(2, false)?);
    if !ty.dtype.is_float() {
        return runtime("multinomial only supports floating-point dtypes for input");
    }
    if !(1..=2).contains(&ty.rank()) {
        return runtime("prob_dist must be 1 or 2 dim");
    }
    let c = ty.shape[ty.rank() - 1];
    if n <= 0 {
        return runtime("cannot sample n_sample <= 0 samples");
    }
    if !replacement && n > c {
        return runtime("cannot sample n_sample > prob_dist.size(-1) samples without replacement");
    }
    if c > 1 << 24 {
        return runtime("number of categories cannot exceed 2^24");
    }
    let rows = if ty.rank() == 2 { ty.shape[0] } else { 1 };
    let w = if ty.dtype == DType::F64 {
        DType::F64
    } else {
        DType::F32
    };
    let p = ctx.tensor(0)?;
    let draws = if replacement { n } else { 1 };
    let e = unit(ctx, &[rows, draws, c], w, true)?;
    let b = &mut ctx.b;
    let p = b.convert(&p, w);
    let p = b.reshape(&p, &[rows, c])?;
    // Validity, checked on the device.
    let zero = b.full_like(&p, Literal::Float(0.0));
    let finite = b.is_finite(&p);
    let non_negative = b.compare(CompareDir::Ge, &p, &zero)?;
    let fine = b.and(&finite, &non_negative)?;
    let t = b.constant(Literal::Bool(true), DType::Bool);
    let all_fine = b.reduce(&fine, &t, &[0, 1], |b, x, y| {
        b.and(x, y).expect("same types")
    });
    let z = b.constant(Literal::Float(0.0), w);
    let sums = b.reduce(&p, &z, &[1], |b, x, y| b.add(x, y).expect("same types"));
    let zero_rows = b.full_like(&sums, Literal::Float(0.0));
    let positive = b.compare(CompareDir::Gt, &sums, &zero_rows)?;
    let all_positive = b.reduce(&positive, &t, &[0], |b, x, y| {
        b.and(x, y).expect("same types")
    });
    // Keys p / E (E = -log u > 0 almost surely); zero-probability categories come last.
    let log_u = b.log(&e);
    let exp = b.neg(&log_u);
    let pb = b.broadcast_in_dim(&p, &[rows, draws, c], &[0, 2])?;
    let ratio = b.div(&pb, &exp)?;
    let zero3 = b.full_like(&pb, Literal::Float(0.0));
    let chosen = b.compare(CompareDir::Gt, &pb, &zero3)?;
    let never = b.full_like(&pb, Literal::Float(-1.0));
    let keys = b.select(&chosen, &ratio, &never)?;
    let idx = b.iota(&TensorType::new(DType::I64, [rows, draws, c]), 2);
    let sorted = b.sort(&[&keys, &idx], 2, |b, s| {
        b.compare(CompareDir::Gt, &s[0], &s[1]).expect("same types")
    });
    // Without replacement the first n of one ordering; with it, the first of each of n.
    let take = if replacement { 1 } else { n };
    let first = b.slice(&sorted[1], &[0, 0, 0], &[rows, draws, take], &[1, 1, 1])?;
    let mut shape = vec![rows, n];
    if ty.rank() == 1 {
        shape.remove(0);
    }
    let out = b.reshape(&first, &shape)?;
    let msg = "probability tensor contains either `inf`, `nan` or element < 0";
    ctx.check_that(&all_fine, CheckKind::Runtime, msg)?;
    let msg = "invalid multinomial distribution (sum of probabilities <= 0)";
    ctx.check_that(&all_positive, CheckKind::Runtime, msg)?;
    one(out)
}

/// `randperm.out(n, out)` / `randperm.generator_out(n, generator, out)`: `0..n` ordered by
/// random 64-bit keys (two 32-bit draws compared in turn, so ties are rare).
fn randperm(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let n = ctx.int(0)?;
    let out = if ctx.overload() == "generator_out" {
        2
    } else {
        1
    };
    let dtype = ctx.ty(out)?.dtype;
    if dtype == DType::Bool || dtype.is_complex() {
        return Err(not_for("randperm", dtype));
    }
    let float_limit = match dtype {
        DType::F16 => Some(("Half", (1i64 << 11) + 1)),
        DType::F32 => Some(("Float", (1 << 24) + 1)),
        DType::F64 => Some(("Double", (1 << 53) + 1)),
        _ => None,
    };
    if let Some((name, limit)) = float_limit.filter(|&(_, limit)| n > limit) {
        return runtime(format!("n cannot be greater than {limit} for {name} type."));
    }
    if dtype.is_int() && n > 0 && (n - 1) as i128 > max_of(dtype) {
        let bits = dtype.byte_size() * 8;
        let sign = if dtype.is_unsigned() { "u" } else { "" };
        return runtime(format!(
            "value cannot be converted to type {sign}int{bits}_t without overflow"
        ));
    }
    if n == 0 {
        return one(ctx.b.splat(Literal::Int(0), &TensorType::new(dtype, [0])));
    }
    let hi = ctx.random_bits(&[n]);
    let lo = ctx.random_bits(&[n]);
    let b = &mut ctx.b;
    let idx = b.iota(&TensorType::new(DType::I64, [n]), 0);
    let sorted = b.sort(&[&hi, &lo, &idx], 0, |b, s| {
        let below = b.compare(CompareDir::Lt, &s[0], &s[1]).expect("same types");
        let tied = b.compare(CompareDir::Eq, &s[0], &s[1]).expect("same types");
        let lo_below = b.compare(CompareDir::Lt, &s[2], &s[3]).expect("same types");
        let then_lo = b.and(&tied, &lo_below).expect("same types");
        b.or(&below, &then_lo).expect("same types")
    });
    one(b.convert(&sorted[2], dtype))
}

pub(crate) fn register(reg: &mut Registry) {
    reg.ops(&["randperm.out", "randperm.generator_out"], randperm)
        .any_cast();
    reg.ops(&["uniform_", "uniform", "uniform.out"], uniform)
        .complex();
    reg.ops(&["normal_", "normal.out"], normal).complex();
    reg.ops(
        &[
            "normal.Tensor_float",
            "normal.Tensor_float_out",
            "normal.float_Tensor",
            "normal.float_Tensor_out",
            "normal.Tensor_Tensor",
            "normal.Tensor_Tensor_out",
        ],
        normal_tensor,
    );
    reg.ops(
        &[
            "random_",
            "random",
            "random.out",
            "random_.from",
            "random.from",
            "random.from_out",
            "random_.to",
            "random.to",
            "random.to_out",
        ],
        random,
    )
    .any_cast();
    reg.ops(
        &["bernoulli_.float", "bernoulli.p", "bernoulli.float_out"],
        bernoulli_float,
    )
    .any_cast();
    reg.ops(
        &[
            "bernoulli_.Tensor",
            "bernoulli.Tensor",
            "bernoulli.Tensor_out",
            "bernoulli",
            "bernoulli.out",
        ],
        bernoulli_tensor,
    )
    .any_cast();
    reg.ops(
        &["exponential_", "exponential", "exponential.out"],
        exponential,
    );
    reg.ops(&["cauchy_", "cauchy", "cauchy.out"], cauchy);
    reg.ops(&["geometric_", "geometric", "geometric.out"], geometric)
        .any_cast();
    reg.ops(&["log_normal_", "log_normal", "log_normal.out"], log_normal);
    reg.ops(&["multinomial", "multinomial.out"], multinomial);
}
