//! Adaptive max and average pooling (2-d and 3-d) and their backwards. Output cell `o` of
//! a spatial dim of size `S` pooled to `O` covers `[floor(o S / O), ceil((o + 1) S / O))`.
//! The max over a box is taken one dim at a time, last dim first: each step masks the dim
//! to every cell's window and reduces it, so ties resolve to the first element in
//! row-major order, as on CPU, and the flat index of the winner travels along. Averages
//! sum one dim at a time and divide once by the box's volume.

use tpurs_hlo::{Builder, CompareDir, DType, Literal, TensorType, Value};

use super::combine::{add_c, lowest};
use super::conv::{not_for, sum};
use super::one;
use super::reduce::arg_extreme;
use super::unpool::scatter_into_planes;
use crate::ctx::{Ctx, Out};
use crate::dtype::opmath;
use crate::error::{runtime, Result};
use crate::table::Registry;

/// `[O, S]` booleans: element `s` lies in output cell `o`'s window.
fn windows(b: &mut Builder, size: i64, out: i64) -> Result<Value> {
    let ty = TensorType::new(DType::I64, vec![out, size]);
    let o = b.iota(&ty, 0);
    let s = b.iota(&ty, 1);
    let big_s = b.splat(Literal::Int(size), &ty);
    let big_o = b.splat(Literal::Int(out), &ty);
    let one = b.splat(Literal::Int(1), &ty);
    let os = b.mul(&o, &big_s)?;
    let start = b.div(&os, &big_o)?;
    let o1 = b.add(&o, &one)?;
    let o1s = b.mul(&o1, &big_s)?;
    let om1 = b.sub(&big_o, &one)?;
    let end = b.add(&o1s, &om1)?;
    let end = b.div(&end, &big_o)?;
    let ge = b.compare(CompareDir::Ge, &s, &start)?;
    let lt = b.compare(CompareDir::Lt, &s, &end)?;
    Ok(b.and(&ge, &lt)?)
}

/// Pools dim `d` of `(v, idx)` to `out` cells: max value and the flat index it came from.
fn pool_dim(b: &mut Builder, v: &Value, idx: &Value, d: usize, out: i64) -> Result<(Value, Value)> {
    let r = v.rank();
    let size = v.shape()[d];
    // Move `d` last, add the output-cell axis before it.
    let mut perm: Vec<i64> = (0..r as i64).filter(|&k| k != d as i64).collect();
    perm.push(d as i64);
    let vt = b.transpose(v, &perm)?;
    let it = b.transpose(idx, &perm)?;
    let mut wide = vt.shape()[..r - 1].to_vec();
    wide.push(out);
    wide.push(size);
    let keep: Vec<i64> = (0..r as i64 - 1).chain([r as i64]).collect();
    let ve = b.broadcast_in_dim(&vt, &wide, &keep)?;
    let ie = b.broadcast_in_dim(&it, &wide, &keep)?;
    let win = windows(b, size, out)?;
    let win = b.broadcast_in_dim(&win, &wide, &[r as i64 - 1, r as i64])?;
    let floor = b.full_like(&ve, lowest(v.dtype()));
    let masked = b.select(&win, &ve, &floor)?;
    let (m, pos) = arg_extreme(b, &masked, Some(r as i64), false, true)?;
    // The flat index at the winning position.
    let s = b.iota(&TensorType::new(DType::I64, wide.clone()), r);
    let pos_e = b.broadcast_in_dim(&pos, &wide, &(0..r as i64).collect::<Vec<_>>())?;
    let hit = b.compare(CompareDir::Eq, &s, &pos_e)?;
    let zero = b.full_like(&ie, Literal::Int(0));
    let chosen = b.select(&hit, &ie, &zero)?;
    let init = b.constant(Literal::Int(0), DType::I64);
    let i = b.reduce(&chosen, &init, &[r as i64], |b, p, q| {
        b.add(p, q).expect("i64")
    });
    // Put the pooled dim back at `d`.
    let mut back = vec![0i64; r];
    for (k, &p) in perm.iter().enumerate() {
        back[p as usize] = k as i64;
    }
    Ok((b.transpose(&m, &back)?, b.transpose(&i, &back)?))
}

