//! Reductions: `sum`, `mean`, `prod`, `amax` / `amin`, `max` / `min` (full and with indices),
//! `argmax` / `argmin`, `var` / `std` (and `*_mean`), `logsumexp`, `cumsum` / `cumprod`,
//! `all` / `any`, `_softmax` / `_log_softmax` with their backward ops. Half types
//! accumulate in f32, as PyTorch's CPU kernels do.

use tpurs_hlo::{Builder, CompareDir, DType, Literal, TensorType, Value};

use super::combine::{add_c, and_c, highest, lowest, max_c, min_c, mul_c, or_c, Combine};
use super::{float_dtype, one, wrap_dim};
use crate::ctx::{Arg, Ctx, Out};
use crate::dtype::{opmath, torch_name};
use crate::error::{runtime, Error, Result};
use crate::table::Registry;

/// Wraps the reduction dims `dims` of a rank-`rank` tensor, sorted; an empty list means all
/// dims. A 0-d tensor accepts dims 0 / -1 and has nothing to reduce.
pub(crate) fn reduce_dims(dims: &[i64], rank: usize) -> Result<Vec<i64>> {
    if dims.is_empty() {
        return Ok((0..rank as i64).collect());
    }
    check_dim_mask(rank)?;
    let mut out = Vec::new();
    for &d in dims {
        let w = wrap_dim(d, rank)? as i64;
        if out.contains(&w) {
            return Err(Error::Runtime(format!(
                "dim {w} appears multiple times in the list of dims"
            )));
        }
        out.push(w);
    }
    if rank == 0 {
        return Ok(vec![]);
    }
    out.sort_unstable();
    Ok(out)
}

/// CPU PyTorch marks the reduced dims of an explicit `dim` in a 64-bit mask.
fn check_dim_mask(rank: usize) -> Result<()> {
    if rank > 64 {
        return runtime("only tensors with up to 64 dims are supported");
    }
    Ok(())
}

/// [`one_dim`] for a reduction over that dim (64 dims at most, as CPU).
fn reduced_dim(dim: i64, rank: usize) -> Result<Vec<i64>> {
    check_dim_mask(rank)?;
    one_dim(dim, rank)
}

/// The dims of a single-dim op (`dim` of `max.dim`, softmax, cumsum): empty for 0-d tensors.
pub(crate) fn one_dim(dim: i64, rank: usize) -> Result<Vec<i64>> {
    let d = wrap_dim(dim, rank)?;
    Ok(if rank == 0 { vec![] } else { vec![d as i64] })
}

/// Number of elements over the reduced `dims` of `shape`.
fn reduced_count(shape: &[i64], dims: &[i64]) -> i64 {
    dims.iter().map(|&d| shape[d as usize]).product()
}

/// Reduces `x` over `dims` from `init`, then restores the reduced dims as 1 when `keepdim`.
pub(crate) fn reduce(
    b: &mut Builder,
    x: &Value,
    dims: &[i64],
    init: Literal,
    f: Combine,
    keepdim: bool,
) -> Result<Value> {
    let init = b.constant(init, x.dtype());
    let r = if dims.is_empty() {
        x.clone()
    } else {
        b.reduce(x, &init, dims, f)
    };
    keep(b, &r, x.shape(), dims, keepdim)
}

/// Reshapes a reduced value to `shape` with `dims` set to 1 when `keepdim`.
fn keep(b: &mut Builder, r: &Value, shape: &[i64], dims: &[i64], keepdim: bool) -> Result<Value> {
    if !keepdim {
        return Ok(r.clone());
    }
    let kept: Vec<i64> = (0..shape.len())
        .map(|i| {
            if dims.contains(&(i as i64)) {
                1
            } else {
                shape[i]
            }
        })
        .collect();
    Ok(b.reshape(r, &kept)?)
}

/// Broadcasts a keepdim-reduced value back over `shape`.
pub(crate) fn expand(b: &mut Builder, r: &Value, shape: &[i64]) -> Result<Value> {
    Ok(b.broadcast_to(r, shape)?)
}

