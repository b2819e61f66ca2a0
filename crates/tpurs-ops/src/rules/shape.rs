//! Shape ops that move data without arithmetic: `cat`, `flip`, `roll`, `repeat`,
//! `pixel_shuffle` / `pixel_unshuffle`, `channel_shuffle`, `tril` /
//! `triu`, `constant_pad_nd`, the `*_scatter` ops that write a view into a copy of a tensor
//! (`slice_scatter`, `select_scatter`, `diagonal_scatter`, `as_strided_scatter`) and the
//! view backward ops built on them (`slice_backward`, `select_backward`,
//! `diagonal_backward`, `unfold_backward`). Pure views (expand, permute, narrow, ...) are
//! handled by the bridge and need no rule.

use tpurs_hlo::{Builder, CompareDir, DType, Literal, TensorType, Value};

use super::{one, wrap_dim};
use crate::ctx::{Arg, Ctx, Out};
use crate::dtype::{result_type, Participation};
use crate::eager::{StorageMeta, TensorMeta};
use crate::error::{runtime, Error, Result};
use crate::table::Registry;
use crate::view::{write_view, Start};

/// A zero tensor of `dtype` and `shape`.
fn zeros(b: &mut Builder, dtype: DType, shape: &[i64]) -> Value {
    b.splat(Literal::Int(0), &TensorType::new(dtype, shape.to_vec()))
}

/// Row-major strides of `shape`.
pub(crate) fn contiguous_strides(shape: &[i64]) -> Vec<i64> {
    let mut strides = vec![1; shape.len()];
    for d in (0..shape.len().saturating_sub(1)).rev() {
        strides[d] = strides[d + 1] * shape[d + 1].max(1);
    }
    strides
}

/// A strided view of a contiguous tensor: sizes, strides and element offset.
pub(crate) struct View {
    pub sizes: Vec<i64>,
    pub strides: Vec<i64>,
    pub offset: i64,
}

/// Type of list item `j` of argument `i` (device tensors and host numbers).
fn item_ty(ctx: &Ctx, i: usize, j: usize) -> Result<TensorType> {
    match ctx.arg(i) {
        Arg::List(items) => match items.get(j) {
            Some(Arg::Tensor(m)) => Ok(m.ty()),
            Some(Arg::Scalar(s)) => Ok(TensorType::scalar(s.dtype)),
            _ => Err(Error::Type(format!(
                "{}: expected a tensor at position {j}",
                ctx.name
            ))),
        },
        _ => Err(Error::Type(format!(
            "{}: expected a list of tensors",
            ctx.name
        ))),
    }
}

/// `torch.cat`: promotes dtypes across inputs and skips legacy empty 1-d tensors.
fn cat(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let n = ctx.list_len(0);
    if n == 0 {
        return runtime("torch.cat(): expected a non-empty list of Tensors");
    }
    let tys: Vec<TensorType> = (0..n).map(|j| item_ty(ctx, 0, j)).collect::<Result<_>>()?;
    for (j, t) in tys.iter().enumerate() {
        if t.rank() == 0 {
            return runtime(format!(
                "zero-dimensional tensor (at position {j}) cannot be concatenated"
            ));
        }
    }
    let parts: Vec<(DType, Participation)> =
        tys.iter().map(|t| (t.dtype, Participation::Dim)).collect();
    let dtype = result_type(&parts, ctx.default_float());
    let kept: Vec<usize> = (0..n).filter(|&j| tys[j].shape != [0]).collect();
    let Some(&first) = kept.first() else {
        return one(zeros(&mut ctx.b, dtype, &[0]));
    };
    let reference = tys[first].clone();
    let dim = wrap_dim(ctx.int(1)?, reference.rank())?;
    let mut shape = reference.shape.clone();
    shape[dim] = 0;
    for &j in &kept {
        let t = &tys[j];
        if t.rank() != reference.rank() {
            return runtime(format!(
                "Tensors must have same number of dimensions: got {} and {}",
                reference.rank(),
                t.rank()
            ));
        }
        for d in 0..t.rank() {
            if d != dim && t.shape[d] != reference.shape[d] {
                return runtime(format!(
                    "Sizes of tensors must match except in dimension {dim}. Expected size {} but got size {} for tensor number {j} in the list.",
                    reference.shape[d], t.shape[d]
                ));
            }
        }
        shape[dim] += t.shape[dim];
    }
    let values = ctx.list(0)?;
    let mut inputs = Vec::new();
    for &j in &kept {
        if tys[j].numel() > 0 {
            let v = values[j]
                .clone()
                .ok_or_else(|| Error::Type("cat: undefined tensor".into()))?;
            inputs.push(ctx.b.convert(&v, dtype));
        }
    }
    if inputs.is_empty() {
        return one(zeros(&mut ctx.b, dtype, &shape));
    }
    let refs: Vec<&Value> = inputs.iter().collect();
    one(ctx.b.concatenate(&refs, dim)?)
}

