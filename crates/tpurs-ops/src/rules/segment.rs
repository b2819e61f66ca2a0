//! `segment_reduce` over `lengths` or `offsets` and its backward, as the CPU kernels compute
//! them. Segment bounds stay data: the ends are a scan of the lengths (or the offsets
//! themselves) on the device, each element's segment is a binary search among the ends,
//! and a segment reduction is a scatter into `[outer, segment, inner]` (a spread back, a
//! gather), with no host read.

use tpurs_hlo::{Builder, CompareDir, DType, GatherDims, Literal, ScatterDims, TensorType, Value};

use super::combine::{add_c, max_c, min_c, mul_c, Combine};
use super::nn::require_float;
use super::reduce::scan;
use super::search::search;
use super::{one, wrap_dim};
use crate::checks::CheckKind;
use crate::ctx::{Ctx, Out};
use crate::dtype::{opmath, torch_name};
use crate::error::{Error, Result};
use crate::table::Registry;

#[derive(Clone, Copy, PartialEq)]
enum Red {
    Max,
    Min,
    Sum,
    Mean,
    Prod,
}

/// ATen's `get_reduction_enum`.
fn reduction(s: &str) -> Result<Red> {
    Ok(match s {
        "max" | "amax" => Red::Max,
        "min" | "amin" => Red::Min,
        "sum" => Red::Sum,
        "mean" => Red::Mean,
        "prod" => Red::Prod,
        _ => {
            return Err(Error::Runtime(format!(
                "reduce argument must be either sum, prod, mean, amax or amin, got {s}"
            )))
        }
    })
}

/// The segments of a call: each element's segment `[O, N]` (`S` outside every segment),
/// whether it lies in one, and the lengths `[O, S]`, with `O` the dims before `axis`
/// flattened.
struct Segments {
    id: Value,
    inside: Value,
    lens: Value,
    /// `(O, S, N, I)`: outer, segments, the reduced dim, inner (dims after `axis`).
    dims: (i64, i64, i64, i64),
}

/// Reads `lengths` (argument `li`) or `offsets` (`oi`) against data of shape `data`; with
/// `safe`, adds CPU's checks of the lengths as device-side checks.
fn segments(
    ctx: &mut Ctx,
    data: &[i64],
    li: usize,
    oi: usize,
    axis: i64,
    safe: bool,
) -> Result<Segments> {
    let axis = wrap_dim(axis, data.len())?;
    let (i, what) = if ctx.has(oi) {
        (oi, "offsets")
    } else if ctx.has(li) {
        (li, "lengths")
    } else {
        return Err(Error::Runtime(
            "segment_reduce(): Either lengths or offsets must be defined.".into(),
        ));
    };
    let lt = ctx.ty(i)?;
    if lt.rank() != axis + 1 {
        return Err(Error::Runtime(format!(
            "segment_reduce(): Expected axis to be the last dimension of {what} but got {axis}."
        )));
    }
    if !matches!(lt.dtype, DType::I32 | DType::I64) {
        return Err(Error::NotImplemented(format!(
            "\"_segment_reduce_{what}_cpu_kernel1\" not implemented for '{}'",
            torch_name(lt.dtype)
        )));
    }
    if lt.shape[..axis] != data[..axis] {
        return Err(Error::Uncovered(format!(
            "segment_reduce: {what} of shape {:?} for data of shape {data:?}",
            lt.shape
        )));
    }
    let outer: i64 = data[..axis].iter().product();
    let inner: i64 = data[axis + 1..].iter().product();
    let n = data[axis];
    let count = lt.shape[axis];
    let v = ctx.tensor(i)?;
    let v = ctx.b.convert(&v, DType::I64);
    let v = ctx.b.reshape(&v, &[outer, count])?;
    let (starts, ends, s) = if what == "offsets" {
        let s = (count - 1).max(0);
        let starts = ctx.b.slice_dim(&v, 1, 0, s, 1)?;
        let ends = ctx.b.slice_dim(&v, 1, 1, count, 1)?;
        (starts, ends, s)
    } else {
        let ends = scan(&mut ctx.b, &v, 1, Literal::Int(0), add_c)?;
        (ctx.b.sub(&ends, &v)?, ends, count)
    };
    let lens = ctx.b.sub(&ends, &starts)?;
    if safe && what == "lengths" {
        let zero = ctx.b.full_like(&v, Literal::Int(0));
        let ok = ctx.b.compare(CompareDir::Ge, &v, &zero)?;
        ctx.check_all(&ok, CheckKind::Runtime, "lengths contains negative value!")?;
        let total = ctx.b.slice_dim(&ends, 1, (s - 1).max(0), s, 1)?;
        let want = ctx.b.full_like(&total, Literal::Int(n));
        let ok = ctx.b.compare(CompareDir::Eq, &total, &want)?;
        ctx.check_all(
            &ok,
            CheckKind::Runtime,
            "segment_reduce(): Expected all rows of lengths along axis to sum to data.size(lengths.dim()-1) when !unsafe.",
        )?;
    }
    let b = &mut ctx.b;
    // The first segment ending after `n`, if `n` is not before its start.
    let pos = b.iota(&TensorType::new(DType::I64, [outer, n]), 1);
    let id = search(b, &ends, &pos, true)?;
    let count = b.full_like(&id, Literal::Int(s));
    let in_range = b.compare(CompareDir::Lt, &id, &count)?;
    let inside = if s == 0 {
        in_range
    } else {
        let start = pick(b, &starts, &id)?;
        let after = b.compare(CompareDir::Ge, &pos, &start)?;
        b.and(&in_range, &after)?
    };
    let id = b.select(&inside, &id, &count)?;
    Ok(Segments {
        id,
        inside,
        lens,
        dims: (outer, s, n, inner),
    })
}

