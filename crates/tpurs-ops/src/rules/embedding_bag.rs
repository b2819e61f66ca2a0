//! `embedding_bag`: rows of a table gathered at `indices` and reduced (sum, mean or max) per
//! bag, bags given by `offsets`; and its backward. Which bag an index belongs to is a binary
//! search of its position among the offsets. The auxiliary outputs have the shapes torch's
//! meta function gives every device but the CPU (those `torch.compile` traces with):
//! `offset2bag` one bag per index, `bag_size` one count per offset, `max_indices` a row
//! per bag in max mode and empty otherwise, all in the indices' dtype.

use tpurs_hlo::{Builder, CompareDir, DType, GatherDims, Literal, ScatterDims, TensorType, Value};

use super::combine::{add_c, lowest, max_c, min_c};
use super::index::{select_rows, slices_along};
use super::one;
use super::search::{search, take};
use crate::checks::CheckKind;
use crate::ctx::{Ctx, Out};
use crate::dtype::opmath;
use crate::error::{runtime, Result};
use crate::table::Registry;

const SUM: i64 = 0;
const MEAN: i64 = 1;
const MAX: i64 = 2;

/// The dtype of the index outputs (the indices'), checking indices and offsets.
fn index_dtype(ctx: &Ctx, indices: usize, offsets: usize) -> Result<DType> {
    let (i, o) = (ctx.ty(indices)?.dtype, ctx.ty(offsets)?.dtype);
    for (d, name) in [(i, "indices"), (o, "offsets")] {
        if !matches!(d, DType::I64 | DType::I32) {
            return runtime(format!(
                "embedding_bag: Expected tensor for argument '{name}' to have one of the following scalar types: Long, Int"
            ));
        }
    }
    Ok(i)
}

/// The bag of each of `n` positions: one less than the number of the first `bags` offsets
/// at or before it (a bag runs to the next offset; the last one to the end).
fn bag_of(b: &mut Builder, offsets: &Value, bags: i64, n: i64) -> Result<Value> {
    let starts = b.slice(offsets, &[0], &[bags], &[1])?;
    let pos = b.iota(&TensorType::new(DType::I64, [n]), 0);
    let after = search(b, &starts, &pos, true)?;
    let one_i = b.full_like(&after, Literal::Int(1));
    Ok(b.sub(&after, &one_i)?)
}

/// `[n]` true where the index is not `padding_idx` (every index when it is negative).
fn not_padding(b: &mut Builder, idx: &Value, padding: i64) -> Result<Value> {
    let pad = b.full_like(idx, Literal::Int(padding.max(-1)));
    Ok(b.compare(CompareDir::Ne, idx, &pad)?)
}

/// `[rows, d]` sums of the rows of `updates` (`[n, d]`) scattered to rows `at` (`[n]`).
fn scatter_rows(
    b: &mut Builder,
    init: Value,
    at: &Value,
    updates: &Value,
    combine: fn(&mut Builder, &Value, &Value) -> Value,
) -> Result<Value> {
    let n = at.ty.numel();
    let at = b.reshape(at, &[n, 1])?;
    Ok(b.scatter(&init, &at, updates, &slices_along(2, 0), Some(combine)))
}

/// `[bags]` how many of the `valid` positions fall in each bag.
fn bag_sizes(b: &mut Builder, bag: &Value, valid: &Value, bags: i64) -> Result<Value> {
    let n = bag.ty.numel();
    let ones = b.convert(valid, DType::I64);
    let ones = b.reshape(&ones, &[n, 1])?;
    let zeros = b.splat(Literal::Int(0), &TensorType::new(DType::I64, [bags, 1]));
    let sizes = scatter_rows(b, zeros, bag, &ones, add_c)?;
    Ok(b.reshape(&sizes, &[bags])?)
}

/// `x` (`[rows, d]`) with the rows where `keep` (`[rows]`) is false replaced by `fill`.
fn keep_rows(b: &mut Builder, x: &Value, keep: &Value, fill: Literal) -> Result<Value> {
    let keep = b.broadcast_in_dim(keep, x.shape(), &[0])?;
    let other = b.full_like(x, fill);
    Ok(b.select(&keep, x, &other)?)
}