/// The dtype of the first write target (the `out=` or in-place tensor), if any.
fn out_dtype(ctx: &Ctx) -> Result<Option<DType>> {
    if ctx.writes().is_empty() {
        return Ok(None);
    }
    Ok(Some(ctx.write_meta(0)?.dtype))
}

/// Result dtype of `sum` / `prod` / `cumsum`: `dtype=`, else the `out=` tensor's type, else
/// the input type with integers and bool widened to int64.
fn widened_dtype(ctx: &Ctx, input: DType, dtype_arg: usize) -> Result<DType> {
    if let Some(d) = ctx.opt_dtype(dtype_arg)? {
        return Ok(d);
    }
    if let Some(d) = out_dtype(ctx)? {
        return Ok(d);
    }
    Ok(if input.is_float() || input.is_complex() {
        input
    } else {
        DType::I64
    })
}

/// Sums or multiplies `x` over `dims` in the accumulation type of `dtype`, giving `dtype`.
fn accumulate(
    b: &mut Builder,
    x: &Value,
    dims: &[i64],
    keepdim: bool,
    dtype: DType,
    is_prod: bool,
) -> Result<Value> {
    let acc = if dtype == DType::Bool {
        DType::I64
    } else {
        opmath(dtype)
    };
    let x = b.convert(x, dtype);
    let x = b.convert(&x, acc);
    let (init, f): (Literal, Combine) = if is_prod {
        (Literal::Int(1), mul_c)
    } else {
        (Literal::Int(0), add_c)
    };
    let r = reduce(b, &x, dims, init, f, keepdim)?;
    Ok(b.convert(&r, dtype))
}

/// `sum` / `sum.dim_IntList` and their `out=` forms.
fn sum(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let with_dims = matches!(ctx.overload(), "dim_IntList" | "IntList_out");
    let (dims, keepdim, dtype_arg) = if with_dims {
        (ctx.int_list(1)?, ctx.bool_or(2, false)?, 3)
    } else {
        (vec![], false, 1)
    };
    let ty = ctx.ty(0)?;
    let dims = reduce_dims(&dims, ty.rank())?;
    let dtype = widened_dtype(ctx, ty.dtype, dtype_arg)?;
    let x = ctx.tensor(0)?;
    one(accumulate(&mut ctx.b, &x, &dims, keepdim, dtype, false)?)
}

/// `nansum(self, dim?, keepdim, *, dtype)` and `out=`: a sum in which NaN counts as zero.
fn nansum(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let ty = ctx.ty(0)?;
    let dims = reduce_dims(&ctx.int_list(1)?, ty.rank())?;
    let keepdim = ctx.bool_or(2, false)?;
    let dtype = widened_dtype(ctx, ty.dtype, 3)?;
    let x = ctx.tensor(0)?;
    let b = &mut ctx.b;
    let x = if x.dtype().is_float() {
        let nan = b.compare(CompareDir::Ne, &x, &x)?;
        let zero = b.full_like(&x, Literal::Int(0));
        b.select(&nan, &zero, &x)?
    } else {
        x
    };
    one(accumulate(b, &x, &dims, keepdim, dtype, false)?)
}

/// `trace(self)` and `out=`: the sum of a matrix's main diagonal (integers sum as int64).
fn trace(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let ty = ctx.ty(0)?;
    if ty.rank() != 2 {
        return Err(Error::Runtime(format!(
            "trace: expected a matrix, but got tensor with dim {}",
            ty.rank()
        )));
    }
    let dtype = widened_dtype(ctx, ty.dtype, usize::MAX)?;
    let x = ctx.tensor(0)?;
    let b = &mut ctx.b;
    let idx = TensorType::new(DType::I64, ty.shape.clone());
    let (row, col) = (b.iota(&idx, 0), b.iota(&idx, 1));
    let diag = b.compare(CompareDir::Eq, &row, &col)?;
    let zero = b.full_like(&x, Literal::Int(0));
    let x = b.select(&diag, &x, &zero)?;
    one(accumulate(b, &x, &[0, 1], false, dtype, false)?)
}

