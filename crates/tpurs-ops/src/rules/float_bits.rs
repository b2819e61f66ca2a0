//! Functions of a float's bits: `signbit`, `nextafter` and `frexp`. They work on the integer
//! image of each value, so -0.0, subnormals and the last steps before infinity come out as on
//! CPU, whatever the device does with subnormal arithmetic.

use tpurs_hlo::{Builder, CompareDir, DType, Literal, Value};

use super::combine::xor_c;
use super::reduce::{reduce, reduce_dims};
use super::{common_dtype, float_dtype, one, operands};
use crate::ctx::{Ctx, Out};
use crate::dtype::torch_name;
use crate::error::{runtime, Error, Result};
use crate::table::Registry;

/// The signed integer type as wide as float type `dtype`.
fn bits_type(dtype: DType) -> DType {
    match dtype.byte_size() {
        2 => DType::I16,
        4 => DType::I32,
        _ => DType::I64,
    }
}

/// The sign bit of an integer type as wide as a float (its minimum value).
fn sign_mask(int: DType) -> i64 {
    match int {
        DType::I16 => i16::MIN as i64,
        DType::I32 => i32::MIN as i64,
        _ => i64::MIN,
    }
}

/// `signbit(self)`: true where the sign bit is set (-0.0 and negative NaNs included).
fn signbit(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let x = ctx.tensor(0)?;
    one(sign_bit(&mut ctx.b, &x)?)
}

/// Whether each element's sign bit is set (never for unsigned and bool values).
pub(crate) fn sign_bit(b: &mut Builder, x: &Value) -> Result<Value> {
    let dtype = x.dtype();
    let signed = if dtype.is_float() {
        b.bitcast_convert(x, bits_type(dtype))
    } else if dtype.is_unsigned() || dtype == DType::Bool {
        return Ok(b.splat(Literal::Bool(false), &x.ty.with_dtype(DType::Bool)));
    } else {
        x.clone()
    };
    let zero = b.full_like(&signed, Literal::Int(0));
    Ok(b.compare(CompareDir::Lt, &signed, &zero)?)
}

/// `|x|` with the sign bit of `sign`.
pub(crate) fn with_sign_of(b: &mut Builder, x: &Value, sign: &Value) -> Result<Value> {
    let negative = sign_bit(b, sign)?;
    let a = b.abs(x);
    let na = b.neg(&a);
    Ok(b.select(&negative, &na, &a)?)
}

/// A float's bits as an integer that orders like the float (-0.0 and +0.0 both 0), and back.
fn ordered_key(b: &mut Builder, bits: &Value, mask: i64) -> Result<Value> {
    let zero = b.full_like(bits, Literal::Int(0));
    let sign = b.full_like(bits, Literal::Int(mask));
    let negative = b.compare(CompareDir::Lt, bits, &zero)?;
    let magnitude = b.xor(bits, &sign)?;
    let down = b.neg(&magnitude);
    Ok(b.select(&negative, &down, bits)?)
}

fn from_ordered_key(b: &mut Builder, key: &Value, mask: i64) -> Result<Value> {
    let zero = b.full_like(key, Literal::Int(0));
    let sign = b.full_like(key, Literal::Int(mask));
    let negative = b.compare(CompareDir::Lt, key, &zero)?;
    let magnitude = b.neg(key);
    let bits = b.or(&magnitude, &sign)?;
    Ok(b.select(&negative, &bits, key)?)
}

/// `nextafter(self, other)`: the next float after `self` towards `other`; `other` when they
/// are equal, NaN when either is.
fn nextafter(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let dtype = float_dtype(common_dtype(ctx, &[0, 1])?, ctx.default_float());
    let v = operands(ctx, &[0, 1], dtype)?;
    let b = &mut ctx.b;
    let int = bits_type(dtype);
    let mask = sign_mask(int);
    let bx = b.bitcast_convert(&v[0], int);
    let by = b.bitcast_convert(&v[1], int);
    let kx = ordered_key(b, &bx, mask)?;
    let ky = ordered_key(b, &by, mask)?;
    let one_step = b.full_like(&kx, Literal::Int(1));
    let up = b.add(&kx, &one_step)?;
    let down = b.sub(&kx, &one_step)?;
    let upward = b.compare(CompareDir::Lt, &kx, &ky)?;
    let key = b.select(&upward, &up, &down)?;
    let stepped = from_ordered_key(b, &key, mask)?;
    // A step onto zero keeps the sign it came from (C's nextafter(-min, 1) is -0.0).
    let zero = b.full_like(&key, Literal::Int(0));
    let at_zero = b.compare(CompareDir::Eq, &key, &zero)?;
    let sign = b.full_like(&bx, Literal::Int(mask));
    let signed_zero = b.and(&bx, &sign)?;
    let stepped = b.select(&at_zero, &signed_zero, &stepped)?;
    let result = b.bitcast_convert(&stepped, dtype);
    let equal = b.compare(CompareDir::Eq, &kx, &ky)?;
    let result = b.select(&equal, &v[1], &result)?;
    let x_nan = b.compare(CompareDir::Ne, &v[0], &v[0])?;
    let y_nan = b.compare(CompareDir::Ne, &v[1], &v[1])?;
    let nan = b.or(&x_nan, &y_nan)?;
    let quiet_nan = b.full_like(&v[0], Literal::Float(f64::NAN));
    one(b.select(&nan, &quiet_nan, &result)?)
}

