//! Membership, histograms and sorted search: `isin`, `histc`, `searchsorted`, `bucketize`.
//! Each follows the CPU kernel step for step (histc's interpolation with its rounding,
//! searchsorted's binary search) so that ties and rounding land in the same bin.

use tpurs_hlo::{Builder, CompareDir, DType, GatherDims, Literal, ScatterDims, TensorType, Value};

use super::{common_dtype, one};
use crate::checks::CheckKind;
use crate::ctx::{Ctx, Out};
use crate::dtype::torch_name;
use crate::error::{runtime, Error, Result};
use crate::table::Registry;

/// `table[idx]` for a 1-d `table` and i64 `idx` of any shape (indices in range).
pub(super) fn take(b: &mut Builder, table: &Value, idx: &Value) -> Result<Value> {
    let mut with_vector = idx.shape().to_vec();
    with_vector.push(1);
    let at = b.reshape(idx, &with_vector)?;
    let dims = GatherDims {
        offset_dims: vec![],
        collapsed_slice_dims: vec![0],
        start_index_map: vec![0],
        index_vector_dim: idx.rank() as i64,
        slice_sizes: vec![1],
    };
    Ok(b.gather(table, &at, &dims, idx.shape()))
}

/// For each element of a tensor of `shape` whose last dim runs along the rows of a sequence
/// (rows of `m`), where its row starts in a flat copy of the sequence (all zero when every
/// element searches one shared row).
fn row_starts(b: &mut Builder, shape: &[i64], batched: bool, m: i64) -> Result<Value> {
    let ty = TensorType::new(DType::I64, shape.to_vec());
    if !batched {
        return Ok(b.splat(Literal::Int(0), &ty));
    }
    let count: i64 = shape.iter().product();
    let per_row = shape[shape.len() - 1];
    let pos = b.iota(&TensorType::new(DType::I64, [count]), 0);
    let cols = b.full_like(&pos, Literal::Int(per_row));
    let row = b.div(&pos, &cols)?;
    let width = b.full_like(&pos, Literal::Int(m));
    let start = b.mul(&row, &width)?;
    Ok(b.reshape(&start, shape)?)
}

/// `isin(elements, test_elements, *, assume_unique, invert)`, either of the two a number:
/// every element compared with every test element (in their promoted dtype).
fn isin(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let dtype = common_dtype(ctx, &[0, 1])?;
    let invert = ctx.bool_or(3, false)?;
    let (e, t) = (ctx.tensor(0)?, ctx.tensor(1)?);
    let b = &mut ctx.b;
    let (e, t) = (b.convert(&e, dtype), b.convert(&t, dtype));
    let m = t.ty.numel();
    let t = b.reshape(&t, &[m])?;
    let mut shape = e.shape().to_vec();
    shape.push(m);
    let dims: Vec<i64> = (0..e.rank() as i64).collect();
    let eb = b.broadcast_in_dim(&e, &shape, &dims)?;
    let tb = b.broadcast_in_dim(&t, &shape, &[e.rank() as i64])?;
    let eq = b.compare(CompareDir::Eq, &eb, &tb)?;
    let init = b.constant(Literal::Bool(false), DType::Bool);
    let found = b.reduce(&eq, &init, &[e.rank() as i64], |b, x, y| {
        b.or(x, y).expect("same types")
    });
    one(if invert { b.not(&found) } else { found })
}

/// Rounds float32 `x` to `dt` when `dt` is a half type: each step of the CPU's half
/// arithmetic rounds, and `reduce_precision` keeps the compiler from skipping it.
fn rounded(b: &mut Builder, x: Value, dt: DType) -> Value {
    let bits = match dt {
        DType::BF16 => (8, 7),
        DType::F16 => (5, 10),
        _ => return x,
    };
    let attrs = format!(
        "exponent_bits = {} : i32, mantissa_bits = {} : i32",
        bits.0, bits.1
    );
    let ty = x.ty.clone();
    b.emit1("stablehlo.reduce_precision", &[&x], &attrs, ty)
}