/// Wraps and de-duplicates a list of dims.
fn wrap_dims(dims: &[i64], rank: usize) -> Result<Vec<i64>> {
    let mut out = Vec::new();
    for &d in dims {
        let w = wrap_dim(d, rank)? as i64;
        if out.contains(&w) {
            return runtime(format!(
                "dim {w} appears multiple times in the list of dims"
            ));
        }
        out.push(w);
    }
    Ok(out)
}

/// `torch.flip`.
fn flip(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let x = ctx.tensor(0)?;
    let dims = wrap_dims(&ctx.int_list(1)?, x.rank())?;
    let dims: Vec<i64> = dims
        .into_iter()
        .filter(|&d| x.rank() > 0 && x.shape()[d as usize] > 1)
        .collect();
    one(ctx.b.reverse(&x, &dims))
}

/// Rolls `x` by `shift` along `dim` (elements move to higher indices).
fn roll_dim(b: &mut Builder, x: &Value, dim: usize, shift: i64) -> Result<Value> {
    let n = x.shape()[dim];
    if n == 0 {
        return Ok(x.clone());
    }
    let s = shift.rem_euclid(n);
    if s == 0 {
        return Ok(x.clone());
    }
    let tail = b.slice_dim(x, dim, n - s, n, 1)?;
    let head = b.slice_dim(x, dim, 0, n - s, 1)?;
    Ok(b.concatenate(&[&tail, &head], dim)?)
}

/// `torch.roll` with and without dims (no dims: roll the flattened tensor).
fn roll(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let x = ctx.tensor(0)?;
    let shifts = ctx.int_list(1)?;
    let dims = ctx.int_list(2)?;
    if shifts.is_empty() {
        return runtime("`shifts` required");
    }
    if dims.is_empty() {
        if shifts.len() != 1 {
            return runtime(format!(
                "shifts and dimensions must align. shifts: {}, dims:0",
                shifts.len()
            ));
        }
        let flat = ctx.b.reshape(&x, &[x.ty.numel()])?;
        let r = roll_dim(&mut ctx.b, &flat, 0, shifts[0])?;
        return one(ctx.b.reshape(&r, x.shape())?);
    }
    if shifts.len() != dims.len() {
        return runtime(format!(
            "shifts and dimensions must align. shifts: {}, dims:{}",
            shifts.len(),
            dims.len()
        ));
    }
    let mut y = x.clone();
    for (&s, &d) in shifts.iter().zip(&dims) {
        let d = wrap_dim(d, x.rank())?;
        if x.rank() == 0 {
            continue;
        }
        y = roll_dim(&mut ctx.b, &y, d, s)?;
    }
    one(y)
}

