//! More activations and their backwards (elu / celu, softplus, log_sigmoid, mish,
//! hardsigmoid, hardswish, logit, hard / soft shrink, rrelu) and the binary ops built like them
//! (xlogy, logaddexp, logaddexp2, rsub). Each is computed in its opmath type, following
//! PyTorch's CPU formulas so that gradients match at the branch points.

use tpurs_hlo::{Builder, CompareDir, Literal, TensorType, Value};

use super::complex_math::logaddexp_of;
use super::nn::{grad_pair, require_float, scalar_like, widen};
use super::random::uniform_of;
use super::{common_dtype, float_dtype, full, one, operands};
use crate::ctx::{Arg, Ctx, Out};
use crate::dtype::{opmath, torch_name};
use crate::error::{runtime, Error, Result};
use crate::table::Registry;

/// Applies `f` to argument 0 widened to its opmath type, converting back to its dtype.
fn unary(
    ctx: &mut Ctx,
    kernel: &str,
    f: impl FnOnce(&mut Ctx, &Value) -> Result<Value>,
) -> Result<Vec<Out>> {
    let d = require_float(ctx, 0, kernel)?;
    let x = ctx.tensor(0)?;
    let x = widen(&mut ctx.b, &x);
    let y = f(ctx, &x)?;
    one(ctx.b.convert(&y, d))
}

/// `(grad, self)` backward: `f(ctx, g, x)` in the opmath type of their common dtype.
fn backward(
    ctx: &mut Ctx,
    f: impl FnOnce(&mut Ctx, &Value, &Value) -> Result<Value>,
) -> Result<Vec<Out>> {
    let (d, g, x) = grad_pair(ctx)?;
    let r = f(ctx, &g, &x)?;
    one(ctx.b.convert(&r, d))
}

fn cmp(b: &mut Builder, dir: CompareDir, x: &Value, c: f64) -> Result<Value> {
    let c = full(b, x, c);
    Ok(b.compare(dir, x, &c)?)
}

/// `scale * alpha * (exp(x * input_scale) - 1)` for `x <= 0`, `scale * x` above.
fn elu_of(
    b: &mut Builder,
    x: &Value,
    alpha: &Value,
    scale: &Value,
    input: &Value,
) -> Result<Value> {
    let xi = b.mul(x, input)?;
    let e = b.expm1(&xi);
    let neg = b.mul(&e, alpha)?;
    let neg = b.mul(&neg, scale)?;
    let pos = b.mul(x, scale)?;
    let le = cmp(b, CompareDir::Le, x, 0.0)?;
    Ok(b.select(&le, &neg, &pos)?)
}

/// `elu(self, alpha, scale, input_scale)`.
fn elu(ctx: &mut Ctx) -> Result<Vec<Out>> {
    unary(ctx, "elu_cpu", |ctx, x| {
        let alpha = scalar_like(ctx, 1, x)?;
        let scale = scalar_like(ctx, 2, x)?;
        let input = scalar_like(ctx, 3, x)?;
        elu_of(&mut ctx.b, x, &alpha, &scale, &input)
    })
}

/// `celu(self, alpha)`: `elu(x, alpha, 1, 1 / alpha)`.
fn celu(ctx: &mut Ctx) -> Result<Vec<Out>> {
    unary(ctx, "elu_cpu", |ctx, x| {
        let alpha = scalar_like(ctx, 1, x)?;
        let one_v = full(&mut ctx.b, x, 1.0);
        let input = ctx.b.div(&one_v, &alpha)?;
        elu_of(&mut ctx.b, x, &alpha, &one_v, &input)
    })
}

