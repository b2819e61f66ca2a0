//! Reduction bodies (`Combine`: the function a reduce or scan applies to two 0-d values)
//! and the identities of `max` and `min`, shared by reductions, scans, pooling and scatters.

use tpurs_hlo::{Builder, CompareDir, DType, Literal, Value};

use crate::error::Result;

/// A reduction's combining function on two 0-d values of one type.
pub(crate) type Combine = fn(&mut Builder, &Value, &Value) -> Value;

/// `x + y` as a reduction body.
pub(crate) fn add_c(b: &mut Builder, x: &Value, y: &Value) -> Value {
    b.add(x, y).expect("reduction operands share a type")
}

/// `x * y` as a reduction body.
pub(crate) fn mul_c(b: &mut Builder, x: &Value, y: &Value) -> Value {
    b.mul(x, y).expect("reduction operands share a type")
}

/// `max(x, y)` as a reduction body; NaN propagates (XLA CPU's reduce drops it otherwise).
pub(crate) fn max_c(b: &mut Builder, x: &Value, y: &Value) -> Value {
    let m = b.max(x, y).expect("reduction operands share a type");
    nan_or(b, x, y, m)
}

/// `min(x, y)` as a reduction body; NaN propagates.
pub(crate) fn min_c(b: &mut Builder, x: &Value, y: &Value) -> Value {
    let m = b.min(x, y).expect("reduction operands share a type");
    nan_or(b, x, y, m)
}

/// `x + y` (NaN) where either float operand is NaN, else `m`.
fn nan_or(b: &mut Builder, x: &Value, y: &Value, m: Value) -> Value {
    if !x.dtype().is_float() {
        return m;
    }
    let s = b.add(x, y).expect("same type");
    let x_num = b.compare(CompareDir::Eq, x, x).expect("same type");
    let y_num = b.compare(CompareDir::Eq, y, y).expect("same type");
    let both = b.and(&x_num, &y_num).expect("same type");
    b.select(&both, &m, &s).expect("same type")
}

/// Elementwise `maximum` (`is_max`) or `minimum` as CPU computes it: `x` where `x` is NaN or
/// beyond `y`, else `y`. A NaN in either operand propagates (XLA's own max keeps `x` when `y`
/// is NaN) and `maximum(0.0, -0.0)` is `-0.0`, as on the CPU.
pub(crate) fn extremum(b: &mut Builder, x: &Value, y: &Value, is_max: bool) -> Result<Value> {
    if !x.dtype().is_float() {
        return Ok(if is_max { b.max(x, y)? } else { b.min(x, y)? });
    }
    let dir = if is_max {
        CompareDir::Gt
    } else {
        CompareDir::Lt
    };
    let beyond = b.compare(dir, x, y)?;
    let x_nan = b.compare(CompareDir::Ne, x, x)?;
    let keep_x = b.or(&beyond, &x_nan)?;
    Ok(b.select(&keep_x, x, y)?)
}

/// `x && y` as a reduction body.
pub(crate) fn and_c(b: &mut Builder, x: &Value, y: &Value) -> Value {
    b.and(x, y).expect("reduction operands share a type")
}

/// `x || y` as a reduction body.
pub(crate) fn or_c(b: &mut Builder, x: &Value, y: &Value) -> Value {
    b.or(x, y).expect("reduction operands share a type")
}

/// `x ^ y` as a reduction body.
pub(crate) fn xor_c(b: &mut Builder, x: &Value, y: &Value) -> Value {
    b.xor(x, y).expect("reduction operands share a type")
}

/// The smallest value of `d` (the identity of `max`).
pub(crate) fn lowest(d: DType) -> Literal {
    match d {
        DType::Bool => Literal::Bool(false),
        DType::I8 => Literal::Int(i8::MIN as i64),
        DType::I16 => Literal::Int(i16::MIN as i64),
        DType::I32 => Literal::Int(i32::MIN as i64),
        DType::I64 => Literal::Int(i64::MIN),
        d if d.is_float() => Literal::Float(f64::NEG_INFINITY),
        _ => Literal::Int(0),
    }
}

/// The largest value of `d` (the identity of `min`).
pub(crate) fn highest(d: DType) -> Literal {
    match d {
        DType::Bool => Literal::Bool(true),
        DType::I8 => Literal::Int(i8::MAX as i64),
        DType::I16 => Literal::Int(i16::MAX as i64),
        DType::I32 => Literal::Int(i32::MAX as i64),
        DType::I64 => Literal::Int(i64::MAX),
        DType::U8 => Literal::Int(u8::MAX as i64),
        DType::U16 => Literal::Int(u16::MAX as i64),
        DType::U32 => Literal::Int(u32::MAX as i64),
        DType::U64 => Literal::Int(-1),
        _ => Literal::Float(f64::INFINITY),
    }
}
