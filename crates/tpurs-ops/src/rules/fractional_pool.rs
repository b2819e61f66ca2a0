//! Fractional max pooling (2-d and 3-d) with indices, and its backward. Each plane's window
//! starts along a dim come from its own random sample `u` (ATen's `generate_intervals`):
//! `int((i + u) * alpha) - int(u * alpha)` with `alpha = (in - k) / (out - 1)`, the last
//! window ending at the input's end, computed on the device in the input's float type as the
//! CPU kernel computes it. Every kernel offset is one gather of the whole output, folded in
//! CPU's row-major window order: a larger value or a NaN takes over, so ties keep the first.

use tpurs_hlo::{Builder, CompareDir, DType, Literal, TensorType, Value};

use super::combine::add_c;
use super::index::select_rows;
use super::one;
use super::unpool::scatter_into_planes;
use crate::ctx::{Ctx, Out};
use crate::dtype::torch_name;
use crate::error::{runtime, Error, Result};
use crate::table::Registry;

/// Spatial dims (2 or 3) of the op, its name and the prefix of its size messages.
fn kind(ctx: &Ctx) -> (usize, &'static str, &'static str) {
    if ctx.name.starts_with("fractional_max_pool3d") {
        (3, "fractional_max_pool3d", "fractional_max_pool3d_out()")
    } else {
        (2, "fractional_max_pool2d", "fractional_max_pool2d()")
    }
}

/// CPU's checks of the input (`ty`), kernel and output sizes; returns the batch (1 when
/// unbatched) and the number of planes per batch.
fn check_sizes(ctx: &Ctx, ty: &TensorType, kernel: &[i64], out: &[i64]) -> Result<(i64, i64)> {
    let (k, name, what) = kind(ctx);
    let tuple = if k == 3 {
        "tuple of three Ints"
    } else {
        "tuple of Ints"
    };
    if kernel.len() != k {
        return runtime(format!(
            "{name}: kernel_size must either be a single Int or {tuple}"
        ));
    }
    if out.len() != k {
        return runtime(format!(
            "{name}: output_size must either be a single Int or {tuple}"
        ));
    }
    let r = ty.rank();
    if r != k + 1 && r != k + 2 {
        return runtime(format!(
            "{what}: Expected {}D or {}D tensor, but got: {:?}",
            k + 1,
            k + 2,
            ty.shape
        ));
    }
    let first = r - k - 1;
    if let Some(d) = (1..r).find(|&d| ty.shape[d] == 0) {
        return runtime(format!(
            "{what}: Expected input to have non-zero size for non-batch dimensions, but got{:?} with dimension {d} being empty.",
            ty.shape
        ));
    }
    let names = if k == 3 {
        &["time", "height", "width"][..]
    } else {
        &["height", "width"][..]
    };
    for (j, dim) in names.iter().enumerate() {
        let input = ty.shape[first + 1 + j];
        // The 3-d check is strict: a window may not end at the input's end.
        let reach = out[j] + kernel[j] - 1 + i64::from(k == 3);
        if reach > input {
            return runtime(format!(
                "{what}: pool {dim} {} too large relative to input {dim} {input}",
                kernel[j]
            ));
        }
    }
    let batch = if first == 1 { ty.shape[0] } else { 1 };
    Ok((batch, ty.shape[first]))
}

/// Window starts along one dim, `[planes, out]` int64, from the samples `u` (`[planes]`).
fn starts(b: &mut Builder, u: &Value, input: i64, out: i64, kernel: i64) -> Result<Value> {
    let planes = u.shape()[0];
    let shape = [planes, out];
    let last = b.splat(
        Literal::Int(input - kernel),
        &TensorType::new(DType::I64, shape),
    );
    if out == 1 {
        return Ok(last);
    }
    let d = u.dtype();
    let num = b.constant(Literal::Int(input - kernel), d);
    let den = b.constant(Literal::Int(out - 1), d);
    let alpha = b.div(&num, &den)?;
    let alpha = b.broadcast_in_dim(&alpha, &shape, &[])?;
    let i = b.iota(&TensorType::new(d, shape), 1);
    let ub = b.broadcast_in_dim(u, &shape, &[0])?;
    let iu = b.add(&i, &ub)?;
    let hi = b.mul(&iu, &alpha)?;
    let lo = b.mul(&ub, &alpha)?;
    // C++'s int casts truncate toward zero, as StableHLO's convert does.
    let hi = b.convert(&hi, DType::I32);
    let lo = b.convert(&lo, DType::I32);
    let s = b.sub(&hi, &lo)?;
    let s = b.convert(&s, DType::I64);
    let pos = b.iota(&TensorType::new(DType::I64, shape), 1);
    let end = b.splat(Literal::Int(out - 1), &TensorType::new(DType::I64, shape));
    let is_last = b.compare(CompareDir::Eq, &pos, &end)?;
    Ok(b.select(&is_last, &last, &s)?)
}