/// `Tensor.repeat`: tiles the tensor (leading dims are added as needed).
fn repeat(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let x = ctx.tensor(0)?;
    let reps = ctx.int_list(1)?;
    if reps.len() < x.rank() {
        return runtime(
            "Number of dimensions of repeat dims can not be smaller than number of dimensions of tensor",
        );
    }
    let lead = reps.len() - x.rank();
    let mut xs = vec![1; lead];
    xs.extend_from_slice(x.shape());
    let out: Vec<i64> = reps.iter().zip(&xs).map(|(r, s)| r * s).collect();
    if let Some(&r) = reps.iter().find(|&&r| r < 0) {
        return runtime(format!(
            "Trying to create tensor with negative dimension {r}: {out:?}"
        ));
    }
    if out.contains(&0) {
        return one(zeros(&mut ctx.b, x.dtype(), &out));
    }
    let xr = ctx.b.reshape(&x, &xs)?;
    let mut wide = Vec::new();
    let mut dims = Vec::new();
    for (i, (&r, &s)) in reps.iter().zip(&xs).enumerate() {
        wide.push(r);
        wide.push(s);
        dims.push(2 * i as i64 + 1);
    }
    let bc = ctx.b.broadcast_in_dim(&xr, &wide, &dims)?;
    one(ctx.b.reshape(&bc, &out)?)
}

/// `tril` (`lower = true`) or `triu` with the `diagonal` argument.
fn triangle(ctx: &mut Ctx, lower: bool) -> Result<Vec<Out>> {
    let x = ctx.tensor(0)?;
    let diag = ctx.int_or(1, 0)?;
    let r = x.rank();
    if r < 2 {
        let name = if lower { "tril" } else { "triu" };
        return runtime(format!(
            "{name}: input tensor must have at least 2 dimensions"
        ));
    }
    let ty = TensorType::new(DType::I64, x.shape().to_vec());
    let row = ctx.b.iota(&ty, r - 2);
    let col = ctx.b.iota(&ty, r - 1);
    let delta = ctx.b.sub(&col, &row)?;
    let d = ctx.b.splat(Literal::Int(diag), &ty);
    let dir = if lower {
        CompareDir::Le
    } else {
        CompareDir::Ge
    };
    let keep = ctx.b.compare(dir, &delta, &d)?;
    let z = ctx.b.full_like(&x, Literal::Int(0));
    one(ctx.b.select(&keep, &x, &z)?)
}

/// `constant_pad_nd`: `pad` lists (low, high) pairs from the last dim backwards; negative
/// entries crop.
fn constant_pad_nd(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let x = ctx.tensor(0)?;
    let pad = ctx.int_list(1)?;
    let r = x.rank();
    if pad.len() % 2 != 0 {
        return runtime(format!(
            "Length of pad must be even but instead it equals {}",
            pad.len()
        ));
    }
    if pad.len() / 2 > r {
        return runtime(format!(
            "Length of pad should be no more than twice the number of dimensions of the input. Pad length is {}while the input has {r}dimensions.",
            pad.len()
        ));
    }
    let mut low = vec![0; r];
    let mut high = vec![0; r];
    for (k, pair) in pad.chunks(2).enumerate() {
        let d = r - 1 - k;
        low[d] = pair[0];
        high[d] = pair[1];
        let n = x.shape()[d] + pair[0] + pair[1];
        if n < 0 {
            return runtime(format!(
                "The input size {}, plus negative padding {} and {} resulted in a negative output size, which is invalid. Check dimension {d} of your input.",
                x.shape()[d], pair[0], pair[1]
            ));
        }
    }
    let value = if ctx.has(2) {
        let v = ctx.tensor(2)?;
        ctx.b.convert(&v, x.dtype())
    } else {
        ctx.b.constant(Literal::Int(0), x.dtype())
    };
    let interior = vec![0; r];
    // Crop first (negative padding), then pad, so an empty input never meets a crop.
    let start: Vec<i64> = low.iter().map(|&l| (-l).max(0)).collect();
    let limit: Vec<i64> = (0..r).map(|d| x.shape()[d] - (-high[d]).max(0)).collect();
    let limit: Vec<i64> = limit.iter().zip(&start).map(|(&l, &s)| l.max(s)).collect();
    let cropped = ctx.b.slice(&x, &start, &limit, &vec![1; r])?;
    let lo: Vec<i64> = low.iter().map(|&l| l.max(0)).collect();
    let hi: Vec<i64> = high.iter().map(|&h| h.max(0)).collect();
    one(ctx.b.pad(&cropped, &value, &lo, &hi, &interior)?)
}

