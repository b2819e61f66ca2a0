//! Element types, tensor types and scalar literals as StableHLO spells them.

use std::fmt;

/// An element type of a StableHLO tensor.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DType {
    /// `i1`
    Bool,
    /// `ui8`
    U8,
    /// `i8`
    I8,
    /// `i16`
    I16,
    /// `i32`
    I32,
    /// `i64`
    I64,
    /// `ui16`
    U16,
    /// `ui32`
    U32,
    /// `ui64`
    U64,
    /// `f16`
    F16,
    /// `bf16`
    BF16,
    /// `f32`
    F32,
    /// `f64`
    F64,
    /// `f8E5M2`: 5 exponent and 2 mantissa bits, with infinities.
    F8E5M2,
    /// `f8E4M3FN`: 4 exponent and 3 mantissa bits, finite (NaN, no infinities).
    F8E4M3FN,
    /// `f8E5M2FNUZ`: finite, one NaN, no negative zero.
    F8E5M2FNUZ,
    /// `f8E4M3FNUZ`: finite, one NaN, no negative zero.
    F8E4M3FNUZ,
    /// `complex<f16>` as torch stores it (half-precision parts), computed as `complex<f32>`:
    /// StableHLO has no half-precision complex type, so a value of this type is a
    /// `complex<f32>` whose parts hold half-precision numbers where it is stored.
    C32,
    /// `complex<f32>`
    C64,
    /// `complex<f64>`
    C128,
}

impl DType {
    /// The MLIR spelling of the element type.
    pub fn mlir(self) -> &'static str {
        match self {
            DType::Bool => "i1",
            DType::U8 => "ui8",
            DType::I8 => "i8",
            DType::I16 => "i16",
            DType::I32 => "i32",
            DType::I64 => "i64",
            DType::U16 => "ui16",
            DType::U32 => "ui32",
            DType::U64 => "ui64",
            DType::F16 => "f16",
            DType::BF16 => "bf16",
            DType::F32 => "f32",
            DType::F64 => "f64",
            DType::F8E5M2 => "f8E5M2",
            DType::F8E4M3FN => "f8E4M3FN",
            DType::F8E5M2FNUZ => "f8E5M2FNUZ",
            DType::F8E4M3FNUZ => "f8E4M3FNUZ",
            DType::C32 | DType::C64 => "complex<f32>",
            DType::C128 => "complex<f64>",
        }
    }

    /// True for floating-point types.
    pub fn is_float(self) -> bool {
        matches!(self, DType::F16 | DType::BF16 | DType::F32 | DType::F64) || self.is_float8()
    }

    /// True for the 8-bit float types.
    pub fn is_float8(self) -> bool {
        matches!(
            self,
            DType::F8E5M2 | DType::F8E4M3FN | DType::F8E5M2FNUZ | DType::F8E4M3FNUZ
        )
    }

    /// True for the complex types.
    pub fn is_complex(self) -> bool {
        matches!(self, DType::C32 | DType::C64 | DType::C128)
    }

    /// The real type of a complex type's parts (the type itself for real types).
    pub fn real_part(self) -> DType {
        match self {
            DType::C32 => DType::F16,
            DType::C64 => DType::F32,
            DType::C128 => DType::F64,
            d => d,
        }
    }

    /// The complex type whose parts are `self` (f16 gives complex32, the other types
    /// f32 and narrower complex64).
    pub fn to_complex(self) -> DType {
        match self {
            DType::F64 | DType::C128 => DType::C128,
            DType::F16 | DType::C32 => DType::C32,
            _ => DType::C64,
        }
    }

    /// The type a value of this type is computed in: complex64 for complex32, itself
    /// otherwise.
    pub fn computed_as(self) -> DType {
        match self {
            DType::C32 => DType::C64,
            d => d,
        }
    }

    /// True for signed and unsigned integer types (not bool).
    pub fn is_int(self) -> bool {
        !self.is_float() && !self.is_complex() && self != DType::Bool
    }

    /// True for unsigned integer types.
    pub fn is_unsigned(self) -> bool {
        matches!(self, DType::U8 | DType::U16 | DType::U32 | DType::U64)
    }

    /// Size of one element in bytes (bool is stored as one byte).
    pub fn byte_size(self) -> usize {
        match self {
            DType::Bool | DType::U8 | DType::I8 => 1,
            DType::F8E5M2 | DType::F8E4M3FN | DType::F8E5M2FNUZ | DType::F8E4M3FNUZ => 1,
            DType::I16 | DType::U16 | DType::F16 | DType::BF16 => 2,
            DType::I32 | DType::U32 | DType::F32 | DType::C32 => 4,
            DType::I64 | DType::U64 | DType::F64 | DType::C64 => 8,
            DType::C128 => 16,
        }
    }

    /// The `compare_type` StableHLO uses for comparisons of this type.
    pub(crate) fn compare_type(self) -> &'static str {
        if self.is_float() || self.is_complex() {
            "FLOAT"
        } else if self.is_unsigned() || self == DType::Bool {
            "UNSIGNED"
        } else {
            "SIGNED"
        }
    }
}