/// The bin of each element of `x` among `bins` equal bins from `lo` to `hi`, as the CPU's
/// histc picks it: linear interpolation truncated (rounded to `dt` at each step, without
/// the search among neighbouring edges that `histogram` adds); an element equal to `hi`
/// goes to the last bin, one outside `[lo, hi]` (or NaN) to `bins`.
fn bin_of(
    b: &mut Builder,
    x: &Value,
    bins: i64,
    (lo, hi): (&Value, &Value),
    dt: DType,
) -> Result<Value> {
    let n = x.ty.numel();
    let lo_n = b.broadcast_in_dim(lo, &[n], &[])?;
    let hi_n = b.broadcast_in_dim(hi, &[n], &[])?;
    let off = b.sub(x, &lo_n)?;
    let off = rounded(b, off, dt);
    let count = b.full_like(x, Literal::Float(bins as f64));
    let scaled = b.mul(&off, &count)?;
    let scaled = rounded(b, scaled, dt);
    let width = b.sub(&hi_n, &lo_n)?;
    let width = rounded(b, width, dt);
    let guess = b.div(&scaled, &width)?;
    let guess = rounded(b, guess, dt);
    let bin = b.convert(&guess, DType::I64);
    let top = b.full_like(&bin, Literal::Int(bins));
    let at_top = b.compare(CompareDir::Eq, &bin, &top)?;
    let one_i = b.full_like(&bin, Literal::Int(1));
    let last = b.sub(&top, &one_i)?;
    let bin = b.select(&at_top, &last, &bin)?;
    let ge = b.compare(CompareDir::Ge, x, &lo_n)?;
    let le = b.compare(CompareDir::Le, x, &hi_n)?;
    let inside = b.and(&ge, &le)?;
    Ok(b.select(&inside, &bin, &top)?)
}

/// `histc(self, bins=100, min=0, max=0)`: counts of the elements in `bins` equal bins over
/// `[min, max]` (the data's own range when `min == max`), elements outside left out.
fn histc(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let ty = ctx.ty(0)?;
    // Integer inputs are counted as CUDA counts them (the CPU refuses them; MoE routers in
    // Transformers pass expert ids as int32 on every non-CPU device).
    if ty.dtype == DType::Bool || !(ty.dtype.is_float() || ty.dtype.is_int()) {
        return Err(Error::NotImplemented(format!(
            "\"histogram_cpu\" not implemented for '{}'",
            torch_name(ty.dtype)
        )));
    }
    let bins = ctx.int_or(1, 100)?;
    if bins <= 0 {
        return runtime(format!(
            "torch.histc(): bins must be > 0, but got {bins} for bins"
        ));
    }
    let (min, max) = (ctx.float(2)?, ctx.float(3)?);
    if min != max && !(min.is_finite() && max.is_finite()) {
        return runtime(format!(
            "torch.histc: range of [{min}, {max}] is not finite"
        ));
    }
    if min > max {
        return runtime("torch.histc: max must be larger than min");
    }
    let x = ctx.tensor(0)?;
    let n = ty.numel();
    let dt = ty.dtype;
    // Half types compute in float32, rounded to their dtype where the CPU rounds.
    let acc = if dt == DType::F64 { dt } else { DType::F32 };
    let b = &mut ctx.b;
    let x = b.reshape(&x, &[n])?;
    let x = b.convert(&x, acc);
    // The range in the input's dtype (integers: in float32 like the values).
    let range_dt = if dt.is_float() { dt } else { acc };
    let lo0 = b.constant(Literal::Float(min), range_dt);
    let hi0 = b.constant(Literal::Float(max), range_dt);
    let mut lo = b.convert(&lo0, acc);
    let mut hi = b.convert(&hi0, acc);
    if min == max && n > 0 {
        let pinf = b.constant(Literal::Float(f64::INFINITY), acc);
        let ninf = b.constant(Literal::Float(f64::NEG_INFINITY), acc);
        lo = b.reduce(&x, &pinf, &[0], |b, p, q| b.min(p, q).expect("same types"));
        hi = b.reduce(&x, &ninf, &[0], |b, p, q| b.max(p, q).expect("same types"));
    }
    // An empty range widens by one on each side.
    let same = b.compare(CompareDir::Eq, &lo, &hi)?;
    let one_c = b.constant(Literal::Float(1.0), acc);
    let lo_w = b.sub(&lo, &one_c)?;
    let lo_w = rounded(b, lo_w, dt);
    let hi_w = b.add(&hi, &one_c)?;
    let hi_w = rounded(b, hi_w, dt);
    let lo = b.select(&same, &lo_w, &lo)?;
    let hi = b.select(&same, &hi_w, &hi)?;
    // Counts accumulate in float32 at least (exact to 2^24), as the CPU's do.
    let zeros = b.splat(Literal::Float(0.0), &TensorType::new(acc, [bins]));
    if n == 0 {
        return one(b.convert(&zeros, dt));
    }
    let (lo_ok, hi_ok) = (b.is_finite(&lo), b.is_finite(&hi));
    let finite = b.and(&lo_ok, &hi_ok)?;
    let bin = bin_of(b, &x, bins, (&lo, &hi), dt)?;
    let bin = b.reshape(&bin, &[n, 1])?;
    let ones = b.splat(Literal::Float(1.0), &TensorType::new(acc, [n]));
    let dims = ScatterDims {
        update_window_dims: vec![],
        inserted_window_dims: vec![0],
        scatter_dims_to_operand_dims: vec![0],
        index_vector_dim: 1,
    };
    // Bin `bins` (outside the range) is out of bounds, which scatter drops.
    let hist = b.scatter(
        &zeros,
        &bin,
        &ones,
        &dims,
        Some(|b: &mut Builder, p: &Value, q: &Value| b.add(p, q).expect("same types")),
    );
    ctx.check_that(
        &finite,
        CheckKind::Runtime,
        "torch.histc: range of the input is not finite",
    )?;
    one(ctx.b.convert(&hist, dt))
}

