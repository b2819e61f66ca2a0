//! PyTorch dtypes (c10::ScalarType codes) and PyTorch's type promotion.

use tpurs_hlo::{Builder, CompareDir, DType, Literal, Value};

use crate::{Error, Result};

/// Maps a `c10::ScalarType` code to an element type; `None` for types tpurs does not support.
pub fn from_scalar_type(code: i32) -> Option<DType> {
    Some(match code {
        0 => DType::U8,
        1 => DType::I8,
        2 => DType::I16,
        3 => DType::I32,
        4 => DType::I64,
        5 => DType::F16,
        6 => DType::F32,
        7 => DType::F64,
        8 => DType::C32,
        9 => DType::C64,
        10 => DType::C128,
        11 => DType::Bool,
        15 => DType::BF16,
        23 => DType::F8E5M2,
        24 => DType::F8E4M3FN,
        25 => DType::F8E5M2FNUZ,
        26 => DType::F8E4M3FNUZ,
        27 => DType::U16,
        28 => DType::U32,
        29 => DType::U64,
        _ => return None,
    })
}

/// The `c10::ScalarType` code of an element type.
pub fn to_scalar_type(dtype: DType) -> i32 {
    match dtype {
        DType::U8 => 0,
        DType::I8 => 1,
        DType::I16 => 2,
        DType::I32 => 3,
        DType::I64 => 4,
        DType::F16 => 5,
        DType::F32 => 6,
        DType::F64 => 7,
        DType::C32 => 8,
        DType::C64 => 9,
        DType::C128 => 10,
        DType::Bool => 11,
        DType::BF16 => 15,
        DType::F8E5M2 => 23,
        DType::F8E4M3FN => 24,
        DType::F8E5M2FNUZ => 25,
        DType::F8E4M3FNUZ => 26,
        DType::U16 => 27,
        DType::U32 => 28,
        DType::U64 => 29,
    }
}

/// The type PyTorch computes `dtype` arithmetic in ("opmath"): f32 for the half types,
/// `dtype` itself otherwise. Every rule that accumulates or computes in a wider type asks
/// here.
pub fn opmath(dtype: DType) -> DType {
    match dtype {
        DType::F16 | DType::BF16 => DType::F32,
        d if d.is_float8() => DType::F32,
        d => d,
    }
}

/// PyTorch's name of a dtype as printed in error messages ("Float", "Long", ...).
pub fn torch_name(dtype: DType) -> &'static str {
    match dtype {
        DType::U8 => "Byte",
        DType::I8 => "Char",
        DType::I16 => "Short",
        DType::I32 => "Int",
        DType::I64 => "Long",
        DType::F16 => "Half",
        DType::F32 => "Float",
        DType::F64 => "Double",
        DType::C32 => "ComplexHalf",
        DType::C64 => "ComplexFloat",
        DType::C128 => "ComplexDouble",
        DType::Bool => "Bool",
        DType::BF16 => "BFloat16",
        DType::U16 => "UInt16",
        DType::U32 => "UInt32",
        DType::U64 => "UInt64",
        DType::F8E5M2 => "Float8_e5m2",
        DType::F8E4M3FN => "Float8_e4m3fn",
        DType::F8E5M2FNUZ => "Float8_e5m2fnuz",
        DType::F8E4M3FNUZ => "Float8_e4m3fnuz",
    }
}

/// The C++ type name PyTorch prints for a dtype in some errors (matmul, `uniform_` bounds).
pub fn cpp_name(d: DType) -> &'static str {
    match d {
        DType::F32 => "float",
        DType::F64 => "double",
        DType::BF16 => "c10::BFloat16",
        DType::F16 => "c10::Half",
        DType::I64 => "long int",
        DType::I32 => "int",
        DType::I16 => "short int",
        DType::I8 => "signed char",
        DType::U8 => "unsigned char",
        DType::Bool => "bool",
        DType::U16 => "short unsigned int",
        DType::U32 => "unsigned int",
        DType::U64 => "long unsigned int",
        _ => "unknown",
    }
}

/// The C++ type name in CPU's "value cannot be converted to type T without overflow"
/// (`Scalar::to<T>`, which names fixed-width integers by their typedefs).
pub fn converted_type_name(d: DType) -> &'static str {
    match d {
        DType::I64 => "int64_t",
        DType::I16 => "int16_t",
        DType::I8 => "int8_t",
        DType::U8 => "uint8_t",
        d => cpp_name(d),
    }
}

