//! Indexing ops: `index_select`, `gather`, `scatter` (src / value / reduce), `scatter_add`,
//! `scatter_reduce`, `index_add`, advanced indexing (`index.Tensor_out`, `_index_put_impl_`
//! with long indices, `None` slices and boolean masks), `masked_fill`, `masked_scatter` and
//! its backward. Data-dependent shapes (`x[mask]`) get their size from the output the
//! structured `index` wrapper allocates after running `nonzero`; positions are computed with a
//! prefix sum of the mask. Out-of-range indices are clamped (gather) or dropped (scatter) as
//! StableHLO does: nothing is read back to check them.

use tpurs_hlo::{Builder, CompareDir, DType, GatherDims, Literal, ScatterDims, TensorType, Value};

use super::{broadcast_shapes, one, wrap_dim};
use crate::checks::CheckKind;
use crate::ctx::{Arg, Ctx, Out};
use crate::dtype::torch_name;
use crate::error::{runtime, Error, Result};
use crate::table::Registry;

/// A scatter update computation on 0-d values.
type Combine = fn(&mut Builder, &Value, &Value) -> Value;

/// `old + new` (`or` for booleans).
fn combine_add(b: &mut Builder, x: &Value, y: &Value) -> Value {
    if x.dtype() == DType::Bool {
        b.or(x, y).expect("same types")
    } else {
        b.add(x, y).expect("same types")
    }
}

/// `old * new` (`and` for booleans).
fn combine_mul(b: &mut Builder, x: &Value, y: &Value) -> Value {
    if x.dtype() == DType::Bool {
        b.and(x, y).expect("same types")
    } else {
        b.mul(x, y).expect("same types")
    }
}

/// `max(old, new)`.
fn combine_max(b: &mut Builder, x: &Value, y: &Value) -> Value {
    b.max(x, y).expect("same types")
}

/// `min(old, new)`.
fn combine_min(b: &mut Builder, x: &Value, y: &Value) -> Value {
    b.min(x, y).expect("same types")
}

/// An i64 constant of `shape`.
fn splat_i64(b: &mut Builder, v: i64, shape: &[i64]) -> Value {
    b.splat(
        Literal::Int(v),
        &TensorType::new(DType::I64, shape.to_vec()),
    )
}

/// `idx < 0 ? idx + size : idx` on an i64 tensor.
fn wrap_negative(b: &mut Builder, idx: &Value, size: i64) -> Result<Value> {
    let zero = splat_i64(b, 0, idx.shape());
    let n = splat_i64(b, size, idx.shape());
    let neg = b.compare(CompareDir::Lt, idx, &zero)?;
    let wrapped = b.add(idx, &n)?;
    Ok(b.select(&neg, &wrapped, idx)?)
}

/// Inclusive prefix sum of a 1-d i64 tensor (log-step scan).
fn cumsum_1d(b: &mut Builder, x: &Value) -> Result<Value> {
    let n = x.shape()[0];
    let zero = b.constant(Literal::Int(0), x.dtype());
    let mut acc = x.clone();
    let mut k = 1;
    while k < n {
        let head = b.slice(&acc, &[0], &[n - k], &[1])?;
        let shifted = b.pad(&head, &zero, &[k], &[0], &[0])?;
        acc = b.add(&acc, &shifted)?;
        k *= 2;
    }
    Ok(acc)
}

/// For a flattened boolean mask of `n` elements: the rank of every true element among the
/// true elements (`count(true before it)`), as i64 of shape `[n]`.
fn mask_ranks(b: &mut Builder, mask: &Value) -> Result<Value> {
    let n = mask.ty.numel();
    let flat = b.reshape(mask, &[n])?;
    let ones = b.convert(&flat, DType::I64);
    let c = cumsum_1d(b, &ones)?;
    let one = splat_i64(b, 1, &[n]);
    Ok(b.sub(&c, &one)?)
}

/// `true` where the flattened mask is set: scatter targets, `sentinel` (out of range, so the
/// update is dropped) elsewhere.
fn mask_targets(b: &mut Builder, mask: &Value, sentinel: i64) -> Result<Value> {
    let n = mask.ty.numel();
    let ranks = mask_ranks(b, mask)?;
    let flat = b.reshape(mask, &[n])?;
    let s = splat_i64(b, sentinel, &[n]);
    Ok(b.select(&flat, &ranks, &s)?)
}

/// Full element coordinates for gather / scatter along `dim`: `index.shape + [rank]`, with
/// `index` in component `dim` and the element's own position elsewhere.
fn coords(b: &mut Builder, index: &Value, dim: usize) -> Result<Value> {
    let r = index.rank();
    let ty = TensorType::new(DType::I64, index.shape().to_vec());
    let mut shape = index.shape().to_vec();
    shape.push(1);
    let mut parts = Vec::new();
    for d in 0..r {
        let c = if d == dim {
            index.clone()
        } else {
            b.iota(&ty, d)
        };
        parts.push(b.reshape(&c, &shape)?);
    }
    let refs: Vec<&Value> = parts.iter().collect();
    Ok(b.concatenate(&refs, r)?)
}

/// Elementwise gather `x[coords[..., :]]`, shaped like the coordinates' batch dims.
fn gather_elems(b: &mut Builder, x: &Value, coords: &Value) -> Value {
    let r = x.rank() as i64;
    let shape = coords.shape()[..coords.rank() - 1].to_vec();
    let dims = GatherDims {
        offset_dims: vec![],
        collapsed_slice_dims: (0..r).collect(),
        start_index_map: (0..r).collect(),
        index_vector_dim: r,
        slice_sizes: vec![1; r as usize],
    };
    b.gather(x, coords, &dims, &shape)
}

