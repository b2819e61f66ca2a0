//! Encoding of a number as one of the 8-bit float types, rounded to nearest even as torch's
//! casts round. Past the largest finite value, torch's casts give infinity for e5m2, the
//! largest finite value for e4m3fn (they saturate) and NaN for the "fnuz" types.

use crate::types::DType;

/// Layout of an 8-bit float type.
struct Format {
    mantissa_bits: i32,
    bias: i32,
    /// The largest finite value.
    max: f64,
    /// What an overflow encodes to (before the sign).
    overflow: u8,
    nan: u8,
    /// "uz" types have no negative zero (and one NaN, 0x80).
    unsigned_zero: bool,
}

fn format(dtype: DType) -> Format {
    match dtype {
        DType::F8E5M2 => Format {
            mantissa_bits: 2,
            bias: 15,
            max: 57344.0,
            overflow: 0x7C,
            nan: 0x7F,
            unsigned_zero: false,
        },
        DType::F8E4M3FN => Format {
            mantissa_bits: 3,
            bias: 7,
            max: 448.0,
            overflow: 0x7E,
            nan: 0x7F,
            unsigned_zero: false,
        },
        DType::F8E5M2FNUZ => Format {
            mantissa_bits: 2,
            bias: 16,
            max: 57344.0,
            overflow: 0x80,
            nan: 0x80,
            unsigned_zero: true,
        },
        DType::F8E4M3FNUZ => Format {
            mantissa_bits: 3,
            bias: 8,
            max: 240.0,
            overflow: 0x80,
            nan: 0x80,
            unsigned_zero: true,
        },
        other => panic!("{other:?} is not an 8-bit float type"),
    }
}

/// The bits of `x` as an element of the 8-bit float type `dtype`.
pub fn float8_bits(x: f64, dtype: DType) -> u8 {
    let f = format(dtype);
    if x.is_nan() {
        return f.nan;
    }
    let sign = if x.is_sign_negative() { 0x80 } else { 0 };
    let a = x.abs();
    let m = f.mantissa_bits;
    // The spacing of representable values around `a`: fixed below the smallest normal.
    let exponent = if a == 0.0 || a.is_infinite() {
        1 - f.bias
    } else {
        (a.log2().floor() as i32).max(1 - f.bias)
    };
    let quantum = 2f64.powi(exponent - m);
    let q = (a / quantum).round_ties_even();
    let rounded = q * quantum;
    if rounded > f.max {
        return f.overflow | sign;
    }
    if rounded == 0.0 {
        return if f.unsigned_zero { 0 } else { sign };
    }
    // Subnormals: exponent field 0 and q below 2^m; a carry into 2^m is the smallest normal.
    let bits = if q < 2f64.powi(m) {
        q as u8
    } else {
        let (e, q) = if q >= 2f64.powi(m + 1) {
            (exponent + 1, q / 2.0)
        } else {
            (exponent, q)
        };
        (((e + f.bias) as u8) << m) | (q as u8 - (1 << m))
    };
    sign | bits
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodes_as_torch_does() {
        // (value, e5m2, e4m3fn, e5m2fnuz, e4m3fnuz), bits from torch's own conversions.
        let cases: [(f64, [u8; 4]); 17] = [
            (0.0, [0x00, 0x00, 0x00, 0x00]),
            (-0.0, [0x80, 0x80, 0x00, 0x00]),
            (1.0, [0x3C, 0x38, 0x40, 0x40]),
            (-2.5, [0xC1, 0xC2, 0xC5, 0xCA]),
            (100.0, [0x56, 0x6C, 0x5A, 0x74]),
            (448.0, [0x5F, 0x7E, 0x63, 0x80]),
            (464.0, [0x5F, 0x7E, 0x63, 0x80]),
            (480.0, [0x60, 0x7E, 0x64, 0x80]),
            (240.0, [0x5C, 0x77, 0x60, 0x7F]),
            (250.0, [0x5C, 0x78, 0x60, 0x80]),
            (60000.0, [0x7B, 0x7E, 0x7F, 0x80]),
            (61440.0, [0x7C, 0x7E, 0x80, 0x80]),
            (f64::NEG_INFINITY, [0xFC, 0xFE, 0x80, 0x80]),
            (f64::NAN, [0x7F, 0x7F, 0x80, 0x80]),
            (1e-3, [0x14, 0x01, 0x18, 0x01]),
            (0.01, [0x21, 0x05, 0x25, 0x0A]),
            (-1e-9, [0x80, 0x80, 0x00, 0x00]),
        ];
        let types = [
            DType::F8E5M2,
            DType::F8E4M3FN,
            DType::F8E5M2FNUZ,
            DType::F8E4M3FNUZ,
        ];
        for (x, bits) in cases {
            for (t, b) in types.iter().zip(bits) {
                assert_eq!(float8_bits(x, *t), b, "{x} as {t:?}");
            }
        }
    }
}