/// A ranked tensor type: element type and static shape.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TensorType {
    /// Element type.
    pub dtype: DType,
    /// Dimension sizes; empty for a 0-d tensor.
    pub shape: Vec<i64>,
}

impl TensorType {
    /// A tensor type of the given element type and shape.
    pub fn new(dtype: DType, shape: impl Into<Vec<i64>>) -> Self {
        TensorType {
            dtype,
            shape: shape.into(),
        }
    }

    /// A 0-d tensor type.
    pub fn scalar(dtype: DType) -> Self {
        TensorType {
            dtype,
            shape: vec![],
        }
    }

    /// Number of dimensions.
    pub fn rank(&self) -> usize {
        self.shape.len()
    }

    /// Number of elements.
    pub fn numel(&self) -> i64 {
        self.shape.iter().product()
    }

    /// The same shape with another element type.
    pub fn with_dtype(&self, dtype: DType) -> Self {
        TensorType {
            dtype,
            shape: self.shape.clone(),
        }
    }
}

impl fmt::Display for TensorType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("tensor<")?;
        for d in &self.shape {
            write!(f, "{d}x")?;
        }
        write!(f, "{}>", self.dtype.mlir())
    }
}

/// A scalar value to be written as a constant.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Literal {
    /// A boolean.
    Bool(bool),
    /// An integer (converted to the constant's type).
    Int(i64),
    /// An unsigned integer past `i64`'s range (a uint64 number), converted the same way.
    UInt(u64),
    /// A float (converted to the constant's type).
    Float(f64),
    /// A complex number: real and imaginary parts (a real type takes the real part).
    Complex(f64, f64),
}

impl Literal {
    /// The value as f64 (a complex number's real part).
    pub fn as_f64(self) -> f64 {
        match self {
            Literal::Bool(b) => b as i64 as f64,
            Literal::Int(i) => i as f64,
            Literal::UInt(u) => u as f64,
            Literal::Float(x) | Literal::Complex(x, _) => x,
        }
    }

    /// The imaginary part (0 for real values).
    pub fn imag(self) -> f64 {
        match self {
            Literal::Complex(_, y) => y,
            _ => 0.0,
        }
    }

    /// The MLIR text of this value as an element of `dtype` (floats in exact hex form).
    pub fn mlir(self, dtype: DType) -> String {
        match dtype {
            DType::Bool => match self {
                Literal::Bool(b) => b.to_string(),
                other => (other.as_f64() != 0.0).to_string(),
            },
            DType::F32 => format!("0x{:08X}", (self.as_f64() as f32).to_bits()),
            DType::F64 => format!("0x{:016X}", self.as_f64().to_bits()),
            DType::F16 => format!("0x{:04X}", half::f16::from_f64(self.as_f64()).to_bits()),
            DType::BF16 => format!("0x{:04X}", half::bf16::from_f64(self.as_f64()).to_bits()),
            d if d.is_float8() => format!("0x{:02X}", crate::float8_bits(self.as_f64(), d)),
            // A real value as a complex element has imaginary part zero. Complex32 parts are
            // rounded to half precision, then spelled as f32.
            DType::C32 => {
                let half = |x: f64| Literal::Float(half::f16::from_f64(x).to_f64());
                let (re, im) = (half(self.as_f64()), half(self.imag()));
                format!("({}, {})", re.mlir(DType::F32), im.mlir(DType::F32))
            }
            DType::C64 | DType::C128 => {
                let part = dtype.real_part();
                let im = Literal::Float(self.imag()).mlir(part);
                format!("({}, {im})", self.mlir(part))
            }
            _ => {
                let v = match self {
                    Literal::Bool(b) => b as i64,
                    Literal::Int(i) => i,
                    // The bits, which wrap_int reads back as the unsigned value.
                    Literal::UInt(u) => u as i64,
                    Literal::Float(x) | Literal::Complex(x, _) => x as i64,
                };
                wrap_int(v, dtype).to_string()
            }
        }
    }
}

/// Wraps an integer into the range of `dtype` the way a C cast does.
fn wrap_int(v: i64, dtype: DType) -> i128 {
    match dtype {
        DType::U8 => v as u8 as i128,
        DType::I8 => v as i8 as i128,
        DType::I16 => v as i16 as i128,
        DType::U16 => v as u16 as i128,
        DType::I32 => v as i32 as i128,
        DType::U32 => v as u32 as i128,
        DType::U64 => v as u64 as i128,
        _ => v as i128,
    }
}
