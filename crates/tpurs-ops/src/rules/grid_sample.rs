//! `grid_sampler_3d` and the 2-d and 3-d backwards: output point `p` of batch `n` reads the input of
//! batch `n` at the point `grid[n, p]` names (`x, y, z` in `[-1, 1]` across the last, second
//! and third last dims), trilinearly or from the nearest element, with zeros, border or
//! reflection padding, computed as CPU PyTorch's kernel computes it. Written over any
//! number `k` of spatial dims, spatial dim `d` being grid component `k - 1 - d`.

use tpurs_hlo::{Builder, CompareDir, DType, Literal, TensorType, Value};

use super::combine::add_c;
use super::conv::{not_for, sum};
use super::full;
use super::search::take;
use super::unpool::scatter_into_planes;
use crate::ctx::{Ctx, Out};
use crate::dtype::{opmath, torch_name};
use crate::error::{runtime, Error, Result};
use crate::table::Registry;

/// A sampling call: interpolation (`linear`, else nearest), padding mode (0 zeros,
/// 1 border, 2 reflection) and `align_corners`.
struct Mode {
    linear: bool,
    padding: i64,
    align: bool,
}

/// Reads the mode arguments at `i..i + 3`; other modes (bicubic) go to the CPU.
fn mode(ctx: &Ctx, i: usize) -> Result<Mode> {
    let (interp, padding) = (ctx.int(i)?, ctx.int(i + 1)?);
    if !(0..=1).contains(&interp) || !(0..=2).contains(&padding) {
        return Err(Error::Uncovered(format!(
            "{}: interpolation mode {interp}, padding mode {padding}",
            ctx.name
        )));
    }
    Ok(Mode {
        linear: interp == 0,
        padding,
        align: ctx.bool_or(i + 2, false)?,
    })
}

/// CPU PyTorch's checks of `input` and `grid` for a `k`-d sampler `kernel`.
fn check(input: &TensorType, grid: &TensorType, k: usize, kernel: &str) -> Result<()> {
    let (x, g) = (&input.shape, &grid.shape);
    if x.first() != g.first() {
        return runtime(format!(
            "grid_sampler(): expected grid and input to have same batch size, but got input with sizes {x:?} and grid with sizes {g:?}"
        ));
    }
    if g.last() != Some(&(x.len() as i64 - 2)) {
        return runtime(format!(
            "grid_sampler(): expected grid to have size {} in last dimension, but got grid with sizes {g:?}",
            x.len() as i64 - 2
        ));
    }
    if x.len() != k + 2 || g.len() != k + 2 {
        return runtime(format!(
            "grid_sampler(): expected {}D input and grid with same number of dimensions, but got input with sizes {x:?} and grid with sizes {g:?}",
            k + 2
        ));
    }
    if let Some(d) = (2..x.len()).find(|&d| x[d] == 0) {
        return runtime(format!(
            "grid_sampler(): expected input to have non-empty spatial dimensions, but input has sizes {x:?} with dimension {d} being empty"
        ));
    }
    if !input.dtype.is_float() {
        return Err(not_for(kernel, input.dtype));
    }
    if grid.dtype != input.dtype {
        return runtime(format!(
            "expected scalar type {} but found {}",
            torch_name(input.dtype),
            torch_name(grid.dtype)
        ));
    }
    Ok(())
}

/// `(at, slope)` clipped to `[0, size - 1]`: `slope` is zeroed where `at` was clipped or
/// on the edge (CPU's `clip_coordinates_set_grad`).
fn clip(b: &mut Builder, at: &Value, slope: &Value, size: i64) -> Result<(Value, Value)> {
    let lo = full(b, at, 0.0);
    let hi = full(b, at, (size - 1) as f64);
    let below = b.compare(CompareDir::Le, at, &lo)?;
    let above = b.compare(CompareDir::Ge, at, &hi)?;
    let out = b.or(&below, &above)?;
    let zero = full(b, slope, 0.0);
    let slope = b.select(&out, &zero, slope)?;
    Ok((b.clamp(&lo, at, &hi), slope))
}