/// `elu_backward(grad, alpha, scale, input_scale, is_result, self_or_result)`.
fn elu_backward(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let d = common_dtype(ctx, &[0, 5])?;
    let v = operands(ctx, &[0, 5], opmath(d))?;
    let (g, x) = (&v[0], &v[1]);
    let alpha = scalar_like(ctx, 1, x)?;
    let scale = scalar_like(ctx, 2, x)?;
    let input = scalar_like(ctx, 3, x)?;
    let is_result = ctx.bool_or(4, false)?;
    let b = &mut ctx.b;
    let neg_coef = b.mul(&alpha, &scale)?;
    let neg = if is_result {
        // d/dx from the output y: input_scale * (y + alpha * scale).
        let t = b.add(x, &neg_coef)?;
        b.mul(&t, &input)?
    } else {
        let xi = b.mul(x, &input)?;
        let e = b.exp(&xi);
        let t = b.mul(&e, &neg_coef)?;
        b.mul(&t, &input)?
    };
    let le = cmp(b, CompareDir::Le, x, 0.0)?;
    let slope = b.select(&le, &neg, &scale)?;
    let r = b.mul(g, &slope)?;
    one(b.convert(&r, d))
}

/// `softplus(self, beta, threshold)`: `log1p(exp(beta x)) / beta`, `x` past the threshold.
fn softplus(ctx: &mut Ctx) -> Result<Vec<Out>> {
    unary(ctx, "softplus_cpu", |ctx, x| {
        let beta = scalar_like(ctx, 1, x)?;
        let th = scalar_like(ctx, 2, x)?;
        let b = &mut ctx.b;
        let bx = b.mul(x, &beta)?;
        let e = b.exp(&bx);
        let l = b.log1p(&e);
        let soft = b.div(&l, &beta)?;
        let over = b.compare(CompareDir::Gt, &bx, &th)?;
        Ok(b.select(&over, x, &soft)?)
    })
}

/// `softplus_backward(grad, self, beta, threshold)`: `g * z / (z + 1)`, `z = exp(beta x)`.
fn softplus_backward(ctx: &mut Ctx) -> Result<Vec<Out>> {
    backward(ctx, |ctx, g, x| {
        let beta = scalar_like(ctx, 2, x)?;
        let th = scalar_like(ctx, 3, x)?;
        let b = &mut ctx.b;
        let bx = b.mul(x, &beta)?;
        let z = b.exp(&bx);
        let one_v = full(b, &z, 1.0);
        let zp = b.add(&z, &one_v)?;
        let s = b.div(&z, &zp)?;
        let soft = b.mul(g, &s)?;
        let over = b.compare(CompareDir::Gt, &bx, &th)?;
        Ok(b.select(&over, g, &soft)?)
    })
}

/// `log_sigmoid_forward(self) -> (output, buffer)`: `min(x, 0) - log1p(exp(-|x|))`, and
/// `buffer = exp(-|x|)` as CPU PyTorch keeps it for the backward.
fn log_sigmoid_forward(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let d = require_float(ctx, 0, "log_sigmoid_forward_cpu")?;
    let x = ctx.tensor(0)?;
    let b = &mut ctx.b;
    let x = widen(b, &x);
    let a = b.abs(&x);
    let na = b.neg(&a);
    let z = b.exp(&na);
    let l = b.log1p(&z);
    let zero = full(b, &x, 0.0);
    let m = b.min(&x, &zero)?;
    let out = b.sub(&m, &l)?;
    Ok(vec![Some(b.convert(&out, d)), Some(b.convert(&z, d))])
}

/// `log_sigmoid_backward(grad, self, buffer)`: `(max' - sign * z / (1 + z)) * g`.
fn log_sigmoid_backward(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let d = common_dtype(ctx, &[0, 1, 2])?;
    let v = operands(ctx, &[0, 1, 2], opmath(d))?;
    let (g, x, z) = (&v[0], &v[1], &v[2]);
    let b = &mut ctx.b;
    let neg = cmp(b, CompareDir::Lt, x, 0.0)?;
    let one_v = full(b, x, 1.0);
    let zero = full(b, x, 0.0);
    let minus = full(b, x, -1.0);
    let max_deriv = b.select(&neg, &one_v, &zero)?;
    let sign = b.select(&neg, &one_v, &minus)?;
    let zp = b.add(&one_v, z)?;
    let q = b.div(z, &zp)?;
    let q = b.mul(&sign, &q)?;
    let r = b.sub(&max_deriv, &q)?;
    let r = b.mul(&r, g)?;
    one(b.convert(&r, d))
}

