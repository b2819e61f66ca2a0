//! The `_foreach_*` ops optimizers and `clip_grad_norm_` call: binary arithmetic (Scalar,
//! List, ScalarList and Tensor overloads), `addcmul` / `addcdiv`, `lerp`, maximum / minimum /
//! clamp, `pow`, unary math, `zero_`, `copy_` and `norm`. A call over N tensors lowers to one
//! program with N results; each item follows the semantics of the single-tensor op
//! (promotion, broadcasting), and in-place forms are written back item by item by the driver.

use tpurs_hlo::{Builder, DType, Literal, Value};

use super::combine::extremum;
use super::complex::div_of;
use super::division::trunc_of;
use super::elementwise::{check_number_clamp, frac_of, in_float_opmath, power, value, UnaryFn};
use super::factory::{addc_check, addc_of, lerp_of};
use super::norms::{check_norm_dtypes, norm_of};
use super::{broadcast_all, complex_math, float_dtype};
use crate::ctx::{Ctx, Out};
use crate::dtype::{cast, result_type, torch_name, Participation};
use crate::error::{runtime, Error, Result};
use crate::table::{Registry, Rule};
use crate::Arg;

/// One operand of a foreach op, read for every item.
enum Operand {
    /// A list argument: one value per item, with its dtype and promotion role.
    Each(Vec<(Value, DType, Participation)>),
    /// A single tensor or number shared by every item.
    Shared(Value, DType, Participation),
}

impl Operand {
    /// The operand of item `j`.
    fn item(&self, j: usize) -> (Value, DType, Participation) {
        match self {
            Operand::Each(v) => v[j].clone(),
            Operand::Shared(v, d, p) => (v.clone(), *d, *p),
        }
    }
}

/// Number of items: the length of the first list argument, which must not be empty.
fn num_items(ctx: &Ctx) -> Result<usize> {
    let n = (0..ctx.num_args())
        .find(|&i| matches!(ctx.arg(i), Arg::List(_)))
        .map_or(0, |i| ctx.list_len(i));
    if n == 0 {
        return runtime("Tensor list must have at least one tensor.");
    }
    Ok(n)
}

/// Argument `i`, when a list, must have `n` items.
fn check_len(ctx: &Ctx, i: usize, n: usize) -> Result<()> {
    match ctx.arg(i) {
        Arg::List(items) if items.len() != n => {
            let scalars = ctx.overload().starts_with("ScalarList")
                || matches!(items.first(), Some(Arg::Scalar(_)));
            runtime(if scalars {
                "Tensor list must have same number of elements as scalar list.".to_string()
            } else {
                format!(
                    "Tensor lists must have the same number of tensors, got {n} and {}",
                    items.len()
                )
            })
        }
        _ => Ok(()),
    }
}

/// Reads argument `i` for `n` items (a list of tensors or numbers, or one shared value).
fn operand(ctx: &mut Ctx, i: usize, n: usize) -> Result<Operand> {
    check_len(ctx, i, n)?;
    match ctx.arg(i) {
        Arg::List(items) => {
            let dtypes: Vec<DType> = items
                .iter()
                .map(|a| match a {
                    Arg::Tensor(m) => Ok(m.dtype),
                    Arg::Scalar(s) => Ok(s.dtype),
                    _ => Err(Error::Type(format!(
                        "{}: undefined tensor in list",
                        ctx.name
                    ))),
                })
                .collect::<Result<_>>()?;
            let parts: Vec<Participation> = (0..n).map(|j| ctx.participation(i, Some(j))).collect();
            let values = ctx.tensors(i)?;
            Ok(Operand::Each(
                values
                    .into_iter()
                    .zip(dtypes)
                    .zip(parts)
                    .map(|((v, d), p)| (v, d, p))
                    .collect(),
            ))
        }
        _ => {
            let d = ctx.ty(i)?.dtype;
            let p = ctx.participation(i, None);
            Ok(Operand::Shared(ctx.tensor(i)?, d, p))
        }
    }
}

/// A per-item kernel: the promoted operands, then the cast-only operands, all of one dtype.
type Kernel = fn(&mut Builder, &[Value]) -> Result<Value>;