/// For each bag and column, the table row of the first index whose value is the bag's
/// maximum there (the CPU keeps the first of equal values).
fn argmax_rows(
    b: &mut Builder,
    rows: &Value,
    out: &Value,
    bag: &Value,
    valid: &Value,
    idx: &Value,
) -> Result<Value> {
    let (n, d) = (rows.shape()[0], rows.shape()[1]);
    let dims = GatherDims {
        offset_dims: vec![1],
        collapsed_slice_dims: vec![0],
        start_index_map: vec![0],
        index_vector_dim: 1,
        slice_sizes: vec![1, d],
    };
    let at = b.reshape(bag, &[n, 1])?;
    let best = b.gather(out, &at, &dims, &[n, d]);
    let hit = b.compare(CompareDir::Eq, rows, &best)?;
    let valid = b.broadcast_in_dim(valid, &[n, d], &[0])?;
    let hit = b.and(&hit, &valid)?;
    let pos = b.iota(&TensorType::new(DType::I64, [n, d]), 0);
    let never = b.full_like(&pos, Literal::Int(n));
    let pos = b.select(&hit, &pos, &never)?;
    let init = b.splat(
        Literal::Int(n),
        &TensorType::new(DType::I64, out.shape().to_vec()),
    );
    let first = scatter_rows(b, init, bag, &pos, min_c)?;
    let last = b.full_like(&first, Literal::Int(n - 1));
    let safe = b.min(&first, &last)?;
    let bags = out.shape()[0];
    let flat = b.reshape(&safe, &[bags * d, 1])?;
    let table = b.reshape(idx, &[n])?;
    let pick = GatherDims {
        offset_dims: vec![],
        collapsed_slice_dims: vec![0],
        start_index_map: vec![0],
        index_vector_dim: 1,
        slice_sizes: vec![1],
    };
    let rows_of = b.gather(&table, &flat, &pick, &[bags * d]);
    Ok(b.reshape(&rows_of, &[bags, d])?)
}

