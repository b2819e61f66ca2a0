//! Softmax and log-softmax (`_softmax`, `_log_softmax`) and their backwards, shifted by
//! the row max for stability and computed in the opmath type; the running log-sum-exp
//! (`_logcumsumexp`) as a scan of stable pairwise log-add-exps.

use tpurs_hlo::{Builder, CompareDir, DType, Literal, TensorType, Value};

use super::combine::add_c;
use super::complex_math::logaddexp_of;
use super::reduce::{expand, extreme, one_dim, reduce, scan};
use super::{one, try_while, wrap_dim};
use crate::ctx::{Ctx, Out};
use crate::dtype::{opmath, torch_name};
use crate::error::{Error, Result};
use crate::table::Registry;

/// The compute and result types of `_softmax` / `_log_softmax` (`half_to_float` gives f32).
fn softmax_types(ctx: &Ctx) -> Result<(DType, DType)> {
    let d = ctx.ty(0)?.dtype;
    if !d.is_float() {
        let base = ctx.name.split('.').next().unwrap_or("");
        let ty = ctx.ty(0)?;
        let last = ty.rank() <= 1 || wrap_dim(ctx.int(1)?, ty.rank())? + 1 == ty.rank();
        let kernel = format!(
            "{}softmax_{}kernel_impl",
            if base.contains("log") { "log_" } else { "" },
            if last { "lastdim_" } else { "" }
        );
        return Err(Error::NotImplemented(format!(
            "\"{kernel}\" not implemented for '{}'",
            torch_name(d)
        )));
    }
    let out = if ctx.bool_or(2, false)? {
        DType::F32
    } else {
        d
    };
    Ok((opmath(d), out))
}

/// `_softmax` / `_log_softmax` and `out=`: shifted by the max along `dim` for stability.
fn softmax(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let is_log = ctx.name.starts_with("_log");
    let (acc, out) = softmax_types(ctx)?;
    let ty = ctx.ty(0)?;
    let dims = one_dim(ctx.int(1)?, ty.rank())?;
    let x = ctx.tensor(0)?;
    let b = &mut ctx.b;
    let x = b.convert(&x, acc);
    let m = extreme(b, &x, &dims, true, true)?;
    let m = expand(b, &m, &ty.shape)?;
    let sh = b.sub(&x, &m)?;
    let e = b.exp(&sh);
    let s = reduce(b, &e, &dims, Literal::Int(0), add_c, true)?;
    let s = expand(b, &s, &ty.shape)?;
    let r = if is_log {
        let l = b.log(&s);
        b.sub(&sh, &l)?
    } else {
        b.div(&e, &s)?
    };
    one(b.convert(&r, out))
}

/// `_softmax_backward_data` / `_log_softmax_backward_data` and `out=`:
/// `y * (g - sum(g * y))` and `g - exp(y) * sum(g)` along `dim`, as `input_dtype`.
fn softmax_backward(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let is_log = ctx.name.starts_with("_log");
    let ty = ctx.ty(1)?;
    let dims = one_dim(ctx.int(2)?, ty.rank())?;
    let Some(in_dtype) = ctx.opt_dtype(3)? else {
        return Err(Error::Type(format!(
            "{}: input_dtype is required",
            ctx.name
        )));
    };
    let acc = opmath(ty.dtype);
    let g = ctx.tensor(0)?;
    let y = ctx.tensor(1)?;
    let b = &mut ctx.b;
    let g = b.convert(&g, acc);
    let y = b.convert(&y, acc);
    let r = if is_log {
        let s = reduce(b, &g, &dims, Literal::Int(0), add_c, true)?;
        let s = expand(b, &s, &ty.shape)?;
        let e = b.exp(&y);
        let es = b.mul(&e, &s)?;
        b.sub(&g, &es)?
    } else {
        let gy = b.mul(&g, &y)?;
        let s = reduce(b, &gy, &dims, Literal::Int(0), add_c, true)?;
        let s = expand(b, &s, &ty.shape)?;
        let d = b.sub(&g, &s)?;
        b.mul(&y, &d)?
    };
    one(b.convert(&r, in_dtype))
}

