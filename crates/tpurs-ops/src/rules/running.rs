//! Running extremes: `cummax` / `cummin` (through `_cummax_helper` / `_cummin_helper`),
//! values and indices, by a log-step scan over (value, index) pairs. As on CPU, a tie
//! moves the index to the later element and a NaN, once seen, stays (with the index of the
//! latest NaN).

use tpurs_hlo::{Builder, CompareDir, DType, TensorType, Value};

use super::combine::{highest, lowest};
use super::wrap_dim;
use crate::ctx::{Ctx, Out};
use crate::error::Result;
use crate::table::Registry;

/// Combines an earlier aggregate `(a, i)` with a later one `(b, j)`.
fn combine(
    bld: &mut Builder,
    earlier: (&Value, &Value),
    later: (&Value, &Value),
    is_max: bool,
) -> Result<(Value, Value)> {
    let (a, i) = earlier;
    let (b, j) = later;
    let dir = if is_max {
        CompareDir::Ge
    } else {
        CompareDir::Le
    };
    let mut take_later = bld.compare(dir, b, a)?;
    if a.dtype().is_float() {
        let b_nan = bld.compare(CompareDir::Ne, b, b)?;
        let a_nan = bld.compare(CompareDir::Ne, a, a)?;
        let a_num = bld.not(&a_nan);
        let ordinary = bld.and(&take_later, &a_num)?;
        take_later = bld.or(&b_nan, &ordinary)?;
    }
    let v = bld.select(&take_later, b, a)?;
    let k = bld.select(&take_later, j, i)?;
    Ok((v, k))
}

/// `_cummax_helper(self, values!, indices!, dim)` / `_cummin_helper`.
fn running(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let is_max = ctx.name.starts_with("_cummax");
    let x = ctx.tensor(0)?;
    if x.rank() == 0 {
        let zero = ctx.b.splat(
            tpurs_hlo::Literal::Int(0),
            &TensorType::new(DType::I64, vec![]),
        );
        return Ok(vec![Some(x), Some(zero)]);
    }
    let dim = wrap_dim(ctx.int(3)?, x.rank())?;
    let b = &mut ctx.b;
    let bool_input = x.dtype() == DType::Bool;
    let keys = if bool_input {
        b.convert(&x, DType::U8)
    } else {
        x.clone()
    };
    let n = keys.shape()[dim];
    let rank = keys.rank();
    let mut v = keys.clone();
    let mut idx = b.iota(&TensorType::new(DType::I64, keys.shape().to_vec()), dim);
    let identity = if is_max {
        lowest(keys.dtype())
    } else {
        highest(keys.dtype())
    };
    let pad_v = b.constant(identity, keys.dtype());
    let pad_i = b.constant(tpurs_hlo::Literal::Int(-1), DType::I64);
    let mut k = 1;
    while k < n {
        let mut low = vec![0; rank];
        let mut high = vec![0; rank];
        low[dim] = k;
        high[dim] = -k;
        let interior = vec![0; rank];
        let ev = b.pad(&v, &pad_v, &low, &high, &interior)?;
        let ei = b.pad(&idx, &pad_i, &low, &high, &interior)?;
        let (nv, ni) = combine(b, (&ev, &ei), (&v, &idx), is_max)?;
        v = nv;
        idx = ni;
        k *= 2;
    }
    let v = b.convert(&v, x.dtype());
    Ok(vec![Some(v), Some(idx)])
}

pub(crate) fn register(reg: &mut Registry) {
    reg.ops(&["_cummax_helper", "_cummin_helper"], running);
}