/// `_embedding_bag(weight, indices, offsets, scale_grad_by_freq, mode, sparse,
/// per_sample_weights, include_last_offset, padding_idx)` and `_embedding_bag_forward_only`:
/// `(output, offset2bag, bag_size, max_indices)`.
fn embedding_bag(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let wt = ctx.ty(0)?;
    let (it, ot) = (ctx.ty(1)?, ctx.ty(2)?);
    for (rank, want, name) in [
        (wt.rank(), 2, "weight"),
        (it.rank(), 1, "input"),
        (ot.rank(), 1, "offsets"),
    ] {
        if rank != want {
            return runtime(format!(
                "embedding_bag: {name} has to be a {want}D Tensor, but got Tensor of dimension {rank}"
            ));
        }
    }
    let id = index_dtype(ctx, 1, 2)?;
    let mode = ctx.int(4)?;
    let with_weights = ctx.has(6);
    let include_last = ctx.bool_or(7, false)?;
    let padding = ctx.int_or(8, -1)?;
    if !(SUM..=MAX).contains(&mode) {
        return runtime(format!("embedding_bag: unknown mode {mode}"));
    }
    if with_weights {
        if mode != SUM {
            return runtime("embedding_bag: per_sample_weights only supported with mode='sum'");
        }
        if ctx.ty(6)?.numel() != it.numel() {
            return runtime(
                "Expected per_sample_weights.value().numel() == indices.numel() to be true, but got false.",
            );
        }
    }
    let (rows_n, d, n) = (wt.shape[0], wt.shape[1], it.numel());
    let bags = (ot.numel() - include_last as i64).max(0);
    let dtype = wt.dtype;
    let w = ctx.tensor(0)?;
    let idx = ctx.tensor(1)?;
    let off = ctx.tensor(2)?;
    let psw = ctx.opt_tensor(6)?;
    let idx = ctx.b.convert(&idx, DType::I64);
    let off = ctx.b.convert(&off, DType::I64);
    ctx.check_range(
        &idx,
        0,
        rows_n,
        CheckKind::Runtime,
        format!("An index of input takes value {{}} which is not in the valid range [0, {rows_n})"),
    )?;
    if ot.numel() > 0 {
        let first = ctx.b.slice(&off, &[0], &[1], &[1])?;
        ctx.check_range(
            &first,
            0,
            1,
            CheckKind::Runtime,
            "offsets[0] has to be 0, i.e., the first sequence in the mini-batch has to start from position 0. However, got {}",
        )?;
        let m = ot.numel();
        let last = ctx.b.slice(&off, &[m - 1], &[m], &[1])?;
        ctx.check_range(
            &last,
            i64::MIN,
            n + 1,
            CheckKind::Runtime,
            format!("offsets[-1] can not be greater than input's length {n} but got offsets[-1] of {{}}"),
        )?;
    }
    let b = &mut ctx.b;
    let zeros_i = |b: &mut Builder, shape: &[i64]| {
        b.splat(Literal::Int(0), &TensorType::new(id, shape.to_vec()))
    };
    let max_shape = if mode == MAX { vec![bags, d] } else { vec![0] };
    if n == 0 || bags == 0 {
        let out = b.splat(Literal::Int(0), &TensorType::new(dtype, [bags, d]));
        let o2b = zeros_i(b, &[n]);
        let sizes = zeros_i(b, &[ot.numel()]);
        let maxi = zeros_i(b, &max_shape);
        return Ok(vec![Some(out), Some(o2b), Some(sizes), Some(maxi)]);
    }
    let bag = bag_of(b, &off, bags, n)?;
    let valid = not_padding(b, &idx, padding)?;
    let sizes = bag_sizes(b, &bag, &valid, bags)?;
    let safe_idx = {
        let lo = b.full_like(&idx, Literal::Int(0));
        let hi = b.full_like(&idx, Literal::Int(rows_n - 1));
        let i = b.max(&idx, &lo)?;
        b.min(&i, &hi)?
    };
    let rows = select_rows(b, &w, 0, &safe_idx)?;
    let rows = b.convert(&rows, opmath(dtype));
    let (out, maxi) = if mode == MAX {
        let masked = keep_rows(b, &rows, &valid, lowest(rows.dtype()))?;
        let init = b.splat(
            lowest(rows.dtype()),
            &TensorType::new(rows.dtype(), [bags, d]),
        );
        let out = scatter_rows(b, init, &bag, &masked, max_c)?;
        let maxi = argmax_rows(b, &rows, &out, &bag, &valid, &idx)?;
        let zero = b.full_like(&sizes, Literal::Int(0));
        let nonempty = b.compare(CompareDir::Ne, &sizes, &zero)?;
        let out = keep_rows(b, &out, &nonempty, Literal::Int(0))?;
        let maxi = keep_rows(b, &maxi, &nonempty, Literal::Int(0))?;
        (out, b.convert(&maxi, id))
    } else {
        let mut contrib = keep_rows(b, &rows, &valid, Literal::Int(0))?;
        if let Some(p) = psw {
            let p = b.convert(&p, rows.dtype());
            let p = b.broadcast_in_dim(&p, &[n, d], &[0])?;
            contrib = b.mul(&contrib, &p)?;
        }
        let init = b.splat(Literal::Int(0), &TensorType::new(rows.dtype(), [bags, d]));
        let mut out = scatter_rows(b, init, &bag, &contrib, add_c)?;
        if mode == MEAN {
            let one_i = b.full_like(&sizes, Literal::Int(1));
            let count = b.max(&sizes, &one_i)?;
            let count = b.convert(&count, rows.dtype());
            let count = b.broadcast_in_dim(&count, &[bags, d], &[0])?;
            out = b.div(&out, &count)?;
        }
        (out, zeros_i(b, &max_shape))
    };
    let out = b.convert(&out, dtype);
    let o2b = b.convert(&bag, id);
    let mut sizes = b.convert(&sizes, id);
    if ot.numel() > bags {
        let pad = zeros_i(b, &[ot.numel() - bags]);
        sizes = b.concatenate(&[&sizes, &pad], 0)?;
    }
    Ok(vec![Some(out), Some(o2b), Some(sizes), Some(maxi)])
}

/// Where the backward ops keep their arguments.
struct BackwardArgs {
    /// `offsets`, in `_embedding_bag_backward` only (rebuilds an empty `offset2bag`).
    offsets: Option<usize>,
    /// `offset2bag`; `bag_size`, `maximum_indices` and the rest follow it in order.
    offset2bag: usize,
}

/// `_embedding_bag_backward(grad, indices, offsets, offset2bag, bag_size, maximum_indices,
/// num_weights, scale_grad_by_freq, mode, sparse, per_sample_weights, padding_idx)`.
fn embedding_bag_backward(ctx: &mut Ctx) -> Result<Vec<Out>> {
    if ctx.bool_or(9, false)? {
        return Err(crate::error::Error::NotImplemented(
            "tpurs: embedding_bag with sparse=True (a sparse gradient) is not supported on tpu"
                .into(),
        ));
    }
    let args = BackwardArgs {
        offsets: Some(2),
        offset2bag: 3,
    };
    table_grad(ctx, &args, 10, 11)
}

