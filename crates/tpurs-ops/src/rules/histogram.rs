//! `histogram` with a bin count (`bin_ct`) or bin edges (`bins_tensor`), and the ops
//! `histogramdd` is made of (`_histogramdd_bin_edges`, `_histogramdd_from_bin_cts`,
//! `_histogramdd_from_bin_tensors`), as ATen's `histogramdd` kernel computes them. With a count, the edges are a linspace over
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

/// How a call gives its bins.
enum Bins {
    /// A count per dim and an optional range `[lo0, hi0, lo1, hi1, ...]`: linspace edges.
    Counts(Vec<i64>, Option<Vec<f64>>),
    /// Edge tensors: argument `i`, a `Tensor[]` (`histogramdd`) or one tensor (`histogram`).
    Edges(usize, bool),
}

/// One call: the input's shape as the kernel sees it (`[n, 1]` for `histogram`, whose
/// weight is flattened too), its dtype, the bins, and where `weight` is.
struct Call {
    shape: Vec<i64>,
    dtype: DType,
    bins: Bins,
    weight: usize,
    flat: bool,
}

impl Call {
    fn dims(&self) -> usize {
        self.shape.last().copied().unwrap_or(0) as usize
    }

    fn rows(&self) -> i64 {
        self.shape[..self.shape.len() - 1].iter().product()
    }
}

fn not_float(d: DType) -> Error {
    Error::NotImplemented(format!(
        "\"histogramdd\" not implemented for '{}'",
        torch_name(d)
    ))
}

fn bins_positive(counts: impl Iterator<Item = i64>) -> Result<()> {
    for (d, c) in counts.enumerate() {
        if c <= 0 {
            return runtime(format!(
                "torch.histogram(): bins must be > 0, but got {c} for dimension {d}"
            ));
        }
    }
    Ok(())
}

/// CPU's checks, in its order: bin counts and range, then (`histogramdd_check_inputs`)
/// edge tensors and weight, then the dtype.
fn validate(ctx: &Ctx, call: &Call) -> Result<()> {
    if call.shape.len() < 2 {
        return runtime("torch.histogramdd: input tensor should have at least 2 dimensions");
    }
    let n = call.dims();
    match &call.bins {
        Bins::Counts(counts, range) => {
            if counts.len() != n {
                return runtime(
                    "histogramdd: The size of bins must be equal to the innermost dimension of the input.",
                );
            }
            bins_positive(counts.iter().copied())?;
            if let Some(r) = range {
                if r.len() != 2 * n {
                    return runtime(format!(
                        "torch.histogramdd: for a {n}-dimensional histogram range should have {} elements, but got {}",
                        2 * n,
                        r.len()
                    ));
                }
                for d in 0..n {
                    let (lo, hi) = (r[2 * d], r[2 * d + 1]);
                    if !(lo.is_finite() && hi.is_finite()) {
                        return runtime(format!(
                            "torch.histogramdd: dimension {d}'s range [{}, {}] is not finite",
                            fmt_edge(lo),
                            fmt_edge(hi)
                        ));
                    }
                    if lo > hi {
                        return runtime(format!(
                            "torch.histogramdd: min should not exceed max, but got min {} max {} for dimension {d}",
                            fmt_edge(lo),
                            fmt_edge(hi)
                        ));
                    }
                }
            } else if call.rows() > 0 && !matches!(call.dtype, DType::F32 | DType::F64) {
                return Err(not_float(call.dtype));
            }
        }
        Bins::Edges(i, is_list) => {
            let k = if *is_list { ctx.list_len(*i) } else { 1 };
            if k != n {
                return runtime(format!(
                    "torch.histogramdd: expected {n} sequences of bin edges for a {n}-dimensional histogram but got {k}"
                ));
            }
            for d in 0..n {
                let et = ctx.meta(*i, is_list.then_some(d))?.ty();
                if et.dtype != call.dtype {
                    return runtime(format!(
                        "torch.histogramdd: input tensor and bins tensors should have the same dtype, but got input with dtype {} and bins for dimension {d} with dtype {}",
                        short_name(call.dtype),
                        short_name(et.dtype)
                    ));
                }
                if et.rank() != 1 {
                    return runtime(format!(
                        "torch.histogramdd: bins tensor should have one dimension, but got {} dimensions in the bins tensor for dimension {d}",
                        et.rank()
                    ));
                }
                if et.numel() == 0 {
                    return runtime(format!(
                        "torch.histogramdd: bins tensor should have at least 1 element, but got 0 elements in the bins tensor for dimension {d}"
                    ));
                }
            }
        }
    }
    if ctx.has(call.weight) {
        let wt = ctx.ty(call.weight)?;
        if wt.dtype != call.dtype {
            return runtime(format!(
                "torch.histogramdd: if weight tensor is provided, input tensor and weight tensor should have the same dtype, but got input({}), and weight({})",
                short_name(call.dtype),
                short_name(wt.dtype)
            ));
        }
        let wshape = if call.flat {
            vec![wt.numel()]
        } else {
            wt.shape.clone()
        };
        if wshape[..] != call.shape[..call.shape.len() - 1] {
            return runtime(format!(
                "torch.histogramdd: if weight tensor is provided it should have the same shape as the input tensor excluding its innermost dimension, but got input with shape {:?} and weight with shape {:?}",
                call.shape, wshape
            ));
        }
    }
    if let Bins::Edges(i, is_list) = call.bins {
        let sizes = (0..n).map(|d| {
            ctx.meta(i, is_list.then_some(d))
                .map(|m| m.ty().numel() - 1)
        });
        bins_positive(sizes.collect::<Result<Vec<_>>>()?.into_iter())?;
    }
    if !matches!(call.dtype, DType::F32 | DType::F64) {
        return Err(not_float(call.dtype));
    }
    Ok(())
}

