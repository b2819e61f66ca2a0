//! Adaptive max pooling (2-d and 3-d) and its backward. Output cell `o` of a spatial dim of
//! size `S` pooled to `O` covers `[floor(o S / O), ceil((o + 1) S / O))`. The max over a box
//! is taken one dim at a time, last dim first: each step masks the dim to every cell's
//! window and reduces it, so ties resolve to the first element in row-major order, as on
//! CPU, and the flat index of the winner travels along.

use tpurs_hlo::{Builder, CompareDir, DType, Literal, TensorType, Value};

use super::combine::{add_c, lowest};
use super::reduce::arg_extreme;
use super::unpool::scatter_into_planes;
use crate::ctx::{Ctx, Out};
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
}