/// `_embedding_bag_dense_backward(grad, indices, offset2bag, bag_size, maximum_indices,
/// num_weights, scale_grad_by_freq, mode, per_sample_weights, padding_idx)`.
fn embedding_bag_dense_backward(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let args = BackwardArgs {
        offsets: None,
        offset2bag: 2,
    };
    table_grad(ctx, &args, 8, 9)
}

/// The gradient of the table: in sum and mean modes each index's bag gradient (scaled by
/// its per-sample weight, `1 / bag size` in mean mode, `1 / its frequency` when asked)
/// added to its row; in max mode each bag's gradient added where its maximum came from.
fn table_grad(
    ctx: &mut Ctx,
    a: &BackwardArgs,
    psw_at: usize,
    padding_at: usize,
) -> Result<Vec<Out>> {
    let gt = ctx.ty(0)?;
    let (o2b_at, sizes_at, maxi_at) = (a.offset2bag, a.offset2bag + 1, a.offset2bag + 2);
    let num = ctx.int(a.offset2bag + 3)?;
    let by_freq = ctx.bool_or(a.offset2bag + 4, false)?;
    let mode = ctx.int(a.offset2bag + 5)?;
    let padding = ctx.int_or(padding_at, -1)?;
    let (bags, d) = (gt.shape[0], gt.shape[1]);
    let n = ctx.ty(1)?.numel();
    let given_bags = ctx.ty(o2b_at)?.numel() == n;
    let g = ctx.tensor(0)?;
    let g = ctx.b.convert(&g, opmath(gt.dtype));
    let zeros = ctx
        .b
        .splat(Literal::Int(0), &TensorType::new(g.dtype(), [num, d]));
    if mode == MAX {
        let sizes = ctx.tensor(sizes_at)?;
        let maxi = ctx.tensor(maxi_at)?;
        let b = &mut ctx.b;
        if bags == 0 {
            return one(b.convert(&zeros, gt.dtype));
        }
        // One count per offset: the first `bags` are the bags'.
        let sizes = b.convert(&sizes, DType::I64);
        let sizes = b.slice(&sizes, &[0], &[bags], &[1])?;
        let zero = b.full_like(&sizes, Literal::Int(0));
        let nonempty = b.compare(CompareDir::Ne, &sizes, &zero)?;
        let g = keep_rows(b, &g, &nonempty, Literal::Int(0))?;
        let rows = b.convert(&maxi, DType::I64);
        let rows = b.reshape(&rows, &[bags, d, 1])?;
        let cols = b.iota(&TensorType::new(DType::I64, [bags, d, 1]), 1);
        let coords = b.concatenate(&[&rows, &cols], 2)?;
        let dims = ScatterDims {
            update_window_dims: vec![],
            inserted_window_dims: vec![0, 1],
            scatter_dims_to_operand_dims: vec![0, 1],
            index_vector_dim: 2,
        };
        let r = b.scatter(&zeros, &coords, &g, &dims, Some(add_c));
        return one(b.convert(&r, gt.dtype));
    }
    if n == 0 || bags == 0 {
        return one(ctx.b.convert(&zeros, gt.dtype));
    }
    let idx = ctx.tensor(1)?;
    let bag = match (given_bags, a.offsets) {
        (false, Some(at)) => {
            let m = ctx.ty(at)?.numel();
            let off = ctx.tensor(at)?;
            let off = ctx.b.convert(&off, DType::I64);
            bag_of(&mut ctx.b, &off, m, n)?
        }
        _ => {
            let o2b = ctx.tensor(o2b_at)?;
            ctx.b.convert(&o2b, DType::I64)
        }
    };
    let sizes = ctx.tensor(sizes_at)?;
    let psw = ctx.opt_tensor(psw_at)?;
    let b = &mut ctx.b;
    let idx = b.convert(&idx, DType::I64);
    // Positions past the last bag (offsets that include the end) belong to none.
    let last = b.full_like(&bag, Literal::Int(bags - 1));
    let bag = b.min(&bag, &last)?;
    let mut scale = b.splat(Literal::Int(1), &TensorType::new(g.dtype(), [n]));
    if let Some(p) = psw {
        scale = b.convert(&p, g.dtype());
    }
    if mode == MEAN {
        let sizes = b.convert(&sizes, DType::I64);
        let sizes = take(b, &sizes, &bag)?;
        let one_i = b.full_like(&sizes, Literal::Int(1));
        let count = b.max(&sizes, &one_i)?;
        let count = b.convert(&count, g.dtype());
        scale = b.div(&scale, &count)?;
    }
    if by_freq {
        let ones = b.splat(Literal::Int(1), &TensorType::new(DType::I64, [n, 1]));
        let init = b.splat(Literal::Int(0), &TensorType::new(DType::I64, [num, 1]));
        let counts = scatter_rows(b, init, &idx, &ones, add_c)?;
        let counts = b.reshape(&counts, &[num])?;
        let counts = take(b, &counts, &idx)?;
        let counts = b.convert(&counts, g.dtype());
        scale = b.div(&scale, &counts)?;
    }
    let valid = not_padding(b, &idx, padding)?;
    let zero = b.full_like(&scale, Literal::Int(0));
    let scale = b.select(&valid, &scale, &zero)?;
    let rows = select_rows(b, &g, 0, &bag)?;
    let scale = b.broadcast_in_dim(&scale, &[n, d], &[0])?;
    let upd = b.mul(&rows, &scale)?;
    let r = scatter_rows(b, zeros, &idx, &upd, add_c)?;
    one(b.convert(&r, gt.dtype))
}

