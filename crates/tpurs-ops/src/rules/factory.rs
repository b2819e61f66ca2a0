//! Factories and the pointwise helpers optimizers and losses lean on: `arange`, `linspace`
//! and `eye` (out= forms whose length comes from baked scalars), `isnan` / `isinf` /
//! `isposinf` / `isneginf` / `nan_to_num`, `lerp`, `addcmul` and `addcdiv`.
//! `full` / `zeros` / `ones` / `empty` reach the device through `fill_` / `zero_`
//! (elementwise family) and need no rule here.

use tpurs_hlo::{Builder, CompareDir, DType, Literal, TensorType, Value};

use super::{broadcast_all, common_dtype, one};
use crate::ctx::{Ctx, Out};
use crate::dtype::{opmath, torch_name};
use crate::error::{runtime, Error, Result};
use crate::table::Registry;

/// A `NotImplementedError` worded like PyTorch's dispatch error.
fn not_for(kernel: &str, dtype: DType) -> Error {
    Error::NotImplemented(format!(
        "\"{kernel}\" not implemented for '{}'",
        torch_name(dtype)
    ))
}

/// A literal as an i64 (floats truncate toward zero, as `Scalar::to<int64_t>`).
fn lit_i64(v: Literal) -> i64 {
    match v {
        Literal::Int(i) => i,
        Literal::UInt(u) => u as i64,
        Literal::Bool(b) => b as i64,
        Literal::Float(x) | Literal::Complex(x, _) => x as i64,
    }
}

/// Length of `arange(start, end, step)` with PyTorch's checks, for an output of `dtype`.
fn arange_len(start: Literal, end: Literal, step: Literal, dtype: DType) -> Result<i64> {
    let (s, e, st) = if dtype.is_float() {
        (start.as_f64(), end.as_f64(), step.as_f64())
    } else {
        (
            lit_i64(start) as f64,
            lit_i64(end) as f64,
            lit_i64(step) as f64,
        )
    };
    if st == 0.0 {
        return runtime("step must be nonzero");
    }
    if !s.is_finite() || !e.is_finite() {
        return runtime(format!("unsupported range: {s} -> {e}"));
    }
    if !((st > 0.0 && e >= s) || (st < 0.0 && e <= s)) {
        return runtime("upper bound and larger bound inconsistent with step sign");
    }
    let size = if dtype == DType::I64 {
        let (s, e, st) = (lit_i64(start), lit_i64(end), lit_i64(step));
        let sgn = st.signum();
        ((e as i128 - s as i128 + st as i128 - sgn as i128) / st as i128) as f64
    } else {
        ((end.as_f64() - start.as_f64()) / step.as_f64()).ceil()
    };
    if !(size >= 0.0 && size <= i64::MAX as f64) {
        return runtime("invalid size, possible overflow?");
    }
    Ok(size as i64)
}

/// The 1-d sequence `v` as the result for `out=` argument `out`: CPU PyTorch's `arange` and
/// `linspace` resize `out` only when its element count differs, and otherwise fill it in
/// its own shape (a `(2, 2)` view takes four steps in row-major order).
fn into_out(ctx: &mut Ctx, out: usize, v: Value) -> Result<Vec<Out>> {
    let shape = ctx.ty(out)?.shape;
    if shape.len() != 1 && shape.iter().product::<i64>() == v.shape()[0] {
        return one(ctx.b.reshape(&v, &shape)?);
    }
    one(v)
}

/// `arange.out(end, out)` / `arange.start_out(start, end, step, out)`: `start + step * i`.
fn arange(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let (start, end, step, out) = if ctx.overload() == "out" {
        (Literal::Int(0), ctx.scalar_value(0)?, Literal::Int(1), 1)
    } else {
        (
            ctx.scalar_value(0)?,
            ctx.scalar_value(1)?,
            ctx.scalar_value(2)?,
            3,
        )
    };
    let dtype = ctx.ty(out)?.dtype;
    if dtype == DType::Bool {
        return Err(not_for("arange_cpu", dtype));
    }
    let v = arange_of(&mut ctx.b, start, end, step, dtype)?;
    into_out(ctx, out, v)
}