/// `prod` / `prod.dim_int` and their `out=` forms.
fn prod(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let with_dim = matches!(ctx.overload(), "dim_int" | "int_out");
    let ty = ctx.ty(0)?;
    let (dims, keepdim, dtype_arg) = if with_dim {
        (
            reduced_dim(ctx.int(1)?, ty.rank())?,
            ctx.bool_or(2, false)?,
            3,
        )
    } else {
        ((0..ty.rank() as i64).collect(), false, 1)
    };
    let dtype = widened_dtype(ctx, ty.dtype, dtype_arg)?;
    let x = ctx.tensor(0)?;
    one(accumulate(&mut ctx.b, &x, &dims, keepdim, dtype, true)?)
}

/// `mean` / `mean.dim` and their `out=` forms (floating types only, as in PyTorch).
fn mean(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let with_dims = matches!(ctx.overload(), "dim" | "out");
    let (dims, keepdim, dtype_arg) = if with_dims {
        (ctx.int_list(1)?, ctx.bool_or(2, false)?, 3)
    } else {
        (vec![], false, 1)
    };
    let ty = ctx.ty(0)?;
    let dtype = ctx.opt_dtype(dtype_arg)?.unwrap_or(ty.dtype);
    if !dtype.is_float() && !dtype.is_complex() {
        return Err(Error::NotImplemented(format!(
            "mean(): could not infer output dtype. Input dtype must be either a floating point or complex dtype. Got: {}",
            torch_name(dtype)
        )));
    }
    let dims = reduce_dims(&dims, ty.rank())?;
    let x = ctx.tensor(0)?;
    one(mean_of(&mut ctx.b, &x, &dims, keepdim, dtype)?)
}

/// Mean of `x` over `dims`, computed in the accumulation type of `dtype`, giving `dtype`.
fn mean_of(b: &mut Builder, x: &Value, dims: &[i64], keepdim: bool, dtype: DType) -> Result<Value> {
    let acc = opmath(dtype);
    let x = b.convert(x, dtype);
    let x = b.convert(&x, acc);
    let s = reduce(b, &x, dims, Literal::Int(0), add_c, keepdim)?;
    let n = b.full_like(&s, Literal::Int(reduced_count(x.shape(), dims)));
    let m = b.div(&s, &n)?;
    Ok(b.convert(&m, dtype))
}

/// The `IndexError` PyTorch raises when reducing a dim of size zero without an identity.
fn check_nonempty(op: &str, shape: &[i64], dims: &[i64]) -> Result<()> {
    for &d in dims {
        if shape[d as usize] == 0 {
            return Err(Error::Index(format!(
                "{op}(): Expected reduction dim {d} to have non-zero size."
            )));
        }
    }
    Ok(())
}

/// Maximum (`is_max`) or minimum of `x` over `dims`; NaN propagates.
pub(crate) fn extreme(
    b: &mut Builder,
    x: &Value,
    dims: &[i64],
    keepdim: bool,
    is_max: bool,
) -> Result<Value> {
    let d = x.dtype();
    let (init, f): (Literal, Combine) = match (is_max, d == DType::Bool) {
        (true, true) => (lowest(d), or_c),
        (true, false) => (lowest(d), max_c),
        (false, true) => (highest(d), and_c),
        (false, false) => (highest(d), min_c),
    };
    reduce(b, x, dims, init, f, keepdim)
}

/// `amax` / `amin` and their `out=` forms: an empty dim list reduces every dim.
fn amax_amin(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let is_max = ctx.name.starts_with("amax");
    let ty = ctx.ty(0)?;
    let dims = reduce_dims(&ctx.int_list(1)?, ty.rank())?;
    check_nonempty(if is_max { "amax" } else { "amin" }, &ty.shape, &dims)?;
    let keepdim = ctx.bool_or(2, false)?;
    let x = ctx.tensor(0)?;
    one(extreme(&mut ctx.b, &x, &dims, keepdim, is_max)?)
}