/// Elementwise scatter of `updates` into `x` at `coords` with `combine` (replace when `None`).
fn scatter_elems(
    b: &mut Builder,
    x: &Value,
    coords: &Value,
    updates: &Value,
    combine: Option<Combine>,
) -> Value {
    let r = x.rank() as i64;
    let dims = ScatterDims {
        update_window_dims: vec![],
        inserted_window_dims: (0..r).collect(),
        scatter_dims_to_operand_dims: (0..r).collect(),
        index_vector_dim: r,
    };
    b.scatter(x, coords, updates, &dims, combine)
}

/// Gathers slices of `x` along `dim` at the 1-d i64 `index` (`index_select`).
pub(super) fn select_rows(b: &mut Builder, x: &Value, dim: usize, index: &Value) -> Result<Value> {
    let n = index.ty.numel();
    let idx = b.reshape(index, &[n, 1])?;
    let mut shape = x.shape().to_vec();
    shape[dim] = n;
    let mut slice_sizes = x.shape().to_vec();
    slice_sizes[dim] = 1;
    let dims = GatherDims {
        offset_dims: (0..x.rank() as i64).filter(|&d| d != dim as i64).collect(),
        collapsed_slice_dims: vec![dim as i64],
        start_index_map: vec![dim as i64],
        index_vector_dim: 1,
        slice_sizes,
    };
    Ok(b.gather(x, &idx, &dims, &shape))
}

/// Scatter dimensions that write whole slices of a rank-`rank` operand along `dim`, one per
/// row of `[n, 1]` indices (`index_add`, `index_copy`, `index_reduce`).
pub(super) fn slices_along(rank: usize, dim: usize) -> ScatterDims {
    ScatterDims {
        update_window_dims: (0..rank as i64).filter(|&d| d != dim as i64).collect(),
        inserted_window_dims: vec![dim as i64],
        scatter_dims_to_operand_dims: vec![dim as i64],
        index_vector_dim: 1,
    }
}

/// Raises CPU's "index out of range in self" (an `IndexError`, at the next host wait) for
/// indices outside `0..shape[dim]` (`index_select`, `index_add`).
fn check_in_self(ctx: &mut Ctx, idx: &Value, shape: &[i64], dim: usize) -> Result<()> {
    let size = shape.get(dim).copied().unwrap_or(1);
    ctx.check_range(idx, 0, size, CheckKind::Index, "index out of range in self")
}

/// Reads argument `i` as an index tensor converted to i64 (checking int32 / int64).
fn index_arg(ctx: &mut Ctx, i: usize, op: &str, allow_int: bool) -> Result<Value> {
    let dt = ctx.ty(i)?.dtype;
    let ok = dt == DType::I64 || (allow_int && dt == DType::I32);
    if !ok {
        let want = if allow_int { "int32/int64" } else { "int64" };
        return runtime(format!("{op}(): Expected dtype {want} for index"));
    }
    let v = ctx.tensor(i)?;
    Ok(ctx.b.convert(&v, DType::I64))
}

/// `index_select(self, dim, index)`.
fn index_select(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let x = ctx.tensor(0)?;
    let dim = wrap_dim(ctx.int(1)?, x.rank())?;
    if ctx.ty(2)?.rank() > 1 {
        return Err(Error::Index(
            "index_select(): Index is supposed to be a vector".into(),
        ));
    }
    let idx = index_arg(ctx, 2, "index_select", true)?;
    check_in_self(ctx, &idx, x.shape(), dim)?;
    if x.rank() == 0 {
        return one(x);
    }
    one(select_rows(&mut ctx.b, &x, dim, &idx)?)
}

/// Checks gather / scatter index shapes against `self` (and `src`) as PyTorch does.
fn check_gather_shapes(
    op: &str,
    x: &[i64],
    index: &[i64],
    dim: usize,
    src: Option<&[i64]>,
) -> Result<()> {
    if index.len() != x.len() && !(index.len() <= 1 && x.len() <= 1) {
        return runtime(format!(
            "Index tensor must have the same number of dimensions as {} tensor",
            if op == "gather" { "input" } else { "self" }
        ));
    }
    for d in 0..index.len().min(x.len()) {
        if d != dim && index[d] > x[d] {
            return runtime(format!(
                "Size does not match at dimension {d} expected index {index:?} to be no larger than self {x:?} apart from dimension {dim}"
            ));
        }
        if let Some(s) = src {
            if s.len() == index.len() && index[d] > s[d] {
                return runtime(format!(
                    "Expected index {index:?} to be no larger than self {x:?} apart from dimension {dim} and to be no larger size than src {s:?}"
                ));
            }
        }
    }
    Ok(())
}

/// Reshapes a 0-d value to `[1]` (gather and scatter treat 0-d like 1-d).
fn at_least_1d(b: &mut Builder, v: &Value) -> Result<Value> {
    if v.rank() == 0 {
        Ok(b.reshape(v, &[1])?)
    } else {
        Ok(v.clone())
    }
}

/// Raises CPU's error for gather / scatter indices outside `0..shape[dim]` (at the next
/// host wait: checked on the device).
fn check_along(ctx: &mut Ctx, idx: &Value, shape: &[i64], dim: usize) -> Result<()> {
    let size = shape.get(dim).copied().unwrap_or(1);
    let msg = format!("index {{}} is out of bounds for dimension {dim} with size {size}");
    ctx.check_range(idx, 0, size, CheckKind::Runtime, msg)
}

/// `gather(self, dim, index)`.
fn gather(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let x = ctx.tensor(0)?;
    let dim = wrap_dim(ctx.int(1)?, x.rank())?;
    let idx = index_arg(ctx, 2, "gather", true)?;
    check_gather_shapes("gather", x.shape(), idx.shape(), dim, None)?;
    check_along(ctx, &idx, x.shape(), dim)?;
    let out_shape = idx.shape().to_vec();
    if idx.ty.numel() == 0 {
        return one(ctx
            .b
            .splat(Literal::Int(0), &TensorType::new(x.dtype(), out_shape)));
    }
    let x1 = at_least_1d(&mut ctx.b, &x)?;
    let i1 = at_least_1d(&mut ctx.b, &idx)?;
    let c = coords(&mut ctx.b, &i1, dim)?;
    let g = gather_elems(&mut ctx.b, &x1, &c);
    one(ctx.b.reshape(&g, &out_shape)?)
}