/// `mish(self)`: `x * tanh(softplus(x))`.
fn mish(ctx: &mut Ctx) -> Result<Vec<Out>> {
    unary(ctx, "mish_cpu", |ctx, x| {
        let b = &mut ctx.b;
        let e = b.exp(x);
        let sp = b.log1p(&e);
        let over = cmp(b, CompareDir::Gt, x, 20.0)?;
        let sp = b.select(&over, x, &sp)?;
        let t = b.tanh(&sp);
        Ok(b.mul(x, &t)?)
    })
}

/// `hardsigmoid(self)`: `clamp(x / 6 + 1 / 2, 0, 1)`.
fn hardsigmoid(ctx: &mut Ctx) -> Result<Vec<Out>> {
    unary(ctx, "hardsigmoid_cpu", |ctx, x| {
        let b = &mut ctx.b;
        let six = full(b, x, 6.0);
        let half = full(b, x, 0.5);
        let t = b.div(x, &six)?;
        let t = b.add(&t, &half)?;
        let (lo, hi) = (full(b, x, 0.0), full(b, x, 1.0));
        Ok(b.clamp(&lo, &t, &hi))
    })
}

/// `hardsigmoid_backward(grad, self)`: `g / 6` inside `(-3, 3)`.
fn hardsigmoid_backward(ctx: &mut Ctx) -> Result<Vec<Out>> {
    backward(ctx, |ctx, g, x| {
        let b = &mut ctx.b;
        let gt = cmp(b, CompareDir::Gt, x, -3.0)?;
        let lt = cmp(b, CompareDir::Lt, x, 3.0)?;
        let inside = b.and(&gt, &lt)?;
        let six = full(b, g, 6.0);
        let r = b.div(g, &six)?;
        let zero = full(b, g, 0.0);
        Ok(b.select(&inside, &r, &zero)?)
    })
}

/// `hardswish(self)`: `x * clamp(x + 3, 0, 6) / 6`.
fn hardswish(ctx: &mut Ctx) -> Result<Vec<Out>> {
    unary(ctx, "hardswish_cpu", |ctx, x| {
        let b = &mut ctx.b;
        let three = full(b, x, 3.0);
        let t = b.add(x, &three)?;
        let (lo, hi) = (full(b, x, 0.0), full(b, x, 6.0));
        let t = b.clamp(&lo, &t, &hi);
        let t = b.mul(x, &t)?;
        Ok(b.div(&t, &hi)?)
    })
}

/// `hardswish_backward(grad, self)`: 0 up to -3, `g (x / 3 + 1/2)` inside, `g` from 3 on.
fn hardswish_backward(ctx: &mut Ctx) -> Result<Vec<Out>> {
    backward(ctx, |ctx, g, x| {
        let b = &mut ctx.b;
        let three = full(b, x, 3.0);
        let half = full(b, x, 0.5);
        let mid = b.div(x, &three)?;
        let mid = b.add(&mid, &half)?;
        let mid = b.mul(g, &mid)?;
        let zero = full(b, g, 0.0);
        let low = cmp(b, CompareDir::Le, x, -3.0)?;
        let high = cmp(b, CompareDir::Ge, x, 3.0)?;
        let r = b.select(&high, g, &mid)?;
        Ok(b.select(&low, &zero, &r)?)
    })
}

/// The `eps` argument `i` (a float or `None`).
fn eps(ctx: &Ctx, i: usize) -> Result<Option<f64>> {
    ctx.opt_float(i)
}