/// `v[o, min(id[o, n], S - 1), ...]` for `v` of shape `[O, S, ...]`: `[O, N, ...]`.
fn pick(b: &mut Builder, v: &Value, id: &Value) -> Result<Value> {
    let (o, s, n) = (v.shape()[0], v.shape()[1], id.shape()[1]);
    let top = b.full_like(id, Literal::Int(s - 1));
    let id = b.min(id, &top)?;
    let at = rows_and(b, &id)?;
    let rest = &v.shape()[2..];
    let mut slice = vec![1, 1];
    slice.extend(rest);
    let mut shape = vec![o, n];
    shape.extend(rest);
    let dims = GatherDims {
        offset_dims: (2..2 + rest.len() as i64).collect(),
        collapsed_slice_dims: vec![0, 1],
        start_index_map: vec![0, 1],
        index_vector_dim: 2,
        slice_sizes: slice,
    };
    Ok(b.gather(v, &at, &dims, &shape))
}

/// `[O, N, 2]` index pairs `(o, id[o, n])`.
fn rows_and(b: &mut Builder, id: &Value) -> Result<Value> {
    let (o, n) = (id.shape()[0], id.shape()[1]);
    let row = b.iota(&TensorType::new(DType::I64, [o, n, 1]), 0);
    let id = b.reshape(id, &[o, n, 1])?;
    Ok(b.concatenate(&[&row, &id], 2)?)
}

/// Reduces `x` (`[O, N, I]`) over each segment with `f` from `identity`: `[O, S, I]`.
/// Elements outside every segment carry index `S`, which the scatter drops.
fn segment_fold(
    b: &mut Builder,
    seg: &Segments,
    x: &Value,
    identity: f64,
    f: Combine,
) -> Result<Value> {
    let (o, s, _, i) = seg.dims;
    let init = b.splat(
        Literal::Float(identity),
        &TensorType::new(x.dtype(), [o, s, i]),
    );
    let at = rows_and(b, &seg.id)?;
    let dims = ScatterDims {
        update_window_dims: vec![2],
        inserted_window_dims: vec![0, 1],
        scatter_dims_to_operand_dims: vec![0, 1],
        index_vector_dim: 2,
    };
    Ok(b.scatter(&init, &at, x, &dims, Some(f)))
}

/// Each element's value of its segment: `v` (`[O, S, I]`) spread to `[O, N, I]`, zero outside
/// every segment.
fn spread(b: &mut Builder, seg: &Segments, v: &Value) -> Result<Value> {
    let (o, s, n, i) = seg.dims;
    let zero = b.splat(Literal::Float(0.0), &TensorType::new(v.dtype(), [o, n, i]));
    if s == 0 {
        return Ok(zero);
    }
    let g = pick(b, v, &seg.id)?;
    let inside = b.broadcast_in_dim(&seg.inside, &[o, n, i], &[0, 1])?;
    Ok(b.select(&inside, &g, &zero)?)
}

