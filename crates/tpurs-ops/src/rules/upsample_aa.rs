//! Antialiased bilinear and bicubic resizing (`_upsample_bilinear2d_aa`,
//! `_upsample_bicubic2d_aa`) and their backwards. Along each spatial dim, output `i` reads
//! the source elements `xmin .. xmin + xsize` with triangle (or Keys cubic, `a = -0.5`)
//! filter weights stretched by the scale when downsampling, normalized to sum 1: ATen's
//! `_compute_indices_min_size_weights_aa`. The tables depend only on sizes and scales, so
//! they are computed on the host in the input's float type, step for step as the CPU
//! kernel rounds, and embedded as constants. The forward sums the taps in CPU's order,
//! width pass then height pass (a dim whose size does not change is skipped, as on CPU);
//! the backward is `M^T g` per dim.
//!
//! uint8 images (antialiased or not, and plain bilinear) follow CPU's integer kernel
//! instead: float64 windows rounded to int16 fixed-point weights, each pass summed in int32,
//! rounded, shifted and clamped to 0..=255 before the next, so results are CPU's bit for bit.

use tpurs_hlo::{Builder, DType, Literal, TensorType, Value};

use super::index::select_rows;
use super::one;
use super::upsample::{interpolate_backward, Tap};
use crate::ctx::{Ctx, Out};
use crate::dtype::torch_name;
use crate::error::{runtime, Error, Result};
use crate::table::Registry;

/// The taps of one dim: per output, the first source index, the count read, and `k` weights
/// per output (zero past the count).
struct Window {
    xmin: Vec<i64>,
    xsize: Vec<i64>,
    weights: Vec<f64>,
    k: usize,
}

/// ATen's `aa_filter` of the linear (`cubic` false) or cubic interpolation at `x`, in
/// float32 (`single`) or float64 arithmetic; the cubic polynomials are evaluated with fused
/// multiply-adds, as the CPU kernel is compiled.
fn filter(x: f64, cubic: bool, single: bool) -> f64 {
    let fma = |a: f64, b: f64, c: f64| {
        if single {
            (a as f32).mul_add(b as f32, c as f32) as f64
        } else {
            a.mul_add(b, c)
        }
    };
    let rnd = |v: f64| if single { v as f32 as f64 } else { v };
    let x = rnd(x).abs();
    if !cubic {
        return if x < 1.0 { rnd(1.0 - x) } else { 0.0 };
    }
    let a = -0.5;
    if x < 1.0 {
        // ((a + 2) x - (a + 3)) x x + 1
        let t = fma(a + 2.0, x, -(a + 3.0));
        fma(rnd(t * x), x, 1.0)
    } else if x < 2.0 {
        // ((a x - 5 a) x + 8 a) x - 4 a
        let t = fma(a, x, -5.0 * a);
        let t = fma(t, x, 8.0 * a);
        fma(t, x, -4.0 * a)
    } else {
        0.0
    }
}

/// ATen's `area_pixel_compute_scale` and `_compute_index_ranges_weights`, in the kernel's
/// `scalar_t` (float32 when `single`), rounded wherever C++ stores one. Without `antialias`
/// (uint8 only) the filter keeps its width when downsampling and aligned corners shift the
/// window by half a pixel.
fn window(
    (input, output): (i64, i64),
    align_corners: bool,
    scale: Option<f64>,
    cubic: bool,
    single: bool,
    antialias: bool,
) -> Window {
    let rnd = |v: f64| if single { v as f32 as f64 } else { v };
    let scale = if align_corners {
        if output > 1 {
            rnd((input - 1) as f64 / (output - 1) as f64)
        } else {
            0.0
        }
    } else {
        match scale {
            Some(s) if s > 0.0 => rnd(1.0 / s),
            _ => rnd(input as f64 / output as f64),
        }
    };
    let half_size = if cubic { 2.0 } else { 1.0 };
    let stretch = antialias && scale >= 1.0;
    let support = if stretch {
        rnd(half_size * scale)
    } else {
        half_size
    };
    let k = if antialias {
        support.ceil() as usize * 2 + 1
    } else {
        2 * half_size as usize
    };
    let invscale = if stretch { rnd(1.0 / scale) } else { 1.0 };
    let delta = if align_corners && !antialias {
        0.5
    } else {
        0.0
    };
    let mut w = Window {
        xmin: Vec::new(),
        xsize: Vec::new(),
        weights: Vec::new(),
        k,
    };
    for i in 0..output {
        let center = rnd(scale * (i as f64 + 0.5 - delta));
        let xmin = ((rnd(center - support) + 0.5 + delta) as i64).max(0);
        let xsize =
            (((rnd(center + support) + 0.5 + delta) as i64).min(input) - xmin).clamp(0, k as i64);
        let mut ws = vec![0.0; k];
        let mut total = 0.0;
        for (j, wj) in ws.iter_mut().enumerate().take(xsize as usize) {
            let at = (rnd(rnd((j as i64 + xmin) as f64) - center) + 0.5 - delta) * invscale;
            *wj = filter(at, cubic, single);
            total = rnd(total + *wj);
        }
        if total != 0.0 {
            for wj in ws.iter_mut().take(xsize as usize) {
                *wj = rnd(*wj / total);
            }
        }
        w.xmin.push(xmin);
        w.xsize.push(xsize);
        w.weights.extend(ws);
    }
    w
}