/// `logit(self, eps)`: `log(x / (1 - x))`, `x` clamped to `[eps, 1 - eps]` when given.
fn logit(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let e = eps(ctx, 1)?;
    let d = float_dtype(ctx.ty(0)?.dtype, ctx.default_float());
    let x = ctx.tensor(0)?;
    let b = &mut ctx.b;
    let x = b.convert(&x, opmath(d));
    let x = match e {
        // PyTorch's order: `x < eps ? eps : (x > 1 - eps ? 1 - eps : x)` (eps > 0.5 inverts
        // the bounds, where a clamp would differ).
        Some(e) => {
            let (lo, hi) = (full(b, &x, e), full(b, &x, 1.0 - e));
            let above = b.compare(CompareDir::Gt, &x, &hi)?;
            let upper = b.select(&above, &hi, &x)?;
            let below = b.compare(CompareDir::Lt, &x, &lo)?;
            b.select(&below, &lo, &upper)?
        }
        None => x,
    };
    let one_v = full(b, &x, 1.0);
    let den = b.sub(&one_v, &x)?;
    let q = b.div(&x, &den)?;
    let r = b.log(&q);
    one(b.convert(&r, d))
}

/// `logit_backward(grad, self, eps)`: `g / (x (1 - x))`, 0 outside `[eps, 1 - eps]` (NaN
/// outside `[0, 1]` without eps).
fn logit_backward(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let e = eps(ctx, 2)?;
    backward(ctx, |ctx, g, x| {
        let b = &mut ctx.b;
        let one_v = full(b, x, 1.0);
        let omx = b.sub(&one_v, x)?;
        let den = b.mul(x, &omx)?;
        let r = b.div(g, &den)?;
        let (lo, hi, fill) = match e {
            Some(e) => (e, 1.0 - e, 0.0),
            None => (0.0, 1.0, f64::NAN),
        };
        let below = cmp(b, CompareDir::Lt, x, lo)?;
        let above = cmp(b, CompareDir::Gt, x, hi)?;
        let out = b.or(&below, &above)?;
        let fill = full(b, x, fill);
        Ok(b.select(&out, &fill, &r)?)
    })
}

/// `|x| <= lambd` (the dead zone of both shrinks).
fn dead_zone(ctx: &mut Ctx, x: &Value, lambd_at: usize) -> Result<(Value, Value)> {
    let l = scalar_like(ctx, lambd_at, x)?;
    let b = &mut ctx.b;
    let nl = b.neg(&l);
    let ge = b.compare(CompareDir::Ge, x, &nl)?;
    let le = b.compare(CompareDir::Le, x, &l)?;
    Ok((b.and(&ge, &le)?, l))
}

/// `hardshrink(self, lambd)`: 0 in `[-lambd, lambd]`, else `x`.
fn hardshrink(ctx: &mut Ctx) -> Result<Vec<Out>> {
    unary(ctx, "hardshrink_cpu", |ctx, x| {
        let (dead, _) = dead_zone(ctx, x, 1)?;
        let zero = full(&mut ctx.b, x, 0.0);
        Ok(ctx.b.select(&dead, &zero, x)?)
    })
}

/// `softshrink(self, lambd)`: `x - sign(x) lambd` outside `[-lambd, lambd]`, else 0.
fn softshrink(ctx: &mut Ctx) -> Result<Vec<Out>> {
    unary(ctx, "softshrink_cpu", |ctx, x| {
        let (dead, l) = dead_zone(ctx, x, 1)?;
        let b = &mut ctx.b;
        let s = b.sign(x);
        let sl = b.mul(&s, &l)?;
        let shrunk = b.sub(x, &sl)?;
        let zero = full(b, x, 0.0);
        Ok(b.select(&dead, &zero, &shrunk)?)
    })
}

/// `hardshrink_backward` / `softshrink_backward(grad, self, lambd)`: 0 in the dead zone.
fn shrink_backward(ctx: &mut Ctx) -> Result<Vec<Out>> {
    backward(ctx, |ctx, g, x| {
        let (dead, _) = dead_zone(ctx, x, 2)?;
        let zero = full(&mut ctx.b, g, 0.0);
        Ok(ctx.b.select(&dead, &zero, g)?)
    })
}