/// The lengths as `[O, S, I]` values of `dtype`.
fn lens_like(b: &mut Builder, seg: &Segments, dtype: DType) -> Result<Value> {
    let (o, s, _, i) = seg.dims;
    let l = b.convert(&seg.lens, dtype);
    Ok(b.broadcast_in_dim(&l, &[o, s, i], &[0, 1])?)
}

/// `x` as `[O, N, I]` in the opmath type of its dtype.
fn rows(b: &mut Builder, seg: &Segments, x: &Value) -> Result<Value> {
    let (o, _, n, i) = seg.dims;
    let x = b.convert(x, opmath(x.dtype()));
    Ok(b.reshape(&x, &[o, n, i])?)
}

/// `initial` (argument `k`) as a 0-d value of `dtype`, if given.
fn initial(ctx: &mut Ctx, k: usize, dtype: DType) -> Result<Option<Value>> {
    Ok(match ctx.opt_tensor(k)? {
        Some(v) => Some(ctx.b.convert(&v, dtype)),
        None => None,
    })
}

/// `segment_reduce(data, reduce, *, lengths, indices, offsets, axis, unsafe, initial)`.
fn segment_reduce(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let ty = ctx.ty(0)?;
    if ctx.has(3) {
        return Err(Error::Runtime(
            "segment_reduce(): indices based reduction is not supported yet.".into(),
        ));
    }
    let red = reduction(ctx.str(1)?)?;
    let axis = ctx.int(5)?;
    let seg = segments(ctx, &ty.shape, 2, 4, axis, !ctx.bool_or(6, false)?)?;
    require_float(ctx, 0, "_segment_reduce_cpu")?;
    let ct = opmath(ty.dtype);
    let init = initial(ctx, 7, ct)?;
    let x = ctx.tensor(0)?;
    let b = &mut ctx.b;
    let x = rows(b, &seg, &x)?;
    let (identity, f): (f64, Combine) = match red {
        Red::Max => (f64::NEG_INFINITY, max_c),
        Red::Min => (f64::INFINITY, min_c),
        Red::Sum | Red::Mean => (0.0, add_c),
        Red::Prod => (1.0, mul_c),
    };
    let mut r = segment_fold(b, &seg, &x, identity, f)?;
    if let Some(v) = &init {
        let v = b.broadcast_in_dim(v, r.shape(), &[])?;
        r = f(b, &v, &r);
    }
    if red == Red::Mean {
        // An empty segment's mean is NaN, or `initial` when given.
        let l = lens_like(b, &seg, ct)?;
        let zero = b.full_like(&l, Literal::Float(0.0));
        let some = b.compare(CompareDir::Gt, &l, &zero)?;
        let q = b.div(&r, &l)?;
        let empty = match init {
            Some(_) => r,
            None => b.full_like(&q, Literal::Float(f64::NAN)),
        };
        r = b.select(&some, &q, &empty)?;
    }
    let mut shape = ty.shape.clone();
    shape[wrap_dim(axis, ty.rank())?] = seg.dims.1;
    let r = b.convert(&r, ty.dtype);
    one(b.reshape(&r, &shape)?)
}

/// `_segment_reduce_backward(grad, output, data, reduce, *, lengths, offsets, axis, initial)`.
fn segment_reduce_backward(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let ty = ctx.ty(2)?;
    let red = reduction(ctx.str(3)?)?;
    let seg = segments(ctx, &ty.shape, 4, 5, ctx.int(6)?, false)?;
    let gdt = ctx.ty(0)?.dtype;
    let ct = opmath(ty.dtype);
    let init = initial(ctx, 7, ct)?;
    let (g, out, x) = (ctx.tensor(0)?, ctx.tensor(1)?, ctx.tensor(2)?);
    let b = &mut ctx.b;
    let (o, s, _, i) = seg.dims;
    let g = b.convert(&g, ct);
    let g = b.reshape(&g, &[o, s, i])?;
    let out = b.convert(&out, ct);
    let out = b.reshape(&out, &[o, s, i])?;
    let x = rows(b, &seg, &x)?;
    let gi = match red {
        Red::Sum => spread(b, &seg, &g)?,
        Red::Mean => {
            let l = lens_like(b, &seg, ct)?;
            let q = b.div(&g, &l)?;
            spread(b, &seg, &q)?
        }
        Red::Max | Red::Min => extreme_grad(b, &seg, &g, &out, &x)?,
        Red::Prod => prod_grad(b, &seg, &g, &out, &x, init)?,
    };
    let gi = b.convert(&gi, gdt);
    one(b.reshape(&gi, &ty.shape)?)
}