/// `range.out(start, end, step=1, out)` (deprecated in PyTorch, still served): like
/// `arange`, but `end` is included.
fn range(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let (start, end) = (ctx.scalar_value(0)?, ctx.scalar_value(1)?);
    let (step, out) = if ctx.overload() == "out_" {
        (Literal::Int(1), 2)
    } else {
        (ctx.scalar_value(2)?, 3)
    };
    let dtype = ctx.ty(out)?.dtype;
    if dtype == DType::Bool {
        return Err(not_for("range_cpu", dtype));
    }
    // `arange_len`'s checks, then PyTorch's `floor((end - start) / step) + 1` elements.
    arange_len(start, end, step, dtype)?;
    let n = if dtype.is_float() {
        ((end.as_f64() - start.as_f64()) / step.as_f64()).floor() + 1.0
    } else {
        let (s, e, st) = (lit_i64(start), lit_i64(end), lit_i64(step));
        ((e as i128 - s as i128) / st as i128 + 1) as f64
    };
    if !(n >= 0.0 && n <= i64::MAX as f64) {
        return runtime("invalid size, possible overflow?");
    }
    let v = sequence(&mut ctx.b, start, step, n as i64, dtype);
    into_out(ctx, out, v?)
}

/// `start + step * i` for `i` in `0..arange_len(..)`, in `dtype`.
pub(crate) fn arange_of(
    b: &mut Builder,
    start: Literal,
    end: Literal,
    step: Literal,
    dtype: DType,
) -> Result<Value> {
    let n = arange_len(start, end, step, dtype)?;
    sequence(b, start, step, n, dtype)
}

/// `start + step * i` for `i` in `0..n`, computed in `dtype`'s opmath (int64 for integers).
fn sequence(b: &mut Builder, start: Literal, step: Literal, n: i64, dtype: DType) -> Result<Value> {
    let (w, start, step) = if dtype.is_float() {
        (
            opmath(dtype),
            Literal::Float(start.as_f64()),
            Literal::Float(step.as_f64()),
        )
    } else {
        (
            DType::I64,
            Literal::Int(lit_i64(start)),
            Literal::Int(lit_i64(step)),
        )
    };
    let i = b.iota(&TensorType::new(w, [n]), 0);
    let st = b.full_like(&i, step);
    let s0 = b.full_like(&i, start);
    let x = b.mul(&i, &st)?;
    let x = b.add(&s0, &x)?;
    Ok(b.convert(&x, dtype))
}

/// `linspace.out(start, end, steps, out)`: PyTorch's two-sided formula (from `start` for the
/// first half, from `end` for the second).
fn linspace(ctx: &mut Ctx) -> Result<Vec<Out>> {
    spaced(ctx, None)
}

/// `logspace.out(start, end, steps, base, out)`: `base` to the powers `linspace` gives.
fn logspace(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let base = ctx.float(3)?;
    spaced(ctx, Some(base))
}

/// `linspace`, or `logspace` with `base`, into the `out=` argument that follows.
fn spaced(ctx: &mut Ctx, base: Option<f64>) -> Result<Vec<Out>> {
    let (start, end) = (ctx.scalar_value(0)?, ctx.scalar_value(1)?);
    let steps = ctx.int(2)?;
    let out = if base.is_some() { 4 } else { 3 };
    let dtype = ctx.ty(out)?.dtype;
    if steps < 0 {
        return runtime("number of steps must be non-negative");
    }
    if dtype.is_complex() {
        if dtype == DType::C32 {
            let kernel = if base.is_some() {
                "logspace_cpu"
            } else {
                "linspace_cpu"
            };
            return Err(not_for(kernel, dtype));
        }
        // CPU steps each part on its own (complex minus, divided by and times reals).
        let part = dtype.real_part();
        let re = linear_sequence(&mut ctx.b, start.as_f64(), end.as_f64(), steps, part);
        let im = linear_sequence(&mut ctx.b, start.imag(), end.imag(), steps, part);
        let (re, im) = (re?, im?);
        let x = match base {
            None => ctx.b.complex(&re, &im)?,
            Some(base) => complex_power(&mut ctx.b, base, &re, &im)?,
        };
        return into_out(ctx, out, x);
    }
    // Integer outputs compute in double, as PyTorch does (then truncate).
    let w = if dtype.is_float() {
        opmath(dtype)
    } else {
        DType::F64
    };
    let cast = |v: Literal| -> f64 {
        match dtype {
            DType::F32 | DType::F16 | DType::BF16 => v.as_f64() as f32 as f64,
            d if d.is_float() => v.as_f64(),
            // The bounds are first cast to the output's integer type (wrapping, as in C++).
            DType::U8 => lit_i64(v) as u8 as f64,
            DType::I8 => lit_i64(v) as i8 as f64,
            DType::I16 => lit_i64(v) as i16 as f64,
            DType::I32 => lit_i64(v) as i32 as f64,
            _ => lit_i64(v) as f64,
        }
    };
    let (s, e) = (cast(start), cast(end));
    let b = &mut ctx.b;
    let power = |b: &mut Builder, x: Value| -> Result<Value> {
        let Some(base) = base else { return Ok(x) };
        let base = b.full_like(&x, Literal::Float(base));
        Ok(b.pow(&base, &x)?)
    };
    let x = linear_sequence(b, s, e, steps, w)?;
    let x = power(b, x)?;
    // Out-of-range integers wrap as CPU casts do.
    let x = crate::dtype::cast(b, &x, dtype)?;
    into_out(ctx, out, x)
}