/// The promoted float dtype of arguments 0 and 1 and both operands in its opmath type.
fn float_pair(ctx: &mut Ctx) -> Result<(tpurs_hlo::DType, Value, Value)> {
    let d = float_dtype(common_dtype(ctx, &[0, 1])?, ctx.default_float());
    let v = operands(ctx, &[0, 1], opmath(d))?;
    Ok((d, v[0].clone(), v[1].clone()))
}

/// `xlogy(self, other)`: 0 where `self == 0` (unless `other` is NaN), else `self * log(other)`;
/// `special_xlog1py` the same with `log1p(other)`.
fn xlogy(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let log1p = ctx.name.starts_with("special_xlog1py");
    let (d, x, y) = float_pair(ctx)?;
    let b = &mut ctx.b;
    let l = if log1p { b.log1p(&y) } else { b.log(&y) };
    let p = b.mul(&x, &l)?;
    let x0 = cmp(b, CompareDir::Eq, &x, 0.0)?;
    let ynan = b.compare(CompareDir::Ne, &y, &y)?;
    let ynum = b.not(&ynan);
    let zero_case = b.and(&x0, &ynum)?;
    let zero = full(b, &p, 0.0);
    let r = b.select(&zero_case, &zero, &p)?;
    one(b.convert(&r, d))
}

/// `logaddexp(self, other)` (base e) and `logaddexp2` (base 2): `m + log(1 + base^-|a-b|)`,
/// and `a` itself when both are the same infinity.
fn logaddexp(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let base2 = ctx.name.starts_with("logaddexp2");
    let (d, x, y) = float_pair(ctx)?;
    let b = &mut ctx.b;
    if d.is_complex() {
        if base2 {
            return Err(Error::NotImplemented(format!(
                "\"logaddexp2_cpu\" not implemented for '{}'",
                torch_name(d)
            )));
        }
        return one(logaddexp_of(b, &x, &y)?);
    }
    let m = b.max(&x, &y)?;
    let diff = b.sub(&x, &y)?;
    let diff = b.abs(&diff);
    let nd = b.neg(&diff);
    let r = if base2 {
        let ln2 = full(b, &x, std::f64::consts::LN_2);
        let e = b.mul(&nd, &ln2)?;
        let e = b.exp(&e);
        let l = b.log1p(&e);
        let l = b.div(&l, &ln2)?;
        b.add(&m, &l)?
    } else {
        let e = b.exp(&nd);
        let l = b.log1p(&e);
        b.add(&m, &l)?
    };
    let same = b.compare(CompareDir::Eq, &x, &y)?;
    let inf = b.abs(&x);
    let inf = cmp(b, CompareDir::Eq, &inf, f64::INFINITY)?;
    let same_inf = b.and(&same, &inf)?;
    let r = b.select(&same_inf, &x, &r)?;
    one(b.convert(&r, d))
}

/// `heaviside(self, values)`: `values` where `self` is 0, else `self > 0` (so 0 for NaN).
fn heaviside(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let (d, dv) = (ctx.ty(0)?.dtype, ctx.ty(1)?.dtype);
    if d != dv {
        return runtime("heaviside is not yet implemented for tensors with different dtypes.");
    }
    let v = operands(ctx, &[0, 1], d)?;
    let b = &mut ctx.b;
    let zero = b.full_like(&v[0], Literal::Int(0));
    let at_zero = b.compare(CompareDir::Eq, &v[0], &zero)?;
    let positive = b.compare(CompareDir::Gt, &v[0], &zero)?;
    let step = b.convert(&positive, d);
    one(b.select(&at_zero, &v[1], &step)?)
}

/// `rsub(self, other, alpha)`: `other - alpha * self`.
fn rsub(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let d = common_dtype(ctx, &[0, 1])?;
    let v = operands(ctx, &[0, 1], d)?;
    let mut x = v[0].clone();
    if matches!(ctx.arg(2), Arg::Scalar(_)) {
        let alpha = ctx.tensor(2)?;
        let alpha = ctx.b.convert(&alpha, d);
        let alpha = ctx.b.broadcast_to(&alpha, x.shape())?;
        x = ctx.b.mul(&x, &alpha)?;
    }
    one(ctx.b.sub(&v[1], &x)?)
}