/// The update computation named by a scatter `reduce` string.
fn reduce_combine(name: &str) -> Result<Option<Combine>> {
    Ok(Some(match name {
        "add" | "sum" | "mean" => combine_add,
        "multiply" | "prod" => combine_mul,
        "amax" => combine_max,
        "amin" => combine_min,
        _ => {
            return runtime(format!(
                "reduce argument must be either sum, prod, mean, amax or amin, got {name}"
            ))
        }
    }))
}

/// `floor(a / b)` for positive integer `b`, `a / b` for floats.
fn divide_by_count(b: &mut Builder, sum: &Value, count: &Value) -> Result<Value> {
    let q = b.div(sum, count)?;
    if sum.dtype().is_float() {
        return Ok(q);
    }
    let r = b.rem(sum, count)?;
    let zero = b.full_like(sum, Literal::Int(0));
    let neg = b.compare(CompareDir::Lt, &r, &zero)?;
    let one = b.full_like(sum, Literal::Int(1));
    let qm = b.sub(&q, &one)?;
    Ok(b.select(&neg, &qm, &q)?)
}

/// All scatter forms: `scatter` (src / value, optional `reduce=`), `scatter_add` and
/// `scatter_reduce.two`, functional, in-place and `out=`.
fn scatter(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let base = ctx.name.split('.').next().unwrap_or("");
    let op = base.trim_end_matches('_');
    let x = ctx.tensor(0)?;
    let dim = wrap_dim(ctx.int(1)?, x.rank())?;
    let idx = index_arg(ctx, 2, op, true)?;
    check_along(ctx, &idx, x.shape(), dim)?;
    let src_is_tensor = matches!(ctx.arg(3), Arg::Tensor(_));
    let src_shape = if src_is_tensor {
        Some(ctx.ty(3)?.shape)
    } else {
        None
    };
    check_gather_shapes(op, x.shape(), idx.shape(), dim, src_shape.as_deref())?;
    let (reduce, include_self) = match op {
        "scatter_add" => (Some("sum".to_string()), true),
        "scatter_reduce" => (Some(ctx.str(4)?.to_string()), ctx.bool_or(5, true)?),
        _ if ctx.has(4) => (Some(ctx.str(4)?.to_string()), true),
        _ => (None, true),
    };
    let src = if src_is_tensor {
        let sd = ctx.ty(3)?.dtype;
        if sd != x.dtype() {
            return runtime(format!(
                "{op}(): Expected self.dtype to be equal to src.dtype"
            ));
        }
        let s = ctx.tensor(3)?;
        let s = at_least_1d(&mut ctx.b, &s)?;
        let i1 = at_least_1d(&mut ctx.b, &idx)?;
        let zeros = vec![0; s.rank()];
        let ones = vec![1; s.rank()];
        ctx.b.slice(&s, &zeros, i1.shape(), &ones)?
    } else {
        let v = ctx.tensor(3)?;
        let v = ctx.b.convert(&v, x.dtype());
        let shape = if idx.rank() == 0 {
            vec![1]
        } else {
            idx.shape().to_vec()
        };
        ctx.b.broadcast_to(&v, &shape)?
    };
    if idx.ty.numel() == 0 {
        return one(x);
    }
    let x1 = at_least_1d(&mut ctx.b, &x)?;
    let i1 = at_least_1d(&mut ctx.b, &idx)?;
    let c = coords(&mut ctx.b, &i1, dim)?;
    let Some(reduce) = reduce else {
        let r = scatter_elems(&mut ctx.b, &x1, &c, &src, None);
        return one(ctx.b.reshape(&r, x.shape())?);
    };
    let combine = reduce_combine(&reduce)?;
    let mut start = x1.clone();
    if !include_self {
        // Positions that receive updates start from the reduction's identity; for amax /
        // amin any of the updates works (the reduction is idempotent).
        let init = match reduce.as_str() {
            "sum" | "mean" => ctx.b.full_like(&src, Literal::Int(0)),
            "prod" => ctx.b.full_like(&src, Literal::Int(1)),
            _ => src.clone(),
        };
        start = scatter_elems(&mut ctx.b, &x1, &c, &init, None);
    }
    let mut r = scatter_elems(&mut ctx.b, &start, &c, &src, combine);
    if reduce == "mean" {
        let init = if include_self { 1 } else { 0 };
        let cnt0 = ctx.b.full_like(&x1, Literal::Int(init));
        let ones = ctx.b.full_like(&src, Literal::Int(1));
        let cnt = scatter_elems(&mut ctx.b, &cnt0, &c, &ones, Some(combine_add));
        let zero = ctx.b.full_like(&cnt, Literal::Int(0));
        let is_zero = ctx.b.compare(CompareDir::Eq, &cnt, &zero)?;
        let one_v = ctx.b.full_like(&cnt, Literal::Int(1));
        let cnt = ctx.b.select(&is_zero, &one_v, &cnt)?;
        r = divide_by_count(&mut ctx.b, &r, &cnt)?;
    }
    one(ctx.b.reshape(&r, x.shape())?)
}