/// `base ** (re + i im)` as `std::pow` of complex values computes it: `exp(y * log(base))`,
/// with `log(base)` rounded to the parts' type. A zero base has no logarithm to scale, and
/// CPU's zeros there carry signs of libm's choosing: it declines to the fallback.
fn complex_power(b: &mut Builder, base: f64, re: &Value, im: &Value) -> Result<Value> {
    if base == 0.0 {
        return Err(Error::Uncovered(
            "logspace of complex values with base 0".into(),
        ));
    }
    let (lr, li) = (
        base.abs().ln(),
        if base < 0.0 {
            std::f64::consts::PI
        } else {
            0.0
        },
    );
    let lr = b.full_like(re, Literal::Float(lr));
    let li = b.full_like(re, Literal::Float(li));
    // (re + i im)(lr + i li), as a complex product.
    let (a, c) = (b.mul(re, &lr)?, b.mul(im, &li)?);
    let (d, e) = (b.mul(re, &li)?, b.mul(im, &lr)?);
    let (x, y) = (b.sub(&a, &c)?, b.add(&d, &e)?);
    let z = b.complex(&x, &y)?;
    Ok(b.exp(&z))
}

/// `steps` values from `s` to `e` in float type `w` (see [`linear_sequence_of`]).
fn linear_sequence(b: &mut Builder, s: f64, e: f64, steps: i64, w: DType) -> Result<Value> {
    let s = b.constant(Literal::Float(s), w);
    let e = b.constant(Literal::Float(e), w);
    linear_sequence_of(b, &s, &e, steps)
}

/// `steps` values from the 0-d `s` to `e` in their float type, as CPU's linspace kernel
/// forms them: `s + step * i` for the first half, `e - step * (steps - 1 - i)` for the rest,
/// with `step = (e - s) / (steps - 1)`.
pub(super) fn linear_sequence_of(
    b: &mut Builder,
    s: &Value,
    e: &Value,
    steps: i64,
) -> Result<Value> {
    let w = s.dtype();
    let ty = TensorType::new(w, [steps]);
    if steps <= 1 {
        return Ok(b.broadcast_in_dim(s, &[steps], &[])?);
    }
    let n1 = b.constant(Literal::Float((steps - 1) as f64), w);
    let d = b.sub(e, s)?;
    let step = b.div(&d, &n1)?;
    let idx = b.iota(&TensorType::new(DType::I64, [steps]), 0);
    let i = b.convert(&idx, w);
    let stepv = b.broadcast_in_dim(&step, &[steps], &[])?;
    let sv = b.broadcast_in_dim(s, &[steps], &[])?;
    let ev = b.broadcast_in_dim(e, &[steps], &[])?;
    let last = b.splat(Literal::Float((steps - 1) as f64), &ty);
    let back = b.sub(&last, &i)?;
    let neg = b.neg(&stepv);
    let (lo, hi) = if w == DType::F32 {
        // CPU's float32 kernel compiles both formulas to fused multiply-adds.
        (fused(b, &stepv, &i, &sv)?, fused(b, &neg, &back, &ev)?)
    } else {
        let lo = b.mul(&stepv, &i)?;
        let hi = b.mul(&neg, &back)?;
        (b.add(&sv, &lo)?, b.add(&ev, &hi)?)
    };
    let half = b.splat(
        Literal::Int(steps / 2),
        &TensorType::new(DType::I64, [steps]),
    );
    let first = b.compare(CompareDir::Lt, &idx, &half)?;
    Ok(b.select(&first, &lo, &hi)?)
}