/// Applies `f` to every item: arguments `promote` take part in type promotion (computed in
/// the default float when `to_float`), arguments `cast` (alpha, value, weight) are converted
/// to the result dtype; all are broadcast together.
fn foreach(
    ctx: &mut Ctx,
    promote: &[usize],
    cast: &[usize],
    to_float: bool,
    f: Kernel,
) -> Result<Vec<Out>> {
    let n = num_items(ctx)?;
    let mut ops = Vec::new();
    for &i in promote.iter().chain(cast) {
        ops.push(operand(ctx, i, n)?);
    }
    let mut out = Vec::with_capacity(n);
    for j in 0..n {
        let items: Vec<(Value, DType, Participation)> = ops.iter().map(|o| o.item(j)).collect();
        let roles: Vec<(DType, Participation)> = items[..promote.len()]
            .iter()
            .map(|(_, d, p)| (*d, *p))
            .collect();
        let mut dtype = result_type(&roles, ctx.default_float());
        if to_float {
            dtype = float_dtype(dtype, ctx.default_float());
        }
        let values: Vec<Value> = items.into_iter().map(|(v, _, _)| v).collect();
        let values = broadcast_all(&mut ctx.b, &values, dtype)?;
        out.push(Some(f(&mut ctx.b, &values)?));
    }
    Ok(out)
}

/// maximum / minimum / clamp_min / clamp_max with numbers: CPU runs `clamp_min` or
/// `clamp_max` per item, whose checks (complex values, in-place promotion) come first.
fn bounded(ctx: &mut Ctx, f: Kernel) -> Result<Vec<Out>> {
    let n = num_items(ctx)?;
    check_len(ctx, 1, n)?;
    let shared = !matches!(ctx.arg(1), Arg::List(_));
    for j in 0..n {
        let item = (!shared).then_some(j);
        let x = ctx.meta(0, Some(j))?.dtype;
        let bound = match ctx.arg(1).item(item) {
            Arg::Scalar(s) => s.dtype,
            Arg::Tensor(m) => m.dtype,
            _ => continue,
        };
        let roles = [(x, Participation::Dim), (bound, ctx.participation(1, item))];
        let result = result_type(&roles, ctx.default_float());
        check_number_clamp(x, &[bound], result, ctx.is_inplace(), false)?;
    }
    foreach(ctx, &[0, 1], &[], false, f)
}

/// `x + y * alpha` (alpha when present); `or` for bool.
fn add_k(b: &mut Builder, v: &[Value]) -> Result<Value> {
    let y = scaled(b, v)?;
    Ok(if v[0].dtype() == DType::Bool {
        b.or(&v[0], &y)?
    } else {
        b.add(&v[0], &y)?
    })
}

/// `y * alpha` when an alpha operand is present, else `y`.
fn scaled(b: &mut Builder, v: &[Value]) -> Result<Value> {
    Ok(match v.get(2) {
        Some(alpha) if v[1].dtype() == DType::Bool => b.and(&v[1], alpha)?,
        Some(alpha) => b.mul(&v[1], alpha)?,
        None => v[1].clone(),
    })
}

/// `x - y * alpha`.
fn sub_k(b: &mut Builder, v: &[Value]) -> Result<Value> {
    if v[0].dtype() == DType::Bool {
        return runtime(
            "Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` or `logical_xor()` operator instead.",
        );
    }
    let y = scaled(b, v)?;
    Ok(b.sub(&v[0], &y)?)
}

/// `x * y` (`and` for bool).
fn mul_k(b: &mut Builder, v: &[Value]) -> Result<Value> {
    Ok(if v[0].dtype() == DType::Bool {
        b.and(&v[0], &v[1])?
    } else {
        b.mul(&v[0], &v[1])?
    })
}

/// `x / y` (true division: operands are already float or complex).
fn div_k(b: &mut Builder, v: &[Value]) -> Result<Value> {
    div_of(b, &v[0], &v[1])
}

/// `max(x, y)` propagating NaN; `x` on a tie (signed zeros), as CPU's foreach kernels.
fn max_k(b: &mut Builder, v: &[Value]) -> Result<Value> {
    extremum(b, &v[1], &v[0], true)
}