/// `fractional_max_pool{2,3}d(self, kernel_size, output_size, random_samples)` and `.output`.
fn fractional_max_pool(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let (k, name, _) = kind(ctx);
    let ty = ctx.ty(0)?;
    let kernel = ctx.int_list(1)?;
    let out = ctx.int_list(2)?;
    let st = ctx.ty(3)?;
    if st.dtype != ty.dtype {
        return runtime("Expect _random_samples to have the same dtype as input");
    }
    if st.rank() != 3 {
        return runtime(format!(
            "Expect _random_samples to have 3 dimensions, got {}",
            st.rank()
        ));
    }
    if st.shape[2] != k as i64 {
        return runtime(format!(
            "Expect _random_samples.size(2) equals to {k}; got {}.",
            st.shape[2]
        ));
    }
    let (batch, channels) = check_sizes(ctx, &ty, &kernel, &out)?;
    if !ty.dtype.is_float() || st.shape[0] < batch || st.shape[1] != channels {
        return Err(Error::Uncovered(format!(
            "{name}: {} input {:?} with random_samples {:?}",
            torch_name(ty.dtype),
            ty.shape,
            st.shape
        )));
    }
    let x = ctx.tensor(0)?;
    let samples = ctx.tensor(3)?;
    let b = &mut ctx.b;
    let planes = batch * channels;
    let spatial = &ty.shape[ty.rank() - k..];
    let per_plane: i64 = spatial.iter().product();
    let mut out_shape = ty.shape[..ty.rank() - k].to_vec();
    out_shape.extend(&out);
    if planes == 0 {
        let v = b.splat(
            Literal::Int(0),
            &TensorType::new(ty.dtype, out_shape.clone()),
        );
        let i = b.splat(Literal::Int(0), &TensorType::new(DType::I64, out_shape));
        return Ok(vec![Some(v), Some(i)]);
    }
    let samples = b.slice_dim(&samples, 0, 0, batch, 1)?;
    let samples = b.reshape(&samples, &[planes, k as i64])?;
    // Plane-flat start index of every output cell's window, `[planes, out...]`: 2-d
    // samples are (w, h), 3-d ones (t, h, w).
    let cells: Vec<i64> = std::iter::once(planes).chain(out.iter().copied()).collect();
    let ity = TensorType::new(DType::I64, cells.clone());
    let mut base = b.iota(&ity, 0);
    let per = b.splat(Literal::Int(per_plane), &ity);
    base = b.mul(&base, &per)?;
    let mut start = b.splat(Literal::Int(0), &ity);
    let mut strides = vec![1i64; k];
    for j in (0..k - 1).rev() {
        strides[j] = strides[j + 1] * spatial[j + 1];
    }
    for j in 0..k {
        let which = if k == 2 { 1 - j } else { j } as i64;
        let u = b.slice_dim(&samples, 1, which, which + 1, 1)?;
        let u = b.reshape(&u, &[planes])?;
        let s = starts(b, &u, spatial[j], out[j], kernel[j])?;
        let s = b.broadcast_in_dim(&s, &cells, &[0, j as i64 + 1])?;
        let stride = b.splat(Literal::Int(strides[j]), &ity);
        let s = b.mul(&s, &stride)?;
        start = b.add(&start, &s)?;
    }
    let n = planes * per_plane;
    let flat = b.reshape(&x, &[n])?;
    let mut best: Option<(Value, Value)> = None;
    for offset in window_offsets(&kernel, &strides) {
        let off = b.splat(Literal::Int(offset), &ity);
        let idx = b.add(&start, &off)?;
        let at = b.add(&idx, &base)?;
        let v = select_rows(b, &flat, 0, &at)?;
        let v = b.reshape(&v, &cells)?;
        best = Some(match best {
            None => (v, idx),
            Some((m, i)) => {
                let gt = b.compare(CompareDir::Gt, &v, &m)?;
                let nan = b.compare(CompareDir::Ne, &v, &v)?;
                let take = b.or(&gt, &nan)?;
                (b.select(&take, &v, &m)?, b.select(&take, &idx, &i)?)
            }
        });
    }
    let (v, i) = best.expect("a non-empty kernel");
    Ok(vec![
        Some(b.reshape(&v, &out_shape)?),
        Some(b.reshape(&i, &out_shape)?),
    ])
}

/// Plane-flat offsets of a window's elements in row-major order.
fn window_offsets(kernel: &[i64], strides: &[i64]) -> Vec<i64> {
    let mut offs = vec![0i64];
    for (&k, &s) in kernel.iter().zip(strides) {
        offs = offs
            .iter()
            .flat_map(|&o| (0..k).map(move |d| o + d * s))
            .collect();
    }
    offs
}

/// `fractional_max_pool{2,3}d_backward(grad_output, self, kernel_size, output_size,
/// indices)`: each gradient added at its index within its plane.
fn fractional_max_pool_backward(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let (k, _, _) = kind(ctx);
    let xt = ctx.ty(1)?;
    let first = xt.rank().saturating_sub(k);
    let planes: i64 = xt.shape[..first].iter().product();
    let per_in: i64 = xt.shape[first..].iter().product();
    let g = ctx.tensor(0)?;
    let idx = ctx.tensor(4)?;
    let r = scatter_into_planes(&mut ctx.b, &g, &idx, planes, per_in, Some(add_c))?;
    one(ctx.b.reshape(&r, &xt.shape)?)
}

pub(crate) fn register(reg: &mut Registry) {
    reg.ops(
        &[
            "fractional_max_pool2d",
            "fractional_max_pool2d.output",
            "fractional_max_pool3d",
            "fractional_max_pool3d.output",
        ],
        fractional_max_pool,
    );
    reg.ops(
        &[
            "fractional_max_pool2d_backward",
            "fractional_max_pool2d_backward.grad_input",
            "fractional_max_pool3d_backward",
            "fractional_max_pool3d_backward.grad_input",
        ],
        fractional_max_pool_backward,
    );
}