/// The window's `k` taps as device vectors: tap `j` reads `min(xmin + j, input - 1)`.
fn taps(b: &mut Builder, w: &Window, input: i64, dtype: DType) -> Vec<Tap> {
    (0..w.k)
        .map(|j| {
            let idx: Vec<Literal> = w
                .xmin
                .iter()
                .map(|&m| Literal::Int((m + j as i64).min(input - 1)))
                .collect();
            let wt: Vec<Literal> = (0..w.xmin.len())
                .map(|o| Literal::Float(w.weights[o * w.k + j]))
                .collect();
            Tap {
                index: b.vector(&idx, DType::I64),
                weight: Some(b.vector(&wt, dtype)),
            }
        })
        .collect()
}

/// Forward along dim `d`: `sum_j x[xmin + j] * w_j` over `j < xsize`, in CPU's order; taps
/// past an output's count are left out (not multiplied by 0), so an infinite element
/// reaches only the outputs that read it.
fn resample(b: &mut Builder, x: &Value, w: &Window, d: usize) -> Result<Value> {
    let input = x.shape()[d];
    let taps = taps(b, w, input, x.dtype());
    let mut acc: Option<Value> = None;
    for (j, tap) in taps.iter().enumerate() {
        let rows = select_rows(b, x, d, &tap.index)?;
        let wt = tap.weight.as_ref().expect("weighted taps");
        let wt = b.broadcast_in_dim(wt, rows.shape(), &[d as i64])?;
        let t = b.mul(&rows, &wt)?;
        acc = Some(match acc {
            None => t,
            Some(a) => {
                let used: Vec<Literal> = w
                    .xsize
                    .iter()
                    .map(|&s| Literal::Bool((j as i64) < s))
                    .collect();
                let used = b.vector(&used, DType::Bool);
                let used = b.broadcast_in_dim(&used, rows.shape(), &[d as i64])?;
                let zero = b.full_like(&t, Literal::Float(0.0));
                let t = b.select(&used, &t, &zero)?;
                b.add(&a, &t)?
            }
        });
    }
    Ok(acc.expect("at least one tap"))
}

/// The window with its float64 weights as CPU's int16 fixed-point numbers, and their
/// fraction bits: as many as keep twice the largest weight below 2^15.
fn fixed_point(w: &Window) -> (Window, u32) {
    let largest = w.weights.iter().copied().fold(0.0, f64::max);
    let bits = (0..22)
        .find(|&p| (0.5 + largest * f64::from(1u32 << (p + 1))) as i32 >= 1 << 15)
        .unwrap_or(22)
        .max(1);
    let weights = w.weights.iter().map(|&x| {
        let v = x * f64::from(1u32 << bits);
        f64::from((if v < 0.0 { -0.5 + v } else { 0.5 + v }) as i32 as i16)
    });
    let fixed = Window {
        xmin: w.xmin.clone(),
        xsize: w.xsize.clone(),
        weights: weights.collect(),
        k: w.k,
    };
    (fixed, bits)
}

/// One integer pass along dim `d` of an int32 image of bytes: `sum_j x[xmin + j] * w_j` from
/// half a unit, shifted down and clamped to a byte, as CPU's uint8 kernel rounds.
fn resample_fixed(b: &mut Builder, x: &Value, w: &Window, d: usize) -> Result<Value> {
    let (w, bits) = fixed_point(w);
    let mut out_shape = x.shape().to_vec();
    out_shape[d] = w.xmin.len() as i64;
    let ty = TensorType::new(DType::I32, out_shape);
    let mut acc = b.splat(Literal::Int(1 << (bits - 1)), &ty);
    for tap in taps(b, &w, x.shape()[d], DType::I32) {
        let rows = select_rows(b, x, d, &tap.index)?;
        let wt = tap.weight.as_ref().expect("weighted taps");
        let wt = b.broadcast_in_dim(wt, rows.shape(), &[d as i64])?;
        let t = b.mul(&rows, &wt)?;
        acc = b.add(&acc, &t)?;
    }
    let shift = b.splat(Literal::Int(i64::from(bits)), &ty);
    let v = b.shift_right_arithmetic(&acc, &shift)?;
    let lo = b.constant(Literal::Int(0), DType::I32);
    let hi = b.constant(Literal::Int(255), DType::I32);
    Ok(b.clamp(&lo, &v, &hi))
}