/// `(at, slope)` reflected into `[low / 2, high / 2]` (`low`, `high` given doubled, as in
/// CPU's `reflect_coordinates_set_grad`): each reflection flips the slope's sign.
fn reflect(
    b: &mut Builder,
    at: &Value,
    slope: &Value,
    low: i64,
    high: i64,
) -> Result<(Value, Value)> {
    if low == high {
        return Ok((full(b, at, 0.0), full(b, slope, 0.0)));
    }
    let min = full(b, at, low as f64 / 2.0);
    let span = full(b, at, (high - low) as f64 / 2.0);
    let t = b.sub(at, &min)?;
    let zero = full(b, at, 0.0);
    let negative = b.compare(CompareDir::Lt, &t, &zero)?;
    let t = b.abs(&t);
    let extra = b.rem(&t, &span)?;
    let flips = b.div(&t, &span)?;
    let flips = b.floor(&flips);
    let two = full(b, at, 2.0);
    let parity = b.rem(&flips, &two)?;
    let odd = b.compare(CompareDir::Ne, &parity, &zero)?;
    let even_at = b.add(&extra, &min)?;
    let odd_at = b.sub(&span, &extra)?;
    let odd_at = b.add(&odd_at, &min)?;
    let at = b.select(&odd, &odd_at, &even_at)?;
    let flip = b.xor(&negative, &odd)?;
    let minus = b.neg(slope);
    Ok((at, b.select(&flip, &minus, slope)?))
}

/// Where grid coordinate `g` samples a dim of `size`, and its derivative by `g`
/// (CPU's `grid_sampler_compute_source_index_set_grad`).
fn source(b: &mut Builder, g: &Value, size: i64, m: &Mode) -> Result<(Value, Value)> {
    let onev = full(b, g, 1.0);
    let two = full(b, g, 2.0);
    let t = b.add(g, &onev)?;
    let (at, slope) = if m.align {
        let t = b.div(&t, &two)?;
        let s = full(b, g, (size - 1) as f64);
        (b.mul(&t, &s)?, (size - 1) as f64 / 2.0)
    } else {
        let s = full(b, g, size as f64);
        let t = b.mul(&t, &s)?;
        let t = b.sub(&t, &onev)?;
        (b.div(&t, &two)?, size as f64 / 2.0)
    };
    let slope = full(b, g, slope);
    match m.padding {
        1 => clip(b, &at, &slope, size),
        2 => {
            let (low, high) = if m.align {
                (0, 2 * (size - 1))
            } else {
                (-1, 2 * size - 1)
            };
            let (at, slope) = reflect(b, &at, &slope, low, high)?;
            clip(b, &at, &slope, size)
        }
        _ => Ok((at, slope)),
    }
}

/// One corner of the cell around every sample: its weight (of type `ct`, `(N, P)`), and
/// where it reads (`(N, P)` flat spatial index, 0 where outside) and whether it lies inside.
struct Corner {
    weight: Value,
    /// The weight with dim `d`'s factor replaced by its derivative (linear only).
    partials: Vec<Value>,
    flat: Value,
    inside: Value,
}

/// The sampling plan of `grid` (`(N, ..., k)` of type `ct`) over spatial `sizes`: one corner
/// for nearest sampling, `2^k` for linear (dim 0's offset the most significant bit, as
/// CPU orders them), with each dim's `d(source)/d(grid)`.
fn corners(
    b: &mut Builder,
    grid: &Value,
    sizes: &[i64],
    m: &Mode,
) -> Result<(Vec<Corner>, Vec<Value>)> {
    let k = sizes.len();
    let n = grid.shape()[0];
    let p = grid.shape()[1..=k].iter().product();
    let g = b.reshape(grid, &[n, p, k as i64])?;
    let (mut at, mut slopes) = (Vec::new(), Vec::new());
    for (d, &size) in sizes.iter().enumerate() {
        let c = (k - 1 - d) as i64;
        let gd = b.slice(&g, &[0, 0, c], &[n, p, c + 1], &[1, 1, 1])?;
        let gd = b.reshape(&gd, &[n, p])?;
        let (a, s) = source(b, &gd, size, m)?;
        at.push(a);
        slopes.push(s);
    }
    let count = if m.linear { 1 << k } else { 1 };
    let mut out = Vec::new();
    for corner in 0..count {
        let (mut idx, mut factors, mut derivs) = (Vec::new(), Vec::new(), Vec::new());
        for (d, a) in at.iter().enumerate() {
            if !m.linear {
                let r = b.round_even(a);
                idx.push(b.convert(&r, DType::I64));
                continue;
            }
            let lo = b.floor(a);
            let high = (corner >> (k - 1 - d)) & 1 == 1;
            let (w, sign) = if high {
                (b.sub(a, &lo)?, 1.0)
            } else {
                let onev = full(b, a, 1.0);
                let up = b.add(&lo, &onev)?;
                (b.sub(&up, a)?, -1.0)
            };
            let i = b.convert(&lo, DType::I64);
            let onei = b.full_like(&i, Literal::Int(i64::from(high)));
            idx.push(b.add(&i, &onei)?);
            factors.push(w);
            derivs.push(full(b, a, sign));
        }
        let (flat, inside) = locate(b, &idx, sizes)?;
        // CPU multiplies the factors last dim first.
        let product = |b: &mut Builder, fs: &[Value]| -> Result<Value> {
            let mut w = fs[fs.len() - 1].clone();
            for f in fs[..fs.len() - 1].iter().rev() {
                w = b.mul(&w, f)?;
            }
            Ok(w)
        };
        let weight = if m.linear {
            product(b, &factors)?
        } else {
            b.splat(Literal::Float(1.0), &at[0].ty)
        };
        let mut partial = Vec::new();
        for d in 0..derivs.len() {
            let mut fs = factors.clone();
            fs[d] = derivs[d].clone();
            partial.push(product(b, &fs)?);
        }
        out.push(Corner {
            weight,
            partials: partial,
            flat,
            inside,
        });
    }
    Ok((out, slopes))
}