/// `max()` / `min()` of a whole tensor (and `unary_out`).
fn max_min_all(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let is_max = ctx.name.starts_with("max");
    let ty = ctx.ty(0)?;
    if ty.numel() == 0 {
        return Err(Error::Runtime(format!(
            "{}(): Expected reduction dim to be specified for input.numel() == 0. Specify the reduction dim with the 'dim' argument.",
            if is_max { "max" } else { "min" }
        )));
    }
    let dims: Vec<i64> = (0..ty.rank() as i64).collect();
    let x = ctx.tensor(0)?;
    one(extreme(&mut ctx.b, &x, &dims, false, is_max)?)
}

/// Combines two (value, index) pairs of an arg-reduction: the larger (smaller) value wins,
/// NaN beats numbers, and ties go to the smaller index.
fn pick(b: &mut Builder, acc: &[Value], new: &[Value], is_max: bool) -> Result<Vec<Value>> {
    let (a, ia, c, ic) = (&acc[0], &acc[1], &new[0], &new[1]);
    let dir = if is_max {
        CompareDir::Gt
    } else {
        CompareDir::Lt
    };
    let mut better = b.compare(dir, a, c)?;
    let mut same = b.compare(CompareDir::Eq, a, c)?;
    if a.dtype().is_float() {
        let a_nan = b.compare(CompareDir::Ne, a, a)?;
        let c_nan = b.compare(CompareDir::Ne, c, c)?;
        let c_num = b.not(&c_nan);
        let nan_wins = b.and(&a_nan, &c_num)?;
        let both_nan = b.and(&a_nan, &c_nan)?;
        better = b.or(&better, &nan_wins)?;
        same = b.or(&same, &both_nan)?;
    }
    let first = b.compare(CompareDir::Lt, ia, ic)?;
    let tie = b.and(&same, &first)?;
    let take_a = b.or(&better, &tie)?;
    Ok(vec![b.select(&take_a, a, c)?, b.select(&take_a, ia, ic)?])
}

/// Values and first int64 indices of the maximum (minimum) of `x` along `dim`.
pub(crate) fn arg_extreme(
    b: &mut Builder,
    x: &Value,
    dim: Option<i64>,
    keepdim: bool,
    is_max: bool,
) -> Result<(Value, Value)> {
    let Some(dim) = dim else {
        let idx = b.splat(Literal::Int(0), &x.ty.with_dtype(DType::I64));
        return Ok((x.clone(), idx));
    };
    let d = x.dtype();
    let idx = b.iota(&x.ty.with_dtype(DType::I64), dim as usize);
    let init_v = b.constant(if is_max { lowest(d) } else { highest(d) }, d);
    let init_i = b.constant(Literal::Int(i64::MAX), DType::I64);
    let r = b.reduce_multi(&[x, &idx], &[&init_v, &init_i], &[dim], |b, acc, new| {
        pick(b, acc, new, is_max).expect("arg-reduction operands share a type")
    });
    let v = keep(b, &r[0], x.shape(), &[dim], keepdim)?;
    let i = keep(b, &r[1], x.shape(), &[dim], keepdim)?;
    Ok((v, i))
}

/// `max.dim` / `min.dim` and their `out=` forms: values and first indices.
fn max_min_dim(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let is_max = ctx.name.starts_with("max");
    let ty = ctx.ty(0)?;
    let dims = reduced_dim(ctx.int(1)?, ty.rank())?;
    check_nonempty(if is_max { "max" } else { "min" }, &ty.shape, &dims)?;
    let keepdim = ctx.bool_or(2, false)?;
    let x = ctx.tensor(0)?;
    let (v, i) = arg_extreme(&mut ctx.b, &x, dims.first().copied(), keepdim, is_max)?;
    Ok(vec![Some(v), Some(i)])
}