/// Every dim's edges: linspaces over the range or over the data's own min and max of that
/// column (an empty range widened by a half on each side), or the given tensors.
fn edges(ctx: &mut Ctx, call: &Call, x: &Value) -> Result<Vec<Value>> {
    let n = call.dims();
    let d = call.dtype;
    match &call.bins {
        Bins::Edges(i, true) => ctx.tensors(*i),
        Bins::Edges(i, false) => Ok(vec![ctx.tensor(*i)?]),
        Bins::Counts(counts, range) => {
            let mut out = Vec::new();
            for k in 0..n {
                let (lo, hi) = match range {
                    Some(r) => (
                        ctx.b.constant(Literal::Float(r[2 * k]), d),
                        ctx.b.constant(Literal::Float(r[2 * k + 1]), d),
                    ),
                    None => data_range(ctx, x, k)?,
                };
                let b = &mut ctx.b;
                let same = b.compare(CompareDir::Eq, &lo, &hi)?;
                let half = b.constant(Literal::Float(0.5), d);
                let lo_w = b.sub(&lo, &half)?;
                let hi_w = b.add(&hi, &half)?;
                let lo = b.select(&same, &lo_w, &lo)?;
                let hi = b.select(&same, &hi_w, &hi)?;
                out.push(linear_sequence_of(b, &lo, &hi, counts[k] + 1)?);
            }
            Ok(out)
        }
    }
}

/// The histogram of the rows of `x` (`[m, n]`) over `edges`, weighted, as a density if
/// asked; shape: the bin counts.
fn hist_of(
    b: &mut Builder,
    x: &Value,
    edges: &[Value],
    linear: bool,
    w: Option<Value>,
    density: bool,
) -> Result<Value> {
    let m = x.shape()[0];
    let d = x.dtype();
    let counts: Vec<i64> = edges.iter().map(|e| e.shape()[0] - 1).collect();
    let total: i64 = counts.iter().product();
    let mut hist = if m == 0 {
        b.splat(Literal::Float(0.0), &TensorType::new(d, [total]))
    } else {
        // Flat bin of each row; a row outside any dim's edges goes to `total`, which the
        // scatter drops.
        let mut flat = b.splat(Literal::Int(0), &TensorType::new(DType::I64, [m]));
        let mut outside = b.splat(Literal::Bool(false), &TensorType::new(DType::Bool, [m]));
        let mut stride = total;
        for (k, e) in edges.iter().enumerate() {
            stride /= counts[k];
            let col = b.slice_dim(x, 1, k as i64, k as i64 + 1, 1)?;
            let col = b.reshape(&col, &[m])?;
            let bin = bins_of(b, &col, e, linear)?;
            let neg = b.full_like(&bin, Literal::Int(0));
            let out_k = b.compare(CompareDir::Lt, &bin, &neg)?;
            outside = b.or(&outside, &out_k)?;
            let s = b.full_like(&bin, Literal::Int(stride));
            let t = b.mul(&bin, &s)?;
            flat = b.add(&flat, &t)?;
        }
        let past = b.full_like(&flat, Literal::Int(total));
        let flat = b.select(&outside, &past, &flat)?;
        let w = match w {
            Some(w) => w,
            None => b.splat(Literal::Float(1.0), &TensorType::new(d, [m])),
        };
        let at = b.reshape(&flat, &[m, 1])?;
        let zeros = b.splat(Literal::Float(0.0), &TensorType::new(d, [total]));
        let dims = ScatterDims {
            update_window_dims: vec![],
            inserted_window_dims: vec![0],
            scatter_dims_to_operand_dims: vec![0],
            index_vector_dim: 1,
        };
        b.scatter(&zeros, &at, &w, &dims, Some(add_c))
    };
    hist = b.reshape(&hist, &counts)?;
    if density {
        let zero = b.constant(Literal::Float(0.0), d);
        let all: Vec<i64> = (0..counts.len() as i64).collect();
        let sum = b.reduce(&hist, &zero, &all, add_c);
        let sum = b.broadcast_in_dim(&sum, &counts, &[])?;
        hist = b.div(&hist, &sum)?;
        for (k, e) in edges.iter().enumerate() {
            let c = counts[k];
            let hi = b.slice_dim(e, 0, 1, c + 1, 1)?;
            let lo = b.slice_dim(e, 0, 0, c, 1)?;
            let len = b.sub(&hi, &lo)?;
            let len = b.broadcast_in_dim(&len, &counts, &[k as i64])?;
            hist = b.div(&hist, &len)?;
        }
    }
    Ok(hist)
}

