//! `index_copy` (rows of `source` written into the rows of `self` that `index` names) and
//! `index_reduce(self, dim, index, source, reduce, include_self)`: rows of `source` reduced
//! into the rows of `self` that `index` names, with `prod`, `mean`, `amax` or `amin`. One
//! scatter per quantity; `include_self=False` first resets the touched rows to the
//! reduction's identity, and `mean` divides by a scattered count (floor division for
//! integers, as on CPU).

use tpurs_hlo::{CompareDir, DType, Literal, TensorType};

use super::combine::{add_c, highest, lowest, max_c, min_c, mul_c, Combine};
use super::index::slices_along;
use super::{one, wrap_dim};
use crate::checks::CheckKind;
use crate::ctx::{Ctx, Out};
use crate::dtype::torch_name;
use crate::error::{runtime, Error, Result};
use crate::table::Registry;

fn index_reduce(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let x = ctx.tensor(0)?;
    let rank = x.rank().max(1);
    let dim = wrap_dim(ctx.int(1)?, rank)?;
    let it = ctx.ty(2)?;
    if it.rank() > 1 || !matches!(it.dtype, DType::I64 | DType::I32) {
        return Err(Error::Index(
            "index_reduce_(): Index is supposed to be a vector of int64 or int32".into(),
        ));
    }
    let st = ctx.ty(3)?;
    if st.dtype != x.dtype() {
        return runtime(format!(
            "index_reduce_(): self ({}) and source ({}) must have the same scalar type",
            torch_name(x.dtype()),
            torch_name(st.dtype)
        ));
    }
    let reduce = ctx.str(4)?.to_string();
    let include_self = ctx.bool_or(5, true)?;
    let n = it.numel();
    let shape = if x.rank() == 0 {
        vec![1]
    } else {
        x.shape().to_vec()
    };
    let mut expect = shape.clone();
    expect[dim] = n;
    if st.numel() != expect.iter().product::<i64>() {
        return runtime(format!(
            "index_reduce_(): Source/destination tensor must have same slice shapes. Destination slice shape: {:?} at dimension {dim} and source slice shape: {:?} at dimension 0.",
            x.shape(),
            st.shape
        ));
    }
    let (identity, f): (Literal, Combine) = match reduce.as_str() {
        "prod" => (Literal::Int(1), mul_c),
        "mean" => (Literal::Int(0), add_c),
        "amax" => (lowest(x.dtype()), max_c),
        "amin" => (highest(x.dtype()), min_c),
        other => {
            return runtime(format!(
                "index_reduce(): Expected reduce to be one of prod, mean, amax or amin but got {other}."
            ))
        }
    };
    if n == 0 {
        return one(x);
    }
    let idx = ctx.tensor(2)?;
    let s = ctx.tensor(3)?;
    let b = &mut ctx.b;
    let x1 = b.reshape(&x, &shape)?;
    let s = b.reshape(&s, &expect)?;
    let idx = b.convert(&idx, DType::I64);
    let ind = b.reshape(&idx, &[n, 1])?;
    let dims = slices_along(shape.len(), dim);
    // How many source rows land on each row of self.
    let zeros = b.splat(Literal::Int(0), &TensorType::new(DType::I32, shape.clone()));
    let ones = b.splat(
        Literal::Int(1),
        &TensorType::new(DType::I32, expect.clone()),
    );
    let hits = b.scatter(&zeros, &ind, &ones, &dims, Some(add_c));
    let touched = b.compare(CompareDir::Ne, &hits, &zeros)?;
    let base = if include_self {
        x1.clone()
    } else {
        let id = b.full_like(&x1, identity);
        b.select(&touched, &id, &x1)?
    };
    let r = b.scatter(&base, &ind, &s, &dims, Some(f));
    let r = if reduce == "mean" {
        // count = hits (+1 when self counts), at least 1.
        let one_v = b.full_like(&x1, Literal::Int(1));
        let hits = b.convert(&hits, x.dtype());
        let count = if include_self {
            b.add(&hits, &one_v)?
        } else {
            hits
        };
        let count = b.max(&count, &one_v)?;
        let q = b.div(&r, &count)?;
        if x.dtype().is_float() {
            q
        } else {
            // Floor division: truncation moves toward zero, so step down on negative
            // inexact quotients.
            let back = b.mul(&q, &count)?;
            let inexact = b.compare(CompareDir::Ne, &back, &r)?;
            let zero = b.full_like(&r, Literal::Int(0));
            let negative = b.compare(CompareDir::Lt, &r, &zero)?;
            let step = b.and(&inexact, &negative)?;
            let q1 = b.sub(&q, &one_v)?;
            b.select(&step, &q1, &q)?
        }
    } else {
        r
    };
    one(b.reshape(&r, x.shape())?)
}

/// `index_copy(self, dim, index, source)`: slice `index[i]` of `self` along `dim` becomes
/// slice `i` of `source` (which of repeated indices wins is unspecified, as on CPU).
fn index_copy(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let x = ctx.tensor(0)?;
    let shape = if x.rank() == 0 {
        vec![1]
    } else {
        x.shape().to_vec()
    };
    let dim = wrap_dim(ctx.int(1)?, shape.len())?;
    let it = ctx.ty(2)?;
    if it.dtype != DType::I64 {
        return runtime(format!(
            "index_copy_(): Expected a long tensor for index, but got {}",
            torch_name(it.dtype)
        ));
    }
    if it.rank() > 1 {
        return Err(Error::Index(format!(
            "index_copy_(): Index should have dimension 1 or 0 (got {})",
            it.rank()
        )));
    }
    let st = ctx.ty(3)?;
    if st.dtype != x.dtype() {
        return runtime(format!(
            "index_copy_(): self and source expected to have the same dtype, but got (self) {} and (source) {}",
            torch_name(x.dtype()),
            torch_name(st.dtype)
        ));
    }
    let n = it.numel();
    let mut expect = shape.clone();
    expect[dim] = n;
    let along = if st.rank() == 0 {
        1
    } else {
        st.shape[dim.min(st.rank() - 1)]
    };
    if along != n || st.numel() != expect.iter().product::<i64>() {
        return runtime(format!(
            "index_copy_(): Number of indices ({n}) should be equal to source.size(dim) ({along})"
        ));
    }
    let idx = ctx.tensor(2)?;
    let size = shape[dim];
    let msg =
        format!("index_copy_(): index {{}} is out of bounds for dimension {dim} with size {size}");
    ctx.check_range(&idx, 0, size, CheckKind::Index, msg)?;
    if n == 0 {
        return one(x);
    }
    let src = ctx.tensor(3)?;
    let b = &mut ctx.b;
    let x1 = b.reshape(&x, &shape)?;
    let src = b.reshape(&src, &expect)?;
    let ind = b.reshape(&idx, &[n, 1])?;
    let dims = slices_along(shape.len(), dim);
    let r = b.scatter(&x1, &ind, &src, &dims, None);
    one(b.reshape(&r, x.shape())?)
}

pub(crate) fn register(reg: &mut Registry) {
    reg.ops(
        &["index_reduce", "index_reduce_", "index_reduce.out"],
        index_reduce,
    );
    reg.ops(&["index_copy", "index_copy_", "index_copy.out"], index_copy)
        .complex();
}