/// `min(x, y)` propagating NaN; `x` on a tie.
fn min_k(b: &mut Builder, v: &[Value]) -> Result<Value> {
    extremum(b, &v[1], &v[0], false)
}

/// `x ^ y` for a tensor exponent, as `pow.Tensor_Tensor`.
fn pow_k(b: &mut Builder, v: &[Value]) -> Result<Value> {
    power(b, &v[0], &v[1], false)
}

/// `x ^ y` for an exponent given as a number, as `pow.Tensor_Scalar` (complex powers take
/// CPU's shortcuts).
fn pow_number_k(b: &mut Builder, v: &[Value]) -> Result<Value> {
    power(b, &v[0], &v[1], true)
}

/// `lerp(x, end, w)`.
fn lerp_k(b: &mut Builder, v: &[Value]) -> Result<Value> {
    if !v[0].dtype().is_float() && !v[0].dtype().is_complex() {
        return Err(Error::NotImplemented(format!(
            "\"lerp_kernel_scalar\" not implemented for '{}'",
            torch_name(v[0].dtype())
        )));
    }
    lerp_of(b, &v[0], &v[1], &v[2])
}

/// `x + value * t1 * t2`.
fn addcmul_k(b: &mut Builder, v: &[Value]) -> Result<Value> {
    addc_of(b, &v[..3], &v[3], false)
}

/// `x + value * t1 / t2`.
fn addcdiv_k(b: &mut Builder, v: &[Value]) -> Result<Value> {
    addc_of(b, &v[..3], &v[3], true)
}

/// `_foreach_addcmul` / `_foreach_addcdiv` (Scalar and ScalarList): PyTorch's dtype checks,
/// then the kernel per item.
fn addc(ctx: &mut Ctx, div: bool) -> Result<Vec<Out>> {
    let n = num_items(ctx)?;
    for j in 0..n {
        let roles: Vec<(DType, Participation)> = (0..3)
            .map(|i| Ok((ctx.meta(i, Some(j))?.dtype, Participation::Dim)))
            .collect::<Result<_>>()?;
        let vdtype = match ctx.arg(3) {
            Arg::List(l) => match l.get(j) {
                Some(Arg::Scalar(s)) => s.dtype,
                _ => DType::I64,
            },
            _ => ctx.ty(3)?.dtype,
        };
        let kernel = if div {
            "addcdiv_cpu_out"
        } else {
            "addcmul_cpu_out"
        };
        addc_check(
            kernel,
            result_type(&roles, ctx.default_float()),
            vdtype,
            div,
        )?;
    }
    foreach(
        ctx,
        &[0, 1, 2],
        &[3],
        false,
        if div { addcdiv_k } else { addcmul_k },
    )
}

/// Defines foreach rules for unary ops computed in a float type, with the single-tensor
/// op's values: [`in_float_opmath`] of the same function.
macro_rules! float_unary {
    ($($fn:ident => $value:expr),* $(,)?) => {
        $(
            #[doc = concat!("`_foreach_", stringify!($fn), "`: the unary op on every item.")]
            fn $fn(ctx: &mut Ctx) -> Result<Vec<Out>> {
                num_items(ctx)?;
                let d = ctx.default_float();
                let f: UnaryFn = $value;
                let xs = ctx.tensors(0)?;
                xs.iter().map(|x| Ok(Some(in_float_opmath(&mut ctx.b, x, d, f)?))).collect()
            }
        )*
    };
}

float_unary! {
    sqrt => complex_math::sqrt_of,
    rsqrt => value::rsqrt,
    exp => super::complex::exp_of,
    expm1 => value::expm1,
    log => complex_math::log_of,
    log1p => value::log1p,
    sigmoid => value::sigmoid,
    tanh => value::tanh,
    sin => value::sin,
    cos => value::cos,
    tan => value::tan,
    reciprocal => value::reciprocal,
}

/// Defines foreach rules for unary ops that keep their input's dtype.
macro_rules! unary {
    ($($fn:ident => $body:expr),* $(,)?) => {
        $(
            #[doc = concat!("`_foreach_", stringify!($fn), "`: the unary op on every item.")]
            fn $fn(ctx: &mut Ctx) -> Result<Vec<Out>> {
                foreach(ctx, &[0], &[], false, |b, v| {
                    let f: UnaryFn = $body;
                    f(b, &v[0])
                })
            }
        )*
    };
}