/// `adaptive_max_pool{2,3}d(self, output_size) -> (out, indices)` and `out=`.
fn adaptive_max_pool(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let k = if ctx.name.starts_with("adaptive_max_pool3d") {
        3
    } else {
        2
    };
    let out_size = ctx.int_list(1)?;
    let ty = ctx.ty(0)?;
    if out_size.len() != k || !(k + 1..=k + 2).contains(&ty.rank()) {
        return runtime(format!(
            "{}: expected a {}-d or {}-d input and {k} output sizes",
            ctx.name,
            k + 1,
            k + 2
        ));
    }
    let first = ty.rank() - k;
    if ty.shape[first..].contains(&0) {
        return runtime(format!(
            "{}: empty spatial dims in input {:?}",
            ctx.name, ty.shape
        ));
    }
    let x = ctx.tensor(0)?;
    let b = &mut ctx.b;
    // Flat spatial index of every element.
    let ity = TensorType::new(DType::I64, ty.shape.clone());
    let mut idx = b.splat(Literal::Int(0), &ity);
    let mut stride = 1;
    for d in (first..ty.rank()).rev() {
        let io = b.iota(&ity, d);
        let st = b.splat(Literal::Int(stride), &ity);
        let t = b.mul(&io, &st)?;
        idx = b.add(&idx, &t)?;
        stride *= ty.shape[d];
    }
    let mut v = x;
    for (j, d) in (first..ty.rank()).enumerate().rev() {
        (v, idx) = pool_dim(b, &v, &idx, d, out_size[j])?;
    }
    Ok(vec![Some(v), Some(idx)])
}

/// `adaptive_max_pool{2,3}d_backward(grad, self, indices)`: each gradient added at its
/// index within its plane.
fn adaptive_max_pool_backward(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let k = if ctx.name.starts_with("adaptive_max_pool3d") {
        3
    } else {
        2
    };
    let xt = ctx.ty(1)?;
    let first = xt.rank().saturating_sub(k);
    let planes: i64 = xt.shape[..first].iter().product();
    let per_in: i64 = xt.shape[first..].iter().product();
    let g = ctx.tensor(0)?;
    let idx = ctx.tensor(2)?;
    let r = scatter_into_planes(&mut ctx.b, &g, &idx, planes, per_in, Some(add_c))?;
    Ok(vec![Some(ctx.b.reshape(&r, &xt.shape)?)])
}

/// Sums of `x` over the windows of dim `d` given by the boolean `[out, in]` matrix `win`,
/// the `out` dim in place of `d`. Masked sums, not a product with a 0/1 matrix, so an
/// infinite element reaches only its own windows (`0 * inf` is NaN).
fn window_sums(b: &mut Builder, x: &Value, win: &Value, d: usize) -> Result<Value> {
    let mut shape = x.shape().to_vec();
    shape.insert(d, win.shape()[0]);
    let x_dims: Vec<i64> = (0..x.rank() as i64)
        .map(|i| if i < d as i64 { i } else { i + 1 })
        .collect();
    let xb = b.broadcast_in_dim(x, &shape, &x_dims)?;
    let inside = b.broadcast_in_dim(win, &shape, &[d as i64, d as i64 + 1])?;
    let zeros = b.full_like(&xb, Literal::Int(0));
    let masked = b.select(&inside, &xb, &zeros)?;
    Ok(sum(b, &masked, &[d as i64 + 1]))
}

/// The volume of every output cell of pooling the last `ins.len()` dims of `shape` (the
/// output's) from sizes `ins`, of type `ct`, broadcast to `shape`.
fn cell_volumes(b: &mut Builder, shape: &[i64], ins: &[i64], ct: DType) -> Result<Value> {
    let first = shape.len() - ins.len();
    let mut vol = b.splat(Literal::Float(1.0), &TensorType::new(ct, shape.to_vec()));
    for (j, &size) in ins.iter().enumerate() {
        let win = windows(b, size, shape[first + j])?;
        let win = b.convert(&win, ct);
        let count = sum(b, &win, &[1]);
        let count = b.broadcast_in_dim(&count, shape, &[(first + j) as i64])?;
        vol = b.mul(&vol, &count)?;
    }
    Ok(vol)
}

/// The compute type of an `n`-d adaptive average pool `kernel` of `d` (floats only, like
/// CPU PyTorch, whose 3-d kernels carry a `_cpu` suffix in the error).
fn avg_opmath(d: DType, n: usize, kernel: &str) -> Result<DType> {
    if d.is_float() {
        Ok(opmath(d))
    } else if n == 3 {
        Err(not_for(&format!("{kernel}_cpu"), d))
    } else {
        Err(not_for(kernel, d))
    }
}

