//! Upsampling: nearest, nearest-exact and (bi/tri)linear, 1-d to 3-d, and their backwards.
//! Every mode is separable: along each spatial dim each output reads one source element
//! (nearest) or two weighted ones (linear), found with PyTorch's float index arithmetic;
//! the forward gathers them, the backward is `M^T g` for the `[out, in]` matrix `M` of
//! those weights (one dot per spatial dim), or scatter-adds where the gradient is not
//! finite.

use tpurs_hlo::{Builder, CompareDir, DType, Literal, TensorType, Value};

use super::index::{combine_add, select_rows, slices_along};
use super::one;
use super::upsample_aa::resize_u8;
use crate::ctx::{Ctx, Out};
use crate::dtype::{opmath, torch_name};
use crate::error::{runtime, Error, Result};
use crate::table::Registry;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Nearest,
    NearestExact,
    Linear { align_corners: bool },
}

/// PyTorch's `area_pixel_compute_scale` / `compute_scales_value` in f32.
fn scale_of(mode: Mode, input: i64, output: i64, scale: Option<f64>) -> f32 {
    match mode {
        Mode::Linear {
            align_corners: true,
        } => {
            if output > 1 {
                (input - 1) as f32 / (output - 1) as f32
            } else {
                0.0
            }
        }
        _ => match scale {
            Some(s) if s > 0.0 => (1.0 / s) as f32,
            _ => input as f32 / output as f32,
        },
    }
}

/// One source element per output position along a dim and its weight (`None`: 1).
pub(super) struct Tap {
    pub(super) index: Value,
    pub(super) weight: Option<Value>,
}

impl Tap {
    /// `v` (whose dim `d` runs over output positions) times this tap's weights.
    fn weighted(&self, b: &mut Builder, v: &Value, d: usize) -> Result<Value> {
        match &self.weight {
            Some(w) => {
                let w = b.broadcast_in_dim(w, v.shape(), &[d as i64])?;
                Ok(b.mul(v, &w)?)
            }
            None => Ok(v.clone()),
        }
    }
}

/// The taps of one spatial dim, as `[output]` vectors: one for nearest modes, two for
/// linear, computed with PyTorch's f32 index arithmetic; weights in `dtype`.
fn taps(
    b: &mut Builder,
    mode: Mode,
    input: i64,
    output: i64,
    scale: Option<f64>,
    dtype: DType,
) -> Result<Vec<Tap>> {
    let f32_ty = TensorType::new(DType::F32, vec![output]);
    let i64_ty = TensorType::new(DType::I64, vec![output]);
    let dst = b.iota(&f32_ty, 0);
    let s = b.splat(
        Literal::Float(scale_of(mode, input, output, scale) as f64),
        &f32_ty,
    );
    let last = b.splat(Literal::Int(input - 1), &i64_ty);
    let half = b.splat(Literal::Float(0.5), &f32_ty);
    match mode {
        Mode::Nearest | Mode::NearestExact => {
            let pos = if mode == Mode::NearestExact {
                b.add(&dst, &half)?
            } else {
                dst
            };
            let src = b.mul(&pos, &s)?;
            let src = b.floor(&src);
            let src = b.convert(&src, DType::I64);
            let index = b.min(&src, &last)?;
            Ok(vec![Tap {
                index,
                weight: None,
            }])
        }
        Mode::Linear { align_corners } => {
            let src = if align_corners {
                b.mul(&s, &dst)?
            } else {
                let p = b.add(&dst, &half)?;
                let p = b.mul(&s, &p)?;
                let p = b.sub(&p, &half)?;
                let zero = b.splat(Literal::Float(0.0), &f32_ty);
                b.max(&p, &zero)?
            };
            let i0f = b.floor(&src);
            let i0 = b.convert(&i0f, DType::I64);
            let i0 = b.min(&i0, &last)?;
            let below = b.compare(CompareDir::Lt, &i0, &last)?;
            let one_i = b.splat(Literal::Int(1), &i64_ty);
            let i1 = b.add(&i0, &one_i)?;
            let i1 = b.select(&below, &i1, &i0)?;
            let l1 = b.sub(&src, &i0f)?;
            let one_f = b.splat(Literal::Float(1.0), &f32_ty);
            let l0 = b.sub(&one_f, &l1)?;
            let (l0, l1) = (b.convert(&l0, dtype), b.convert(&l1, dtype));
            Ok(vec![
                Tap {
                    index: i0,
                    weight: Some(l0),
                },
                Tap {
                    index: i1,
                    weight: Some(l1),
                },
            ])
        }
    }
}