/// `a * x + c` rounded once to float32, as a fused multiply-add rounds it: in float64 the
/// product of a float32 and an integer below 2^29 is exact, and XLA may or may not fuse a
/// float32 multiply-add itself.
fn fused(b: &mut Builder, a: &Value, x: &Value, c: &Value) -> Result<Value> {
    let [a, x, c] = [a, x, c].map(|v| b.convert(v, DType::F64));
    let p = b.mul(&a, &x)?;
    let r = b.add(&c, &p)?;
    Ok(b.convert(&r, DType::F32))
}

/// `eye.out(n, out)` / `eye.m_out(n, m, out)`: ones on the main diagonal.
fn eye(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let n = ctx.int(0)?;
    let (m, out) = if ctx.overload() == "m_out" {
        (ctx.int(1)?, 2)
    } else {
        (n, 1)
    };
    if n < 0 {
        return runtime(format!("n must be greater or equal to 0, got {n}"));
    }
    if m < 0 {
        return runtime(format!("m must be greater or equal to 0, got {m}"));
    }
    let dtype = ctx.ty(out)?.dtype;
    let ty = TensorType::new(DType::I64, [n, m]);
    let r = ctx.b.iota(&ty, 0);
    let c = ctx.b.iota(&ty, 1);
    let d = ctx.b.compare(CompareDir::Eq, &r, &c)?;
    one(ctx.b.convert(&d, dtype))
}

/// `x` compared with the constant `value` (`+-inf`), or all false for non-float `x`.
fn test_value(b: &mut Builder, x: &Value, dir: CompareDir, value: f64) -> Result<Value> {
    if !x.dtype().is_float() {
        return Ok(b.splat(Literal::Bool(false), &x.ty.with_dtype(DType::Bool)));
    }
    let c = b.full_like(x, Literal::Float(value));
    Ok(b.compare(dir, x, &c)?)
}

/// `isnan(self)`: `x != x`.
fn isnan(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let x = ctx.tensor(0)?;
    if !x.dtype().is_float() && !x.dtype().is_complex() {
        return one(ctx
            .b
            .splat(Literal::Bool(false), &x.ty.with_dtype(DType::Bool)));
    }
    // A complex value is NaN when either part is, and then differs from itself.
    one(ctx.b.compare(CompareDir::Ne, &x, &x)?)
}

/// `isinf(self)`: `|x| == inf` (for a complex value, either part's).
fn isinf(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let x = ctx.tensor(0)?;
    if x.dtype().is_complex() {
        return one(super::complex::part_infinite(&mut ctx.b, &x)?);
    }
    let a = if x.dtype().is_float() {
        ctx.b.abs(&x)
    } else {
        x
    };
    one(test_value(&mut ctx.b, &a, CompareDir::Eq, f64::INFINITY)?)
}

/// `isposinf(self)`: `x == inf`.
fn isposinf(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let x = ctx.tensor(0)?;
    one(test_value(&mut ctx.b, &x, CompareDir::Eq, f64::INFINITY)?)
}

/// `isneginf(self)`: `x == -inf`.
fn isneginf(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let x = ctx.tensor(0)?;
    one(test_value(
        &mut ctx.b,
        &x,
        CompareDir::Eq,
        f64::NEG_INFINITY,
    )?)
}