/// The largest finite value of a float dtype.
pub fn finfo_max(dtype: DType) -> f64 {
    match dtype {
        DType::F16 => 65504.0,
        DType::BF16 => 3.3895313892515355e38,
        DType::F32 => f32::MAX as f64,
        _ => f64::MAX,
    }
}

fn category(d: DType) -> u8 {
    if d == DType::Bool {
        0
    } else if d.is_int() {
        1
    } else if d.is_float() {
        2
    } else {
        3
    }
}

fn int_rank(d: DType) -> u8 {
    match d {
        DType::I8 | DType::U8 => 1,
        DType::I16 | DType::U16 => 2,
        DType::I32 | DType::U32 => 3,
        _ => 4,
    }
}

/// `torch.promote_types(a, b)`.
pub fn promote(a: DType, b: DType) -> DType {
    use DType::*;
    if a == b {
        return a;
    }
    if a.is_complex() || b.is_complex() {
        // The wider of the real parts, made complex (an integer part adds nothing).
        let part = promote(a.real_part(), b.real_part());
        return if part.is_float() {
            part.to_complex()
        } else {
            DType::C64
        };
    }
    match (category(a), category(b)) {
        (0, _) => b,
        (_, 0) => a,
        (1, 2) => b,
        (2, 1) => a,
        (2, 2) => match (a, b) {
            (F16, BF16) | (BF16, F16) => F32,
            _ if a.byte_size() >= b.byte_size() => a,
            _ => b,
        },
        _ => {
            // Two different integer types: unsigned u8 with a signed type widens.
            match (a, b) {
                (U8, I8) | (I8, U8) => I16,
                (U8, s) | (s, U8) if !s.is_unsigned() => s,
                _ if int_rank(a) >= int_rank(b) => a,
                _ => b,
            }
        }
    }
}

/// How an operand takes part in type promotion.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Participation {
    /// A tensor with at least one dimension.
    Dim,
    /// A 0-d tensor.
    ZeroDim,
    /// A Python number (a `Scalar` argument or a wrapped-number tensor).
    Wrapped,
}

/// PyTorch's `result_type` over operands given as (dtype, participation); `default_float`
/// is the dtype a Python float becomes.
pub fn result_type(operands: &[(DType, Participation)], default_float: DType) -> DType {
    let mut states: [Option<DType>; 3] = [None, None, None];
    for &(d, p) in operands {
        let (slot, d) = match p {
            Participation::Dim => (0, d),
            Participation::ZeroDim => (1, d),
            Participation::Wrapped => (
                2,
                if d.is_complex() {
                    default_float.to_complex()
                } else if d.is_float() {
                    default_float
                } else {
                    d
                },
            ),
        };
        states[slot] = Some(states[slot].map_or(d, |s| promote(s, d)));
    }
    let lower = combine(states[1], states[2]);
    combine(states[0], lower).unwrap_or(default_float)
}

fn combine(higher: Option<DType>, lower: Option<DType>) -> Option<DType> {
    match (higher, lower) {
        (None, l) => l,
        (h, None) => h,
        (Some(h), Some(l)) => {
            if h.is_complex() {
                Some(h)
            } else if l.is_complex() {
                // A complex number of lower priority keeps a float tensor's precision.
                Some(if h.is_float() { h.to_complex() } else { l })
            } else if h.is_float() {
                Some(h)
            } else if h == DType::Bool || l.is_float() || category(l) > category(h) {
                Some(promote(h, l))
            } else {
                Some(h)
            }
        }
    }
}

/// `torch.can_cast(from, to)`: no casting to a lower category.
pub fn can_cast(from: DType, to: DType) -> bool {
    category(from) <= category(to)
}

/// Checks that a result of dtype `result` may be written to a tensor of dtype `out`.
pub fn check_can_cast(result: DType, out: DType) -> Result<()> {
    if can_cast(result, out) {
        Ok(())
    } else {
        Err(Error::Runtime(format!(
            "result type {} can't be cast to the desired output type {}",
            torch_name(result),
            torch_name(out)
        )))
    }
}

