//! Integer-only binary ops: bit shifts and `gcd` / `lcm`, on the promoted integer type.
//! StableHLO's shifts already give what CPU PyTorch gives for shift counts past the width or
//! negative (0, or the sign for an arithmetic right shift).

use tpurs_hlo::{Builder, CompareDir, DType, Literal, Value};

use super::{common_dtype, operands, try_while};
use crate::checks::CheckKind;
use crate::ctx::{Ctx, Out};
use crate::dtype::torch_name;
use crate::error::{Error, Result};
use crate::table::Registry;

/// `f` on the promoted operands of a division (`//`, `%`, `fmod`, rounded `div`): for
/// integers, a zero divisor raises CPU's `ZeroDivisionError` (a `RuntimeError`) at the next
/// host wait, checked on the device.
pub(super) fn dividing(
    ctx: &mut Ctx,
    f: fn(&mut Builder, &Value, &Value) -> Result<Value>,
) -> Result<Vec<Out>> {
    let dtype = common_dtype(ctx, &[0, 1])?;
    let v = operands(ctx, &[0, 1], dtype)?;
    if dtype.is_int() {
        let zero = ctx.b.full_like(&v[1], Literal::Int(0));
        let nonzero = ctx.b.compare(CompareDir::Ne, &v[1], &zero)?;
        ctx.check_all(&nonzero, CheckKind::Runtime, "ZeroDivisionError")?;
    }
    Ok(vec![Some(f(&mut ctx.b, &v[0], &v[1])?)])
}

/// The operands promoted to their common integer type, or CPU's error for other types.
fn int_operands(ctx: &mut Ctx, kernel: &str) -> Result<Vec<Value>> {
    let dtype = common_dtype(ctx, &[0, 1])?;
    if !dtype.is_int() {
        return Err(Error::NotImplemented(format!(
            "\"{kernel}\" not implemented for '{}'",
            torch_name(dtype)
        )));
    }
    operands(ctx, &[0, 1], dtype)
}

fn left_shift(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let v = int_operands(ctx, "lshift_cpu")?;
    Ok(vec![Some(ctx.b.shift_left(&v[0], &v[1])?)])
}

fn right_shift(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let v = int_operands(ctx, "rshift_cpu")?;
    let r = if v[0].dtype().is_unsigned() {
        ctx.b.shift_right_logical(&v[0], &v[1])?
    } else {
        ctx.b.shift_right_arithmetic(&v[0], &v[1])?
    };
    Ok(vec![Some(r)])
}

/// Euclid's algorithm on every element at once, until every remainder is zero.
fn gcd_of(b: &mut Builder, x: &Value, y: &Value) -> Result<Value> {
    let (a, c) = (b.abs(x), b.abs(y));
    let out = try_while(
        b,
        &[&a, &c],
        |b, s| {
            let zero = b.full_like(&s[0], Literal::Int(0));
            let live = b.compare(CompareDir::Ne, &s[0], &zero)?;
            let any = b.convert(&live, DType::I32);
            let zero_i = b.constant(Literal::Int(0), DType::I32);
            let total = b.reduce(&any, &zero_i, &all_dims(&any), |b, p, q| {
                b.max(p, q).expect("same type")
            });
            Ok(b.compare(CompareDir::Ne, &total, &zero_i)?)
        },
        |b, s| {
            let (a, c) = (&s[0], &s[1]);
            let zero = b.full_like(a, Literal::Int(0));
            let one = b.full_like(a, Literal::Int(1));
            let live = b.compare(CompareDir::Ne, a, &zero)?;
            let safe = b.select(&live, a, &one)?;
            let r = b.rem(c, &safe)?;
            Ok(vec![b.select(&live, &r, a)?, b.select(&live, a, c)?])
        },
    )?;
    Ok(out[1].clone())
}

fn all_dims(v: &Value) -> Vec<i64> {
    (0..v.rank() as i64).collect()
}

fn gcd(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let v = int_operands(ctx, "gcd_cpu")?;
    Ok(vec![Some(gcd_of(&mut ctx.b, &v[0], &v[1])?)])
}

/// `|a / gcd * b|`, and 0 where the gcd is 0 (both zero).
fn lcm(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let v = int_operands(ctx, "lcm_cpu")?;
    let b = &mut ctx.b;
    let g = gcd_of(b, &v[0], &v[1])?;
    let zero = b.full_like(&g, Literal::Int(0));
    let one = b.full_like(&g, Literal::Int(1));
    let none = b.compare(CompareDir::Eq, &g, &zero)?;
    let safe = b.select(&none, &one, &g)?;
    let q = b.div(&v[0], &safe)?;
    let l = b.mul(&q, &v[1])?;
    let l = b.abs(&l);
    Ok(vec![Some(b.select(&none, &zero, &l)?)])
}

pub(crate) fn register(reg: &mut Registry) {
    reg.ops(
        &[
            "bitwise_left_shift.Tensor",
            "bitwise_left_shift.Tensor_Scalar",
            "bitwise_left_shift.Scalar_Tensor",
            "bitwise_left_shift.Tensor_out",
            "bitwise_left_shift.Tensor_Scalar_out",
            "bitwise_left_shift.Scalar_Tensor_out",
            "bitwise_left_shift_.Tensor",
            "bitwise_left_shift_.Tensor_Scalar",
            "__lshift__.Tensor",
            "__lshift__.Scalar",
            "__ilshift__.Tensor",
            "__ilshift__.Scalar",
        ],
        left_shift,
    );
    reg.ops(
        &[
            "bitwise_right_shift.Tensor",
            "bitwise_right_shift.Tensor_Scalar",
            "bitwise_right_shift.Scalar_Tensor",
            "bitwise_right_shift.Tensor_out",
            "bitwise_right_shift.Tensor_Scalar_out",
            "bitwise_right_shift.Scalar_Tensor_out",
            "bitwise_right_shift_.Tensor",
            "bitwise_right_shift_.Tensor_Scalar",
            "__rshift__.Tensor",
            "__rshift__.Scalar",
            "__irshift__.Tensor",
            "__irshift__.Scalar",
        ],
        right_shift,
    );
    reg.ops(&["gcd", "gcd.out", "gcd_"], gcd);
    reg.ops(&["lcm", "lcm.out", "lcm_"], lcm);
}
