//! Host numbers as program parameters: `Scalar` and `float` arguments, storage offsets, and
//! their device buffers (cached by value).

use std::sync::Arc;

use tpurs_hlo::{DType, Literal};
use tpurs_pjrt::Buffer;

use crate::abi::{CArg, ScalarRef};
use crate::error::{invalid, ErrorKind, Result};
use crate::launch::{dtype_of, source_arg};
use crate::runtime::Runtime;
use crate::transfer::element_type;

/// The literal a host number holds, read as `dtype`.
pub(crate) fn scalar_literal(a: &ScalarRef, dtype: DType) -> Literal {
    if dtype.is_complex() {
        Literal::Complex(a.f, a.im)
    } else if dtype.is_float() {
        Literal::Float(a.f)
    } else if dtype == DType::Bool {
        Literal::Bool(a.i != 0)
    } else if dtype == DType::U64 {
        Literal::UInt(a.i as u64)
    } else {
        Literal::Int(a.i)
    }
}

/// The host number a parameter source names: a `Scalar`, or a `float` argument its entry
/// takes as a program input (as a Python float: a wrapped double).
pub(crate) fn source_scalar(args: &[CArg], arg: usize, item: Option<usize>) -> Result<ScalarRef> {
    match source_arg(args, arg, item)? {
        CArg::Scalar(v) => Ok(*v),
        CArg::Float(f) => Ok(ScalarRef {
            dtype: DOUBLE,
            wrapped: true,
            i: 0,
            f: *f,
            im: 0.0,
        }),
        _ => invalid(
            ErrorKind::Runtime,
            "a scalar parameter names a non-scalar argument",
        ),
    }
}

/// The storage offset of tensor argument `arg` (item `item` of a list) as an `i64` number.
pub(crate) fn source_offset(args: &[CArg], arg: usize, item: Option<usize>) -> Result<ScalarRef> {
    match source_arg(args, arg, item)? {
        CArg::Tensor(t) => Ok(ScalarRef {
            dtype: LONG,
            wrapped: false,
            i: t.offset,
            f: 0.0,
            im: 0.0,
        }),
        _ => invalid(
            ErrorKind::Runtime,
            "an offset parameter names a non-tensor argument",
        ),
    }
}

/// The ScalarType codes of `torch.long` and `torch.double`.
const LONG: i32 = 4;
const DOUBLE: i32 = 7;

/// The buffer of a 0-d host number, cached by value.
pub(crate) fn scalar_buffer(rt: &Runtime, a: &ScalarRef, device: usize) -> Result<Arc<Buffer>> {
    let dtype = dtype_of(a.dtype)?;
    let bits = if dtype.is_float() || dtype.is_complex() {
        a.f.to_bits()
    } else {
        a.i as u64
    };
    let key = (a.dtype, bits, a.im.to_bits(), device);
    let mut cache = rt.scalars.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(b) = cache.get(&key) {
        return Ok(b.clone());
    }
    let bytes = scalar_bytes(dtype, scalar_literal(a, dtype));
    let buf = Arc::new(
        rt.client
            .buffer_from_host(&bytes, element_type(dtype), &[], device)?,
    );
    if cache.len() > 4096 {
        cache.clear();
    }
    cache.insert(key, buf.clone());
    Ok(buf)
}

/// Little-endian bytes of one element of `dtype` holding `v`.
pub(crate) fn scalar_bytes(dtype: DType, v: Literal) -> Vec<u8> {
    let f = v.as_f64();
    let i = match v {
        Literal::Int(i) => i,
        Literal::UInt(u) => u as i64,
        Literal::Bool(b) => b as i64,
        Literal::Float(x) | Literal::Complex(x, _) => x as i64,
    };
    match dtype {
        DType::C32 => [f, v.imag()]
            .iter()
            .flat_map(|&p| half::f16::from_f64(p).to_f32().to_le_bytes())
            .collect(),
        DType::C64 => [f as f32, v.imag() as f32]
            .iter()
            .flat_map(|p| p.to_le_bytes())
            .collect(),
        DType::C128 => [f, v.imag()].iter().flat_map(|p| p.to_le_bytes()).collect(),
        DType::F32 => (f as f32).to_le_bytes().to_vec(),
        DType::F64 => f.to_le_bytes().to_vec(),
        DType::F16 => half::f16::from_f64(f).to_le_bytes().to_vec(),
        DType::BF16 => half::bf16::from_f64(f).to_le_bytes().to_vec(),
        d if d.is_float8() => vec![tpurs_hlo::float8_bits(f, d)],
        DType::Bool => vec![(f != 0.0) as u8],
        _ => i.to_le_bytes()[..dtype.byte_size()].to_vec(),
    }
}
