//! Reflection and replication padding (1-3 d) and their backwards, one dim at a time from
//! slices of the input: reversed edges (reflection) or repeated edge elements
//! (replication) concatenated around it. The backward adds the gradient of every copy back
//! onto its source element, as PyTorch does. Moving elements rather than multiplying by a
//! one-hot matrix keeps infinities from turning into NaN (`0 * inf`). Circular padding
//! decomposes into slices and `cat` before it gets here.

use tpurs_hlo::{Builder, DType, Literal, TensorType, Value};

use super::combine::add_c;
use super::index::{combine_add, select_rows, slices_along, splat_i64};
use super::one;
use super::reduce::reduce;
use crate::ctx::{Ctx, Out};
use crate::dtype::opmath;
use crate::error::{runtime, Error, Result};
use crate::table::Registry;

/// `x` padded along `d` (length `n`) by `before` and `after` elements.
fn pad_dim(
    b: &mut Builder,
    x: &Value,
    d: usize,
    reflect: bool,
    (before, after): (i64, i64),
) -> Result<Value> {
    let n = x.shape()[d];
    let edge = |b: &mut Builder, start: i64, count: i64, at: i64| -> Result<Option<Value>> {
        if count == 0 {
            return Ok(None);
        }
        if reflect {
            let s = b.slice_dim(x, d, start, start + count, 1)?;
            return Ok(Some(b.reverse(&s, &[d as i64])));
        }
        let s = b.slice_dim(x, d, at, at + 1, 1)?;
        let mut shape = x.shape().to_vec();
        shape[d] = count;
        Ok(Some(b.broadcast_to(&s, &shape)?))
    };
    let left = edge(b, 1, before, 0)?;
    let right = edge(b, n - 1 - after, after, n - 1)?;
    let parts: Vec<&Value> = [left.as_ref(), Some(x), right.as_ref()]
        .into_iter()
        .flatten()
        .collect();
    Ok(b.concatenate(&parts, d)?)
}

/// The gradient of `pad_dim` along `d`: `g` (length `n + before + after`) folded back onto
/// the `n` input elements.
fn unpad_dim(
    b: &mut Builder,
    g: &Value,
    d: usize,
    reflect: bool,
    n: i64,
    (before, after): (i64, i64),
) -> Result<Value> {
    let mut acc = b.slice_dim(g, d, before, before + n, 1)?;
    let zero = b.constant(Literal::Int(0), g.dtype());
    // (start in g, count, first input element it lands on).
    for (start, count, at) in [(0, before, 1), (before + n, after, n - 1 - after)] {
        if count == 0 {
            continue;
        }
        let s = b.slice_dim(g, d, start, start + count, 1)?;
        let (piece, at) = if reflect {
            (b.reverse(&s, &[d as i64]), at)
        } else {
            let total = reduce(b, &s, &[d as i64], Literal::Int(0), add_c, true)?;
            (total, if start == 0 { 0 } else { n - 1 })
        };
        let len = piece.shape()[d];
        let mut low = vec![0; g.rank()];
        let mut high = vec![0; g.rank()];
        low[d] = at;
        high[d] = n - at - len;
        let placed = b.pad(&piece, &zero, &low, &high, &vec![0; g.rank()])?;
        acc = b.add(&acc, &placed)?;
    }
    Ok(acc)
}

/// Replication padding along `d` where cropping leaves nothing to repeat from: output
/// element `j` is input element `clamp(j - before, 0, n - 1)`, as CPU indexes it; gathered
/// forward, and backward the gradient of each output element added onto its source.
fn replicate_by_index(
    b: &mut Builder,
    v: &Value,
    d: usize,
    n: i64,
    before: i64,
    out_n: i64,
    backward: bool,
) -> Result<Value> {
    let j = b.iota(&TensorType::new(DType::I64, vec![out_n]), 0);
    let shift = splat_i64(b, before, &[out_n]);
    let i = b.sub(&j, &shift)?;
    let (lo, hi) = (splat_i64(b, 0, &[out_n]), splat_i64(b, n - 1, &[out_n]));
    let idx = b.clamp(&lo, &i, &hi);
    if !backward {
        return select_rows(b, v, d, &idx);
    }
    let mut shape = v.shape().to_vec();
    shape[d] = n;
    let zeros = b.splat(Literal::Float(0.0), &TensorType::new(v.dtype(), shape));
    let idx = b.reshape(&idx, &[out_n, 1])?;
    let dims = slices_along(v.rank(), d);
    Ok(b.scatter(&zeros, &idx, v, &dims, Some(combine_add)))
}