/// Positions of `values` in `seq` (sorted along its last dim; one row for all values when
/// 1-d) by the CPU's binary search: the first position whose element is `>= v` (`> v` with
/// `right`), so NaNs and ties land where they land on the CPU.
pub(super) fn search(b: &mut Builder, seq: &Value, values: &Value, right: bool) -> Result<Value> {
    let r = seq.rank();
    let m = seq.shape()[r - 1];
    let vshape = values.shape().to_vec();
    let zero = b.splat(
        Literal::Int(0),
        &TensorType::new(DType::I64, vshape.clone()),
    );
    if m == 0 || values.ty.numel() == 0 {
        return Ok(zero);
    }
    let flat = b.reshape(seq, &[seq.ty.numel()])?;
    let base = row_starts(b, &vshape, r > 1, m)?;
    let mut lo = zero.clone();
    let mut hi = b.full_like(&zero, Literal::Int(m));
    let one_i = b.full_like(&zero, Literal::Int(1));
    let last = b.full_like(&zero, Literal::Int(m - 1));
    let dir = if right {
        CompareDir::Gt
    } else {
        CompareDir::Ge
    };
    for _ in 0..64 - (m as u64).leading_zeros() {
        let open = b.compare(CompareDir::Lt, &lo, &hi)?;
        let span = b.sub(&hi, &lo)?;
        let half = b.shift_right_logical(&span, &one_i)?;
        let mid = b.add(&lo, &half)?;
        let safe = b.min(&mid, &last)?;
        let at = b.add(&base, &safe)?;
        let probe = take(b, &flat, &at)?;
        let stop = b.compare(dir, &probe, values)?;
        let go = b.not(&stop);
        let go_right = b.and(&open, &go)?;
        let go_left = b.and(&open, &stop)?;
        let next = b.add(&mid, &one_i)?;
        lo = b.select(&go_right, &next, &lo)?;
        hi = b.select(&go_left, &mid, &hi)?;
    }
    Ok(lo)
}

/// Reads `right` and `side` (both given must agree).
fn side_is_right(ctx: &Ctx, right: usize, side: usize) -> Result<bool> {
    let right = ctx.bool_or(right, false)?;
    if !ctx.has(side) {
        return Ok(right);
    }
    match ctx.str(side)? {
        "right" => Ok(true),
        "left" if right => runtime(
            "torch.searchsorted(): side and right can't be set to opposites, got side of left while right was True",
        ),
        "left" => Ok(false),
        s => runtime(format!(
            "torch.searchsorted(): side can only be 'left' or 'right' but got {s}"
        )),
    }
}