/// Forward along dim `d`: each tap's source elements, gathered and weighted, summed as CPU
/// sums them (so an infinite input reaches only the outputs that read it).
fn interpolate(b: &mut Builder, x: &Value, taps: &[Tap], d: usize) -> Result<Value> {
    let mut sum: Option<Value> = None;
    for tap in taps {
        let rows = select_rows(b, x, d, &tap.index)?;
        let y = tap.weighted(b, &rows, d)?;
        sum = Some(match sum {
            Some(s) => b.add(&s, &y)?,
            None => y,
        });
    }
    sum.ok_or_else(|| Error::Runtime("upsample: no taps".into()))
}

/// Backward along dim `d`: sums each output's gradient (times its weight) onto the element
/// it read. A finite gradient takes `M^T g` for the `[output, input]` tap matrix `M` (one
/// fast dot); a gradient holding inf or NaN takes a scatter-add per tap as CPU adds them,
/// because the product would spread `inf * 0 = NaN` along M's rows.
pub(super) fn interpolate_backward(
    b: &mut Builder,
    g: &Value,
    taps: &[Tap],
    d: usize,
    input: i64,
) -> Result<Value> {
    let finite = b.is_finite(g);
    let all = b.constant(Literal::Bool(true), DType::Bool);
    let dims: Vec<i64> = (0..g.rank() as i64).collect();
    let finite = b.reduce(&finite, &all, &dims, |b, x, y| {
        b.and(x, y).expect("same types")
    });
    let failure = std::cell::RefCell::new(None);
    let keep = |r: Result<Value>| match r {
        Ok(v) => vec![v],
        Err(e) => {
            let dummy = g.clone();
            failure.borrow_mut().get_or_insert(e);
            vec![dummy]
        }
    };
    let mut out = b.if_else(
        &finite,
        |b| keep(matrix_backward(b, g, taps, d, input)),
        |b| keep(scatter_backward(b, g, taps, d, input)),
    );
    match failure.into_inner() {
        Some(e) => Err(e),
        None => Ok(out.remove(0)),
    }
}

/// `M^T g` for the `[output, input]` matrix `M` of the taps along dim `d`.
fn matrix_backward(
    b: &mut Builder,
    g: &Value,
    taps: &[Tap],
    d: usize,
    input: i64,
) -> Result<Value> {
    let output = g.shape()[d];
    let i64_ty = TensorType::new(DType::I64, vec![output, input]);
    let col = b.iota(&i64_ty, 1);
    let mut m: Option<Value> = None;
    for tap in taps {
        let idx = b.broadcast_in_dim(&tap.index, &[output, input], &[0])?;
        let hit = b.compare(CompareDir::Eq, &col, &idx)?;
        let mut h = b.convert(&hit, g.dtype());
        if let Some(w) = &tap.weight {
            let w = b.broadcast_in_dim(w, &[output, input], &[0])?;
            h = b.mul(&h, &w)?;
        }
        m = Some(match m {
            Some(s) => b.add(&s, &h)?,
            None => h,
        });
    }
    let m = m.ok_or_else(|| Error::Runtime("upsample: no taps".into()))?;
    let y = b.dot_general(g, &m, (&[], &[]), (&[d as i64], &[0]))?;
    let rank = g.rank() as i64;
    let mut perm: Vec<i64> = (0..rank - 1).collect();
    perm.insert(d, rank - 1);
    Ok(b.transpose(&y, &perm)?)
}

/// Each tap's weighted gradient scatter-added onto the elements read along dim `d`.
fn scatter_backward(
    b: &mut Builder,
    g: &Value,
    taps: &[Tap],
    d: usize,
    input: i64,
) -> Result<Value> {
    let mut shape = g.shape().to_vec();
    shape[d] = input;
    let mut grad = b.splat(Literal::Float(0.0), &TensorType::new(g.dtype(), shape));
    let rows = g.shape()[d];
    for tap in taps {
        let update = tap.weighted(b, g, d)?;
        let at = b.reshape(&tap.index, &[rows, 1])?;
        let dims = slices_along(g.rank(), d);
        grad = b.scatter(&grad, &at, &update, &dims, Some(combine_add));
    }
    Ok(grad)
}

/// Arguments of one op: where its sizes, `align_corners` and scales are.
struct Layout {
    mode: Mode,
    spatial: usize,
    backward: bool,
}