unary! {
    neg => |b, x| {
        if x.dtype() == DType::Bool {
            return runtime("Negation, the `-` operator, on a bool tensor is not supported. If you are trying to invert a mask, use the `~` or `logical_not()` operator instead.");
        }
        Ok(b.neg(x))
    },
    magnitudes => value::abs,
    sign => |b, x| Ok(if x.dtype() == DType::Bool { x.clone() } else { b.sign(x) }),
    floor => |b, x| Ok(if x.dtype().is_float() { b.floor(x) } else { x.clone() }),
    ceil => |b, x| Ok(if x.dtype().is_float() { b.ceil(x) } else { x.clone() }),
    round => |b, x| Ok(if x.dtype().is_float() { b.round_even(x) } else { x.clone() }),
    trunc => |b, x| Ok(if x.dtype().is_float() { trunc_of(b, x)? } else { x.clone() }),
    frac => frac_of,
    zero => |b, x| Ok(b.full_like(x, Literal::Int(0))),
    clone => |_, x| Ok(x.clone()),
}

/// `_foreach_abs`; a complex item's magnitude is real, so CPU refuses it in place.
fn abs(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let complex =
        (0..ctx.list_len(0)).any(|j| ctx.meta(0, Some(j)).is_ok_and(|m| m.dtype.is_complex()));
    if ctx.name == "_foreach_abs_" && complex {
        return runtime("In-place abs is not supported for complex tensors.");
    }
    magnitudes(ctx)
}

/// `_foreach_copy_(self, src)`: every `src` item cast and broadcast into its `self` item.
fn copy(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let n = num_items(ctx)?;
    if ctx.list_len(1) != n {
        return runtime(format!(
            "Tensor lists must have the same number of tensors, got {n} and {}",
            ctx.list_len(1)
        ));
    }
    let src = ctx.tensors(1)?;
    let mut out = Vec::with_capacity(n);
    for (j, s) in src.iter().enumerate() {
        let ty = ctx.meta(0, Some(j))?.ty();
        let s = cast(&mut ctx.b, s, ty.dtype)?;
        out.push(Some(ctx.b.broadcast_to(&s, &ty.shape)?));
    }
    Ok(out)
}

/// `_foreach_norm.Scalar(self, ord, dtype)`: `linalg_vector_norm` of every item (ord baked).
fn norm(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let n = num_items(ctx)?;
    let ord = if ctx.has(1) {
        ctx.scalar_value(1)?.as_f64()
    } else {
        2.0
    };
    let want = ctx.opt_dtype(2)?;
    let xs = ctx.tensors(0)?;
    let mut out = Vec::with_capacity(n);
    for x in xs {
        let dtype = want.unwrap_or(x.dtype());
        check_norm_dtypes(x.dtype(), dtype)?;
        let x = ctx.b.convert(&x, dtype);
        let all: Vec<i64> = (0..x.rank() as i64).collect();
        out.push(Some(norm_of(&mut ctx.b, &x, ord, &all, false)?));
    }
    Ok(out)
}

/// `_foreach_NAME` overload names: functional, in-place and `out=` of each overload.
fn names(base: &str, overloads: &[&str]) -> Vec<&'static str> {
    let mut v = Vec::new();
    for o in overloads {
        let leak = |s: String| -> &'static str { Box::leak(s.into_boxed_str()) };
        if o.is_empty() {
            v.push(leak(format!("_foreach_{base}")));
            v.push(leak(format!("_foreach_{base}_")));
            v.push(leak(format!("_foreach_{base}.out")));
        } else {
            v.push(leak(format!("_foreach_{base}.{o}")));
            v.push(leak(format!("_foreach_{base}_.{o}")));
            v.push(leak(format!("_foreach_{base}.{o}_out")));
        }
    }
    v
}