/// `_adaptive_avg_pool{2,3}d(self, output_size)` and `out=`, for any sizes (uneven bins
/// too), with CPU PyTorch's checks.
fn adaptive_avg_pool(ctx: &mut Ctx, n: usize) -> Result<Vec<Out>> {
    let op = format!("adaptive_avg_pool{n}d");
    let size = ctx.int_list(1)?;
    let ty = ctx.ty(0)?;
    let r = ty.rank();
    if !(n + 1..=n + 2).contains(&r) {
        return runtime(format!(
            "{op}(): Expected {}D or {}D tensor, but got {:?}",
            n + 1,
            n + 2,
            ty.shape
        ));
    }
    if size.len() != n {
        return runtime(format!("{op}: output_size must be {n}"));
    }
    if size.iter().any(|&s| s < 0) {
        return runtime("numel: integer multiplication overflow");
    }
    let first = r - n;
    // CPU's 3-d check covers every dim but the first, its 2-d one the spatial dims.
    let checked = if n == 3 { 1 } else { first };
    if let Some(d) = (checked..r).find(|&d| ty.shape[d] == 0) {
        return runtime(format!(
            "{op}(): Expected input to have non-zero size for non-batch dimensions, but input has sizes {:?} with dimension {d} being empty",
            ty.shape
        ));
    }
    let ct = avg_opmath(ty.dtype, n, &op)?;
    let x = ctx.tensor(0)?;
    let b = &mut ctx.b;
    let mut y = b.convert(&x, ct);
    for (j, &out) in size.iter().enumerate() {
        let win = windows(b, ty.shape[first + j], out)?;
        y = window_sums(b, &y, &win, first + j)?;
    }
    let vol = cell_volumes(b, y.shape(), &ty.shape[first..], ct)?;
    let y = b.div(&y, &vol)?;
    one(b.convert(&y, ty.dtype))
}

/// `_adaptive_avg_pool{2,3}d_backward(grad_output, self)`: spreads `grad / cell volume` over
/// each cell.
fn adaptive_avg_pool_backward(ctx: &mut Ctx, n: usize) -> Result<Vec<Out>> {
    let shape = ctx.ty(1)?.shape;
    let gy = ctx.tensor(0)?;
    let ct = avg_opmath(gy.dtype(), n, &format!("adaptive_avg_pool{n}d_backward"))?;
    let b = &mut ctx.b;
    let first = shape.len() - n;
    let g = b.convert(&gy, ct);
    let vol = cell_volumes(b, g.shape(), &shape[first..], ct)?;
    let mut z = b.div(&g, &vol)?;
    // Each input element sums the cells it lies in: masked sums over the transposed
    // windows, so an infinite gradient reaches only its own cell's elements, as on CPU.
    for (d, &size) in shape.iter().enumerate().skip(first) {
        let win = windows(b, size, gy.shape()[d])?;
        let win = b.transpose(&win, &[1, 0])?;
        z = window_sums(b, &z, &win, d)?;
    }
    one(b.convert(&z, gy.dtype()))
}

pub(crate) fn register(reg: &mut Registry) {
    reg.ops(
        &[
            "adaptive_max_pool2d",
            "adaptive_max_pool2d.out",
            "adaptive_max_pool3d",
            "adaptive_max_pool3d.out",
        ],
        adaptive_max_pool,
    );
    reg.ops(
        &[
            "adaptive_max_pool2d_backward",
            "adaptive_max_pool2d_backward.grad_input",
            "adaptive_max_pool3d_backward",
            "adaptive_max_pool3d_backward.grad_input",
        ],
        adaptive_max_pool_backward,
    );
    reg.ops(
        &["_adaptive_avg_pool2d", "_adaptive_avg_pool2d.out"],
        |ctx| adaptive_avg_pool(ctx, 2),
    );
    reg.ops(
        &["_adaptive_avg_pool3d", "_adaptive_avg_pool3d.out"],
        |ctx| adaptive_avg_pool(ctx, 3),
    );
    reg.ops(
        &[
            "_adaptive_avg_pool2d_backward",
            "_adaptive_avg_pool2d_backward.out",
        ],
        |ctx| adaptive_avg_pool_backward(ctx, 2),
    );
    reg.ops(
        &[
            "_adaptive_avg_pool3d_backward",
            "_adaptive_avg_pool3d_backward.out",
        ],
        |ctx| adaptive_avg_pool_backward(ctx, 3),
    );
}