/// The flat spatial index of per-dim indices `idx` (0 where any lies outside `sizes`) and
/// whether all lie inside.
fn locate(b: &mut Builder, idx: &[Value], sizes: &[i64]) -> Result<(Value, Value)> {
    let mut flat = b.full_like(&idx[0], Literal::Int(0));
    let mut inside = b.splat(
        Literal::Bool(true),
        &TensorType::new(DType::Bool, idx[0].shape().to_vec()),
    );
    for (i, &size) in idx.iter().zip(sizes) {
        let zero = b.full_like(i, Literal::Int(0));
        let end = b.full_like(i, Literal::Int(size));
        let ge = b.compare(CompareDir::Ge, i, &zero)?;
        let lt = b.compare(CompareDir::Lt, i, &end)?;
        inside = b.and(&inside, &ge)?;
        inside = b.and(&inside, &lt)?;
        flat = b.mul(&flat, &end)?;
        flat = b.add(&flat, i)?;
    }
    let zero = b.full_like(&flat, Literal::Int(0));
    Ok((b.select(&inside, &flat, &zero)?, inside))
}

/// `(N, P)` broadcast over the channels to `(N, C, P)`.
fn per_channel(b: &mut Builder, v: &Value, c: i64) -> Result<Value> {
    let (n, p) = (v.shape()[0], v.shape()[1]);
    Ok(b.broadcast_in_dim(v, &[n, c, p], &[0, 2])?)
}

/// The input values `(N, C, P)` at a corner (zero outside), `x` being `(N, C, S)`.
fn read(b: &mut Builder, x: &Value, corner: &Corner) -> Result<Value> {
    let (n, c, s) = (x.shape()[0], x.shape()[1], x.shape()[2]);
    let flat_x = b.reshape(x, &[n * c * s])?;
    let p = corner.flat.shape()[1];
    let ty = TensorType::new(DType::I64, vec![n, c, p]);
    let nn = b.iota(&ty, 0);
    let cc = b.iota(&ty, 1);
    let cs = b.full_like(&nn, Literal::Int(c));
    let ss = b.full_like(&nn, Literal::Int(s));
    let plane = b.mul(&nn, &cs)?;
    let plane = b.add(&plane, &cc)?;
    let base = b.mul(&plane, &ss)?;
    let at = per_channel(b, &corner.flat, c)?;
    let at = b.add(&base, &at)?;
    let v = take(b, &flat_x, &at)?;
    let inside = per_channel(b, &corner.inside, c)?;
    let zero = b.full_like(&v, Literal::Int(0));
    Ok(b.select(&inside, &v, &zero)?)
}

/// Input `(N, C, S...)` as `(N, C, S)` of type `ct`, with its spatial sizes.
fn planes(b: &mut Builder, x: &Value, ct: DType) -> Result<(Value, Vec<i64>)> {
    let sizes = x.shape()[2..].to_vec();
    let x = b.convert(x, ct);
    let flat = [x.shape()[0], x.shape()[1], sizes.iter().product()];
    Ok((b.reshape(&x, &flat)?, sizes))
}

/// `grid_sampler_3d(input, grid, interpolation_mode, padding_mode, align_corners)`.
fn grid_sampler(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let (xt, gt) = (ctx.ty(0)?, ctx.ty(1)?);
    check(&xt, &gt, 3, "grid_sampler3d_cpu")?;
    let m = mode(ctx, 2)?;
    let ct = opmath(xt.dtype);
    let (x, grid) = (ctx.tensor(0)?, ctx.tensor(1)?);
    let b = &mut ctx.b;
    let (x, sizes) = planes(b, &x, ct)?;
    let grid = b.convert(&grid, ct);
    let (cs, _) = corners(b, &grid, &sizes, &m)?;
    let (n, c) = (xt.shape[0], xt.shape[1]);
    let mut y = b.splat(
        Literal::Float(0.0),
        &TensorType::new(ct, vec![n, c, cs[0].flat.shape()[1]]),
    );
    for corner in &cs {
        let v = read(b, &x, corner)?;
        let w = per_channel(b, &corner.weight, c)?;
        let t = b.mul(&v, &w)?;
        y = b.add(&y, &t)?;
    }
    let mut shape = vec![n, c];
    shape.extend(&gt.shape[1..gt.rank() - 1]);
    let y = b.reshape(&y, &shape)?;
    Ok(vec![Some(b.convert(&y, xt.dtype))])
}

