//! Division: true division (`div`, complex values as the CPU divides them), division
//! rounded toward zero or down (`div` with a rounding mode, `floor_divide`), `remainder`
//! (the divisor's sign) and `fmod` (the dividend's), with CPU's rounding of half-precision
//! operands next to host numbers.

use tpurs_hlo::{Builder, CompareDir, DType, Literal, Value};

use super::complex::div_of;
use super::integer::dividing;
use super::{common_dtype, float_dtype, full, one, operands};
use crate::ctx::{Arg, Ctx, Out};
use crate::error::Result;
use crate::table::Registry;

/// The dtype `tensor op number` computes in, for `mul` and `div` (all rounding modes): CPU
/// PyTorch multiplies and divides a half-precision tensor by a host number (a Python number
/// or a 0-d CPU tensor) in float32, the number rounded to float32 only. (`add`, `sub` and
/// `remainder` round it to the tensor's dtype first, as the ops here do.)
pub(super) fn number_opmath(ctx: &Ctx, dtype: DType) -> DType {
    let half = matches!(dtype, DType::F16 | DType::BF16);
    if half && matches!(ctx.arg(1), crate::Arg::Scalar(_)) {
        DType::F32
    } else {
        dtype
    }
}

/// Binary op computed in a float type (true division, atan2).
pub(super) fn float_binary(
    ctx: &mut Ctx,
    f: fn(&mut Builder, &Value, &Value) -> Result<Value>,
) -> Result<Vec<Out>> {
    let dtype = float_dtype(common_dtype(ctx, &[0, 1])?, ctx.default_float());
    let wide = number_opmath(ctx, dtype);
    let v = operands(ctx, &[0, 1], wide)?;
    let r = f(&mut ctx.b, &v[0], &v[1])?;
    one(ctx.b.convert(&r, dtype))
}

/// Rounds toward zero.
pub(crate) fn trunc_of(b: &mut Builder, x: &Value) -> Result<Value> {
    let s = b.sign(x);
    let a = b.abs(x);
    let f = b.floor(&a);
    Ok(b.mul(&s, &f)?)
}

/// Float floor division as CPU PyTorch computes it (in opmath, like Python's `//`): from
/// `fmod`, so that a quotient rounding up to an integer does not floor one too high.
fn float_floor_div(b: &mut Builder, x: &Value, y: &Value) -> Result<Value> {
    let dtype = x.dtype();
    let wide = crate::dtype::opmath(dtype);
    let (x, y) = (b.convert(x, wide), b.convert(y, wide));
    let zero = full(b, &x, 0.0);
    let one_v = full(b, &x, 1.0);
    let m = b.rem(&x, &y)?;
    let xm = b.sub(&x, &m)?;
    let d = b.div(&xm, &y)?;
    let adjust = remainder_against_divisor(b, &m, &y)?;
    let d1 = b.sub(&d, &one_v)?;
    let d = b.select(&adjust, &d1, &d)?;
    let f = b.floor(&d);
    let frac = b.sub(&d, &f)?;
    let half = full(b, &x, 0.5);
    let up = b.compare(CompareDir::Gt, &frac, &half)?;
    let f1 = b.add(&f, &one_v)?;
    let f = b.select(&up, &f1, &f)?;
    // A zero quotient takes the sign of the true quotient; a zero divisor gives x / 0.
    let q = b.div(&x, &y)?;
    let signed_zero = b.mul(&q, &zero)?;
    let d_zero = b.compare(CompareDir::Eq, &d, &zero)?;
    let f = b.select(&d_zero, &signed_zero, &f)?;
    let y_zero = b.compare(CompareDir::Eq, &y, &zero)?;
    let f = b.select(&y_zero, &q, &f)?;
    Ok(b.convert(&f, dtype))
}

/// Where the truncated remainder `r` is nonzero with a sign other than the divisor `y`'s:
/// there the floored quotient is one less and Python's remainder is `r + y`.
fn remainder_against_divisor(b: &mut Builder, r: &Value, y: &Value) -> Result<Value> {
    let zero = b.full_like(r, Literal::Int(0));
    let nonzero = b.compare(CompareDir::Ne, r, &zero)?;
    let r_neg = b.compare(CompareDir::Lt, r, &zero)?;
    let y_neg = b.compare(CompareDir::Lt, y, &zero)?;
    let differ = b.xor(&r_neg, &y_neg)?;
    Ok(b.and(&nonzero, &differ)?)
}