/// `_embedding_bag_per_sample_weights_backward(grad, weight, indices, offsets, offset2bag,
/// mode, padding_idx)`: for each index, its bag's gradient dotted with its table row.
fn per_sample_weights_backward(ctx: &mut Ctx) -> Result<Vec<Out>> {
    if ctx.int(5)? != SUM {
        return runtime("embedding_bag_backward: per_sample_weights only supported for mode='sum'");
    }
    let padding = ctx.int_or(6, -1)?;
    let gt = ctx.ty(0)?;
    let (n, m) = (ctx.ty(2)?.numel(), ctx.ty(3)?.numel());
    let given_bags = ctx.ty(4)?.numel() == n && n > 0;
    let g = ctx.tensor(0)?;
    let w = ctx.tensor(1)?;
    let idx = ctx.tensor(2)?;
    let off = ctx.tensor(3)?;
    let o2b = ctx.tensor(4)?;
    let b = &mut ctx.b;
    if n == 0 {
        return one(b.splat(Literal::Int(0), &TensorType::new(gt.dtype, [0])));
    }
    let idx = b.convert(&idx, DType::I64);
    let bag = if given_bags {
        b.convert(&o2b, DType::I64)
    } else {
        let off = b.convert(&off, DType::I64);
        bag_of(b, &off, m, n)?
    };
    let g = b.convert(&g, opmath(gt.dtype));
    let w = b.convert(&w, g.dtype());
    let grad_rows = select_rows(b, &g, 0, &bag)?;
    let rows = select_rows(b, &w, 0, &idx)?;
    let prod = b.mul(&grad_rows, &rows)?;
    let zero = b.constant(Literal::Int(0), prod.dtype());
    let dot = b.reduce(&prod, &zero, &[1], |b, p, q| {
        b.add(p, q).expect("same type")
    });
    let valid = not_padding(b, &idx, padding)?;
    let zeros = b.full_like(&dot, Literal::Int(0));
    let dot = b.select(&valid, &dot, &zeros)?;
    one(b.convert(&dot, gt.dtype))
}

pub(crate) fn register(reg: &mut Registry) {
    reg.ops(
        &[
            "_embedding_bag",
            "_embedding_bag.out",
            "_embedding_bag_forward_only",
            "_embedding_bag_forward_only.out",
        ],
        embedding_bag,
    );
    reg.ops(&["_embedding_bag_backward"], embedding_bag_backward);
    reg.ops(
        &[
            "_embedding_bag_dense_backward",
            "_embedding_bag_dense_backward.out",
        ],
        embedding_bag_dense_backward,
    );
    reg.ops(
        &[
            "_embedding_bag_per_sample_weights_backward",
            "_embedding_bag_per_sample_weights_backward.out",
        ],
        per_sample_weights_backward,
    );
}