/// `grid_sampler_{2,3}d_backward(grad_output, input, grid, interpolation_mode,
/// padding_mode, align_corners, output_mask) -> (grad_input, grad_grid)` over `k` spatial
/// dims: the gradient spread back to the corners each sample read, and the slope of the
/// interpolation along each grid component (zero for nearest sampling). The grid's gradient
/// is always returned, as on CPU. (The 2-d forward runs through torch's decomposition.)
fn grid_sampler_backward(ctx: &mut Ctx, k: usize, kernel: &str) -> Result<Vec<Out>> {
    let (xt, gt) = (ctx.ty(1)?, ctx.ty(2)?);
    check(&xt, &gt, k, kernel)?;
    let m = mode(ctx, 3)?;
    let want_input = ctx.bool_list(6)?.first().copied().unwrap_or(true);
    let ct = opmath(xt.dtype);
    let (gy, x, grid) = (ctx.tensor(0)?, ctx.tensor(1)?, ctx.tensor(2)?);
    let b = &mut ctx.b;
    let (x, sizes) = planes(b, &x, ct)?;
    let grid = b.convert(&grid, ct);
    let (cs, slopes) = corners(b, &grid, &sizes, &m)?;
    let (n, c, s) = (x.shape()[0], x.shape()[1], x.shape()[2]);
    let p = cs[0].flat.shape()[1];
    let gy = b.convert(&gy, ct);
    let gy = b.reshape(&gy, &[n, c, p])?;
    let grad_input = if want_input {
        let (mut values, mut at) = (Vec::new(), Vec::new());
        for corner in &cs {
            let w = per_channel(b, &corner.weight, c)?;
            let v = b.mul(&gy, &w)?;
            let inside = per_channel(b, &corner.inside, c)?;
            let zero = b.full_like(&v, Literal::Int(0));
            values.push(b.select(&inside, &v, &zero)?);
            at.push(per_channel(b, &corner.flat, c)?);
        }
        let values = b.concatenate(&values.iter().collect::<Vec<_>>(), 2)?;
        let at = b.concatenate(&at.iter().collect::<Vec<_>>(), 2)?;
        let gi = scatter_into_planes(b, &values, &at, n * c, s, Some(add_c))?;
        let gi = b.reshape(&gi, &xt.shape)?;
        Some(b.convert(&gi, xt.dtype))
    } else {
        None
    };
    let k = sizes.len();
    let mut comps = vec![b.splat(Literal::Float(0.0), &TensorType::new(ct, vec![n, p])); k];
    if m.linear {
        for corner in &cs {
            let v = read(b, &x, corner)?;
            let vg = b.mul(&v, &gy)?;
            let vg = sum(b, &vg, &[1]);
            for (d, slope) in corner.partials.iter().enumerate() {
                let t = b.mul(&vg, slope)?;
                comps[d] = b.add(&comps[d], &t)?;
            }
        }
    }
    // Grid component `k - 1 - d` is spatial dim `d`.
    let mut parts = Vec::new();
    for d in (0..k).rev() {
        let g = b.mul(&comps[d], &slopes[d])?;
        parts.push(b.reshape(&g, &[n, p, 1])?);
    }
    let gg = b.concatenate(&parts.iter().collect::<Vec<_>>(), 2)?;
    let gg = b.reshape(&gg, &gt.shape)?;
    Ok(vec![grad_input, Some(b.convert(&gg, gt.dtype))])
}

pub(crate) fn register(reg: &mut Registry) {
    reg.ops(&["grid_sampler_3d", "grid_sampler_3d.out"], grid_sampler);
    reg.ops(
        &["grid_sampler_2d_backward", "grid_sampler_2d_backward.out"],
        |ctx| grid_sampler_backward(ctx, 2, "grid_sampler_2d_backward_cpu_kernel_impl"),
    );
    reg.ops(
        &["grid_sampler_3d_backward", "grid_sampler_3d_backward.out"],
        |ctx| grid_sampler_backward(ctx, 3, "grid_sampler_3d_backward_cpu"),
    );
}