/// `x > 0 ? x : x * slope` (leaky relu), in `x`'s type.
fn leaky(b: &mut Builder, x: &Value, on: &Value, slope: f64) -> Result<Value> {
    let zero = full(b, x, 0.0);
    let pos = b.compare(CompareDir::Gt, x, &zero)?;
    let s = full(b, on, slope);
    let neg = b.mul(on, &s)?;
    Ok(b.select(&pos, on, &neg)?)
}

/// `rrelu_with_noise(self, noise, lower, upper, training, generator)` and its in-place,
/// `out=` and functional (`-> (out, noise_out)`) forms. Training: each non-positive element
/// is scaled by its own draw from `U(lower, upper)` (the device generator), which `noise`
/// records (1 elsewhere); evaluation: leaky relu with slope `(lower + upper) / 2`, `noise`
/// untouched. The bounds are baked: the sampling range and checks need them on the host.
fn rrelu_with_noise(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let (ty, nt) = (ctx.ty(0)?, ctx.ty(1)?);
    if ty.shape != nt.shape {
        return runtime(format!(
            "noise tensor shape must match self tensor shape. Got self.shape = {:?} noise.shape = {:?}",
            ty.shape, nt.shape
        ));
    }
    let (lower, upper) = (ctx.float(2)?, ctx.float(3)?);
    let training = ctx.bool_or(4, false)?;
    let functional = ctx.name.starts_with("rrelu_with_noise_functional");
    if !training {
        let d = require_float(ctx, 0, "leaky_relu_cpu")?;
        let x = ctx.tensor(0)?;
        let x = widen(&mut ctx.b, &x);
        let y = leaky(&mut ctx.b, &x, &x, (lower + upper) / 2.0)?;
        let y = Some(ctx.b.convert(&y, d));
        return Ok(if functional {
            vec![y, Some(ctx.tensor(1)?)]
        } else {
            vec![y]
        });
    }
    let d = require_float(ctx, 0, "rrelu_with_noise_out_cpu")?;
    if nt.dtype != d {
        return runtime(format!(
            "expected scalar type {} but found {}",
            torch_name(d),
            torch_name(nt.dtype)
        ));
    }
    if lower > upper {
        return runtime("Expected from <= to to be true, but got false.  (Could this error message be improved?  If so, please report an enhancement request to PyTorch.)");
    }
    // Drawn in `self`'s dtype, so that the output is exactly `self * noise`.
    let r = uniform_of(ctx, &TensorType::new(d, ty.shape.clone()), lower, upper)?;
    let x = ctx.tensor(0)?;
    let b = &mut ctx.b;
    let x = widen(b, &x);
    let r = b.convert(&r, x.dtype());
    let zero = full(b, &x, 0.0);
    let neg = b.compare(CompareDir::Le, &x, &zero)?;
    let onev = full(b, &x, 1.0);
    let noise = b.select(&neg, &r, &onev)?;
    let y = b.mul(&x, &noise)?;
    let y = b.convert(&y, d);
    let noise = b.convert(&noise, d);
    if functional {
        return Ok(vec![Some(y), Some(noise)]);
    }
    let writes = ctx.writes();
    if let Some(k) = writes.iter().position(|w| w.arg == 1 && !w.is_out) {
        ctx.write(k, noise);
    }
    one(y)
}

