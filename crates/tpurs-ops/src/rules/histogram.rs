//! `histogram` with a bin count (`bin_ct`) or bin edges (`bins_tensor`), as ATen's
//! `histogramdd` kernel computes the 1-d case. With a count, the edges are a linspace over
//! the given range or, without one, over the data's own min and max (found on the device,
//! no host read), and each element's bin is the CPU's linear interpolation corrected by its
//! search among the neighbouring edges; with edges, a binary search. The rightmost bin
//! holds its right edge; elements outside the edges (and NaN) are left out.

use tpurs_hlo::{Builder, CompareDir, DType, Literal, ScatterDims, TensorType, Value};

use super::combine::{add_c, max_c, min_c};
use super::factory::linear_sequence_of;
use super::search::{search, take};
use crate::checks::CheckKind;
use crate::ctx::{Arg, Ctx, Out};
use crate::dtype::torch_name;
use crate::error::{runtime, Error, Result};
use crate::table::Registry;

/// PyTorch's lower-case dtype name in histogramdd's messages.
fn short_name(d: DType) -> String {
    torch_name(d).to_lowercase()
}

/// The count of edges in `edges[lo..hi)` that are `<= x` (edges sorted; `lo`, `hi` per
/// element, at most 3 apart).
fn upper_bound_near(
    b: &mut Builder,
    edges: &Value,
    x: &Value,
    lo: &Value,
    hi: &Value,
) -> Result<Value> {
    let n = edges.shape()[0];
    let mut count = b.full_like(lo, Literal::Int(0));
    for k in 0..3 {
        let kk = b.full_like(lo, Literal::Int(k));
        let at = b.add(lo, &kk)?;
        let inside = b.compare(CompareDir::Lt, &at, hi)?;
        let top = b.full_like(&at, Literal::Int(n - 1));
        let at_c = b.min(&at, &top)?;
        let e = take(b, edges, &at_c)?;
        let le = b.compare(CompareDir::Le, &e, x)?;
        let hit = b.and(&inside, &le)?;
        let one = b.convert(&hit, DType::I64);
        count = b.add(&count, &one)?;
    }
    Ok(count)
}

/// The bin of each element of `x` (`[n]`) among `edges`: `linear` for the interpolation with
/// local search of `bin_ct`, else the binary search of `bins_tensor`; `-1` when outside.
fn bins_of(b: &mut Builder, x: &Value, edges: &Value, linear: bool) -> Result<Value> {
    let m = edges.shape()[0];
    let n = x.shape()[0];
    let left = b.slice_dim(edges, 0, 0, 1, 1)?;
    let right = b.slice_dim(edges, 0, m - 1, m, 1)?;
    let left = b.broadcast_in_dim(&left, &[n], &[0])?;
    let right = b.broadcast_in_dim(&right, &[n], &[0])?;
    let pos = if linear {
        let off = b.sub(x, &left)?;
        let k = b.full_like(x, Literal::Float((m - 1) as f64));
        let scaled = b.mul(&off, &k)?;
        let width = b.sub(&right, &left)?;
        let guess = b.div(&scaled, &width)?;
        let guess = b.convert(&guess, DType::I64);
        let one = b.full_like(&guess, Literal::Int(1));
        let zero = b.full_like(&guess, Literal::Int(0));
        let lo = b.sub(&guess, &one)?;
        let lo = b.max(&lo, &zero)?;
        let two = b.full_like(&guess, Literal::Int(2));
        let hi = b.add(&guess, &two)?;
        let mm = b.full_like(&guess, Literal::Int(m));
        let hi = b.min(&hi, &mm)?;
        let c = upper_bound_near(b, edges, x, &lo, &hi)?;
        let p = b.add(&lo, &c)?;
        b.sub(&p, &one)?
    } else {
        let p = search(b, edges, x, true)?;
        let one = b.full_like(&p, Literal::Int(1));
        b.sub(&p, &one)?
    };
    // The rightmost bin includes its right edge.
    let last = b.full_like(&pos, Literal::Int(m - 1));
    let at_last = b.compare(CompareDir::Eq, &pos, &last)?;
    let before = b.full_like(&pos, Literal::Int(m - 2));
    let pos = b.select(&at_last, &before, &pos)?;
    let ge = b.compare(CompareDir::Ge, x, &left)?;
    let le = b.compare(CompareDir::Le, x, &right)?;
    let inside = b.and(&ge, &le)?;
    let out = b.full_like(&pos, Literal::Int(-1));
    Ok(b.select(&inside, &pos, &out)?)
}