/// `index_add(self, dim, index, source, alpha)`.
fn index_add(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let x = ctx.tensor(0)?;
    let dim = wrap_dim(ctx.int(1)?, x.rank())?;
    if ctx.ty(2)?.rank() > 1 {
        return Err(Error::Index(
            "index_add_(): Index is supposed to be a vector".into(),
        ));
    }
    let idx = index_arg(ctx, 2, "index_add_", true)?;
    check_in_self(ctx, &idx, x.shape(), dim)?;
    let st = ctx.ty(3)?;
    if st.dtype != x.dtype() {
        return runtime(format!(
            "index_add_(): self ({}) and source ({}) must have the same scalar type",
            torch_name(x.dtype()),
            torch_name(st.dtype)
        ));
    }
    let n = idx.ty.numel();
    let x1 = at_least_1d(&mut ctx.b, &x)?;
    let mut expect = x1.shape().to_vec();
    expect[dim] = n;
    if st.numel() != expect.iter().product::<i64>()
        || (st.rank() == x1.rank() && st.shape != expect)
        || (st.rank() != x1.rank() && st.rank() > 1)
    {
        return runtime(format!(
            "index_add_(): Source/destination tensor must have same slice shapes. Destination slice shape: {:?} at dimension {dim} and source slice shape: {:?} at dimension 0.",
            x.shape(),
            st.shape
        ));
    }
    if n == 0 {
        return one(x);
    }
    let s = ctx.tensor(3)?;
    let mut s = ctx.b.reshape(&s, &expect)?;
    if ctx.has(4) {
        let a = ctx.tensor(4)?;
        let a = ctx.b.convert(&a, x.dtype());
        let a = ctx.b.broadcast_to(&a, &expect)?;
        s = if x.dtype() == DType::Bool {
            ctx.b.and(&s, &a)?
        } else {
            ctx.b.mul(&s, &a)?
        };
    }
    let ind = ctx.b.reshape(&idx, &[n, 1])?;
    let dims = slices_along(x1.rank(), dim);
    let r = ctx.b.scatter(&x1, &ind, &s, &dims, Some(combine_add));
    one(ctx.b.reshape(&r, x.shape())?)
}

/// `index_fill(self, dim, index, value)` (Scalar or 0-d Tensor value): negative indices wrap.
fn index_fill(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let x = ctx.tensor(0)?;
    let dim = wrap_dim(ctx.int(1)?, x.rank())?;
    if ctx.ty(2)?.rank() > 1 {
        return Err(Error::Index(
            "index_fill_(): Index is supposed to be a vector".into(),
        ));
    }
    let vt = ctx.ty(3)?;
    if vt.rank() != 0 {
        return runtime(format!(
            "index_fill_ only supports a 0-dimensional value tensor, but got tensor with {} dimension(s).",
            vt.rank()
        ));
    }
    let idx = index_arg(ctx, 2, "index_fill_", false)?;
    let n = idx.ty.numel();
    if n == 0 || x.ty.numel() == 0 {
        return one(x);
    }
    let x1 = at_least_1d(&mut ctx.b, &x)?;
    let size = x1.shape()[dim];
    let msg = format!("index {{}} is out of bounds for dimension {dim} with size {size}");
    ctx.check_range(&idx, -size, size, CheckKind::Index, msg)?;
    let idx = wrap_negative(&mut ctx.b, &idx, size)?;
    let idx = ctx.b.reshape(&idx, &[n, 1])?;
    let none = ctx
        .b
        .splat(Literal::Bool(false), &TensorType::new(DType::Bool, [size]));
    let hit = ctx
        .b
        .splat(Literal::Bool(true), &TensorType::new(DType::Bool, [n]));
    let dims = ScatterDims {
        update_window_dims: vec![],
        inserted_window_dims: vec![0],
        scatter_dims_to_operand_dims: vec![0],
        index_vector_dim: 1,
    };
    let rows = ctx.b.scatter(&none, &idx, &hit, &dims, None);
    let mask = ctx.b.broadcast_in_dim(&rows, x1.shape(), &[dim as i64])?;
    let v = ctx.tensor(3)?;
    let v = ctx.b.convert(&v, x.dtype());
    let v = ctx.b.broadcast_to(&v, x1.shape())?;
    let r = ctx.b.select(&mask, &v, &x1)?;
    one(ctx.b.reshape(&r, x.shape())?)
}

/// One entry of an advanced-indexing list as the rule sees it.
enum Entry {
    /// A full slice over one dim.
    Full,
    /// A long / int index tensor over one dim.
    Index(Value),
    /// A boolean (or uint8) mask over `rank` dims.
    Mask(Value),
}

/// Reads the `Tensor?[]` index list at argument `i`, checking dtypes and mask shapes.
fn read_entries(ctx: &mut Ctx, i: usize, self_shape: &[i64]) -> Result<Vec<Entry>> {
    let n = ctx.list_len(i);
    let mut kinds = Vec::new();
    let mut used = 0usize;
    for j in 0..n {
        let ty = match ctx.arg(i) {
            Arg::List(items) => match &items[j] {
                Arg::None => None,
                Arg::Tensor(m) => Some(m.ty()),
                Arg::Scalar(s) => Some(TensorType::scalar(s.dtype)),
                _ => return Err(Error::Type("index: bad index list item".into())),
            },
            _ => return Err(Error::Type("index: expected a list of tensors".into())),
        };
        let consumed = match &ty {
            Some(t) if matches!(t.dtype, DType::Bool | DType::U8) => {
                for (k, &s) in t.shape.iter().enumerate() {
                    let d = used + k;
                    if d < self_shape.len() && s != self_shape[d] {
                        return Err(Error::Index(format!(
                            "The shape of the mask {:?} at index {k} does not match the shape of the indexed tensor {:?} at index {d}",
                            t.shape, self_shape
                        )));
                    }
                }
                t.rank()
            }
            Some(t) if !t.dtype.is_int() => {
                return Err(Error::Index(
                    "tensors used as indices must be long, int, byte or bool tensors".into(),
                ))
            }
            _ => 1,
        };
        used += consumed;
        kinds.push(ty);
    }
    if used > self_shape.len() {
        return Err(Error::Index(format!(
            "too many indices for tensor of dimension {} (got {used})",
            self_shape.len()
        )));
    }
    let values = ctx.list(i)?;
    Ok(kinds
        .into_iter()
        .zip(values)
        .map(|(ty, v)| match (ty, v) {
            (Some(t), Some(v)) if matches!(t.dtype, DType::Bool | DType::U8) => Entry::Mask(v),
            (Some(_), Some(v)) => Entry::Index(v),
            _ => Entry::Full,
        })
        .collect())
}