/// A cast a user asks for (`.to(dtype)`, `copy_`, `_to_copy`). Floats out of the range of
/// int32 or int64, and NaN, become that type's minimum, as CPU PyTorch on x86 gives them
/// (the processor's "integer indefinite"); StableHLO's convert would saturate instead.
/// Other conversions are plain converts.
pub fn cast(b: &mut Builder, x: &Value, dtype: DType) -> Result<Value> {
    if dtype.is_complex() && !x.dtype().is_complex() {
        let re = b.convert(x, dtype.real_part());
        let im = b.full_like(&re, Literal::Float(0.0));
        return Ok(b.complex(&re, &im)?);
    }
    if x.dtype().is_complex() && !dtype.is_complex() {
        if dtype == DType::Bool {
            let zero = b.full_like(x, Literal::Float(0.0));
            return Ok(b.compare(CompareDir::Ne, x, &zero)?);
        }
        // As torch does (with a warning): the imaginary part is dropped.
        let re = b.real(x);
        return cast(b, &re, dtype);
    }
    if dtype.is_float8() && x.dtype() != dtype {
        // torch casts to an 8-bit float through float32 (a double rounds twice there too).
        let wide = cast(b, x, DType::F32)?;
        return Ok(b.convert(&wide, dtype));
    }
    if x.dtype().is_float8() && dtype != DType::F32 && dtype != x.dtype() {
        let wide = b.convert(x, DType::F32);
        return cast(b, &wide, dtype);
    }
    let bound = match dtype {
        DType::I32 => 2f64.powi(31),
        DType::I64 => 2f64.powi(63),
        // CPU PyTorch converts a float to int32 and keeps the low bits (out-of-range values
        // wrap instead of saturating as XLA's convert does).
        DType::I8 | DType::U8 | DType::I16 if x.dtype().is_float() => {
            let i = cast(b, x, DType::I32)?;
            return Ok(b.convert(&i, dtype));
        }
        _ => return Ok(b.convert(x, dtype)),
    };
    if !x.dtype().is_float() {
        return Ok(b.convert(x, dtype));
    }
    // bfloat16 and half hold values past int32's range; compare in float32 at least.
    // Below the range convert gives the minimum already; above it and NaN must give it too.
    let wide = if x.dtype().byte_size() < 4 {
        b.convert(x, DType::F32)
    } else {
        x.clone()
    };
    let hi = b.full_like(&wide, Literal::Float(bound));
    let in_range = b.compare(CompareDir::Lt, &wide, &hi)?;
    let converted = b.convert(&wide, dtype);
    let minimum = if dtype == DType::I32 {
        i32::MIN as i64
    } else {
        i64::MIN
    };
    let indefinite = b.full_like(&converted, Literal::Int(minimum));
    Ok(b.select(&in_range, &converted, &indefinite)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use DType::*;
    use Participation::*;

    #[test]
    fn promote_types_matches_torch() {
        assert_eq!(promote(U8, I8), I16);
        assert_eq!(promote(I32, I64), I64);
        assert_eq!(promote(Bool, U8), U8);
        assert_eq!(promote(F16, BF16), F32);
        assert_eq!(promote(I64, F16), F16);
        assert_eq!(promote(F32, F64), F64);
    }

    #[test]
    fn result_type_matches_torch() {
        // int tensor + python float -> default float
        assert_eq!(result_type(&[(I64, Dim), (F64, Wrapped)], F32), F32);
        // f16 tensor + python float stays f16
        assert_eq!(result_type(&[(F16, Dim), (F64, Wrapped)], F32), F16);
        // f32 tensor + 0-d f64 tensor stays f32
        assert_eq!(result_type(&[(F32, Dim), (F64, ZeroDim)], F32), F32);
        // int tensor + 0-d float tensor -> that float
        assert_eq!(result_type(&[(I32, Dim), (F64, ZeroDim)], F32), F64);
        // Complex: the wider part wins; a lower-priority complex keeps a float's precision.
        assert_eq!(promote(F64, C64), C128);
        assert_eq!(promote(I64, C64), C64);
        assert_eq!(promote(C32, F16), C32);
        assert_eq!(promote(C32, I64), C32);
        assert_eq!(promote(C32, BF16), C64);
        assert_eq!(promote(C32, F32), C64);
        assert_eq!(promote(C32, C128), C128);
        assert_eq!(result_type(&[(F32, Dim), (C128, ZeroDim)], F32), C64);
        assert_eq!(result_type(&[(I64, Dim), (C128, ZeroDim)], F32), C128);
        assert!(!can_cast(C64, F64));
        // u8 tensor + python int stays u8
        assert_eq!(result_type(&[(U8, Dim), (I64, Wrapped)], F32), U8);
        // bool tensor + python int -> int64
        assert_eq!(result_type(&[(Bool, Dim), (I64, Wrapped)], F32), I64);
        // two 0-d tensors promote normally
        assert_eq!(result_type(&[(I32, ZeroDim), (I64, ZeroDim)], F32), I64);
    }
}