/// `{reflection,replication}_pad{1,2,3}d(self, padding)` and their backwards
/// `(grad_output, self, padding)`.
fn pad(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let base = ctx.name.split('.').next().unwrap_or("");
    let reflect = base.starts_with("reflection");
    let backward = base.ends_with("_backward");
    let pad_at = if backward { 2 } else { 1 };
    let padding = ctx.int_list(pad_at)?;
    let input = ctx.ty(if backward { 1 } else { 0 })?;
    let k = padding.len() / 2;
    if padding.len() % 2 != 0 || k == 0 || input.rank() < k + 1 {
        return runtime(format!(
            "{base}: expected a padding of 2 x dims for an input of at least {} dims",
            k + 1
        ));
    }
    let (rank, batched) = (input.rank(), k + 2);
    let nonempty = &input.shape[usize::from(rank == batched)..];
    if !backward && (rank > batched || nonempty.contains(&0)) {
        return runtime(format!(
            "Expected {}D or {batched}D (batch mode) tensor with possibly 0 batch size and other non-zero dimensions for input, but got: {:?}",
            k + 1,
            input.shape
        ));
    }
    let x = ctx.tensor(0)?;
    let dtype = x.dtype();
    if !dtype.is_float() && !dtype.is_complex() && backward {
        return runtime(format!("{base}: expected a floating point gradient"));
    }
    let wide = opmath(dtype);
    let mut v = ctx.b.convert(&x, wide);
    for j in 0..k {
        // padding = (last-dim before, last-dim after, next-to-last before, ...).
        let d = input.rank() - 1 - j;
        let (before, after) = (padding[2 * j], padding[2 * j + 1]);
        let n = input.shape[d];
        if reflect && (before >= n || after >= n) {
            return runtime(format!(
                "Argument #4: Padding size should be less than the corresponding input dimension, but got: padding ({before}, {after}) at dimension {d} of input {:?}",
                input.shape
            ));
        }
        if !reflect && n == 0 {
            return runtime(format!("{base}: input dimension {d} is empty"));
        }
        if n + before + after <= 0 {
            let name = ["W", "H", "D"][j];
            return runtime(format!(
                "input ({name}: {n}) is too small. Calculated output {name}: {}",
                n + before + after
            ));
        }
        // A negative padding crops; what is left is padded as usual.
        let (crop_lo, crop_hi) = ((-before).max(0), (-after).max(0));
        let (pad_lo, pad_hi) = (before.max(0), after.max(0));
        let kept = n - crop_lo - crop_hi;
        if reflect && pad_lo.max(pad_hi) >= kept {
            return Err(Error::Uncovered(format!(
                "{base}: a negative padding that leaves too little to pad from is not supported on the tpu device"
            )));
        }
        let b = &mut ctx.b;
        v = if kept < 1 {
            replicate_by_index(b, &v, d, n, before, n + before + after, backward)?
        } else if backward {
            let g = unpad_dim(b, &v, d, reflect, kept, (pad_lo, pad_hi))?;
            let zero = b.constant(Literal::Int(0), g.dtype());
            let (mut low, mut high) = (vec![0; g.rank()], vec![0; g.rank()]);
            (low[d], high[d]) = (crop_lo, crop_hi);
            b.pad(&g, &zero, &low, &high, &vec![0; g.rank()])?
        } else {
            let x = b.slice_dim(&v, d, crop_lo, n - crop_hi, 1)?;
            pad_dim(b, &x, d, reflect, (pad_lo, pad_hi))?
        };
    }
    one(ctx.b.convert(&v, dtype))
}

pub(crate) fn register(reg: &mut Registry) {
    reg.ops(
        &[
            "reflection_pad1d",
            "reflection_pad1d.out",
            "reflection_pad2d",
            "reflection_pad2d.out",
            "reflection_pad3d",
            "reflection_pad3d.out",
            "replication_pad1d",
            "replication_pad1d.out",
            "replication_pad2d",
            "replication_pad2d.out",
            "replication_pad3d",
            "replication_pad3d.out",
            "reflection_pad1d_backward",
            "reflection_pad1d_backward.grad_input",
            "reflection_pad2d_backward",
            "reflection_pad2d_backward.grad_input",
            "reflection_pad3d_backward",
            "reflection_pad3d_backward.grad_input",
            "replication_pad1d_backward",
            "replication_pad1d_backward.grad_input",
            "replication_pad2d_backward",
            "replication_pad2d_backward.grad_input",
            "replication_pad3d_backward",
            "replication_pad3d_backward.grad_input",
        ],
        pad,
    )
    .complex();
}