/// `frexp(self)`: the mantissa (in `[0.5, 1)`, with the sign of x) and the int32 exponent
/// with `x = m 2^e`; `(x, 0)` for zeros, infinities and NaN. A subnormal's significand is
/// converted to a float (exactly) and its exponent read from that, so no subnormal
/// arithmetic is needed.
fn frexp(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let x = ctx.tensor(0)?;
    let dtype = x.dtype();
    if !dtype.is_float() {
        return crate::error::runtime("torch.frexp() only supports floating-point dtypes");
    }
    let (mant_bits, exp_bits): (i64, i64) = match dtype {
        DType::F16 => (10, 5),
        DType::BF16 => (7, 8),
        DType::F32 => (23, 8),
        _ => (52, 11),
    };
    let bias = (1 << (exp_bits - 1)) - 1;
    let int = bits_type(dtype);
    let b = &mut ctx.b;
    let int_c = |b: &mut Builder, like: &Value, v: i64| b.full_like(like, Literal::Int(v));
    let bits = b.bitcast_convert(&x, int);
    let sign_c = int_c(b, &bits, sign_mask(int));
    let sign = b.and(&bits, &sign_c)?;
    let mag = b.xor(&bits, &sign)?;
    let shift = int_c(b, &bits, mant_bits);
    let field = b.shift_right_logical(&mag, &shift)?;
    // The significand of a subnormal as a normal float: 2^(1 - bias - mant_bits) times it.
    let as_float = b.convert(&mag, dtype);
    let norm = b.bitcast_convert(&as_float, int);
    let norm_field = b.shift_right_logical(&norm, &shift)?;
    let offset = int_c(b, &bits, bias + mant_bits - 1);
    let norm_field = b.sub(&norm_field, &offset)?;
    let zero = int_c(b, &bits, 0);
    let subnormal = b.compare(CompareDir::Eq, &field, &zero)?;
    let field = b.select(&subnormal, &norm_field, &field)?;
    let src = b.select(&subnormal, &norm, &mag)?;
    let frac_c = int_c(b, &bits, (1 << mant_bits) - 1);
    let frac = b.and(&src, &frac_c)?;
    let half_c = int_c(b, &bits, (bias - 1) << mant_bits);
    let m = b.or(&frac, &half_c)?;
    let m = b.or(&m, &sign)?;
    let m = b.bitcast_convert(&m, dtype);
    let e_off = int_c(b, &bits, bias - 1);
    let e = b.sub(&field, &e_off)?;
    let e = b.convert(&e, DType::I32);
    let fzero = b.full_like(&x, Literal::Float(0.0));
    let finite = b.is_finite(&x);
    let regular = b.compare(CompareDir::Ne, &x, &fzero)?;
    let regular = b.and(&regular, &finite)?;
    let m = b.select(&regular, &m, &x)?;
    let ezero = b.full_like(&e, Literal::Int(0));
    let e = b.select(&regular, &e, &ezero)?;
    Ok(vec![Some(m), Some(e)])
}

/// Registers the family.
/// `hash_tensor(self, dim, keepdim, mode)`: the xor of each element's 64-bit image (floats
/// widened to double, integers and bool to 64-bit integers) as uint64.
fn hash_tensor(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let ty = ctx.ty(0)?;
    let mode = ctx.int_or(3, 0)?;
    if mode != 0 {
        return runtime(format!("Unknown hash_tensor mode: {mode}"));
    }
    if ty.dtype.is_unsigned() && ty.dtype != DType::U8 {
        return Err(Error::NotImplemented(format!(
            "\"xor_sum_cpu\" not implemented for '{}'",
            torch_name(ty.dtype)
        )));
    }
    let listed = ctx.int_list(1)?;
    if listed.is_empty() && ty.numel() == 0 {
        return runtime(
            "hash_tensor: Expected reduction dim to be specified for input.numel() == 0. \
             Specify the reduction dim with the 'dim' argument.",
        );
    }
    let dims = reduce_dims(&listed, ty.rank())?;
    if let Some(d) = dims.iter().find(|&&d| ty.shape[d as usize] == 0) {
        return Err(Error::Index(format!(
            "hash_tensor: Expected reduction dim {d} to have non-zero size."
        )));
    }
    let keepdim = ctx.bool_or(2, false)?;
    let x = ctx.tensor(0)?;
    let b = &mut ctx.b;
    let bits = if ty.dtype.is_float() {
        let wide = b.convert(&x, DType::F64);
        b.bitcast_convert(&wide, DType::U64)
    } else {
        let wide = b.convert(&x, DType::I64);
        b.bitcast_convert(&wide, DType::U64)
    };
    one(reduce(b, &bits, &dims, Literal::Int(0), xor_c, keepdim)?)
}

pub(crate) fn register(reg: &mut Registry) {
    reg.ops(&["hash_tensor", "hash_tensor.out"], hash_tensor);
    reg.ops(&["signbit", "signbit.out"], signbit)
        .same_dtype_out_as(|_, _| "signbit does not support non-boolean outputs.".into());
    reg.ops(&["nextafter", "nextafter_", "nextafter.out"], nextafter);
    reg.ops(&["frexp.Tensor", "frexp.Tensor_out"], frexp);
}