/// CPU's uint8 bilinear or bicubic resize of an NCHW image to `out_size`: width pass, then
/// height pass, each skipped when its size does not change.
pub(super) fn resize_u8(
    b: &mut Builder,
    x: &Value,
    out_size: &[i64],
    align_corners: bool,
    scales: [Option<f64>; 2],
    cubic: bool,
    antialias: bool,
) -> Result<Value> {
    let mut v = b.convert(x, DType::I32);
    for d in [3, 2] {
        let sizes = (x.shape()[d], out_size[d - 2]);
        if sizes.0 != sizes.1 {
            let w = window(sizes, align_corners, scales[d - 2], cubic, false, antialias);
            v = resample_fixed(b, &v, &w, d)?;
        }
    }
    Ok(b.convert(&v, DType::U8))
}

/// `_upsample_{bilinear,bicubic}2d_aa(self, output_size, align_corners, scales_h,
/// scales_w)` and their backwards `(grad_output, output_size, input_size, align_corners,
/// scales_h, scales_w)`.
fn upsample_aa(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let backward = ctx.name.contains("_backward");
    let cubic = ctx.name.contains("bicubic");
    let first = if backward { 3 } else { 2 };
    let ty = ctx.ty(0)?;
    let out_size = ctx.int_list(1)?;
    let in_size = if backward {
        ctx.int_list(2)?
    } else {
        ty.shape.clone()
    };
    if out_size.len() != 2 {
        return runtime(format!(
            "It is expected output_size equals to 2, but got size {}",
            out_size.len()
        ));
    }
    if in_size.len() != 4 {
        return runtime(format!(
            "It is expected input_size equals to 4, but got size {}",
            in_size.len()
        ));
    }
    let (ih, iw, oh, ow) = (in_size[2], in_size[3], out_size[0], out_size[1]);
    if ih <= 0 || iw <= 0 || oh <= 0 || ow <= 0 {
        return runtime(format!("Input and output sizes should be greater than 0, but got input (H: {ih}, W: {iw}) output (H: {oh}, W: {ow})"));
    }
    let single = match ty.dtype {
        DType::F32 => true,
        DType::F64 => false,
        DType::U8 if !backward => {
            let align_corners = ctx.bool_or(first, false)?;
            let scales = [ctx.opt_float(first + 1)?, ctx.opt_float(first + 2)?];
            let x = ctx.tensor(0)?;
            return one(resize_u8(
                &mut ctx.b,
                &x,
                &out_size,
                align_corners,
                scales,
                cubic,
                true,
            )?);
        }
        d => {
            return Err(Error::NotImplemented(format!(
                "\"compute_index_ranges_weights\" not implemented for '{}'",
                torch_name(d)
            )))
        }
    };
    let align_corners = ctx.bool_or(first, false)?;
    let scales = [ctx.opt_float(first + 1)?, ctx.opt_float(first + 2)?];
    let x = ctx.tensor(0)?;
    let b = &mut ctx.b;
    let win = |d: usize| {
        let sizes = (in_size[d], out_size[d - 2]);
        window(sizes, align_corners, scales[d - 2], cubic, single, true)
    };
    if backward {
        if ty.shape[2..] != out_size[..] || ty.shape[..2] != in_size[..2] {
            return runtime(format!(
                "{}: grad_output of shape {:?} for input size {in_size:?} and output size {out_size:?}",
                ctx.name, ty.shape
            ));
        }
        let mut g = x;
        for d in [2, 3] {
            let w = win(d);
            let t = taps(b, &w, in_size[d], ty.dtype);
            g = interpolate_backward(b, &g, &t, d, in_size[d])?;
        }
        return one(g);
    }
    let mut v = x;
    for d in [3, 2] {
        if in_size[d] != out_size[d - 2] {
            v = resample(b, &v, &win(d), d)?;
        }
    }
    one(v)
}

pub(crate) fn register(reg: &mut Registry) {
    reg.ops(
        &[
            "_upsample_bilinear2d_aa",
            "_upsample_bilinear2d_aa.out",
            "_upsample_bilinear2d_aa_backward",
            "_upsample_bilinear2d_aa_backward.grad_input",
            "_upsample_bicubic2d_aa",
            "_upsample_bicubic2d_aa.out",
            "_upsample_bicubic2d_aa_backward",
            "_upsample_bicubic2d_aa_backward.grad_input",
        ],
        upsample_aa,
    );
}
