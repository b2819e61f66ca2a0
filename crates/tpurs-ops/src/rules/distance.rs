//! Distances between rows: `_cdist_forward` / `_cdist_backward` (every row of one batched
//! matrix against every row of another) and `_pdist_forward` / `_pdist_backward` (the upper
//! triangle of one matrix against itself, condensed). The per-`p` formulas are those of CPU
//! PyTorch's distance kernels (p = 0, 1, 2, inf and general p), and `_cdist_forward` takes
//! CPU's matrix-product path for p = 2 where CPU does, so that its rounding matches.

use tpurs_hlo::{Builder, CompareDir, DType, GatherDims, Literal, ScatterDims, TensorType, Value};

use super::combine::{add_c, max_c};
use super::conv::not_for;
use super::{broadcast_shapes, full, one};
use crate::ctx::{Ctx, Out};
use crate::dtype::{opmath, torch_name};
use crate::error::{runtime, Error, Result};
use crate::table::Registry;

/// `x1 - x2` for every pair of rows: `[B, P, R, M]` from `[B, P, M]` and `[B, R, M]`.
fn differences(b: &mut Builder, x1: &Value, x2: &Value) -> Result<Value> {
    let shape = [x1.shape()[0], x1.shape()[1], x2.shape()[1], x1.shape()[2]];
    let a = b.broadcast_in_dim(x1, &shape, &[0, 1, 3])?;
    let c = b.broadcast_in_dim(x2, &shape, &[0, 2, 3])?;
    Ok(b.sub(&a, &c)?)
}

/// `min(1, ceil(x))`: CPU's 0/1 test of a non-negative `x` (NaN stays NaN).
fn at_most_one(b: &mut Builder, x: &Value) -> Result<Value> {
    let c = b.ceil(x);
    let one_ = full(b, x, 1.0);
    Ok(b.min(&one_, &c)?)
}

/// The p-norm distances `[B, P, R]` between the rows of `x1` `[B, P, M]` and `x2`
/// `[B, R, M]`, as CPU's kernel: a sum (a max for p = inf) over the columns of a map of
/// `|x1 - x2|`, then a finishing root.
fn distances(b: &mut Builder, x1: &Value, x2: &Value, p: f64) -> Result<Value> {
    let d = differences(b, x1, x2)?;
    let a = b.abs(&d);
    let zero = b.constant(Literal::Int(0), a.dtype());
    let mapped = if p == 0.0 {
        at_most_one(b, &a)?
    } else if p == 1.0 || p.is_infinite() {
        a
    } else if p == 2.0 {
        b.mul(&a, &a)?
    } else {
        let e = full(b, &a, p);
        b.pow(&a, &e)?
    };
    if p.is_infinite() {
        return Ok(b.reduce(&mapped, &zero, &[3], max_c));
    }
    let s = b.reduce(&mapped, &zero, &[3], add_c);
    Ok(if p == 2.0 {
        b.sqrt(&s)
    } else if p == 0.0 || p == 1.0 {
        s
    } else {
        let e = full(b, &s, 1.0 / p);
        b.pow(&s, &e)?
    })
}

/// `x` `[B, N, M]` with a norm column and a ones column appended, in CPU's order for the
/// left (`[-2 x, |x|², 1]`) or right (`[x, 1, |x|²]`) operand of `_euclidean_dist`.
fn euclid_operand(b: &mut Builder, x: &Value, left: bool) -> Result<Value> {
    let (dt, ct) = (x.dtype(), opmath(x.dtype()));
    let xc = b.convert(x, ct);
    let sq = b.mul(&xc, &xc)?;
    let zero = b.constant(Literal::Int(0), ct);
    let norm = b.reduce(&sq, &zero, &[2], add_c);
    let norm = b.convert(&norm, dt);
    let col = [x.shape()[0], x.shape()[1], 1];
    let norm = b.reshape(&norm, &col)?;
    let ones = b.splat(Literal::Int(1), &TensorType::new(dt, col));
    if left {
        let m2 = full(b, x, -2.0);
        let x = b.mul(x, &m2)?;
        Ok(b.concatenate(&[&x, &norm, &ones], 2)?)
    } else {
        Ok(b.concatenate(&[x, &ones, &norm], 2)?)
    }
}