/// `argmax` / `argmin` and `out=`: `dim=None` reduces the flattened tensor.
fn argmax_argmin(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let is_max = ctx.name.starts_with("argmax");
    let op = if is_max { "argmax" } else { "argmin" };
    let ty = ctx.ty(0)?;
    if ty.dtype == DType::Bool {
        return Err(Error::NotImplemented(format!(
            "{op}(): does not support bool input"
        )));
    }
    let keepdim = ctx.bool_or(2, false)?;
    let x = ctx.tensor(0)?;
    match ctx.opt_int(1)? {
        Some(dim) => {
            let dims = reduced_dim(dim, ty.rank())?;
            check_nonempty(op, &ty.shape, &dims)?;
            let (_, i) = arg_extreme(&mut ctx.b, &x, dims.first().copied(), keepdim, is_max)?;
            one(i)
        }
        None => {
            if ty.numel() == 0 {
                return Err(Error::Index(format!(
                    "{op}(): Expected reduction dim to be specified for input.numel() == 0."
                )));
            }
            let flat = ctx.b.reshape(&x, &[ty.numel()])?;
            let (_, i) = arg_extreme(&mut ctx.b, &flat, Some(0), false, is_max)?;
            let shape = if keepdim { vec![1; ty.rank()] } else { vec![] };
            one(ctx.b.reshape(&i, &shape)?)
        }
    }
}

/// `var` / `std` / `var_mean` / `std_mean` (`correction` overloads and `out=` forms):
/// two-pass variance divided by `max(N - correction, 0)`. A complex input's variance is
/// the real mean of `|x - mean|^2`.
fn var_std(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let base = ctx.name.split('.').next().unwrap_or("");
    let ty = ctx.ty(0)?;
    if !ty.dtype.is_float() && !ty.dtype.is_complex() {
        return Err(Error::NotImplemented(
            "std and var only support floating point and complex dtypes".into(),
        ));
    }
    let dims = reduce_dims(&ctx.int_list(1)?, ty.rank())?;
    // prims::var(inp, dims, correction: float?, *, output_dtype) has no keepdim.
    let prims = ctx.name.starts_with("prims::");
    let keepdim = !prims && ctx.bool_or(3, false)?;
    let acc = opmath(ty.dtype);
    let x = ctx.tensor(0)?;
    let b = &mut ctx.b;
    let xa = b.convert(&x, acc);
    let m = mean_of(b, &xa, &dims, true, acc)?;
    let mb = expand(b, &m, &ty.shape)?;
    let dev = b.sub(&xa, &mb)?;
    let sq = squared_magnitude(b, &dev)?;
    let acc = acc.real_part();
    let ss = reduce(b, &sq, &dims, Literal::Int(0), add_c, keepdim)?;
    let n = b.constant(Literal::Int(reduced_count(&ty.shape, &dims)), acc);
    let c = match ctx.arg(2) {
        Arg::None => ctx.b.constant(Literal::Int(1), acc),
        Arg::Float(c) => ctx.b.constant(Literal::Float(*c), acc),
        _ => {
            let c = ctx.tensor(2)?;
            ctx.b.convert(&c, acc)
        }
    };
    let b = &mut ctx.b;
    let zero = b.constant(Literal::Int(0), acc);
    let dof = b.sub(&n, &c)?;
    let dof = b.max(&dof, &zero)?;
    let dof = b.broadcast_to(&dof, ss.shape())?;
    let mut v = b.div(&ss, &dof)?;
    if base.starts_with("std") {
        v = b.sqrt(&v);
    }
    let out_dtype = match (prims, ctx.arg(3)) {
        (true, Arg::Dtype(d)) => *d,
        _ => ty.dtype.real_part(),
    };
    let b = &mut ctx.b;
    let v = b.convert(&v, out_dtype);
    if base.ends_with("_mean") {
        let m = if keepdim {
            m
        } else {
            b.reshape(&m, v.shape())?
        };
        let m = b.convert(&m, ty.dtype);
        return Ok(vec![Some(v), Some(m)]);
    }
    one(v)
}