/// Registers the family. Complex items follow the single-tensor ops (maximum, minimum,
/// the rounding ops and sign refuse them, as CPU's kernels do).
pub(crate) fn register(reg: &mut Registry) {
    const ALL: &[&str] = &["Scalar", "List", "ScalarList", "Tensor"];
    const THREE: &[&str] = &["Scalar", "List", "ScalarList"];
    const NUMBERS: &[&str] = &["Scalar", "ScalarList"];
    // add / sub: `.List` (and add's `.Tensor`) carry alpha (argument 2).
    reg.ops(&names("add", NUMBERS), |c| {
        foreach(c, &[0, 1], &[], false, add_k)
    })
    .complex();
    reg.ops(&names("add", &["List", "Tensor"]), |c| {
        foreach(c, &[0, 1], &[2], false, add_k)
    })
    .complex();
    reg.ops(&names("sub", NUMBERS), |c| {
        foreach(c, &[0, 1], &[], false, sub_k)
    })
    .complex();
    reg.ops(&names("sub", &["List"]), |c| {
        foreach(c, &[0, 1], &[2], false, sub_k)
    })
    .complex();
    reg.ops(&names("mul", ALL), |c| {
        foreach(c, &[0, 1], &[], false, mul_k)
    })
    .complex();
    reg.ops(&names("div", ALL), |c| {
        foreach(c, &[0, 1], &[], true, div_k)
    })
    .complex();
    reg.ops(&names("maximum", NUMBERS), |c| bounded(c, max_k))
        .complex();
    reg.ops(&names("maximum", &["List"]), |c| {
        foreach(c, &[0, 1], &[], false, max_k)
    });
    reg.ops(&names("clamp_min", NUMBERS), |c| bounded(c, max_k))
        .complex();
    reg.ops(&names("clamp_min", &["List"]), |c| {
        foreach(c, &[0, 1], &[], false, max_k)
    });
    reg.ops(&names("minimum", NUMBERS), |c| bounded(c, min_k))
        .complex();
    reg.ops(&names("minimum", &["List"]), |c| {
        foreach(c, &[0, 1], &[], false, min_k)
    });
    reg.ops(&names("clamp_max", NUMBERS), |c| bounded(c, min_k))
        .complex();
    reg.ops(&names("clamp_max", &["List"]), |c| {
        foreach(c, &[0, 1], &[], false, min_k)
    });
    reg.ops(&names("pow", NUMBERS), |c| {
        foreach(c, &[0, 1], &[], false, pow_number_k)
    })
    .complex();
    reg.ops(&names("pow", &["List"]), |c| {
        foreach(c, &[0, 1], &[], false, pow_k)
    })
    .complex();
    reg.ops(&["_foreach_pow.ScalarAndTensor"], |c| {
        foreach(c, &[0, 1], &[], false, pow_k)
    })
    .complex();
    reg.ops(&names("lerp", THREE), |c| {
        foreach(c, &[0, 1], &[2], false, lerp_k)
    })
    .complex();
    reg.ops(&names("addcmul", NUMBERS), |c| addc(c, false))
        .complex();
    reg.ops(&names("addcdiv", NUMBERS), |c| addc(c, true))
        .complex();
    let complex_unary: [(&str, Rule); 14] = [
        ("sqrt", sqrt),
        ("rsqrt", rsqrt),
        ("exp", exp),
        ("expm1", expm1),
        ("log", log),
        ("log1p", log1p),
        ("sigmoid", sigmoid),
        ("tanh", tanh),
        ("sin", sin),
        ("cos", cos),
        ("tan", tan),
        ("reciprocal", reciprocal),
        ("neg", neg),
        ("abs", abs),
    ];
    for (name, rule) in complex_unary {
        reg.ops(&names(name, &[""]), rule).complex();
    }
    reg.ops(&names("zero", &[""]), zero).any_cast().complex();
    reg.ops(&names("sign", &[""]), sign);
    reg.ops(&names("floor", &[""]), floor);
    reg.ops(&names("ceil", &[""]), ceil);
    reg.ops(&names("round", &[""]), round);
    reg.ops(&names("trunc", &[""]), trunc);
    reg.ops(&names("frac", &[""]), frac);
    reg.ops(&["_foreach_clone", "_foreach_clone.out"], clone)
        .complex();
    reg.ops(&names("copy", &[""]), copy).any_cast().complex();
    reg.ops(&["_foreach_norm.Scalar", "_foreach_norm.Scalar_out"], norm)
        .bake_scalars()
        .complex();
}