/// `nan_to_num(self, nan, posinf, neginf)`: replaces NaN and infinities (defaults: 0 and the
/// dtype's finite extremes); integer tensors are returned unchanged.
fn nan_to_num(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let x = ctx.tensor(0)?;
    let dtype = x.dtype();
    if !dtype.is_float() && !dtype.is_complex() {
        return one(x);
    }
    let part = dtype.real_part();
    let nan = ctx.opt_float(1)?.unwrap_or(0.0);
    let pos = ctx.opt_float(2)?.unwrap_or(crate::dtype::finfo_max(part));
    let neg = ctx.opt_float(3)?.unwrap_or(-crate::dtype::finfo_max(part));
    let b = &mut ctx.b;
    if !dtype.is_complex() {
        return one(replace_non_finite(b, &x, [nan, pos, neg])?);
    }
    // CPU replaces in each part of a complex value separately.
    let (re, im) = (b.real(&x), b.imag(&x));
    let re = replace_non_finite(b, &re, [nan, pos, neg])?;
    let im = replace_non_finite(b, &im, [nan, pos, neg])?;
    one(b.complex(&re, &im)?)
}

/// `x` with NaN, +inf and -inf replaced by `nan`, `pos` and `neg`.
fn replace_non_finite(b: &mut Builder, x: &Value, [nan, pos, neg]: [f64; 3]) -> Result<Value> {
    let is_nan = b.compare(CompareDir::Ne, x, x)?;
    let is_pos = test_value(b, x, CompareDir::Eq, f64::INFINITY)?;
    let is_neg = test_value(b, x, CompareDir::Eq, f64::NEG_INFINITY)?;
    let (nv, pv, mv) = (
        b.full_like(x, Literal::Float(nan)),
        b.full_like(x, Literal::Float(pos)),
        b.full_like(x, Literal::Float(neg)),
    );
    let y = b.select(&is_nan, &nv, x)?;
    let y = b.select(&is_pos, &pv, &y)?;
    Ok(b.select(&is_neg, &mv, &y)?)
}

/// `lerp(x, end, w)` on values of one float dtype (computed in its opmath type):
/// `x + w * (end - x)` for `|w| < 0.5`, else `end - (end - x) * (1 - w)`.
pub(crate) fn lerp_of(b: &mut Builder, x: &Value, end: &Value, w: &Value) -> Result<Value> {
    let dtype = x.dtype();
    let m = opmath(dtype);
    let v = broadcast_all(b, &[x.clone(), end.clone(), w.clone()], m)?;
    let (x, end, w) = (&v[0], &v[1], &v[2]);
    let diff = b.sub(end, x)?;
    let wd = b.mul(w, &diff)?;
    let lo = b.add(x, &wd)?;
    let onev = b.full_like(w, Literal::Float(1.0));
    let omw = b.sub(&onev, w)?;
    let dd = b.mul(&diff, &omw)?;
    let hi = b.sub(end, &dd)?;
    // A complex weight is small by its magnitude.
    let aw = b.abs(w);
    let halfv = b.full_like(&aw, Literal::Float(0.5));
    let small = b.compare(CompareDir::Lt, &aw, &halfv)?;
    let r = b.select(&small, &lo, &hi)?;
    Ok(b.convert(&r, dtype))
}

/// Checks that argument `i` of a lerp has the dtype of `self`.
fn lerp_check(ctx: &Ctx, i: usize, what: &str) -> Result<()> {
    let (s, o) = (ctx.ty(0)?.dtype, ctx.ty(i)?.dtype);
    if matches!(ctx.arg(i), crate::Arg::Tensor(_)) && s != o {
        return runtime(format!(
            "expected dtype {} for `{what}` but got dtype {}",
            torch_name(s),
            torch_name(o)
        ));
    }
    Ok(())
}

/// `lerp.Scalar` / `lerp.Tensor` and their in-place and `out=` forms.
fn lerp(ctx: &mut Ctx) -> Result<Vec<Out>> {
    lerp_check(ctx, 1, "end")?;
    lerp_check(ctx, 2, "weight")?;
    let dtype = ctx.ty(0)?.dtype;
    if !dtype.is_float() && !dtype.is_complex() {
        return Err(not_for("lerp_kernel_scalar", dtype));
    }
    let x = ctx.tensor(0)?;
    let end = ctx.tensor(1)?;
    let w = ctx.tensor(2)?;
    let w = ctx.b.convert(&w, dtype);
    one(lerp_of(&mut ctx.b, &x, &end, &w)?)
}