/// The coordinates of the `nnz` true elements of `mask`, one `[nnz]` i64 tensor per mask dim.
fn mask_coords(b: &mut Builder, mask: &Value, nnz: i64) -> Result<Vec<Value>> {
    let n = mask.ty.numel();
    let m = b.convert(mask, DType::Bool);
    let targets = mask_targets(b, &m, nnz)?;
    let targets = b.reshape(&targets, &[n, 1])?;
    let positions = b.iota(&TensorType::new(DType::I64, [n]), 0);
    let base = splat_i64(b, 0, &[nnz]);
    let dims = ScatterDims {
        update_window_dims: vec![],
        inserted_window_dims: vec![0],
        scatter_dims_to_operand_dims: vec![0],
        index_vector_dim: 1,
    };
    let flat = b.scatter(&base, &targets, &positions, &dims, None);
    let shape = mask.shape().to_vec();
    let mut stride = 1;
    let mut out = vec![flat.clone(); shape.len()];
    for k in (0..shape.len()).rev() {
        let s = splat_i64(b, stride, &[nnz]);
        let q = b.div(&flat, &s)?;
        let size = splat_i64(b, shape[k], &[nnz]);
        out[k] = b.rem(&q, &size)?;
        stride *= shape[k];
    }
    Ok(out)
}

/// An advanced-indexing plan: which dims are indexed, the stacked coordinates, and the
/// result layout shared by `index` (gather) and `index_put` (scatter).
struct Plan {
    /// Indexed dims of self, ascending.
    dims: Vec<i64>,
    /// Coordinates, shaped `broadcast + [dims.len()]`.
    idx: Value,
    /// Result shape.
    out_shape: Vec<i64>,
    /// Result dims that are slice dims of self (the non-indexed dims).
    offset_dims: Vec<i64>,
    /// Rank of the broadcast index shape.
    batch_rank: usize,
}

/// Builds the plan for indexing a tensor of `shape` with `entries`; masks become `nnz`
/// coordinates each (`nnz` from the caller, `None` when unknown).
fn plan(
    ctx: &mut Ctx,
    shape: &[i64],
    entries: Vec<Entry>,
    nnz: Option<i64>,
) -> Result<Option<Plan>> {
    let mut dims = Vec::new();
    let mut tensors = Vec::new();
    let mut d = 0usize;
    for e in entries {
        match e {
            Entry::Full => d += 1,
            Entry::Index(v) => {
                let v = ctx.b.convert(&v, DType::I64);
                let size = shape[d];
                let msg = format!("index {{}} is out of bounds for dimension {d} with size {size}");
                ctx.check_range(&v, -size, size, CheckKind::Index, msg)?;
                tensors.push(wrap_negative(&mut ctx.b, &v, size)?);
                dims.push(d as i64);
                d += 1;
            }
            Entry::Mask(m) => {
                let k = m.rank();
                let nnz = nnz.ok_or_else(|| {
                    Error::NotImplemented(
                        "index: boolean mask with an unknown number of elements".into(),
                    )
                })?;
                for c in mask_coords(&mut ctx.b, &m, nnz)? {
                    tensors.push(c);
                    dims.push(d as i64);
                    d += 1;
                }
                if k == 0 {
                    return Err(Error::NotImplemented("index: 0-d boolean index".into()));
                }
            }
        }
    }
    if tensors.is_empty() {
        return Ok(None);
    }
    let mut bshape: Vec<i64> = Vec::new();
    for t in &tensors {
        bshape = broadcast_shapes(&bshape, t.shape()).map_err(|_| {
            let shapes: Vec<String> = tensors.iter().map(|t| format!("{:?}", t.shape())).collect();
            Error::Index(format!(
                "shape mismatch: indexing tensors could not be broadcast together with shapes {}",
                shapes.join(", ")
            ))
        })?;
    }
    let b = &mut ctx.b;
    let mut cshape = bshape.clone();
    cshape.push(1);
    let mut parts = Vec::new();
    for t in &tensors {
        let t = b.broadcast_to(t, &bshape)?;
        parts.push(b.reshape(&t, &cshape)?);
    }
    let refs: Vec<&Value> = parts.iter().collect();
    let idx = b.concatenate(&refs, bshape.len())?;
    let adjacent = dims.windows(2).all(|w| w[1] == w[0] + 1);
    let rest: Vec<usize> = (0..shape.len())
        .filter(|&i| !dims.contains(&(i as i64)))
        .collect();
    let nb = bshape.len();
    let (out_shape, offset_dims) = if adjacent {
        let first = dims[0] as usize;
        let mut out: Vec<i64> = shape[..first].to_vec();
        out.extend_from_slice(&bshape);
        out.extend(rest.iter().filter(|&&i| i > first).map(|&i| shape[i]));
        let offs: Vec<i64> = (0..first as i64)
            .chain((first + nb) as i64..(rest.len() + nb) as i64)
            .collect();
        (out, offs)
    } else {
        let mut out = bshape.clone();
        out.extend(rest.iter().map(|&i| shape[i]));
        let offs: Vec<i64> = (nb as i64..(nb + rest.len()) as i64).collect();
        (out, offs)
    };
    Ok(Some(Plan {
        dims,
        idx,
        out_shape,
        offset_dims,
        batch_rank: nb,
    }))
}