/// `searchsorted(sorted_sequence, self, *, out_int32, right, side, sorter)`.
fn searchsorted(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let st = ctx.ty(0)?;
    let vt = ctx.ty(1)?;
    let right = side_is_right(ctx, 3, 4)?;
    let out_int32 = ctx.bool_or(2, false)?;
    if st.rank() == 0 {
        return runtime(
            "torch.searchsorted(): boundaries tensor should have positive dimension, but got 0 dimension",
        );
    }
    let leading = |t: &TensorType| t.shape[..t.rank().saturating_sub(1)].to_vec();
    if st.rank() > 1 && (vt.rank() != st.rank() || leading(&vt) != leading(&st)) {
        return runtime(format!(
            "torch.searchsorted(): boundaries tensor should be 1 dimension or the first N-1 dimensions of boundaries tensor and input value tensor must match, but we got boundaries tensor {:?} and input value tensor {:?}",
            st.shape, vt.shape
        ));
    }
    let dtype = common_dtype(ctx, &[0, 1])?;
    let mut seq = ctx.tensor(0)?;
    // (An empty sequence has nothing to reorder: every position is 0.)
    if ctx.has(5) && st.numel() > 0 {
        let m = st.shape[st.rank() - 1];
        let sorter = ctx.tensor(5)?;
        let msg = "torch.searchsorted(): sorter index out of range";
        ctx.check_range(&sorter, 0, m, CheckKind::Runtime, msg)?;
        let b = &mut ctx.b;
        let sorter = b.convert(&sorter, DType::I64);
        let base = row_starts(b, sorter.shape(), st.rank() > 1, m)?;
        let at = b.add(&base, &sorter)?;
        let flat = b.reshape(&seq, &[st.numel()])?;
        seq = take(b, &flat, &at)?;
    }
    let values = ctx.tensor(1)?;
    let b = &mut ctx.b;
    let seq = b.convert(&seq, dtype);
    let values = b.convert(&values, dtype);
    let pos = search(b, &seq, &values, right)?;
    one(if out_int32 {
        b.convert(&pos, DType::I32)
    } else {
        pos
    })
}

/// `bucketize(self, boundaries, *, out_int32, right)`.
fn bucketize(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let bt = ctx.ty(1)?;
    if bt.rank() != 1 {
        return runtime(format!(
            "boundaries tensor must be 1 dimension, but got dim({})",
            bt.rank()
        ));
    }
    let dtype = common_dtype(ctx, &[0, 1])?;
    let (out_int32, right) = (ctx.bool_or(2, false)?, ctx.bool_or(3, false)?);
    let (values, seq) = (ctx.tensor(0)?, ctx.tensor(1)?);
    let b = &mut ctx.b;
    let (seq, values) = (b.convert(&seq, dtype), b.convert(&values, dtype));
    let pos = search(b, &seq, &values, right)?;
    one(if out_int32 {
        b.convert(&pos, DType::I32)
    } else {
        pos
    })
}

pub(crate) fn register(reg: &mut Registry) {
    reg.ops(
        &[
            "isin.Tensor_Tensor",
            "isin.Tensor_Tensor_out",
            "isin.Tensor_Scalar",
            "isin.Tensor_Scalar_out",
            "isin.Scalar_Tensor",
            "isin.Scalar_Tensor_out",
        ],
        isin,
    );
    reg.ops(&["histc", "histc.out"], histc).bake_scalars();
    reg.ops(
        &[
            "searchsorted.Tensor",
            "searchsorted.Tensor_out",
            "searchsorted.Scalar",
            "searchsorted.Scalar_out",
        ],
        searchsorted,
    );
    reg.ops(
        &[
            "bucketize.Tensor",
            "bucketize.Tensor_out",
            "bucketize.Scalar",
            "bucketize.Scalar_out",
        ],
        bucketize,
    );
}