/// `self + value * t1 * t2` (`div = false`) or `self + value * t1 / t2` on values of one
/// dtype, computed in its opmath type.
pub(crate) fn addc_of(b: &mut Builder, vs: &[Value], value: &Value, div: bool) -> Result<Value> {
    let dtype = vs[0].dtype();
    let m = opmath(dtype);
    let mut all = vs.to_vec();
    all.push(value.clone());
    let v = broadcast_all(b, &all, m)?;
    let vt = b.mul(&v[3], &v[1])?;
    let p = if div {
        b.div(&vt, &v[2])?
    } else {
        b.mul(&vt, &v[2])?
    };
    let r = b.add(&v[0], &p)?;
    Ok(b.convert(&r, dtype))
}

/// The dtype checks of addcmul / addcdiv for a result of `dtype` and a `value` of `vdtype`.
pub(crate) fn addc_check(name: &str, dtype: DType, vdtype: DType, div: bool) -> Result<()> {
    let inexact = dtype.is_float() || dtype.is_complex();
    if div && !inexact {
        return runtime(
            "Integer division with addcdiv is no longer supported, and in a future release addcdiv will perform \
             a true division of tensor1 and tensor2. The historic addcdiv behavior can be implemented as \
             (input + value * torch.trunc(tensor1 / tensor2)).to(input.dtype) for integer inputs and as \
             (input + value * tensor1 / tensor2) for float inputs. The future addcdiv behavior is just the \
             latter implementation: (input + value * tensor1 / tensor2), for all dtypes.",
        );
    }
    if dtype == DType::Bool {
        return Err(not_for(name, dtype));
    }
    if !inexact && vdtype.is_float() {
        return runtime(
            "For integral input tensors, argument value must not be a floating point number.",
        );
    }
    Ok(())
}

/// `addcmul` / `addcdiv` (functional, in-place, `out=`).
fn addc(ctx: &mut Ctx, div: bool) -> Result<Vec<Out>> {
    let dtype = common_dtype(ctx, &[0, 1, 2])?;
    let kernel = if div {
        "addcdiv_cpu_out"
    } else {
        "addcmul_cpu_out"
    };
    addc_check(kernel, dtype, ctx.ty(3)?.dtype, div)?;
    let vs = vec![ctx.tensor(0)?, ctx.tensor(1)?, ctx.tensor(2)?];
    let vs = broadcast_all(&mut ctx.b, &vs, dtype)?;
    let value = ctx.tensor(3)?;
    one(addc_of(&mut ctx.b, &vs, &value, div)?)
}

/// Registers the family.
pub(crate) fn register(reg: &mut Registry) {
    reg.ops(&["arange.out", "arange.start_out"], arange)
        .bake_scalars()
        .any_cast();
    reg.ops(&["range.out", "range.out_"], range)
        .bake_scalars()
        .any_cast();
    reg.ops(&["linspace.out"], linspace)
        .bake_scalars()
        .any_cast()
        .complex();
    reg.ops(&["logspace.out"], logspace)
        .bake_scalars()
        .any_cast()
        .complex();
    reg.ops(&["eye.out", "eye.m_out"], eye).any_cast().complex();
    reg.ops(&["isnan", "isnan.out"], isnan).complex();
    reg.ops(&["isinf", "isinf.out"], isinf).complex();
    reg.ops(&["isposinf", "isposinf.out"], isposinf);
    reg.ops(&["isneginf", "isneginf.out"], isneginf);
    reg.ops(&["nan_to_num", "nan_to_num_", "nan_to_num.out"], nan_to_num)
        .complex()
        .same_dtype_out_as(|out, result| {
            format!(
                "nan_to_num: dtype of out: {} should be same as input: {}",
                torch_name(out),
                torch_name(result)
            )
        });
    reg.ops(
        &[
            "lerp.Scalar",
            "lerp_.Scalar",
            "lerp.Scalar_out",
            "lerp.Tensor",
            "lerp_.Tensor",
            "lerp.Tensor_out",
        ],
        lerp,
    )
    .complex();
    reg.ops(&["addcmul", "addcmul_", "addcmul.out"], |ctx| {
        addc(ctx, false)
    })
    .complex();
    reg.ops(&["addcdiv", "addcdiv_", "addcdiv.out"], |ctx| {
        addc(ctx, true)
    })
    .complex();
}