/// Writes `src` (converted to `base`'s dtype) into the view `v` of a contiguous copy of
/// `base` and returns the updated tensor.
fn embed(b: &mut Builder, base: &Value, src: &Value, v: &View) -> Result<Value> {
    if src.shape() != v.sizes.as_slice() {
        return runtime(format!(
            "expected src to have a size equal to the slice of self. src size = {:?}, slice size = {:?}",
            src.shape(),
            v.sizes
        ));
    }
    let numel = base.ty.numel();
    if src.ty.numel() == 0 || numel == 0 {
        return Ok(base.clone());
    }
    let flat = b.reshape(base, &[numel])?;
    let src = b.convert(src, base.dtype());
    let meta = TensorMeta {
        dtype: base.dtype(),
        sizes: v.sizes.clone(),
        strides: v.strides.clone(),
        offset: v.offset,
        slot: 0,
    };
    let storage = StorageMeta {
        numel,
        dtype: base.dtype(),
    };
    let start = Start::Fixed(meta.offset);
    let updated = write_view(b, Some(&flat), &src, (&meta, &start), &storage)?;
    Ok(b.reshape(&updated, base.shape())?)
}

/// The view `x.slice(dim, start, end, step)` of a contiguous tensor of `shape`, with
/// PyTorch's clamping of `start` / `end`.
pub(crate) fn slice_view(
    shape: &[i64],
    dim: i64,
    start: Option<i64>,
    end: Option<i64>,
    step: i64,
) -> Result<View> {
    let dim = wrap_dim(dim, shape.len())?;
    if step <= 0 {
        return runtime("slice step must be positive");
    }
    let strides = contiguous_strides(shape);
    let n = shape[dim];
    let norm = |v: i64| if v < 0 { (v + n).max(0) } else { v.min(n) };
    let s = norm(start.unwrap_or(0));
    let e = norm(end.unwrap_or(n)).max(s);
    let mut sizes = shape.to_vec();
    sizes[dim] = (e - s + step - 1) / step;
    let mut vstrides = strides.clone();
    vstrides[dim] *= step;
    Ok(View {
        sizes,
        strides: vstrides,
        offset: s * strides[dim],
    })
}

/// The view `x.select(dim, index)` of a contiguous tensor of `shape`.
pub(crate) fn select_view(shape: &[i64], dim: i64, index: i64) -> Result<View> {
    let d = wrap_dim(dim, shape.len())?;
    let n = shape[d];
    if index < -n || index >= n {
        return Err(Error::Index(format!(
            "select(): index {index} out of range for tensor of size {shape:?} at dimension {d}"
        )));
    }
    let i = if index < 0 { index + n } else { index };
    let strides = contiguous_strides(shape);
    let mut sizes = shape.to_vec();
    let mut vstrides = strides.clone();
    sizes.remove(d);
    vstrides.remove(d);
    Ok(View {
        sizes,
        strides: vstrides,
        offset: i * strides[d],
    })
}