/// Number of true elements of the masks in `x[indices]`, read off the output shape the
/// structured wrapper allocated (it ran `nonzero` to size it).
fn mask_nnz(ctx: &Ctx, self_shape: &[i64]) -> Result<Option<i64>> {
    let Arg::List(items) = ctx.arg(1) else {
        return Ok(None);
    };
    let mut pos = 0usize;
    let mut first = None;
    let mut last = 0usize;
    let mut batch_rank = 0usize;
    let mut has_mask = false;
    let mut other_last = Vec::new();
    for it in items {
        match it {
            Arg::None => pos += 1,
            Arg::Tensor(m) if matches!(m.dtype, DType::Bool | DType::U8) => {
                has_mask = true;
                first.get_or_insert(pos);
                pos += m.sizes.len();
                last = pos;
                batch_rank = batch_rank.max(1);
            }
            other => {
                let sizes = match other {
                    Arg::Tensor(m) => m.sizes.clone(),
                    _ => vec![],
                };
                first.get_or_insert(pos);
                pos += 1;
                last = pos;
                batch_rank = batch_rank.max(sizes.len());
                if let Some(&l) = sizes.last() {
                    other_last.push(l);
                }
            }
        }
    }
    if !has_mask {
        return Ok(None);
    }
    let out = &ctx.write_meta(0)?.sizes;
    let first = first.unwrap_or(0);
    // Adjacent indexed dims keep their place; otherwise the broadcast dims come first.
    let indexed: Vec<bool> = {
        let mut v = vec![false; self_shape.len()];
        let mut p = 0usize;
        for it in items {
            let k = match it {
                Arg::Tensor(m) if matches!(m.dtype, DType::Bool | DType::U8) => m.sizes.len(),
                _ => 1,
            };
            if !matches!(it, Arg::None) {
                v[p..p + k].iter_mut().for_each(|x| *x = true);
            }
            p += k;
        }
        v
    };
    let adjacent = indexed[first..last].iter().all(|&x| x);
    let start = if adjacent { first } else { 0 };
    let Some(&nnz) = out.get(start + batch_rank - 1) else {
        return runtime("index: output shape does not match the indices");
    };
    if other_last.iter().any(|&l| l != 1) && nnz != 1 {
        return Err(Error::NotImplemented(
            "index: boolean masks combined with index tensors of the same length".into(),
        ));
    }
    Ok(Some(nnz))
}

/// `index.Tensor_out`: `x[indices]` by a gather (masks sized from the output).
fn index(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let x = ctx.tensor(0)?;
    let nnz = mask_nnz(ctx, x.shape())?;
    let entries = read_entries(ctx, 1, x.shape())?;
    let Some(p) = plan(ctx, x.shape(), entries, nnz)? else {
        return one(x);
    };
    if p.out_shape.contains(&0) || x.ty.numel() == 0 {
        return one(ctx
            .b
            .splat(Literal::Int(0), &TensorType::new(x.dtype(), p.out_shape)));
    }
    let mut slice_sizes = x.shape().to_vec();
    for &d in &p.dims {
        slice_sizes[d as usize] = 1;
    }
    let dims = GatherDims {
        offset_dims: p.offset_dims.clone(),
        collapsed_slice_dims: p.dims.clone(),
        start_index_map: p.dims.clone(),
        index_vector_dim: p.batch_rank as i64,
        slice_sizes,
    };
    one(ctx.b.gather(&x, &p.idx, &dims, &p.out_shape))
}

/// Broadcasts `v` to `target` with the `index_put_` error message.
fn broadcast_values(b: &mut Builder, v: &Value, target: &[i64]) -> Result<Value> {
    let ok = broadcast_shapes(v.shape(), target).is_ok_and(|s| s == target);
    if !ok {
        return runtime(format!(
            "shape mismatch: value tensor of shape {:?} cannot be broadcast to indexing result of shape {:?}",
            v.shape(),
            target
        ));
    }
    Ok(b.broadcast_to(v, target)?)
}

/// `x[mask] = values` (`accumulate`: `+=`) for one boolean mask over dims `a .. a + k`,
/// without knowing the number of true elements: broadcast values are selected in place,
/// per-element values are picked by each true element's rank.
fn put_mask(
    b: &mut Builder,
    x: &Value,
    a: usize,
    mask: &Value,
    v: &Value,
    accumulate: bool,
) -> Result<Value> {
    let shape = x.shape().to_vec();
    let k = mask.rank();
    let post = &shape[a + k..];
    let vn = if v.rank() > post.len() {
        v.shape()[v.rank() - post.len() - 1]
    } else {
        1
    };
    if vn == 0 {
        return Ok(x.clone());
    }
    let mut target: Vec<i64> = shape[..a].to_vec();
    target.push(vn);
    target.extend_from_slice(post);
    let vb = broadcast_values(b, v, &target)?;
    let full = if vn == 1 {
        let mut ones_shape: Vec<i64> = shape[..a].to_vec();
        ones_shape.extend(std::iter::repeat_n(1, k));
        ones_shape.extend_from_slice(post);
        let r = b.reshape(&vb, &ones_shape)?;
        b.broadcast_to(&r, &shape)?
    } else {
        let mbool = b.convert(mask, DType::Bool);
        let ranks = mask_ranks(b, &mbool)?;
        let lo = splat_i64(b, 0, ranks.shape());
        let hi = splat_i64(b, vn - 1, ranks.shape());
        let ranks = b.clamp(&lo, &ranks, &hi);
        let picked = select_rows(b, &vb, a, &ranks)?;
        b.reshape(&picked, &shape)?
    };
    let m = b.convert(mask, DType::Bool);
    let mdims: Vec<i64> = (a as i64..(a + k) as i64).collect();
    let mb = b.broadcast_in_dim(&m, &shape, &mdims)?;
    if accumulate {
        let z = b.full_like(x, Literal::Int(0));
        let add = b.select(&mb, &full, &z)?;
        Ok(combine_add_values(b, x, &add)?)
    } else {
        Ok(b.select(&mb, &full, x)?)
    }
}

/// `x + y` (`or` for booleans) on tensors.
fn combine_add_values(b: &mut Builder, x: &Value, y: &Value) -> Result<Value> {
    Ok(if x.dtype() == DType::Bool {
        b.or(x, y)?
    } else {
        b.add(x, y)?
    })
}