fn floor_div_of(b: &mut Builder, x: &Value, y: &Value) -> Result<Value> {
    if x.dtype().is_float() {
        return float_floor_div(b, x, y);
    }
    // Integer floor division: truncating quotient, minus one when signs differ and inexact.
    let q = b.div(x, y)?;
    if x.dtype().is_unsigned() {
        return Ok(q);
    }
    let r = b.rem(x, y)?;
    let adjust = remainder_against_divisor(b, &r, y)?;
    let one = b.full_like(x, Literal::Int(1));
    let qm = b.sub(&q, &one)?;
    Ok(b.select(&adjust, &qm, &q)?)
}

/// Division rounded toward zero (`trunc`) or down (`floor`, also `floor_divide`).
fn rounding_div(ctx: &mut Ctx, trunc: bool) -> Result<Vec<Out>> {
    let dtype = common_dtype(ctx, &[0, 1])?;
    let wide = number_opmath(ctx, dtype);
    if wide != dtype {
        // A half tensor over a host number: in float32, as `number_opmath` says.
        let v = operands(ctx, &[0, 1], wide)?;
        let b = &mut ctx.b;
        let r = if trunc {
            let q = b.div(&v[0], &v[1])?;
            trunc_of(b, &q)?
        } else {
            float_floor_div(b, &v[0], &v[1])?
        };
        return one(b.convert(&r, dtype));
    }
    if !trunc {
        return dividing(ctx, floor_div_of);
    }
    dividing(ctx, |b, x, y| {
        let q = b.div(x, y)?;
        if x.dtype().is_float() {
            trunc_of(b, &q)
        } else {
            Ok(q)
        }
    })
}

fn div(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let mode = match ctx.arg(2) {
        Arg::Str(s) => s.clone(),
        _ => String::new(),
    };
    if !mode.is_empty() && common_dtype(ctx, &[0, 1])?.is_complex() {
        // CPU PyTorch refuses rounding modes for complex values; its fallback says so.
        return Err(crate::Error::Uncovered(format!(
            "div with rounding_mode={mode} on complex values"
        )));
    }
    match mode.as_str() {
        "trunc" => rounding_div(ctx, true),
        "floor" => rounding_div(ctx, false),
        _ => float_binary(ctx, div_of),
    }
}

fn remainder_of(b: &mut Builder, x: &Value, y: &Value) -> Result<Value> {
    // Python semantics: the result has the sign of the divisor.
    let r = b.rem(x, y)?;
    if x.dtype().is_unsigned() {
        return Ok(r);
    }
    let adjust = remainder_against_divisor(b, &r, y)?;
    let ry = b.add(&r, y)?;
    Ok(b.select(&adjust, &ry, &r)?)
}

pub(crate) fn register(reg: &mut Registry) {
    reg.ops(
        &[
            "div.Tensor",
            "div_.Tensor",
            "div.out",
            "div.Scalar",
            "div_.Scalar",
            "div.Scalar_out",
            "div.Tensor_mode",
            "div_.Tensor_mode",
            "div.out_mode",
            "div.Scalar_mode",
            "div_.Scalar_mode",
            "div.Scalar_mode_out",
        ],
        div,
    )
    .complex();
    reg.ops(
        &[
            "floor_divide",
            "floor_divide_.Tensor",
            "floor_divide.out",
            "floor_divide.Scalar",
            "floor_divide_.Scalar",
        ],
        |ctx| rounding_div(ctx, false),
    );
    reg.ops(
        &[
            "remainder.Tensor",
            "remainder_.Tensor",
            "remainder.Tensor_out",
            "remainder.Scalar",
            "remainder_.Scalar",
            "remainder.Scalar_out",
        ],
        |ctx| dividing(ctx, remainder_of),
    );
    // `number % tensor`.
    reg.ops(
        &["remainder.Scalar_Tensor", "remainder.Scalar_Tensor_out"],
        |ctx| dividing(ctx, remainder_of),
    );
    reg.ops(
        &[
            "fmod.Tensor",
            "fmod_.Tensor",
            "fmod.Tensor_out",
            "fmod.Scalar",
            "fmod_.Scalar",
            "fmod.Scalar_out",
        ],
        |ctx| dividing(ctx, |b, x, y| Ok(b.rem(x, y)?)),
    );
}