/// `|x|^2`: `x * x` for real `x`, `re^2 + im^2` for complex.
pub(super) fn squared_magnitude(b: &mut Builder, x: &Value) -> Result<Value> {
    if !x.dtype().is_complex() {
        return Ok(b.mul(x, x)?);
    }
    let (re, im) = (b.real(x), b.imag(x));
    let (re2, im2) = (b.mul(&re, &re)?, b.mul(&im, &im)?);
    Ok(b.add(&re2, &im2)?)
}

/// `logsumexp` and `out=`.
fn logsumexp(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let ty = ctx.ty(0)?;
    let dtype = float_dtype(ty.dtype, ctx.default_float());
    let dims = reduce_dims(&ctx.int_list(1)?, ty.rank())?;
    let keepdim = ctx.bool_or(2, false)?;
    let x = ctx.tensor(0)?;
    let b = &mut ctx.b;
    let x = b.convert(&x, opmath(dtype));
    let r = logsumexp_of(b, &x, &dims, keepdim)?;
    one(b.convert(&r, dtype))
}

/// `log(sum(exp(x - m))) + m` over `dims` with `m` the max (0 where infinite), in `x`'s
/// type.
pub(crate) fn logsumexp_of(
    b: &mut Builder,
    x: &Value,
    dims: &[i64],
    keepdim: bool,
) -> Result<Value> {
    // A complex input shifts by the largest real part, as CPU does.
    let re = if x.dtype().is_complex() {
        b.real(x)
    } else {
        x.clone()
    };
    let m = extreme(b, &re, dims, true, true)?;
    let inf = b.full_like(&m, Literal::Float(f64::INFINITY));
    let zero = b.full_like(&m, Literal::Int(0));
    let am = b.abs(&m);
    let is_inf = b.compare(CompareDir::Eq, &am, &inf)?;
    let m = b.select(&is_inf, &zero, &m)?;
    let m = crate::dtype::cast(b, &m, x.dtype())?;
    let mb = expand(b, &m, x.shape())?;
    let sh = b.sub(x, &mb)?;
    let e = super::complex::exp_of(b, &sh)?;
    let s = reduce(b, &e, dims, Literal::Int(0), add_c, keepdim)?;
    let l = super::complex_math::log_of(b, &s)?;
    let m = if keepdim {
        m
    } else {
        b.reshape(&m, l.shape())?
    };
    Ok(b.add(&l, &m)?)
}

/// Inclusive scan of `x` along `dim` with `f` (identity `init`), by log-step doubling:
/// `y += shift(y, k)` for k = 1, 2, 4, ...
pub(crate) fn scan(
    b: &mut Builder,
    x: &Value,
    dim: usize,
    init: Literal,
    f: Combine,
) -> Result<Value> {
    let n = x.shape()[dim];
    let pad = b.constant(init, x.dtype());
    let rank = x.rank();
    let mut y = x.clone();
    let mut k = 1;
    while k < n {
        let mut low = vec![0; rank];
        let mut high = vec![0; rank];
        low[dim] = k;
        high[dim] = -k;
        let shifted = b.pad(&y, &pad, &low, &high, &vec![0; rank])?;
        y = f(b, &y, &shifted);
        k *= 2;
    }
    Ok(y)
}

/// `cumsum` / `cumprod` with their in-place and `out=` forms.
fn cumulative(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let is_prod = ctx.name.starts_with("cumprod");
    let ty = ctx.ty(0)?;
    let dims = one_dim(ctx.int(1)?, ty.rank())?;
    let dtype = widened_dtype(ctx, ty.dtype, 2)?;
    let acc = if dtype == DType::Bool {
        DType::I64
    } else {
        opmath(dtype)
    };
    let x = ctx.tensor(0)?;
    let b = &mut ctx.b;
    let x = b.convert(&x, dtype);
    let mut y = b.convert(&x, acc);
    if let Some(&d) = dims.first() {
        let (init, f): (Literal, Combine) = if is_prod {
            (Literal::Int(1), mul_c)
        } else {
            (Literal::Int(0), add_c)
        };
        y = scan(b, &y, d as usize, init, f)?;
    }
    one(b.convert(&y, dtype))
}