/// Validates, reads the input as `[rows, dims]` and the weight as `[rows]`, builds the edges
/// and, when `want_hist`, the histogram.
fn run(
    ctx: &mut Ctx,
    call: &Call,
    density: bool,
    want_hist: bool,
) -> Result<(Option<Value>, Vec<Value>)> {
    validate(ctx, call)?;
    let (m, n) = (call.rows(), call.dims() as i64);
    let x = ctx.tensor(0)?;
    let x = ctx.b.reshape(&x, &[m, n])?;
    let w = match ctx.opt_tensor(call.weight)? {
        Some(w) => Some(ctx.b.reshape(&w, &[m])?),
        None => None,
    };
    let es = edges(ctx, call, &x)?;
    if !want_hist {
        return Ok((None, es));
    }
    let linear = matches!(call.bins, Bins::Counts(..));
    let h = hist_of(&mut ctx.b, &x, &es, linear, w, density)?;
    Ok((Some(h), es))
}

/// A `float[]?` argument.
fn opt_floats(ctx: &Ctx, i: usize) -> Result<Option<Vec<f64>>> {
    Ok(match ctx.arg(i) {
        Arg::None => None,
        Arg::FloatList(v) => Some(v.clone()),
        _ => Some(ctx.int_list(i)?.iter().map(|&v| v as f64).collect()),
    })
}

/// `histogram.bin_ct(self, bins, *, range, weight, density)` and
/// `histogram.bins_tensor(self, bins, *, weight, density)`, with their `out=` forms.
fn histogram(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let ty = ctx.ty(0)?;
    let with_count = ctx.overload().starts_with("bin_ct");
    let (bins, weight, di) = if with_count {
        (Bins::Counts(vec![ctx.int(1)?], opt_floats(ctx, 2)?), 3, 4)
    } else {
        (Bins::Edges(1, false), 2, 3)
    };
    let call = Call {
        shape: vec![ty.numel(), 1],
        dtype: ty.dtype,
        bins,
        weight,
        flat: true,
    };
    let density = ctx.bool_or(di, false)?;
    let (h, mut es) = run(ctx, &call, density, true)?;
    let h = ctx
        .b
        .reshape(&h.expect("a histogram"), &[es[0].shape()[0] - 1])?;
    Ok(vec![Some(h), Some(es.remove(0))])
}

/// `_histogramdd_bin_edges` / `_histogramdd_from_bin_cts(self, bins, *, range, weight,
/// density)` and `_histogramdd_from_bin_tensors(self, bins, *, weight, density)`.
fn histogramdd(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let ty = ctx.ty(0)?;
    let tensors = ctx.name.starts_with("_histogramdd_from_bin_tensors");
    let (bins, weight, di) = if tensors {
        (Bins::Edges(1, true), 2, 3)
    } else {
        (Bins::Counts(ctx.int_list(1)?, opt_floats(ctx, 2)?), 3, 4)
    };
    let call = Call {
        shape: ty.shape.clone(),
        dtype: ty.dtype,
        bins,
        weight,
        flat: false,
    };
    let density = ctx.bool_or(di, false)?;
    let only_edges = ctx.name.starts_with("_histogramdd_bin_edges");
    let (h, es) = run(ctx, &call, density, !only_edges)?;
    Ok(match h {
        Some(h) => vec![Some(h)],
        None => es.into_iter().map(Some).collect(),
    })
}

/// Column `k`'s min and max (NaN-propagating), with CPU's check that they are finite as a
/// device-side check; `(0, 1)` for empty data.
fn data_range(ctx: &mut Ctx, x: &Value, k: usize) -> Result<(Value, Value)> {
    let d = x.dtype();
    let m = x.shape()[0];
    let b = &mut ctx.b;
    if m == 0 {
        return Ok((
            b.constant(Literal::Float(0.0), d),
            b.constant(Literal::Float(1.0), d),
        ));
    }
    let col = b.slice_dim(x, 1, k as i64, k as i64 + 1, 1)?;
    let pinf = b.constant(Literal::Float(f64::INFINITY), d);
    let ninf = b.constant(Literal::Float(f64::NEG_INFINITY), d);
    let lo = b.reduce(&col, &pinf, &[0, 1], min_c);
    let hi = b.reduce(&col, &ninf, &[0, 1], max_c);
    let (a, c) = (b.is_finite(&lo), b.is_finite(&hi));
    let ok = b.and(&a, &c)?;
    ctx.check_that(
        &ok,
        CheckKind::Runtime,
        &format!("torch.histogramdd: dimension {k}'s range is not finite"),
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
    reg.ops(
        &[
            "_histogramdd_bin_edges",
            "_histogramdd_from_bin_cts",
            "_histogramdd_from_bin_cts.out",
            "_histogramdd_from_bin_tensors",
            "_histogramdd_from_bin_tensors.out",
        ],
        histogramdd,
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