/// The view `x.diagonal(offset, dim1, dim2)` of a contiguous tensor of `shape`.
pub(crate) fn diagonal_view(shape: &[i64], offset: i64, dim1: i64, dim2: i64) -> Result<View> {
    let d1 = wrap_dim(dim1, shape.len())?;
    let d2 = wrap_dim(dim2, shape.len())?;
    if d1 == d2 {
        return runtime(format!(
            "diagonal dimensions cannot be identical {dim1}, {dim2}"
        ));
    }
    let strides = contiguous_strides(shape);
    let (len, start) = if offset >= 0 {
        (
            (shape[d1].min(shape[d2] - offset)).max(0),
            offset * strides[d2],
        )
    } else {
        (
            (shape[d1] + offset).min(shape[d2]).max(0),
            -offset * strides[d1],
        )
    };
    let mut sizes = Vec::new();
    let mut vstrides = Vec::new();
    for d in 0..shape.len() {
        if d != d1 && d != d2 {
            sizes.push(shape[d]);
            vstrides.push(strides[d]);
        }
    }
    sizes.push(len);
    vstrides.push(strides[d1] + strides[d2]);
    Ok(View {
        sizes,
        strides: vstrides,
        offset: if len == 0 { 0 } else { start },
    })
}

/// `slice_scatter(self, src, dim, start, end, step)`.
fn slice_scatter(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let base = ctx.tensor(0)?;
    let src = ctx.tensor(1)?;
    let v = slice_view(
        base.shape(),
        ctx.int_or(2, 0)?,
        ctx.opt_int(3)?,
        ctx.opt_int(4)?,
        ctx.int_or(5, 1)?,
    )?;
    one(embed(&mut ctx.b, &base, &src, &v)?)
}

/// `select_scatter(self, src, dim, index)`.
fn select_scatter(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let base = ctx.tensor(0)?;
    let src = ctx.tensor(1)?;
    let v = select_view(base.shape(), ctx.int(2)?, ctx.int(3)?)?;
    one(embed(&mut ctx.b, &base, &src, &v)?)
}

/// `diagonal_scatter(self, src, offset, dim1, dim2)`.
fn diagonal_scatter(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let base = ctx.tensor(0)?;
    let src = ctx.tensor(1)?;
    let v = diagonal_view(
        base.shape(),
        ctx.int_or(2, 0)?,
        ctx.int_or(3, 0)?,
        ctx.int_or(4, 1)?,
    )?;
    one(embed(&mut ctx.b, &base, &src, &v)?)
}

/// `as_strided_scatter(self, src, size, stride, storage_offset)` (self taken as contiguous).
fn as_strided_scatter(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let base = ctx.tensor(0)?;
    let src = ctx.tensor(1)?;
    let v = View {
        sizes: ctx.int_list(2)?,
        strides: ctx.int_list(3)?,
        offset: ctx.int_or(4, 0)?,
    };
    let extent: i64 = v.offset
        + v.sizes
            .iter()
            .zip(&v.strides)
            .map(|(n, s)| (n - 1).max(0) * s)
            .sum::<i64>();
    if v.sizes.iter().all(|&n| n > 0) && extent >= base.ty.numel() {
        return runtime(format!(
            "as_strided_scatter: view of size {:?} and stride {:?} at offset {} is out of bounds for a tensor of {} elements",
            v.sizes, v.strides, v.offset, base.ty.numel()
        ));
    }
    one(embed(&mut ctx.b, &base, &src, &v)?)
}

/// Zeros of the `input_sizes` argument (1) in `grad`'s dtype, and `grad` itself.
fn backward_base(ctx: &mut Ctx) -> Result<(Value, Value)> {
    let grad = ctx.tensor(0)?;
    let sizes = ctx.int_list(1)?;
    let base = zeros(&mut ctx.b, grad.dtype(), &sizes);
    Ok((base, grad))
}

/// `slice_backward(grad, input_sizes, dim, start, end, step)`.
fn slice_backward(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let (base, grad) = backward_base(ctx)?;
    let v = slice_view(
        base.shape(),
        ctx.int(2)?,
        Some(ctx.int(3)?),
        Some(ctx.int(4)?),
        ctx.int(5)?,
    )?;
    one(embed(&mut ctx.b, &base, &grad, &v)?)
}

/// `select_backward(grad, input_sizes, dim, index)`.
fn select_backward(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let (base, grad) = backward_base(ctx)?;
    let v = select_view(base.shape(), ctx.int(2)?, ctx.int(3)?)?;
    one(embed(&mut ctx.b, &base, &grad, &v)?)
}

