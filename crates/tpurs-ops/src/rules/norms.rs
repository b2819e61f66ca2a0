//! Vector norms: `linalg_vector_norm` and the `norm` overloads (`ord` baked: inf, -inf, 0,
//! 1, 2 or a general p), also used by `_foreach_norm` and `embedding_renorm_`. Complex
//! values give the norm of their magnitudes; half types accumulate in f32.

use tpurs_hlo::{Builder, CompareDir, DType, Literal, Value};

use super::combine::add_c;
use super::one;
use super::reduce::{extreme, reduce, reduce_dims};
use crate::ctx::{Arg, Ctx, Out};
use crate::dtype::{opmath, torch_name};
use crate::error::{runtime, Error, Result};
use crate::table::Registry;

/// `linalg.vector_norm`'s dtype checks: a float or complex input, and a complex `dtype` for a
/// complex one.
pub(crate) fn check_norm_dtypes(input: DType, dtype: DType) -> Result<()> {
    if !input.is_float() && !input.is_complex() {
        return Err(Error::NotImplemented(format!(
            "linalg.vector_norm: Expected a floating point or complex tensor as input. Got {}",
            torch_name(input)
        )));
    }
    if input.is_complex() && !dtype.is_complex() {
        return runtime(format!(
            "linalg.vector_norm: dtype should be complex for complex inputs, but got {}",
            torch_name(dtype)
        ));
    }
    Ok(())
}

/// `linalg_vector_norm`, the `norm` overloads and their `out=` forms (`ord` baked): inf /
/// -inf / 0 / 1 / 2 / general p. `norm.Scalar` and `norm.ScalarOpt_dtype` reduce every dim.
fn vector_norm(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let ty = ctx.ty(0)?;
    let ord = if ctx.has(1) {
        ctx.scalar_value(1)?.as_f64()
    } else {
        2.0
    };
    let all_dims =
        ctx.name.starts_with("norm.Scalar") && !ctx.overload().starts_with("ScalarOpt_dim");
    let dtype_at = if ctx.overload().starts_with("ScalarOpt_dtype") {
        2
    } else {
        4
    };
    let dtype = match ctx.arg(dtype_at) {
        Arg::Dtype(d) => *d,
        _ => ty.dtype,
    };
    check_norm_dtypes(ty.dtype, dtype)?;
    let (dims, keepdim) = if all_dims {
        (reduce_dims(&[], ty.rank())?, false)
    } else {
        (
            reduce_dims(&ctx.int_list(2)?, ty.rank())?,
            ctx.bool_or(3, false)?,
        )
    };
    if ord.is_infinite() && ty.numel() == 0 {
        return Err(Error::Runtime(format!(
            "linalg.vector_norm cannot compute the {}inf norm on an empty tensor because the operation does not have an identity",
            if ord < 0.0 { "-" } else { "" }
        )));
    }
    let x = ctx.tensor(0)?;
    let x = ctx.b.convert(&x, dtype);
    one(norm_of(&mut ctx.b, &x, ord, &dims, keepdim)?)
}

/// The vector norm of `x` of order `ord` over `dims`, accumulated in opmath; complex values
/// give the norm of their magnitudes, a real result.
pub(crate) fn norm_of(
    b: &mut Builder,
    x: &Value,
    ord: f64,
    dims: &[i64],
    keepdim: bool,
) -> Result<Value> {
    let (a, dtype) = if x.dtype().is_complex() {
        (super::complex::magnitude(b, x)?, x.dtype().real_part())
    } else {
        (x.clone(), x.dtype())
    };
    let acc = opmath(dtype);
    let a = b.convert(&a, acc);
    let a = b.abs(&a);
    let r = if ord.is_infinite() {
        extreme(b, &a, dims, keepdim, ord > 0.0)?
    } else if ord == 0.0 {
        let z = b.full_like(&a, Literal::Int(0));
        let nz = b.compare(CompareDir::Ne, &a, &z)?;
        let nz = b.convert(&nz, acc);
        reduce(b, &nz, dims, Literal::Int(0), add_c, keepdim)?
    } else if ord == 1.0 {
        reduce(b, &a, dims, Literal::Int(0), add_c, keepdim)?
    } else if ord == 2.0 {
        let sq = b.mul(&a, &a)?;
        let s = reduce(b, &sq, dims, Literal::Int(0), add_c, keepdim)?;
        b.sqrt(&s)
    } else {
        let p = b.full_like(&a, Literal::Float(ord));
        let ap = b.pow(&a, &p)?;
        let s = reduce(b, &ap, dims, Literal::Int(0), add_c, keepdim)?;
        let ip = b.full_like(&s, Literal::Float(1.0 / ord));
        b.pow(&s, &ip)?
    };
    Ok(b.convert(&r, dtype))
}

/// Registers the family.
pub(crate) fn register(reg: &mut Registry) {
    reg.ops(
        &[
            "linalg_vector_norm",
            "linalg_vector_norm.out",
            "norm.Scalar",
            "norm.Scalar_out",
            "norm.ScalarOpt_dim",
            "norm.out",
            "norm.ScalarOpt_dim_dtype",
            "norm.dtype_out",
            "norm.ScalarOpt_dtype",
            "norm.ScalarOpt_dtype_out",
        ],
        vector_norm,
    )
    .bake_scalars()
    .complex();
}