/// CPU's matrix-product path for p = 2 (`_euclidean_dist`): `|x1|² - 2 x1·x2 + |x2|²` as one
/// product of augmented operands, clamped at zero, square-rooted.
fn euclid_by_product(b: &mut Builder, x1: &Value, x2: &Value) -> Result<Value> {
    let (dt, ct) = (x1.dtype(), opmath(x1.dtype()));
    let l = euclid_operand(b, x1, true)?;
    let r = euclid_operand(b, x2, false)?;
    let sq = b.dot_general_to(&l, &r, (&[0], &[0]), (&[2], &[2]), ct)?;
    // The product rounds to the input type before the clamp and root, as on the CPU.
    let sq = b.convert(&sq, dt);
    let sq = b.convert(&sq, ct);
    let zero = full(b, &sq, 0.0);
    let sq = b.max(&sq, &zero)?;
    let d = b.sqrt(&sq);
    Ok(b.convert(&d, dt))
}

/// The gradient `[B, P, M]` with respect to `x1` of the distances `d` `[B, P, R]` given their
/// gradient `g`, as CPU's backward kernels: for each row of `x1`, the sum over the rows of
/// `x2` of a per-p map of `x1 - x2` (p = 0 has none; the caller returns zeros).
fn distance_grad(
    b: &mut Builder,
    x1: &Value,
    x2: &Value,
    g: &Value,
    d: &Value,
    p: f64,
) -> Result<Value> {
    let diff = differences(b, x1, x2)?;
    let shape = diff.shape().to_vec();
    let g = b.broadcast_in_dim(g, &shape, &[0, 1, 2])?;
    let d = b.broadcast_in_dim(d, &shape, &[0, 1, 2])?;
    let zero = full(b, &diff, 0.0);
    let no_dist = b.compare(CompareDir::Eq, &d, &zero)?;
    let sign = b.sign(&diff);
    let term = if p == 1.0 {
        b.mul(&g, &sign)?
    } else if p.is_infinite() {
        // Only where `|diff|` is the distance: `1 - min(1, ceil(||diff| - dist|))`.
        let ad = b.abs(&diff);
        let gap = b.sub(&ad, &d)?;
        let gap = b.abs(&gap);
        let off = at_most_one(b, &gap)?;
        let one_ = full(b, &diff, 1.0);
        let on = b.sub(&one_, &off)?;
        let t = b.mul(&g, &sign)?;
        b.mul(&t, &on)?
    } else {
        let t = if p == 2.0 {
            b.mul(&g, &diff)?
        } else {
            // sign(diff) |diff|^(p-1) for p < 2, diff |diff|^(p-2) above, then times grad.
            let ad = b.abs(&diff);
            let (lead, e) = if p < 2.0 {
                (&sign, p - 1.0)
            } else {
                (&diff, p - 2.0)
            };
            let e = full(b, &diff, e);
            let pw = b.pow(&ad, &e)?;
            let t = b.mul(lead, &pw)?;
            b.mul(&t, &g)?
        };
        let den = if p == 2.0 {
            d.clone()
        } else {
            let e = full(b, &d, p - 1.0);
            b.pow(&d, &e)?
        };
        let t = b.div(&t, &den)?;
        // Zero where the distance is zero and, for p < 1, where the difference is.
        let mut skip = no_dist;
        if p < 1.0 {
            let same = b.compare(CompareDir::Eq, &diff, &zero)?;
            skip = b.or(&skip, &same)?;
        }
        b.select(&skip, &zero, &t)?
    };
    let init = b.constant(Literal::Int(0), diff.dtype());
    Ok(b.reduce(&term, &init, &[2], add_c))
}

/// Checks `cdist`'s operand types: at least 2-d, same number of columns.
fn check_operands(t1: &TensorType, t2: &TensorType) -> Result<()> {
    for (t, name) in [(t1, "X1"), (t2, "X2")] {
        if t.rank() < 2 {
            return runtime(format!(
                "cdist only supports at least 2D tensors, {name} got: {}D",
                t.rank()
            ));
        }
    }
    let (c1, c2) = (t1.shape[t1.rank() - 1], t2.shape[t2.rank() - 1]);
    if c1 != c2 {
        return runtime(format!(
            "X1 and X2 must have the same number of columns. X1: {c1} X2: {c2}"
        ));
    }
    Ok(())
}

/// The batch dims of `x1` and `x2` broadcast together.
fn batch_shape(t1: &TensorType, t2: &TensorType) -> Result<Vec<i64>> {
    broadcast_shapes(&t1.shape[..t1.rank() - 2], &t2.shape[..t2.rank() - 2])
}