/// `diagonal_backward(grad, input_sizes, offset, dim1, dim2)`.
fn diagonal_backward(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let (base, grad) = backward_base(ctx)?;
    let v = diagonal_view(base.shape(), ctx.int(2)?, ctx.int(3)?, ctx.int(4)?)?;
    one(embed(&mut ctx.b, &base, &grad, &v)?)
}

/// `unfold_backward(grad_in, input_sizes, dim, size, step)`: sums the windows back into
/// place, one strided pad per window position.
fn unfold_backward(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let g = ctx.tensor(0)?;
    let sizes = ctx.int_list(1)?;
    let size = ctx.int(3)?;
    let step = ctx.int(4)?;
    if sizes.is_empty() {
        // Unfolding a 0-d tensor gives a 1-element window.
        return one(ctx.b.reshape(&g, &[])?);
    }
    let dim = wrap_dim(ctx.int(2)?, sizes.len())?;
    let nwin = g.shape()[dim];
    let r = sizes.len();
    let mut acc = zeros(&mut ctx.b, g.dtype(), &sizes);
    if nwin == 0 || size == 0 {
        return one(acc);
    }
    let zero = ctx.b.constant(Literal::Int(0), g.dtype());
    let win_shape: Vec<i64> = g.shape()[..r].to_vec();
    for k in 0..size {
        let part = ctx.b.slice_dim(&g, r, k, k + 1, 1)?;
        let part = ctx.b.reshape(&part, &win_shape)?;
        let mut low = vec![0; r];
        let mut high = vec![0; r];
        let mut interior = vec![0; r];
        low[dim] = k;
        interior[dim] = step - 1;
        high[dim] = sizes[dim] - (k + (nwin - 1) * step + 1);
        let placed = ctx.b.pad(&part, &zero, &low, &high, &interior)?;
        acc = ctx.b.add(&acc, &placed)?;
    }
    one(acc)
}

/// Registers the shape family.
/// Moves dims through a reshape to `split`, a permutation and a reshape to `out`.
fn regroup(b: &mut Builder, x: &Value, split: &[i64], perm: &[i64], out: &[i64]) -> Result<Value> {
    let v = b.reshape(x, split)?;
    let v = b.transpose(&v, perm)?;
    Ok(b.reshape(&v, out)?)
}

/// `pixel_shuffle(self, upscale_factor)` and `pixel_unshuffle(self, downscale_factor)`:
/// `[*, C r^2, H, W]` and `[*, C, H r, W r]` into each other.
fn pixel_shuffle(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let unshuffle = ctx.name.starts_with("pixel_unshuffle");
    let (op, what) = if unshuffle {
        ("pixel_unshuffle", "downscale_factor")
    } else {
        ("pixel_shuffle", "upscale_factor")
    };
    let shape = ctx.ty(0)?.shape;
    let r = ctx.int(1)?;
    let rank = shape.len();
    if rank < 3 {
        return runtime(format!("{op} expects input to have at least 3 dimensions, but got input with {rank} dimension(s)"));
    }
    if r <= 0 {
        return runtime(format!("{op} expects a positive {what}, but got {r}"));
    }
    let (batch, [c, h, w]) = (
        &shape[..rank - 3],
        [shape[rank - 3], shape[rank - 2], shape[rank - 1]],
    );
    let with = |dims: &[i64]| [batch, dims].concat();
    let lead: Vec<i64> = (0..batch.len() as i64).collect();
    let perm = |tail: [i64; 5]| {
        [
            lead.clone(),
            tail.iter().map(|d| d + lead.len() as i64).collect(),
        ]
        .concat()
    };
    let x = ctx.tensor(0)?;
    let b = &mut ctx.b;
    if unshuffle {
        for (name, n) in [("height", h), ("width", w)] {
            let at = if name == "height" { -2 } else { -1 };
            if n % r != 0 {
                return runtime(format!("pixel_unshuffle expects {name} to be divisible by downscale_factor, but input.size({at})={n} is not divisible by {r}"));
            }
        }
        let split = with(&[c, h / r, r, w / r, r]);
        return one(regroup(
            b,
            &x,
            &split,
            &perm([0, 2, 4, 1, 3]),
            &with(&[c * r * r, h / r, w / r]),
        )?);
    }
    if c % (r * r) != 0 {
        return runtime(format!("pixel_shuffle expects its input's 'channel' dimension to be divisible by the square of upscale_factor, but input.size(-3)={c} is not divisible by {}", r * r));
    }
    let split = with(&[c / (r * r), r, r, h, w]);
    one(regroup(
        b,
        &x,
        &split,
        &perm([0, 3, 1, 4, 2]),
        &with(&[c / (r * r), h * r, w * r]),
    )?)
}