/// `_index_put_impl_(self, indices, values, accumulate, unsafe)`: `x[indices] = values`.
fn index_put(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let x = ctx.tensor(0)?;
    let accumulate = ctx.bool_or(3, false)?;
    if let Arg::Tensor(m) = ctx.arg(2) {
        if m.dtype != x.dtype() {
            return runtime(format!(
                "Index put requires the source and destination dtypes match, got {} for the destination and {} for the source.",
                torch_name(x.dtype()),
                torch_name(m.dtype)
            ));
        }
    }
    let v = ctx.tensor(2)?;
    let v = ctx.b.convert(&v, x.dtype());
    let entries = read_entries(ctx, 1, x.shape())?;
    let masks = entries
        .iter()
        .filter(|e| matches!(e, Entry::Mask(_)))
        .count();
    if masks > 0 {
        let others = entries
            .iter()
            .filter(|e| matches!(e, Entry::Index(_)))
            .count();
        if masks > 1 || others > 0 {
            return Err(Error::NotImplemented(
                "index_put_: a boolean mask combined with other index tensors".into(),
            ));
        }
        let a = entries
            .iter()
            .take_while(|e| matches!(e, Entry::Full))
            .count();
        let Some(Entry::Mask(m)) = entries.into_iter().nth(a) else {
            return runtime("index_put_: mask not found");
        };
        return one(put_mask(&mut ctx.b, &x, a, &m, &v, accumulate)?);
    }
    let Some(p) = plan(ctx, x.shape(), entries, None)? else {
        let vb = broadcast_values(&mut ctx.b, &v, x.shape())?;
        return one(if accumulate {
            combine_add_values(&mut ctx.b, &x, &vb)?
        } else {
            vb
        });
    };
    let vb = broadcast_values(&mut ctx.b, &v, &p.out_shape)?;
    if p.out_shape.contains(&0) || x.ty.numel() == 0 {
        return one(x);
    }
    let dims = ScatterDims {
        update_window_dims: p.offset_dims.clone(),
        inserted_window_dims: p.dims.clone(),
        scatter_dims_to_operand_dims: p.dims.clone(),
        index_vector_dim: p.batch_rank as i64,
    };
    let combine: Option<Combine> = if accumulate { Some(combine_add) } else { None };
    one(ctx.b.scatter(&x, &p.idx, &vb, &dims, combine))
}

/// `masked_fill(self, mask, value)` (Scalar or 0-d Tensor value), functional and in-place.
fn masked_fill(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let xt = ctx.ty(0)?;
    let mt = ctx.ty(1)?;
    if mt.dtype != DType::Bool {
        return runtime(format!(
            "masked_fill_ only supports boolean masks, but got mask with dtype {}",
            torch_name(mt.dtype)
        ));
    }
    let vt = ctx.ty(2)?;
    if vt.rank() != 0 {
        return runtime(format!(
            "masked_fill_ only supports a 0-dimensional value tensor, but got tensor with {} dimension(s).",
            vt.rank()
        ));
    }
    let shape = if ctx.is_inplace() {
        let s = broadcast_shapes(&xt.shape, &mt.shape)?;
        if s != xt.shape {
            return runtime(format!(
                "masked_fill_: mask of shape {:?} cannot be broadcast to self of shape {:?}",
                mt.shape, xt.shape
            ));
        }
        s
    } else {
        broadcast_shapes(&xt.shape, &mt.shape)?
    };
    let x = ctx.tensor(0)?;
    let x = ctx.b.broadcast_to(&x, &shape)?;
    let m = ctx.tensor(1)?;
    let m = ctx.b.broadcast_to(&m, &shape)?;
    let v = ctx.tensor(2)?;
    let v = ctx.b.convert(&v, xt.dtype);
    let v = ctx.b.broadcast_to(&v, &shape)?;
    one(ctx.b.select(&m, &v, &x)?)
}

/// `masked_scatter(self, mask, source)`: true positions take consecutive source elements.
fn masked_scatter(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let xt = ctx.ty(0)?;
    let mt = ctx.ty(1)?;
    let st = ctx.ty(2)?;
    if mt.dtype != DType::Bool {
        return runtime(format!(
            "masked_scatter_ only supports boolean masks, but got mask with dtype {}",
            torch_name(mt.dtype)
        ));
    }
    if st.dtype != xt.dtype {
        return runtime(format!(
            "masked_scatter_: expected self and source to have same dtypes but got {} and {}",
            torch_name(xt.dtype),
            torch_name(st.dtype)
        ));
    }
    let shape = broadcast_shapes(&xt.shape, &mt.shape)?;
    if ctx.is_inplace() && shape != xt.shape {
        return runtime(format!(
            "masked_scatter_: mask of shape {:?} cannot be broadcast to self of shape {:?}",
            mt.shape, xt.shape
        ));
    }
    let x = ctx.tensor(0)?;
    let x = ctx.b.broadcast_to(&x, &shape)?;
    let m = ctx.tensor(1)?;
    let m = ctx.b.broadcast_to(&m, &shape)?;
    let n = st.numel();
    let numel: i64 = shape.iter().product();
    if n == 0 || numel == 0 {
        return one(x);
    }
    let s = ctx.tensor(2)?;
    let s = ctx.b.reshape(&s, &[n])?;
    let ranks = mask_ranks(&mut ctx.b, &m)?;
    let lo = splat_i64(&mut ctx.b, 0, &[numel]);
    let hi = splat_i64(&mut ctx.b, n - 1, &[numel]);
    let ranks = ctx.b.clamp(&lo, &ranks, &hi);
    let picked = select_rows(&mut ctx.b, &s, 0, &ranks)?;
    let picked = ctx.b.reshape(&picked, &shape)?;
    one(ctx.b.select(&m, &picked, &x)?)
}