/// Counts (or summed weights) per bin, `[bins]`; bin `-1` is dropped by the scatter.
fn counts(b: &mut Builder, bin: &Value, w: &Value, bins: i64) -> Result<Value> {
    let n = bin.shape()[0];
    let at = b.reshape(bin, &[n, 1])?;
    let zeros = b.splat(Literal::Float(0.0), &TensorType::new(w.dtype(), [bins]));
    let dims = ScatterDims {
        update_window_dims: vec![],
        inserted_window_dims: vec![0],
        scatter_dims_to_operand_dims: vec![0],
        index_vector_dim: 1,
    };
    Ok(b.scatter(&zeros, &at, w, &dims, Some(add_c)))
}

/// `histogram.bin_ct(self, bins, *, range, weight, density)` and
/// `histogram.bins_tensor(self, bins, *, weight, density)`, with their `out=` forms.
fn histogram(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let with_count = ctx.overload().starts_with("bin_ct");
    let (wi, di) = if with_count { (3, 4) } else { (2, 3) };
    let ty = ctx.ty(0)?;
    let n = ty.numel();
    let not_float = || {
        Err(Error::NotImplemented(format!(
            "\"histogramdd\" not implemented for '{}'",
            torch_name(ty.dtype)
        )))
    };
    let mut range = None;
    if with_count {
        let bins = ctx.int(1)?;
        if bins <= 0 {
            return runtime(format!(
                "torch.histogram(): bins must be > 0, but got {bins} for dimension 0"
            ));
        }
        if ctx.has(2) {
            let r = match ctx.arg(2) {
                Arg::FloatList(v) => v.clone(),
                _ => ctx.int_list(2)?.iter().map(|&v| v as f64).collect(),
            };
            if r.len() != 2 {
                return runtime(format!(
                    "torch.histogramdd: for a 1-dimensional histogram range should have 2 elements, but got {}",
                    r.len()
                ));
            }
            range = Some((r[0], r[1]));
        } else if n > 0 && !matches!(ty.dtype, DType::F32 | DType::F64) {
            return not_float();
        }
    } else {
        let bt = ctx.ty(1)?;
        if bt.dtype != ty.dtype {
            return runtime(format!(
                "torch.histogramdd: input tensor and bins tensors should have the same dtype, but got input with dtype {} and bins for dimension 0 with dtype {}",
                short_name(ty.dtype),
                short_name(bt.dtype)
            ));
        }
        if bt.rank() != 1 {
            return runtime(format!(
                "torch.histogramdd: bins tensor should have one dimension, but got {} dimensions in the bins tensor for dimension 0",
                bt.rank()
            ));
        }
        if bt.numel() == 0 {
            return runtime(
                "torch.histogramdd: bins tensor should have at least 1 element, but got 0 elements in the bins tensor for dimension 0",
            );
        }
        if bt.numel() == 1 {
            return runtime("torch.histogram(): bins must be > 0, but got 0 for dimension 0");
        }
    }
    if let Some((lo, hi)) = range {
        if !(lo.is_finite() && hi.is_finite()) {
            return runtime(format!(
                "torch.histogramdd: dimension 0's range [{}, {}] is not finite",
                fmt_edge(lo),
                fmt_edge(hi)
            ));
        }
        if lo > hi {
            return runtime(format!(
                "torch.histogramdd: min should not exceed max, but got min {} max {} for dimension 0",
                fmt_edge(lo),
                fmt_edge(hi)
            ));
        }
    }
    if ctx.has(wi) {
        let wt = ctx.ty(wi)?;
        if wt.dtype != ty.dtype {
            return runtime(format!(
                "torch.histogramdd: if weight tensor is provided, input tensor and weight tensor should have the same dtype, but got input({}), and weight({})",
                short_name(ty.dtype),
                short_name(wt.dtype)
            ));
        }
        if wt.numel() != n {
            return runtime(format!(
                "torch.histogramdd: if weight tensor is provided it should have the same shape as the input tensor excluding its innermost dimension, but got input with shape [{n}, 1] and weight with shape [{}]",
                wt.numel()
            ));
        }
    }
    if !matches!(ty.dtype, DType::F32 | DType::F64) {
        return not_float();
    }
    let density = ctx.bool_or(di, false)?;
    let x = ctx.tensor(0)?;
    let weight = ctx.opt_tensor(wi)?;
    let edges = if with_count {
        let bins = ctx.int(1)?;
        let (lo, hi) = match range {
            Some((lo, hi)) => {
                let lo = ctx.b.constant(Literal::Float(lo), ty.dtype);
                (lo, ctx.b.constant(Literal::Float(hi), ty.dtype))
            }
            None => data_range(ctx, &x, n)?,
        };
        let b = &mut ctx.b;
        // An empty range widens by a half on each side.
        let same = b.compare(CompareDir::Eq, &lo, &hi)?;
        let half = b.constant(Literal::Float(0.5), ty.dtype);
        let lo_w = b.sub(&lo, &half)?;
        let hi_w = b.add(&hi, &half)?;
        let lo = b.select(&same, &lo_w, &lo)?;
        let hi = b.select(&same, &hi_w, &hi)?;
        linear_sequence_of(b, &lo, &hi, bins + 1)?
    } else {
        ctx.tensor(1)?
    };
    let b = &mut ctx.b;
    let m = edges.shape()[0];
    let x = b.reshape(&x, &[n])?;
    let w = match weight {
        Some(w) => b.reshape(&w, &[n])?,
        None => b.splat(Literal::Float(1.0), &TensorType::new(ty.dtype, [n])),
    };
    let mut hist = if n == 0 {
        b.splat(Literal::Float(0.0), &TensorType::new(ty.dtype, [m - 1]))
    } else {
        let bin = bins_of(b, &x, &edges, with_count)?;
        counts(b, &bin, &w, m - 1)?
    };
    if density {
        let zero = b.constant(Literal::Float(0.0), ty.dtype);
        let total = b.reduce(&hist, &zero, &[0], add_c);
        let total = b.broadcast_in_dim(&total, &[m - 1], &[])?;
        hist = b.div(&hist, &total)?;
        let hi = b.slice_dim(&edges, 0, 1, m, 1)?;
        let lo = b.slice_dim(&edges, 0, 0, m - 1, 1)?;
        let len = b.sub(&hi, &lo)?;
        hist = b.div(&hist, &len)?;
    }
    Ok(vec![Some(hist), Some(edges)])
}

