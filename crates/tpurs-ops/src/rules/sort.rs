//! Sorting and selection: `sort`, `topk`, `kthvalue`, `median` / `nanmedian`. One stable
//! `stablehlo.sort` of (values, indices) along a dimension, with PyTorch's order: NaN is
//! greater than every number, ties keep their original order.

use tpurs_hlo::{Builder, CompareDir, DType, Literal, TensorType, Value};

use super::wrap_dim;
use crate::ctx::{Ctx, Out};
use crate::error::{runtime, Error, Result};
use crate::table::Registry;

/// `x` and the int64 positions along `dim`, sorted together by `x` (NaN last ascending,
/// first descending).
fn sort_with_indices(
    b: &mut Builder,
    x: &Value,
    dim: usize,
    descending: bool,
) -> Result<(Value, Value)> {
    // Booleans sort as 0 / 1.
    let keys = if x.dtype() == DType::Bool {
        b.convert(x, DType::U8)
    } else {
        x.clone()
    };
    let idx = b.iota(&TensorType::new(DType::I64, x.shape().to_vec()), dim);
    let is_float = keys.dtype().is_float();
    let sorted = b.sort(&[&keys, &idx], dim, |b, args| {
        let (l, r) = (&args[0], &args[1]);
        let (first, second) = if descending { (r, l) } else { (l, r) };
        let less = b
            .compare(CompareDir::Lt, first, second)
            .expect("sort keys share a type");
        if !is_float {
            return less;
        }
        // NaN orders above every number.
        let first_nan = b.compare(CompareDir::Ne, first, first).expect("same type");
        let second_nan = b
            .compare(CompareDir::Ne, second, second)
            .expect("same type");
        let first_num = b.not(&first_nan);
        let nan_above = b.and(&first_num, &second_nan).expect("bools");
        b.or(&less, &nan_above).expect("bools")
    });
    let values = b.convert(&sorted[0], x.dtype());
    Ok((values, sorted[1].clone()))
}

/// `sort(self, dim, descending)`, `sort.stable(self, *, stable, dim, descending)` and their
/// `out=` forms.
fn sort(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let stable_overload = ctx.overload().starts_with("values_stable") || ctx.overload() == "stable";
    let (dim_at, desc_at) = if stable_overload { (2, 3) } else { (1, 2) };
    let x = ctx.tensor(0)?;
    let dim = wrap_dim(ctx.int_or(dim_at, -1)?, x.rank())?;
    let descending = ctx.bool_or(desc_at, false)?;
    if x.rank() == 0 {
        let zero = ctx
            .b
            .splat(Literal::Int(0), &TensorType::new(DType::I64, vec![]));
        return Ok(vec![Some(x), Some(zero)]);
    }
    let (v, i) = sort_with_indices(&mut ctx.b, &x, dim, descending)?;
    Ok(vec![Some(v), Some(i)])
}

/// `topk(self, k, dim, largest, sorted)` and `topk.values`: always sorted.
fn topk(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let x = ctx.tensor(0)?;
    let k = ctx.int(1)?;
    let dim = wrap_dim(ctx.int_or(2, -1)?, x.rank())?;
    let largest = ctx.bool_or(3, true)?;
    let n = x.shape().get(dim).copied().unwrap_or(1);
    if k < 0 || k > n {
        return runtime("selected index k out of range");
    }
    if x.rank() == 0 {
        let zero = ctx
            .b
            .splat(Literal::Int(0), &TensorType::new(DType::I64, vec![]));
        return Ok(vec![Some(x), Some(zero)]);
    }
    let (v, i) = sort_with_indices(&mut ctx.b, &x, dim, largest)?;
    let v = ctx.b.slice_dim(&v, dim, 0, k, 1)?;
    let i = ctx.b.slice_dim(&i, dim, 0, k, 1)?;
    Ok(vec![Some(v), Some(i)])
}

/// Picks position `pos` (per row, shaped like `sorted` without `dim`) of `dim` from sorted
/// values and indices; keeps `dim` as size 1 when `keepdim`.
fn pick(
    b: &mut Builder,
    sorted: (&Value, &Value),
    dim: usize,
    pos: &Value,
    keepdim: bool,
) -> Result<(Value, Value)> {
    let shape = sorted.0.shape().to_vec();
    let iota = b.iota(&TensorType::new(DType::I64, shape.clone()), dim);
    let kept: Vec<i64> = (0..shape.len() as i64)
        .filter(|&d| d != dim as i64)
        .collect();
    let pos = b.broadcast_in_dim(pos, &shape, &kept)?;
    let hit = b.compare(CompareDir::Eq, &iota, &pos)?;
    let mut out = Vec::new();
    for v in [sorted.0, sorted.1] {
        let zero = b.full_like(v, Literal::Int(0));
        let chosen = b.select(&hit, v, &zero)?;
        let init = b.constant(Literal::Int(0), v.dtype());
        let summed = if v.dtype() == DType::Bool {
            b.reduce(&chosen, &init, &[dim as i64], |b, x, y| {
                b.or(x, y).expect("bools")
            })
        } else {
            b.reduce(&chosen, &init, &[dim as i64], |b, x, y| {
                b.add(x, y).expect("same type")
            })
        };
        let summed = if keepdim {
            let mut s = shape.clone();
            s[dim] = 1;
            b.reshape(&summed, &s)?
        } else {
            summed
        };
        out.push(summed);
    }
    let i = out.pop().expect("two picks");
    Ok((out.pop().expect("two picks"), i))
}