/// `x` `[…, N, M]` broadcast to the batch `batch` and flattened to `[B, N, M]`.
fn flat_batch(b: &mut Builder, x: &Value, batch: &[i64]) -> Result<Value> {
    let r = x.rank();
    let (n, m) = (x.shape()[r - 2], x.shape()[r - 1]);
    let mut shape = batch.to_vec();
    shape.extend([n, m]);
    let x = b.broadcast_to(x, &shape)?;
    Ok(b.reshape(&x, &[batch.iter().product(), n, m])?)
}

/// CPU's check that the tensors a distance computation reads share one type.
fn check_same_type(types: &[DType]) -> Result<()> {
    match types.iter().find(|&&t| t != types[0]) {
        Some(&t) => runtime(format!(
            "expected scalar type {} but found {}",
            torch_name(types[0]),
            torch_name(t)
        )),
        None => Ok(()),
    }
}

/// CPU's dtype checks of a distance kernel: float32 or float64, one type throughout.
fn check_kernel_types(kernel: &str, types: &[DType]) -> Result<()> {
    if types[0] != DType::F32 && types[0] != DType::F64 {
        return Err(not_for(kernel, types[0]));
    }
    check_same_type(types)
}

/// `_cdist_forward(x1, x2, p, compute_mode)`: `[…, P, R]` distances between the rows of
/// `x1` `[…, P, M]` and `x2` `[…, R, M]`, batch dims broadcast.
fn cdist_forward(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let (t1, t2) = (ctx.ty(0)?, ctx.ty(1)?);
    check_operands(&t1, &t2)?;
    for (t, name) in [(&t1, "X1"), (&t2, "X2")] {
        if !t.dtype.is_float() {
            return runtime(format!(
                "cdist only supports floating-point dtypes, {name} got: {}",
                torch_name(t.dtype)
            ));
        }
    }
    let p = ctx.float(2)?;
    if p.is_nan() || p < 0.0 {
        return runtime("cdist only supports non-negative p values");
    }
    let mode = ctx.opt_int(3)?.unwrap_or(0);
    if !(0..=2).contains(&mode) {
        return runtime(format!("possible modes: 0, 1, 2, but was: {mode}"));
    }
    let batch = batch_shape(&t1, &t2)?;
    let (r1, r2) = (t1.shape[t1.rank() - 2], t2.shape[t2.rank() - 2]);
    let cols = t1.shape[t1.rank() - 1];
    let mut out_shape = batch.clone();
    out_shape.extend([r1, r2]);
    let out_ty = TensorType::new(t1.dtype, out_shape.clone());
    if out_ty.numel() == 0 || cols == 0 {
        return one(ctx.b.splat(Literal::Int(0), &out_ty));
    }
    // CPU's choice: the matrix product for p = 2 when asked, or by default past 25 rows.
    let by_product = p == 2.0 && (mode == 1 || (mode == 0 && (r1 > 25 || r2 > 25)));
    if by_product {
        // Composed of ordinary ops on the CPU, so half types too.
        check_same_type(&[t1.dtype, t2.dtype])?;
    } else {
        check_kernel_types("cdist", &[t1.dtype, t2.dtype])?;
    }
    let x1 = ctx.tensor(0)?;
    let x2 = ctx.tensor(1)?;
    let b = &mut ctx.b;
    let x1 = flat_batch(b, &x1, &batch)?;
    let x2 = flat_batch(b, &x2, &batch)?;
    let d = if by_product {
        euclid_by_product(b, &x1, &x2)?
    } else {
        distances(b, &x1, &x2, p)?
    };
    one(b.reshape(&d, &out_shape)?)
}

