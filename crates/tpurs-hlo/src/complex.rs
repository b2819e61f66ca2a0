//! Complex numbers: assembling and taking apart complex tensors, and the Fourier transform.

use crate::builder::{i64_array, Builder, Value};
use crate::types::TensorType;
use crate::{invalid, Result};

/// Which transform `stablehlo.fft` computes over the trailing `fft_length` dimensions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FftKind {
    /// Complex to complex, forward.
    Fft,
    /// Complex to complex, inverse (scaled by `1/n`).
    Ifft,
    /// Real to complex, forward; the last dimension keeps `n/2 + 1` frequencies.
    Rfft,
    /// Complex (one-sided) to real, inverse (scaled by `1/n`).
    Irfft,
}

impl Builder {
    /// The complex tensor `re + i im` (parts of one real type and shape). Half-precision
    /// parts give complex32, assembled in f32.
    pub fn complex(&mut self, re: &Value, im: &Value) -> Result<Value> {
        if re.ty != im.ty || !re.dtype().is_float() {
            return invalid(
                "stablehlo.complex",
                format!("parts must share one float type: {} vs {}", re.ty, im.ty),
            );
        }
        let dtype = re.dtype().to_complex();
        let computed = dtype.computed_as();
        let (re, im) = if computed == dtype {
            (re.clone(), im.clone())
        } else {
            let part = computed.real_part();
            (self.convert(re, part), self.convert(im, part))
        };
        let z = self.emit1(
            "stablehlo.complex",
            &[&re, &im],
            "",
            re.ty.with_dtype(computed),
        );
        Ok(z.spelled_as(dtype)
            .expect("complex32 is spelled as complex64"))
    }

    /// The real part of a complex tensor.
    pub fn real(&mut self, x: &Value) -> Value {
        self.part_op("stablehlo.real", x)
    }

    /// `|x|` of a complex tensor, in its parts' real type.
    pub fn magnitude(&mut self, x: &Value) -> Value {
        self.part_op("stablehlo.abs", x)
    }

    /// The imaginary part of a complex tensor.
    pub fn imag(&mut self, x: &Value) -> Value {
        self.part_op("stablehlo.imag", x)
    }

    /// A complex -> real op, computed in the type `x` is computed in and converted to the
    /// type of its parts.
    fn part_op(&mut self, op: &str, x: &Value) -> Value {
        let computed = x.dtype().computed_as().real_part();
        let y = self.emit1(op, &[x], "", x.ty.with_dtype(computed));
        self.convert(&y, x.dtype().real_part())
    }

    /// `x` (complex32) with both parts rounded to half precision, as a stored complex32
    /// holds them.
    pub fn round_complex32(&mut self, x: &Value) -> Value {
        let re = self.real(x);
        let im = self.imag(x);
        self.complex(&re, &im)
            .expect("the parts of one value share their type")
    }

    /// The transform `kind` over the trailing `lengths.len()` (1 to 3) dimensions; `lengths`
    /// are the signal lengths (for `Irfft`, the real output's).
    pub fn fft(&mut self, x: &Value, kind: FftKind, lengths: &[i64]) -> Result<Value> {
        let rank = x.rank();
        if lengths.is_empty() || lengths.len() > 3 || lengths.len() > rank {
            return invalid(
                "stablehlo.fft",
                format!("{} dims of {}", lengths.len(), x.ty),
            );
        }
        let last = rank - 1;
        let mut shape = x.shape().to_vec();
        let dtype = match kind {
            FftKind::Fft | FftKind::Ifft => x.dtype(),
            FftKind::Rfft => {
                shape[last] = lengths[lengths.len() - 1] / 2 + 1;
                x.dtype().to_complex()
            }
            FftKind::Irfft => {
                shape[last] = lengths[lengths.len() - 1];
                x.dtype().real_part()
            }
        };
        let name = match kind {
            FftKind::Fft => "FFT",
            FftKind::Ifft => "IFFT",
            FftKind::Rfft => "RFFT",
            FftKind::Irfft => "IRFFT",
        };
        let attrs = format!(
            "fft_type = #stablehlo<fft_type {name}>, fft_length = {}",
            i64_array(lengths)
        );
        Ok(self.emit1("stablehlo.fft", &[x], &attrs, TensorType::new(dtype, shape)))
    }
}