/// `kthvalue(self, k, dim, keepdim)`: the k-th smallest (1-based) and its index.
fn kthvalue(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let x = ctx.tensor(0)?;
    let k = ctx.int(1)?;
    let dim = wrap_dim(ctx.int_or(2, -1)?, x.rank())?;
    // A 0-d input is one row of one element, and gives 0-d results.
    let keepdim = ctx.bool_or(3, false)? && x.rank() > 0;
    let x = if x.rank() == 0 {
        ctx.b.reshape(&x, &[1])?
    } else {
        x
    };
    let n = x.shape()[dim];
    if n == 0 {
        return Err(Error::Index(format!(
            "kthvalue(): Expected reduction dim {dim} to have non-zero size."
        )));
    }
    if k < 1 || k > n {
        return Err(Error::Index(format!(
            "kthvalue(): selected number k out of range for dimension {dim}"
        )));
    }
    let (v, i) = sort_with_indices(&mut ctx.b, &x, dim, false)?;
    let v = ctx.b.slice_dim(&v, dim, k - 1, k, 1)?;
    let i = ctx.b.slice_dim(&i, dim, k - 1, k, 1)?;
    let mut shape = x.shape().to_vec();
    if !keepdim {
        shape.remove(dim);
    } else {
        shape[dim] = 1;
    }
    Ok(vec![
        Some(ctx.b.reshape(&v, &shape)?),
        Some(ctx.b.reshape(&i, &shape)?),
    ])
}

/// The lower median along `dim` (NaN propagates for `median`; `nanmedian` skips NaN).
fn median_along(
    b: &mut Builder,
    x: &Value,
    dim: usize,
    keepdim: bool,
    skip_nan: bool,
) -> Result<(Value, Value)> {
    let n = x.shape()[dim];
    let (v, i) = sort_with_indices(b, x, dim, false)?;
    let rest: Vec<i64> = (0..x.rank())
        .filter(|&d| d != dim)
        .map(|d| x.shape()[d])
        .collect();
    let row = TensorType::new(DType::I64, rest);
    let pos = if x.dtype().is_float() {
        // NaNs sort last: `count` real numbers per row.
        let nan = b.compare(CompareDir::Ne, x, x)?;
        let nan = b.convert(&nan, DType::I64);
        let init = b.constant(Literal::Int(0), DType::I64);
        let nans = b.reduce(&nan, &init, &[dim as i64], |b, p, q| {
            b.add(p, q).expect("i64")
        });
        let total = b.splat(Literal::Int(n), &row);
        let count = b.sub(&total, &nans)?;
        if skip_nan {
            // (count - 1) / 2, and 0 (a NaN) when every element is NaN.
            let one = b.splat(Literal::Int(1), &row);
            let two = b.splat(Literal::Int(2), &row);
            let zero = b.splat(Literal::Int(0), &row);
            let m = b.sub(&count, &one)?;
            let m = b.max(&m, &zero)?;
            b.div(&m, &two)?
        } else {
            // The first NaN when there is one, else the lower median.
            let lower = b.splat(Literal::Int((n - 1) / 2), &row);
            let zero = b.splat(Literal::Int(0), &row);
            let has_nan = b.compare(CompareDir::Gt, &nans, &zero)?;
            b.select(&has_nan, &count, &lower)?
        }
    } else {
        b.splat(Literal::Int((n - 1) / 2), &row)
    };
    pick(b, (&v, &i), dim, &pos, keepdim)
}

/// `median` / `nanmedian` (whole tensor, and `out=`) and their `.dim` forms.
fn median(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let skip_nan = ctx.name.starts_with("nanmedian");
    let x = ctx.tensor(0)?;
    let op = if skip_nan { "nanmedian" } else { "median" };
    if ctx.overload().starts_with("dim") {
        let dim = wrap_dim(ctx.int(1)?, x.rank())?;
        // A 0-d input is one row of one element, and gives 0-d results.
        let keepdim = ctx.bool_or(2, false)? && x.rank() > 0;
        let x = if x.rank() == 0 {
            ctx.b.reshape(&x, &[1])?
        } else {
            x
        };
        if x.shape()[dim] == 0 {
            return Err(Error::Index(format!(
                "{op}(): Expected reduction dim {dim} to have non-zero size."
            )));
        }
        let (v, i) = median_along(&mut ctx.b, &x, dim, keepdim, skip_nan)?;
        return Ok(vec![Some(v), Some(i)]);
    }
    let numel = x.ty.numel();
    if numel == 0 {
        let nan = ctx.b.splat(
            Literal::Float(f64::NAN),
            &TensorType::new(x.dtype(), vec![]),
        );
        return Ok(vec![Some(nan)]);
    }
    let flat = ctx.b.reshape(&x, &[numel])?;
    let (v, _) = median_along(&mut ctx.b, &flat, 0, false, skip_nan)?;
    Ok(vec![Some(v)])
}

pub(crate) fn register(reg: &mut Registry) {
    reg.ops(
        &["sort", "sort.stable", "sort.values", "sort.values_stable"],
        sort,
    );
    reg.ops(&["topk", "topk.values"], topk);
    reg.ops(&["kthvalue", "kthvalue.values"], kthvalue);
    reg.ops(
        &[
            "median",
            "median.out",
            "median.dim",
            "median.dim_values",
            "nanmedian",
            "nanmedian.out",
            "nanmedian.dim",
            "nanmedian.dim_values",
        ],
        median,
    );
}