/// `_cdist_backward(grad, x1, x2, p, cdist)`: the gradient with respect to `x1`, over the
/// broadcast batch (autograd sums it back to `x1`'s shape; `x2`'s comes from swapped
/// arguments).
fn cdist_backward(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let (t1, t2) = (ctx.ty(1)?, ctx.ty(2)?);
    if let Some(r) = [t1.rank(), t2.rank()].into_iter().find(|&r| r < 2) {
        return Err(Error::Index(format!(
            "Dimension out of range (expected to be in range of [{}, {}], but got -2)",
            -(r as i64).max(1),
            (r as i64 - 1).max(0)
        )));
    }
    check_operands(&t1, &t2)?;
    let p = ctx.float(3)?;
    let batch = batch_shape(&t1, &t2)?;
    let (r1, r2) = (t1.shape[t1.rank() - 2], t2.shape[t2.rank() - 2]);
    let cols = t1.shape[t1.rank() - 1];
    let bn: i64 = batch.iter().product();
    if r1 == 0 || r2 == 0 || cols == 0 || bn == 0 {
        return one(ctx.b.splat(Literal::Int(0), &t1));
    }
    let (tg, td) = (ctx.ty(0)?, ctx.ty(4)?);
    check_kernel_types("cdist_backward", &[t1.dtype, t2.dtype, tg.dtype, td.dtype])?;
    let pairs = bn * r1 * r2;
    if tg.numel() != pairs || td.numel() != pairs {
        return runtime(format!(
            "_cdist_backward: grad {:?} and cdist {:?} must hold the {:?} distances",
            tg.shape,
            td.shape,
            [bn, r1, r2]
        ));
    }
    let mut shape = batch.clone();
    shape.extend([r1, cols]);
    if p == 0.0 {
        return one(ctx
            .b
            .splat(Literal::Int(0), &TensorType::new(t1.dtype, shape)));
    }
    let g = ctx.tensor(0)?;
    let x1 = ctx.tensor(1)?;
    let x2 = ctx.tensor(2)?;
    let d = ctx.tensor(4)?;
    let b = &mut ctx.b;
    let x1 = flat_batch(b, &x1, &batch)?;
    let x2 = flat_batch(b, &x2, &batch)?;
    let g = b.reshape(&g, &[bn, r1, r2])?;
    let d = b.reshape(&d, &[bn, r1, r2])?;
    let gx = distance_grad(b, &x1, &x2, &g, &d, p)?;
    one(b.reshape(&gx, &shape)?)
}

/// `[n, n]` int64: the position of pair `(i, j)` (either order) in the condensed
/// upper-triangle list `(0, 1), (0, 2), …, (n-2, n-1)`; `n (n - 1) / 2` (one past the end)
/// on the diagonal.
fn pair_index(b: &mut Builder, n: i64) -> Result<Value> {
    let ty = TensorType::new(DType::I64, [n, n]);
    let i = b.iota(&ty, 0);
    let j = b.iota(&ty, 1);
    let lo = b.min(&i, &j)?;
    let hi = b.max(&i, &j)?;
    // lo n - lo (lo + 1) / 2 + (hi - lo - 1)
    let nn = b.full_like(&lo, Literal::Int(n));
    let one_ = b.full_like(&lo, Literal::Int(1));
    let two = b.full_like(&lo, Literal::Int(2));
    let row = b.mul(&lo, &nn)?;
    let lo1 = b.add(&lo, &one_)?;
    let tri = b.mul(&lo, &lo1)?;
    let tri = b.div(&tri, &two)?;
    let start = b.sub(&row, &tri)?;
    let off = b.sub(&hi, &lo)?;
    let off = b.sub(&off, &one_)?;
    let k = b.add(&start, &off)?;
    let diag = b.compare(CompareDir::Eq, &i, &j)?;
    let end = b.full_like(&k, Literal::Int(n * (n - 1) / 2));
    Ok(b.select(&diag, &end, &k)?)
}

/// Checks `pdist`'s input is a 2-d matrix (CPU reads any other rank as one).
fn check_pdist_rank(t: &TensorType) -> Result<()> {
    match t.rank() {
        2 => Ok(()),
        r @ 0..=1 => Err(Error::Index(format!(
            "Dimension out of range (expected to be in range of [-1, 0], but got {r})"
        ))),
        r => runtime(format!("pdist only supports 2D tensors, got: {r}D")),
    }
}

