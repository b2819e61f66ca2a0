//! Advanced indexing and masks: `index.Tensor_out` and `_index_put_impl_` (long indices,
//! `None` slices and boolean masks), `masked_fill`, `masked_scatter` and its backward,
//! `nonzero_static`. Data-dependent shapes (`x[mask]`) get their size from the output the
//! structured `index` wrapper allocates after running `nonzero`; positions are computed with
//! a prefix sum of the mask.

use tpurs_hlo::{Builder, CompareDir, DType, GatherDims, Literal, ScatterDims, TensorType, Value};

use super::index::{combine_add, select_rows, splat_i64, wrap_negative, Combine};
use super::nn::sum_all;
use super::{broadcast_shapes, one};
use crate::checks::{self, CheckKind};
use crate::ctx::{Arg, Ctx, Out};
use crate::dtype::{converted_type_name, torch_name};
use crate::error::{runtime, Error, Result};
use crate::table::Registry;

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
                let size = shape[d];
                let msg = format!("index {{}} is out of bounds for dimension {d} with size {size}");
                ctx.check_range(&v, -size, size, CheckKind::Index, msg)?;
                let v = ctx.b.convert(&v, DType::I64);
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

/// Values with a row per selected element need exactly as many rows as the mask selects:
/// CPU's shape error, at the op (CUDA waits for the mask's count here too). Returns whether
/// the count matches (0-d), `None` when the values broadcast or checks are off.
fn check_mask_count(
    ctx: &mut Ctx,
    x: &Value,
    a: usize,
    mask: &Value,
    v: &Value,
) -> Result<Option<Value>> {
    let post = &x.shape()[a + mask.rank()..];
    if !checks::enabled() || v.rank() <= post.len() || v.shape()[v.rank() - post.len() - 1] == 1 {
        return Ok(None); // broadcast along the selected elements
    }
    let rows = v.shape()[v.rank() - post.len() - 1];
    let flags = ctx.b.convert(mask, DType::I64);
    let count = sum_all(&mut ctx.b, &flags)?;
    let result = |n: &str| {
        let dims: Vec<String> = x.shape()[..a]
            .iter()
            .map(i64::to_string)
            .chain([n.to_string()])
            .chain(post.iter().map(i64::to_string))
            .collect();
        format!("[{}]", dims.join(", "))
    };
    let message = format!(
        "shape mismatch: value tensor of shape {:?} cannot be broadcast to indexing result of shape {}",
        v.shape(),
        result("{}")
    );
    ctx.check_range_at_op(&count, rows, rows + 1, CheckKind::Runtime, message)?;
    let want = ctx.b.constant(Literal::Int(rows), DType::I64);
    Ok(Some(ctx.b.compare(CompareDir::Eq, &count, &want)?))
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
    // Raised after the indices are read and a mask counted, in CPU's order.
    let dtype_error = match ctx.arg(2) {
        Arg::Tensor(m) if m.dtype != x.dtype() => Some(format!(
            "Index put requires the source and destination dtypes match, got {} for the destination and {} for the source.",
            torch_name(x.dtype()),
            torch_name(m.dtype)
        )),
        _ => None,
    };
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
        let counted = check_mask_count(ctx, &x, a, &m, &v)?;
        if let Some(message) = dtype_error {
            if counted.is_some() && ctx.fail_at_op(CheckKind::Runtime, &message)? {
                return one(x);
            }
            return runtime(message);
        }
        let put = put_mask(&mut ctx.b, &x, a, &m, &v, accumulate)?;
        // A count that does not match raises at the op and leaves the tensor as it was.
        return one(match counted {
            Some(ok) => {
                let ok = ctx.b.broadcast_in_dim(&ok, x.shape(), &[])?;
                ctx.b.select(&ok, &put, &x)?
            }
            None => put,
        });
    }
    if let Some(message) = dtype_error {
        return runtime(message);
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
    if v.dtype().is_complex() && !xt.dtype.is_complex() && xt.dtype != DType::Bool {
        // CPU reads the value with `Scalar::to`, which refuses an imaginary part (a Scalar
        // value is checked so by the bridge).
        let im = ctx.b.imag(&v);
        let zero = ctx.b.full_like(&im, Literal::Float(0.0));
        let real = ctx.b.compare(CompareDir::Eq, &im, &zero)?;
        let msg = format!(
            "value cannot be converted to type {} without overflow",
            converted_type_name(xt.dtype)
        );
        ctx.check_that(&real, CheckKind::Runtime, &msg)?;
    }
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
    if numel == 0 {
        return one(x);
    }
    let ranks = mask_ranks(&mut ctx.b, &m)?;
    // The last rank is the count of true positions less one: it must name a source element.
    let last = ctx.b.slice_dim(&ranks, 0, numel - 1, numel, 1)?;
    let limit = splat_i64(&mut ctx.b, n, &[1]);
    let enough = ctx.b.compare(CompareDir::Lt, &last, &limit)?;
    let enough = ctx.b.reshape(&enough, &[])?;
    let msg = "Number of elements of source < number of ones in mask";
    ctx.check_that(&enough, CheckKind::Runtime, msg)?;
    if n == 0 {
        return one(x);
    }
    let s = ctx.tensor(2)?;
    let s = ctx.b.reshape(&s, &[n])?;
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
    reg.ops(&["nonzero_static"], nonzero_static).complex();
    // The functional `index.Tensor` is left to torch's structured wrapper, which sizes the
    // output (running `nonzero` for boolean masks) and calls this out= form.
    // Gathers and scatters move values of any dtype (accumulation adds complex values too).
    reg.ops(&["index.Tensor_out"], index).complex();
    reg.ops(&["_index_put_impl_"], index_put).complex();
    // Functional form for graphs; eager reaches `_index_put_impl_` through torch's kernel.
    reg.ops(&["index_put"], index_put).graph_only().complex();
    reg.ops(
        &[
            "masked_fill.Scalar",
            "masked_fill.Tensor",
            "masked_fill_.Scalar",
            "masked_fill_.Tensor",
        ],
        masked_fill,
    )
    .complex();
    reg.ops(&["masked_scatter", "masked_scatter_"], masked_scatter)
        .complex();
    reg.ops(&["masked_scatter_backward"], masked_scatter_backward);
}