/// `masked_scatter_backward(grad, mask, sizes)`: the gradient elements at true positions,
/// packed to the front of a tensor of `sizes` (zeros after them).
fn masked_scatter_backward(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let g = ctx.tensor(0)?;
    let m = ctx.tensor(1)?;
    let sizes = ctx.int_list(2)?;
    let total: i64 = sizes.iter().product();
    let base = ctx
        .b
        .splat(Literal::Int(0), &TensorType::new(g.dtype(), [total]));
    let shape = broadcast_shapes(g.shape(), m.shape())?;
    let numel: i64 = shape.iter().product();
    if numel == 0 || total == 0 {
        return one(ctx.b.reshape(&base, &sizes)?);
    }
    let g = ctx.b.broadcast_to(&g, &shape)?;
    let m = ctx.b.broadcast_to(&m, &shape)?;
    let targets = mask_targets(&mut ctx.b, &m, total)?;
    let targets = ctx.b.reshape(&targets, &[numel, 1])?;
    let gf = ctx.b.reshape(&g, &[numel])?;
    let dims = ScatterDims {
        update_window_dims: vec![],
        inserted_window_dims: vec![0],
        scatter_dims_to_operand_dims: vec![0],
        index_vector_dim: 1,
    };
    let r = ctx.b.scatter(&base, &targets, &gf, &dims, None);
    one(ctx.b.reshape(&r, &sizes)?)
}

/// Registers the index family.
/// `nonzero_static(self, *, size, fill_value=-1)`: coordinates of the first `size` nonzero
/// elements in row-major order, rows past the count filled with `fill_value`. The bridge
/// builds `nonzero` on it once it has read the count.
fn nonzero_static(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let x = ctx.tensor(0)?;
    let size = ctx.int(1)?;
    let fill = ctx.int_or(2, -1)?;
    if size < 0 {
        return runtime(format!(
            "nonzero_static: 'size' must be an non-negative integer, got {size}"
        ));
    }
    let shape = x.shape().to_vec();
    let rank = shape.len();
    let b = &mut ctx.b;
    if rank == 0 || size == 0 {
        return one(b.splat(
            Literal::Int(fill),
            &TensorType::new(DType::I64, [size, rank as i64]),
        ));
    }
    let n: i64 = shape.iter().product();
    let flat = b.reshape(&x, &[n])?;
    let zero = b.full_like(&flat, Literal::Int(0));
    let mask = b.compare(CompareDir::Ne, &flat, &zero)?;
    let ones = b.convert(&mask, DType::I64);
    let running = super::reduce::scan(b, &ones, 0, Literal::Int(0), |b, x, y| {
        b.add(x, y).expect("same types")
    })?;
    let one_i = b.full_like(&running, Literal::Int(1));
    let position = b.sub(&running, &one_i)?;
    // Zero elements scatter out of bounds, which scatter drops.
    let dropped = b.full_like(&position, Literal::Int(size));
    let position = b.select(&mask, &position, &dropped)?;
    let position = b.reshape(&position, &[n, 1])?;
    let linear = b.iota(&TensorType::new(DType::I64, [n]), 0);
    let unset = b.splat(Literal::Int(-1), &TensorType::new(DType::I64, [size]));
    let dims = ScatterDims {
        update_window_dims: vec![],
        inserted_window_dims: vec![0],
        scatter_dims_to_operand_dims: vec![0],
        index_vector_dim: 1,
    };
    let found = b.scatter(&unset, &position, &linear, &dims, None);
    let mut columns = Vec::with_capacity(rank);
    let mut stride: i64 = n;
    for &extent in &shape {
        stride /= extent.max(1);
        let s = b.full_like(&found, Literal::Int(stride.max(1)));
        let e = b.full_like(&found, Literal::Int(extent.max(1)));
        let q = b.div(&found, &s)?;
        let c = b.rem(&q, &e)?;
        columns.push(b.reshape(&c, &[size, 1])?);
    }
    let refs: Vec<&Value> = columns.iter().collect();
    let coords = b.concatenate(&refs, 1)?;
    let zero_i = b.full_like(&found, Literal::Int(0));
    let valid = b.compare(CompareDir::Ge, &found, &zero_i)?;
    let valid = b.reshape(&valid, &[size, 1])?;
    let valid = b.broadcast_in_dim(&valid, &[size, rank as i64], &[0, 1])?;
    let filler = b.full_like(&coords, Literal::Int(fill));
    one(b.select(&valid, &coords, &filler)?)
}

pub(crate) fn register(reg: &mut Registry) {
    reg.ops(&["nonzero_static"], nonzero_static);
    reg.ops(&["index_select", "index_select.out"], index_select);
    reg.ops(&["gather", "gather.out"], gather);
    reg.ops(
        &[
            "scatter.src",
            "scatter.value",
            "scatter_.src",
            "scatter_.value",
            "scatter.src_out",
            "scatter.value_out",
            "scatter.reduce",
            "scatter.value_reduce",
            "scatter_.reduce",
            "scatter_.value_reduce",
            "scatter.reduce_out",
            "scatter.value_reduce_out",
            "scatter_add",
            "scatter_add_",
            "scatter_add.out",
            "scatter_reduce.two",
            "scatter_reduce_.two",
            "scatter_reduce.two_out",
        ],
        scatter,
    );
    reg.ops(&["index_add", "index_add_", "index_add.out"], index_add);
    // The functional `index.Tensor` is left to torch's structured wrapper, which sizes the
    // output (running `nonzero` for boolean masks) and calls this out= form.
    reg.ops(
        &[
            "index_fill.int_Scalar",
            "index_fill.int_Tensor",
            "index_fill_.int_Scalar",
            "index_fill_.int_Tensor",
        ],
        index_fill,
    );
    reg.ops(&["index.Tensor_out"], index);
    reg.ops(&["_index_put_impl_"], index_put);
    // Functional form for graphs; eager reaches `_index_put_impl_` through torch's kernel.
    reg.ops(&["index_put"], index_put).graph_only();
    reg.ops(
        &[
            "masked_fill.Scalar",
            "masked_fill.Tensor",
            "masked_fill_.Scalar",
            "masked_fill_.Tensor",
        ],
        masked_fill,
    );
    reg.ops(&["masked_scatter", "masked_scatter_"], masked_scatter);
    reg.ops(&["masked_scatter_backward"], masked_scatter_backward);
}