/// The data's min and max (NaN-propagating), with CPU's check that they are finite as a
/// device-side check; `(0, 1)` for empty data.
fn data_range(ctx: &mut Ctx, x: &Value, n: i64) -> Result<(Value, Value)> {
    let d = x.dtype();
    let b = &mut ctx.b;
    if n == 0 {
        return Ok((
            b.constant(Literal::Float(0.0), d),
            b.constant(Literal::Float(1.0), d),
        ));
    }
    let flat = b.reshape(x, &[n])?;
    let pinf = b.constant(Literal::Float(f64::INFINITY), d);
    let ninf = b.constant(Literal::Float(f64::NEG_INFINITY), d);
    let lo = b.reduce(&flat, &pinf, &[0], min_c);
    let hi = b.reduce(&flat, &ninf, &[0], max_c);
    let (a, c) = (b.is_finite(&lo), b.is_finite(&hi));
    let ok = b.and(&a, &c)?;
    ctx.check_that(
        &ok,
        CheckKind::Runtime,
        "torch.histogramdd: dimension 0's range is not finite",
    )?;
    Ok((lo, hi))
}

/// A double as C++ streams it (`%g`: 6 significant digits, trailing zeros dropped).
fn fmt_edge(v: f64) -> String {
    if !v.is_finite() {
        return if v.is_nan() {
            "nan".into()
        } else if v > 0.0 {
            "inf".into()
        } else {
            "-inf".into()
        };
    }
    let sci = format!("{v:.5e}");
    let (mant, exp) = sci.split_once('e').expect("exponent form");
    let exp: i32 = exp.parse().expect("an integer exponent");
    let trim = |s: &str| -> String {
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            s.to_string()
        }
    };
    if !(-4..6).contains(&exp) {
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{}e{sign}{:02}", trim(mant), exp.abs())
    } else {
        trim(&format!("{:.*}", (5 - exp) as usize, v))
    }
}

pub(crate) fn register(reg: &mut Registry) {
    reg.ops(
        &[
            "histogram.bin_ct",
            "histogram.bin_ct_out",
            "histogram.bins_tensor",
            "histogram.bins_tensor_out",
        ],
        histogram,
    );
}

#[cfg(test)]
mod tests {
    use super::fmt_edge;

    #[test]
    fn doubles_print_as_cpp_streams_them() {
        let cases = [
            (2.0, "2"),
            (0.5, "0.5"),
            (-1.25, "-1.25"),
            (1.0 / 3.0, "0.333333"),
            (123456.7, "123457"),
            (1234567.0, "1.23457e+06"),
            (1e-5, "1e-05"),
            (0.0001, "0.0001"),
            (f64::NEG_INFINITY, "-inf"),
        ];
        for (v, want) in cases {
            assert_eq!(fmt_edge(v), want, "{v}");
        }
    }
}