/// `all` / `any` in every overload: bool results (uint8 for uint8 inputs). `dim=None` or no
/// dim reduces everything; an empty dim list reduces nothing.
fn all_any(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let is_all = ctx.name.starts_with("all");
    let ty = ctx.ty(0)?;
    let overload = ctx.overload();
    let (dims, keepdim) = match overload {
        "" | "all_out" => ((0..ty.rank() as i64).collect(), false),
        "dim" | "out" => (reduced_dim(ctx.int(1)?, ty.rank())?, ctx.bool_or(2, false)?),
        _ => {
            let dims = match ctx.arg(1) {
                crate::Arg::None => (0..ty.rank() as i64).collect(),
                _ => {
                    let list = ctx.int_list(1)?;
                    if list.is_empty() {
                        vec![]
                    } else {
                        reduce_dims(&list, ty.rank())?
                    }
                }
            };
            (dims, ctx.bool_or(2, false)?)
        }
    };
    if let Some(d) = out_dtype(ctx)? {
        if d != DType::Bool && d != DType::U8 {
            let op = if is_all { "all" } else { "any" };
            return runtime(format!(
                "{op} only supports bool tensor for result, got: {}",
                torch_name(d)
            ));
        }
    }
    let x = ctx.tensor(0)?;
    let b = &mut ctx.b;
    let zero = b.full_like(&x, Literal::Int(0));
    let nz = b.compare(CompareDir::Ne, &x, &zero)?;
    let (init, f): (Literal, Combine) = if is_all {
        (Literal::Bool(true), and_c)
    } else {
        (Literal::Bool(false), or_c)
    };
    let r = reduce(b, &nz, &dims, init, f, keepdim)?;
    let out = if ty.dtype == DType::U8 {
        DType::U8
    } else {
        DType::Bool
    };
    one(b.convert(&r, out))
}

/// Registers the family.
pub(crate) fn register(reg: &mut Registry) {
    // Complex sums and means add both parts.
    reg.ops(
        &["sum", "sum.out", "sum.dim_IntList", "sum.IntList_out"],
        sum,
    )
    .complex();
    reg.ops(&["mean", "mean.dtype_out", "mean.dim", "mean.out"], mean)
        .complex();
    reg.ops(&["nansum", "nansum.out"], nansum);
    reg.ops(&["trace", "trace.out"], trace).complex();
    reg.ops(&["prod", "prod.out", "prod.dim_int", "prod.int_out"], prod)
        .complex();
    reg.ops(&["amax", "amax.out", "amin", "amin.out"], amax_amin);
    reg.ops(
        &["max", "max.unary_out", "min", "min.unary_out"],
        max_min_all,
    );
    reg.ops(
        &["max.dim", "max.dim_max", "min.dim", "min.dim_min"],
        max_min_dim,
    );
    reg.ops(
        &["argmax", "argmax.out", "argmin", "argmin.out"],
        argmax_argmin,
    );
    reg.ops(
        &[
            "var.correction",
            "var.correction_out",
            "std.correction",
            "std.correction_out",
            "var_mean.correction",
            "var_mean.correction_out",
            "std_mean.correction",
            "std_mean.correction_out",
        ],
        var_std,
    )
    .complex();
    // A primitive some of torch's decompositions (group norm) produce in graphs.
    reg.ops(&["prims::var"], var_std).graph_only();
    reg.ops(&["logsumexp", "logsumexp.out"], logsumexp)
        .complex();
    reg.ops(
        &[
            "cumsum",
            "cumsum_",
            "cumsum.out",
            "cumprod",
            "cumprod_",
            "cumprod.out",
        ],
        cumulative,
    )
    .complex();
    reg.ops(
        &[
            "all",
            "all.dim",
            "all.dims",
            "all.out",
            "all.dims_out",
            "all.all_out",
            "any",
            "any.dim",
            "any.dims",
            "any.out",
            "any.dims_out",
            "any.all_out",
        ],
        all_any,
    )
    .complex();
}