/// `log(e^x + e^y)` as a scan body: the larger plus `log1p(e^-|x - y|)`, or the larger
/// itself where it is infinite (two -inf stay -inf, +inf wins).
fn logaddexp_c(b: &mut Builder, x: &Value, y: &Value) -> Value {
    let same = "scan operands share a type";
    let m = b.max(x, y).expect(same);
    let d = b.sub(x, y).expect(same);
    let ad = b.abs(&d);
    let nd = b.neg(&ad);
    let e = b.exp(&nd);
    let l = b.log1p(&e);
    let r = b.add(&m, &l).expect(same);
    let inf = b.full_like(&m, Literal::Float(f64::INFINITY));
    let am = b.abs(&m);
    let infinite = b.compare(CompareDir::Eq, &am, &inf).expect(same);
    b.select(&infinite, &m, &r).expect(same)
}

/// A running log-sum-exp along `dim` of complex `x`, one element per loop step in CPU's
/// order (`acc = logaddexp(x[i], acc)` from -inf): a complex log's imaginary part depends
/// on the order of the sums (by multiples of 2 pi), so the real case's log-step scan would
/// not give CPU's values.
fn complex_logcumsumexp(b: &mut Builder, x: &Value, dim: usize) -> Result<Value> {
    let mut step_shape = x.shape().to_vec();
    step_shape[dim] = 1;
    let step_ty = TensorType::new(x.dtype(), step_shape.clone());
    let acc = b.splat(Literal::Float(f64::NEG_INFINITY), &step_ty);
    let out = b.full_like(x, Literal::Float(0.0));
    let i = b.constant(Literal::Int(0), DType::I64);
    let n = x.shape()[dim];
    let out = try_while(
        b,
        &[&i, &acc, &out],
        |b, s| {
            let n = b.constant(Literal::Int(n), DType::I64);
            Ok(b.compare(CompareDir::Lt, &s[0], &n)?)
        },
        |b, s| {
            let zero = b.constant(Literal::Int(0), DType::I64);
            let starts: Vec<Value> = (0..x.rank())
                .map(|d| if d == dim { s[0].clone() } else { zero.clone() })
                .collect();
            let item = b.dynamic_slice(x, &starts, &step_shape);
            let acc = logaddexp_of(b, &item, &s[1])?;
            let out = b.dynamic_update_slice(&s[2], &acc, &starts);
            let one = b.constant(Literal::Int(1), DType::I64);
            Ok(vec![b.add(&s[0], &one)?, acc, out])
        },
    )?;
    Ok(out[2].clone())
}

/// `_logcumsumexp(self, dim)`: a running log-sum-exp, stable for any spread of values.
fn logcumsumexp(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let ty = ctx.ty(0)?;
    let x = ctx.tensor(0)?;
    if ty.rank() == 0 {
        return one(x);
    }
    let dim = wrap_dim(ctx.int(1)?, ty.rank())?;
    let b = &mut ctx.b;
    let wide = b.convert(&x, opmath(ty.dtype));
    let y = if ty.dtype.is_complex() {
        complex_logcumsumexp(b, &wide, dim)?
    } else {
        scan(
            b,
            &wide,
            dim,
            Literal::Float(f64::NEG_INFINITY),
            logaddexp_c,
        )?
    };
    one(b.convert(&y, ty.dtype))
}

pub(crate) fn register(reg: &mut Registry) {
    reg.ops(&["_logcumsumexp", "_logcumsumexp.out"], logcumsumexp)
        .complex();
    reg.ops(
        &[
            "_softmax",
            "_softmax.out",
            "_log_softmax",
            "_log_softmax.out",
        ],
        softmax,
    );
    reg.ops(
        &[
            "_softmax_backward_data",
            "_softmax_backward_data.out",
            "_log_softmax_backward_data",
            "_log_softmax_backward_data.out",
        ],
        softmax_backward,
    );
}