/// Whether each element lies in some segment, as `[O, N, I]` booleans.
fn inside(b: &mut Builder, seg: &Segments) -> Result<Value> {
    let (o, _, n, i) = seg.dims;
    Ok(b.broadcast_in_dim(&seg.inside, &[o, n, i], &[0, 1])?)
}

/// Max / min: the gradient goes to every element equal to the result (or NaN); where
/// several are, the positive gradients are split evenly (CPU's rule, negative ones are not).
fn extreme_grad(
    b: &mut Builder,
    seg: &Segments,
    g: &Value,
    out: &Value,
    x: &Value,
) -> Result<Value> {
    let hit = spread(b, seg, out)?;
    let eq = b.compare(CompareDir::Eq, x, &hit)?;
    let nan = b.compare(CompareDir::Ne, x, x)?;
    let eq = b.or(&eq, &nan)?;
    let inside = inside(b, seg)?;
    let eq = b.and(&eq, &inside)?;
    let ones = b.convert(&eq, x.dtype());
    let count = segment_fold(b, seg, &ones, 0.0, add_c)?;
    let count = spread(b, seg, &count)?;
    let gs = spread(b, seg, g)?;
    let zero = b.full_like(&gs, Literal::Float(0.0));
    let gi = b.select(&eq, &gs, &zero)?;
    let two = b.full_like(&gs, Literal::Float(2.0));
    let shared = b.compare(CompareDir::Ge, &count, &two)?;
    let pos = b.compare(CompareDir::Gt, &gi, &zero)?;
    let split = b.and(&shared, &pos)?;
    let q = b.div(&gi, &count)?;
    Ok(b.select(&split, &q, &gi)?)
}

/// Prod: `grad * output / x`, except at a zero or NaN element, whose gradient is `grad`
/// times the product of the rest of its segment (and `initial`). That product is the
/// product `P` of the segment's ordinary elements times NaN if another element is NaN, else
/// 0 if another is zero.
fn prod_grad(
    b: &mut Builder,
    seg: &Segments,
    g: &Value,
    out: &Value,
    x: &Value,
    init: Option<Value>,
) -> Result<Value> {
    let zero = b.full_like(x, Literal::Float(0.0));
    let one = b.full_like(x, Literal::Float(1.0));
    let nan = b.compare(CompareDir::Ne, x, x)?;
    let is_zero = b.compare(CompareDir::Eq, x, &zero)?;
    let special = b.or(&nan, &is_zero)?;
    let plain = b.select(&special, &one, x)?;
    let p = segment_fold(b, seg, &plain, 1.0, mul_c)?;
    let p = spread(b, seg, &p)?;
    // Counts of NaN and zero elements in each element's segment, less the element itself.
    let mut others = Vec::new();
    for flag in [&nan, &is_zero] {
        let f = b.convert(flag, x.dtype());
        let c = segment_fold(b, seg, &f, 0.0, add_c)?;
        let c = spread(b, seg, &c)?;
        others.push(b.sub(&c, &f)?);
    }
    let other_nan = b.compare(CompareDir::Gt, &others[0], &zero)?;
    let other_zero = b.compare(CompareDir::Gt, &others[1], &zero)?;
    let nan_c = b.full_like(x, Literal::Float(f64::NAN));
    let q = b.select(&other_zero, &zero, &one)?;
    let q = b.select(&other_nan, &nan_c, &q)?;
    let mut excl = b.mul(&p, &q)?;
    if let Some(v) = init {
        let v = b.broadcast_in_dim(&v, x.shape(), &[])?;
        excl = b.mul(&v, &excl)?;
    }
    let gs = spread(b, seg, g)?;
    let at_special = b.mul(&gs, &excl)?;
    let go = b.mul(g, out)?;
    let go = spread(b, seg, &go)?;
    let ordinary = b.div(&go, x)?;
    let gi = b.select(&special, &at_special, &ordinary)?;
    let inside = inside(b, seg)?;
    Ok(b.select(&inside, &gi, &zero)?)
}

pub(crate) fn register(reg: &mut Registry) {
    reg.ops(&["segment_reduce", "segment_reduce.out"], segment_reduce);
    reg.ops(
        &["_segment_reduce_backward", "_segment_reduce_backward.out"],
        segment_reduce_backward,
    );
}