/// `_pdist_forward(self, p)`: the `n (n - 1) / 2` distances between the rows of `self`
/// `[n, M]`, pairs `i < j` in row-major order.
fn pdist_forward(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let t = ctx.ty(0)?;
    check_pdist_rank(&t)?;
    // (An empty tensor counts as contiguous, as in PyTorch.)
    if t.numel() > 0 && !ctx.is_contiguous(0) {
        return runtime("_pdist_forward requires contiguous input");
    }
    let p = ctx.float(1)?;
    let (n, cols) = (t.shape[0], t.shape[1]);
    let pairs = (n * (n - 1) / 2).max(0);
    let out_ty = TensorType::new(t.dtype, [pairs]);
    if pairs == 0 || cols == 0 {
        return one(ctx.b.splat(Literal::Int(0), &out_ty));
    }
    check_kernel_types("pdist", &[t.dtype])?;
    let x = ctx.tensor(0)?;
    let b = &mut ctx.b;
    let x = b.reshape(&x, &[1, n, cols])?;
    let d = distances(b, &x, &x, p)?;
    let d = b.reshape(&d, &[n * n])?;
    // Every pair lands at its place (both orders carry the same distance); the diagonal
    // goes to one slot past the end, cut off afterwards.
    let k = pair_index(b, n)?;
    let k = b.reshape(&k, &[n * n, 1])?;
    let zeros = b.splat(Literal::Int(0), &TensorType::new(t.dtype, [pairs + 1]));
    let dims = ScatterDims {
        update_window_dims: vec![],
        inserted_window_dims: vec![0],
        scatter_dims_to_operand_dims: vec![0],
        index_vector_dim: 1,
    };
    let r = b.scatter(&zeros, &k, &d, &dims, None);
    one(b.slice(&r, &[0], &[pairs], &[1])?)
}

/// The condensed `v` `[n (n - 1) / 2]` as a symmetric `[1, n, n]` matrix, zero diagonal.
fn symmetric(b: &mut Builder, v: &Value, k: &Value) -> Result<Value> {
    let n = k.shape()[0];
    let zero = b.splat(Literal::Int(0), &TensorType::new(v.dtype(), [1]));
    let ext = b.concatenate(&[v, &zero], 0)?;
    let idx = b.reshape(k, &[n, n, 1])?;
    let dims = GatherDims {
        offset_dims: vec![],
        collapsed_slice_dims: vec![0],
        start_index_map: vec![0],
        index_vector_dim: 2,
        slice_sizes: vec![1],
    };
    let m = b.gather(&ext, &idx, &dims, &[n, n]);
    Ok(b.reshape(&m, &[1, n, n])?)
}

/// `_pdist_backward(grad, self, p, pdist)`: each pair's gradient term added to its first
/// row and subtracted from its second, i.e. `cdist`'s gradient of `self` against itself
/// with the symmetric gradient and distance matrices.
fn pdist_backward(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let t = ctx.ty(1)?;
    check_pdist_rank(&t)?;
    if t.numel() > 0 && !ctx.is_contiguous(1) {
        return runtime("_pdist_backward requires self to be contiguous");
    }
    if ctx.ty(3)?.numel() > 0 && !ctx.is_contiguous(3) {
        return runtime("_pdist_backward requires pdist to be contiguous");
    }
    let p = ctx.float(2)?;
    let (n, cols) = (t.shape[0], t.shape[1]);
    let pairs = (n * (n - 1) / 2).max(0);
    let (tg, td) = (ctx.ty(0)?, ctx.ty(3)?);
    check_kernel_types("pdist_backward", &[t.dtype, tg.dtype, td.dtype])?;
    if pairs == 0 || cols == 0 || p == 0.0 {
        return one(ctx.b.splat(Literal::Int(0), &t));
    }
    if tg.numel() != pairs || td.numel() != pairs {
        return runtime(format!(
            "_pdist_backward: grad {:?} and pdist {:?} must hold the {pairs} distances",
            tg.shape, td.shape
        ));
    }
    let g = ctx.tensor(0)?;
    let x = ctx.tensor(1)?;
    let d = ctx.tensor(3)?;
    let b = &mut ctx.b;
    let k = pair_index(b, n)?;
    let g = b.reshape(&g, &[pairs])?;
    let d = b.reshape(&d, &[pairs])?;
    let g = symmetric(b, &g, &k)?;
    let d = symmetric(b, &d, &k)?;
    let x = b.reshape(&x, &[1, n, cols])?;
    let gx = distance_grad(b, &x, &x, &g, &d, p)?;
    one(b.reshape(&gx, &[n, cols])?)
}

pub(crate) fn register(reg: &mut Registry) {
    reg.ops(&["_cdist_forward", "_cdist_forward.out"], cdist_forward);
    reg.ops(&["_cdist_backward", "_cdist_backward.out"], cdist_backward);
    reg.ops(&["_pdist_forward", "_pdist_forward.out"], pdist_forward);
    reg.ops(&["_pdist_backward", "_pdist_backward.out"], pdist_backward);
}