/// `channel_shuffle(self, groups)`: channels `[g, C / g]` read as `[C / g, g]`.
fn channel_shuffle(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let shape = ctx.ty(0)?.shape;
    let g = ctx.int(1)?;
    if shape.len() <= 2 {
        return runtime(format!(
            "channel_shuffle expects input with > 2 dims, but got input with sizes {shape:?}"
        ));
    }
    if g <= 0 {
        return runtime(format!(
            "Number of groups to divide channels in must be positive. Value of groups:{g}"
        ));
    }
    let c = shape[1];
    if c % g != 0 {
        return runtime(format!(
            "Number of channels must be divisible by groups. Got {c} channels and {g} groups."
        ));
    }
    let split = [&[shape[0], g, c / g], &shape[2..]].concat();
    let mut perm: Vec<i64> = (0..split.len() as i64).collect();
    perm.swap(1, 2);
    let x = ctx.tensor(0)?;
    one(regroup(&mut ctx.b, &x, &split, &perm, &shape)?)
}

pub(crate) fn register(reg: &mut Registry) {
    // Data movement: the lowerings never look at values, so complex tensors take them too.
    reg.ops(&["cat", "cat.out"], cat).complex();
    reg.ops(
        &[
            "pixel_shuffle",
            "pixel_shuffle.out",
            "pixel_unshuffle",
            "pixel_unshuffle.out",
        ],
        pixel_shuffle,
    )
    .complex();
    reg.ops(&["channel_shuffle", "channel_shuffle.out"], channel_shuffle)
        .complex();
    reg.ops(&["flip", "flip.out"], flip).complex();
    reg.ops(&["roll", "roll.out"], roll).complex();
    reg.ops(&["repeat", "repeat.out"], repeat).complex();
    reg.ops(&["tril", "tril_", "tril.out"], |ctx| triangle(ctx, true))
        .complex();
    reg.ops(&["triu", "triu_", "triu.out"], |ctx| triangle(ctx, false))
        .complex();
    reg.ops(&["constant_pad_nd", "constant_pad_nd.out"], constant_pad_nd)
        .complex();
    reg.ops(&["slice_scatter", "slice_scatter.out"], slice_scatter)
        .complex();
    reg.ops(&["select_scatter", "select_scatter.out"], select_scatter)
        .complex();
    reg.ops(
        &["diagonal_scatter", "diagonal_scatter.out"],
        diagonal_scatter,
    )
    .complex();
    reg.ops(
        &["as_strided_scatter", "as_strided_scatter.out"],
        as_strided_scatter,
    )
    .complex();
    reg.ops(&["slice_backward", "slice_backward.out"], slice_backward)
        .complex();
    reg.ops(&["select_backward", "select_backward.out"], select_backward)
        .complex();
    reg.ops(
        &["diagonal_backward", "diagonal_backward.out"],
        diagonal_backward,
    )
    .complex();
    reg.ops(&["unfold_backward", "unfold_backward.out"], unfold_backward)
        .complex();
}