fn layout(ctx: &Ctx) -> Result<Layout> {
    let base = ctx.name.split('.').next().unwrap_or("");
    let backward = base.ends_with("_backward");
    let kind = base.trim_end_matches("_backward");
    // Names end in `1d`, `2d` or `3d`.
    let spatial = match kind.as_bytes().get(kind.len().wrapping_sub(2)) {
        Some(d @ b'1'..=b'3') => usize::from(d - b'0'),
        _ => return runtime(format!("{}: not an upsampling op", ctx.name)),
    };
    let mode = if kind.contains("nearest_exact") {
        Mode::NearestExact
    } else if kind.contains("nearest") {
        Mode::Nearest
    } else {
        Mode::Linear {
            align_corners: ctx.bool_or(if backward { 3 } else { 2 }, false)?,
        }
    };
    Ok(Layout {
        mode,
        spatial,
        backward,
    })
}

/// The upsampling ops and their backwards.
fn upsample(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let l = layout(ctx)?;
    let linear = matches!(l.mode, Mode::Linear { .. });
    // Scales follow output_size (+ input_size) (+ align_corners).
    let first_scale = 2 + usize::from(l.backward) + usize::from(linear);
    let x = ctx.tensor(0)?;
    let rank = x.rank();
    if rank != l.spatial + 2 {
        return runtime(format!(
            "{}: expected a {}-d input, got {} dims",
            ctx.name,
            l.spatial + 2,
            rank
        ));
    }
    let out_size = ctx.int_list(1)?;
    let in_size: Vec<i64> = if l.backward {
        ctx.int_list(2)?[2..].to_vec()
    } else {
        x.shape()[2..].to_vec()
    };
    if out_size.len() != l.spatial || in_size.len() != l.spatial {
        return runtime(format!("{}: expected {} sizes", ctx.name, l.spatial));
    }
    let dtype = x.dtype();
    // Bilinear resizing of uint8 images has CPU's own integer kernel.
    if let (DType::U8, 2, Mode::Linear { align_corners }, false) =
        (dtype, l.spatial, l.mode, l.backward)
    {
        let scales = [ctx.opt_float(first_scale)?, ctx.opt_float(first_scale + 1)?];
        let v = resize_u8(
            &mut ctx.b,
            &x,
            &out_size,
            align_corners,
            scales,
            false,
            false,
        )?;
        return one(v);
    }
    if linear && !dtype.is_float() {
        return Err(Error::NotImplemented(format!(
            "\"{}\" not implemented for '{}'",
            ctx.name.split('.').next().unwrap_or(""),
            torch_name(dtype)
        )));
    }
    let wide = opmath(dtype);
    let mut v = ctx.b.convert(&x, wide);
    for i in 0..l.spatial {
        let scale = ctx.opt_float(first_scale + i)?;
        let taps = taps(&mut ctx.b, l.mode, in_size[i], out_size[i], scale, wide)?;
        v = if l.backward {
            interpolate_backward(&mut ctx.b, &v, &taps, 2 + i, in_size[i])?
        } else {
            interpolate(&mut ctx.b, &v, &taps, 2 + i)?
        };
    }
    one(ctx.b.convert(&v, dtype))
}

pub(crate) fn register(reg: &mut Registry) {
    reg.ops(
        &[
            "upsample_nearest1d",
            "upsample_nearest1d.out",
            "upsample_nearest2d",
            "upsample_nearest2d.out",
            "upsample_nearest3d",
            "upsample_nearest3d.out",
            "_upsample_nearest_exact1d",
            "_upsample_nearest_exact1d.out",
            "_upsample_nearest_exact2d",
            "_upsample_nearest_exact2d.out",
            "_upsample_nearest_exact3d",
            "_upsample_nearest_exact3d.out",
            "upsample_linear1d",
            "upsample_linear1d.out",
            "upsample_bilinear2d",
            "upsample_bilinear2d.out",
            "upsample_trilinear3d",
            "upsample_trilinear3d.out",
            "upsample_nearest1d_backward",
            "upsample_nearest1d_backward.grad_input",
            "upsample_nearest2d_backward",
            "upsample_nearest2d_backward.grad_input",
            "upsample_nearest3d_backward",
            "upsample_nearest3d_backward.grad_input",
            "_upsample_nearest_exact1d_backward",
            "_upsample_nearest_exact1d_backward.grad_input",
            "_upsample_nearest_exact2d_backward",
            "_upsample_nearest_exact2d_backward.grad_input",
            "_upsample_nearest_exact3d_backward",
            "_upsample_nearest_exact3d_backward.grad_input",
            "upsample_linear1d_backward",
            "upsample_linear1d_backward.grad_input",
            "upsample_bilinear2d_backward",
            "upsample_bilinear2d_backward.grad_input",
            "upsample_trilinear3d_backward",
            "upsample_trilinear3d_backward.grad_input",
        ],
        upsample,
    );
}
