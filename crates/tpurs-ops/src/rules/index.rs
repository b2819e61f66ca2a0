//! Indexing ops along one dimension and by element: `index_select`, `gather`, `scatter`
//! (src / value / reduce), `scatter_add`, `scatter_reduce`, `index_add`, `index_fill`, and the
//! helpers the other indexing files share. Out-of-range indices raise CPU's error at the
//! next host wait (device-side checks); the programs themselves clamp (gather) or drop
//! (scatter) them as StableHLO does.

use tpurs_hlo::{Builder, CompareDir, DType, GatherDims, Literal, ScatterDims, TensorType, Value};

use super::{one, wrap_dim};
use crate::checks::CheckKind;
use crate::ctx::{Arg, Ctx, Out};
use crate::dtype::torch_name;
use crate::error::{runtime, Error, Result};
use crate::table::Registry;

/// A scatter update computation on 0-d values.
pub(super) type Combine = fn(&mut Builder, &Value, &Value) -> Value;

/// `old + new` (`or` for booleans).
pub(super) fn combine_add(b: &mut Builder, x: &Value, y: &Value) -> Value {
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
pub(super) fn splat_i64(b: &mut Builder, v: i64, shape: &[i64]) -> Value {
    b.splat(
        Literal::Int(v),
        &TensorType::new(DType::I64, shape.to_vec()),
    )
}

/// `idx < 0 ? idx + size : idx` on an i64 tensor.
pub(super) fn wrap_negative(b: &mut Builder, idx: &Value, size: i64) -> Result<Value> {
    let zero = splat_i64(b, 0, idx.shape());
    let n = splat_i64(b, size, idx.shape());
    let neg = b.compare(CompareDir::Lt, idx, &zero)?;
    let wrapped = b.add(idx, &n)?;
    Ok(b.select(&neg, &wrapped, idx)?)
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

/// [`index_arg`] for gather and scatter, which accept an empty index of any dtype (CPU's
/// dtype check looks at non-empty indices only).
fn scatter_index_arg(ctx: &mut Ctx, i: usize, op: &str) -> Result<Value> {
    if ctx.ty(i)?.numel() == 0 {
        let v = ctx.tensor(i)?;
        return Ok(ctx.b.convert(&v, DType::I64));
    }
    index_arg(ctx, i, op, true)
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
    // CPU checks nothing more for an empty index, not even its dtype.
    let index_ty = ctx.ty(2)?;
    if index_ty.numel() == 0 {
        return one(ctx
            .b
            .splat(Literal::Int(0), &index_ty.with_dtype(x.dtype())));
    }
    let idx = index_arg(ctx, 2, "gather", true)?;
    check_gather_shapes("gather", x.shape(), idx.shape(), dim, None)?;
    check_along(ctx, &idx, x.shape(), dim)?;
    let out_shape = idx.shape().to_vec();
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

/// `floor(a / b)` for positive integer `b`, `a / b` for floats and complex values.
fn divide_by_count(b: &mut Builder, sum: &Value, count: &Value) -> Result<Value> {
    let q = b.div(sum, count)?;
    if !sum.dtype().is_int() {
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
    let idx = scatter_index_arg(ctx, 2, op)?;
    let src_is_tensor = matches!(ctx.arg(3), Arg::Tensor(_));
    let src_dtype_differs = src_is_tensor && ctx.ty(3)?.dtype != x.dtype();
    if src_dtype_differs {
        // CPU names `scatter` here for every scatter form.
        return runtime("scatter(): Expected self.dtype to be equal to src.dtype");
    }
    // CPU checks no shapes for an empty index, and writes nothing.
    if idx.ty.numel() == 0 {
        return one(x);
    }
    check_along(ctx, &idx, x.shape(), dim)?;
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
    // Complex values have no order: CPU's refusal of amax/amin comes from its own kernel.
    if x.dtype().is_complex() && matches!(reduce.as_deref(), Some("amax" | "amin")) {
        let name = reduce.as_deref().unwrap_or_default();
        return Err(Error::Uncovered(format!("{op}: {name} of complex values")));
    }
    let src = if src_is_tensor {
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
    if vt.dtype.is_complex() && !x.dtype().is_complex() {
        return runtime(
            "index_fill_(): Converting complex Scalar to non-complex type is not supported",
        );
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

pub(crate) fn register(reg: &mut Registry) {
    // Gathers move values of any dtype.
    reg.ops(&["index_select", "index_select.out"], index_select)
        .complex();
    reg.ops(&["gather", "gather.out"], gather).complex();
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
    )
    .complex();
    reg.ops(&["index_add", "index_add_", "index_add.out"], index_add)
        .complex();
    reg.ops(
        &[
            "index_fill.int_Scalar",
            "index_fill.int_Tensor",
            "index_fill_.int_Scalar",
            "index_fill_.int_Tensor",
        ],
        index_fill,
    )
    .complex();
}