/// `rrelu_with_noise_backward(grad_output, self, noise, lower, upper, training,
/// self_is_result)`: `grad * noise` after a training draw, leaky relu's backward with slope
/// `(lower + upper) / 2` otherwise.
fn rrelu_with_noise_backward(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let (lower, upper) = (ctx.float(3)?, ctx.float(4)?);
    let (training, self_is_result) = (ctx.bool_or(5, false)?, ctx.bool_or(6, false)?);
    let d = common_dtype(ctx, &[0, 1])?;
    let w = opmath(d);
    if training {
        let vs = operands(ctx, &[0, 2], w)?;
        let r = ctx.b.mul(&vs[0], &vs[1])?;
        return one(ctx.b.convert(&r, d));
    }
    let slope = (lower + upper) / 2.0;
    if self_is_result && slope < 0.0 {
        return runtime("In-place leakyReLu backward calculation is triggered with a negative slope which is not supported. This is caused by calling in-place forward function with a negative slope, please call out-of-place version instead. File an issue at https://github.com/pytorch/pytorch if you do require supporting in-place leakRelu backward calculation with negative slope");
    }
    let vs = operands(ctx, &[0, 1], w)?;
    let r = leaky(&mut ctx.b, &vs[1], &vs[0], slope)?;
    one(ctx.b.convert(&r, d))
}

pub(crate) fn register(reg: &mut Registry) {
    reg.ops(&["elu", "elu_", "elu.out"], elu);
    reg.ops(&["celu", "celu_", "celu.out"], celu);
    reg.ops(&["elu_backward", "elu_backward.grad_input"], elu_backward);
    reg.ops(&["softplus", "softplus.out"], softplus);
    reg.ops(
        &["softplus_backward", "softplus_backward.grad_input"],
        softplus_backward,
    );
    reg.ops(
        &["log_sigmoid_forward", "log_sigmoid_forward.output"],
        log_sigmoid_forward,
    );
    reg.ops(
        &["log_sigmoid_backward", "log_sigmoid_backward.grad_input"],
        log_sigmoid_backward,
    );
    reg.ops(&["mish", "mish_", "mish.out"], mish);
    reg.ops(
        &["hardsigmoid", "hardsigmoid_", "hardsigmoid.out"],
        hardsigmoid,
    );
    reg.ops(
        &["hardsigmoid_backward", "hardsigmoid_backward.grad_input"],
        hardsigmoid_backward,
    );
    reg.ops(&["hardswish", "hardswish_", "hardswish.out"], hardswish);
    reg.ops(
        &["hardswish_backward", "hardswish_backward.out"],
        hardswish_backward,
    );
    reg.ops(&["logit", "logit_", "logit.out"], logit);
    reg.ops(
        &["logit_backward", "logit_backward.grad_input"],
        logit_backward,
    );
    reg.ops(&["hardshrink", "hardshrink.out"], hardshrink);
    reg.ops(&["softshrink", "softshrink.out"], softshrink);
    reg.ops(
        &[
            "hardshrink_backward",
            "hardshrink_backward.grad_input",
            "softshrink_backward",
            "softshrink_backward.grad_input",
        ],
        shrink_backward,
    );
    reg.ops(
        &[
            "xlogy.Tensor",
            "xlogy.Scalar_Self",
            "xlogy.Scalar_Other",
            "xlogy.OutTensor",
            "xlogy.OutScalar_Self",
            "xlogy.OutScalar_Other",
            "xlogy_.Tensor",
            "xlogy_.Scalar_Other",
            "special_xlog1py",
            "special_xlog1py.self_scalar",
            "special_xlog1py.other_scalar",
            "special_xlog1py.out",
            "special_xlog1py.self_scalar_out",
            "special_xlog1py.other_scalar_out",
        ],
        xlogy,
    );
    reg.ops(
        &["logaddexp", "logaddexp.out", "logaddexp2", "logaddexp2.out"],
        logaddexp,
    )
    .complex();
    reg.ops(&["heaviside", "heaviside_", "heaviside.out"], heaviside);
    reg.ops(
        &[
            "rsub.Tensor",
            "rsub.Scalar",
            "rsub.Tensor_out",
            "rsub.Scalar_out",
        ],
        rsub,
    )
    .complex();
    reg.ops(
        &[
            "rrelu_with_noise",
            "rrelu_with_noise_",
            "rrelu_with_noise.out",
            "rrelu_with_noise_functional",
        ],
        rrelu_with_noise,
    )
    .bake_scalars();
    reg.ops(
        &["rrelu_with_noise_backward", "rrelu_with_noise_backward.out"],
        rrelu_with_noise_backward,
    )
    .bake_scalars();
}
