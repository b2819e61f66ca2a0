//! `take` and `put_`: elements addressed by their position in the row-major flattening of
//! `self` (negative positions count from the end), checked on the device as the CPU raises.

use tpurs_hlo::{Builder, CompareDir, DType, Literal, Value};

use super::combine::add_c;
use super::index::slices_along;
use super::one;
use super::search::take as gather_flat;
use crate::checks::CheckKind;
use crate::ctx::{Ctx, Out};
use crate::dtype::torch_name;
use crate::error::{runtime, Error, Result};
use crate::table::Registry;

/// Reads the index argument `i` as i64 positions in `0..numel`, wrapping negative ones and
/// raising CPU's `IndexError` (at the next host wait) for any outside `-numel..numel`.
fn positions(ctx: &mut Ctx, i: usize, numel: i64, op: &str) -> Result<Value> {
    let it = ctx.ty(i)?;
    if it.dtype != DType::I64 {
        return runtime(format!(
            "{op}(): Expected a long tensor for index, but got {}",
            torch_name(it.dtype)
        ));
    }
    let idx = ctx.tensor(i)?;
    let msg = format!("out of range: tried to access index {{}} on a tensor of {numel} elements.");
    ctx.check_range(&idx, -numel, numel, CheckKind::Index, msg)?;
    wrap(&mut ctx.b, &idx, numel)
}

/// `idx + numel` where `idx` is negative.
fn wrap(b: &mut Builder, idx: &Value, numel: i64) -> Result<Value> {
    let zero = b.full_like(idx, Literal::Int(0));
    let negative = b.compare(CompareDir::Lt, idx, &zero)?;
    let n = b.full_like(idx, Literal::Int(numel));
    let shifted = b.add(idx, &n)?;
    Ok(b.select(&negative, &shifted, idx)?)
}

/// `take(self, index)`: `self.flatten()[index]`, shaped like `index`.
fn take(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let xt = ctx.ty(0)?;
    let numel = xt.numel();
    let it = ctx.ty(1)?;
    if numel == 0 && it.numel() > 0 {
        return Err(Error::Index(
            "take(): tried to take from an empty tensor".into(),
        ));
    }
    let idx = positions(ctx, 1, numel, "take")?;
    let x = ctx.tensor(0)?;
    let b = &mut ctx.b;
    if it.numel() == 0 {
        return one(b.splat(
            Literal::Int(0),
            &tpurs_hlo::TensorType::new(xt.dtype, it.shape),
        ));
    }
    let flat = b.reshape(&x, &[numel])?;
    one(gather_flat(b, &flat, &idx)?)
}

/// `put_(self, index, source, accumulate=False)` and `put`: writes (or with `accumulate`
/// adds) the elements of `source` at the flat positions `index`.
fn put(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let xt = ctx.ty(0)?;
    let (it, st) = (ctx.ty(1)?, ctx.ty(2)?);
    if st.dtype != xt.dtype {
        return runtime(format!(
            "put_(): self and source expected to have the same dtype, but got self.dtype = {} and source.dtype = {}",
            torch_name(xt.dtype),
            torch_name(st.dtype)
        ));
    }
    if it.numel() != st.numel() {
        return Err(Error::Index(format!(
            "put_(): Expected source and index to have the same number of elements, but got source.numel() = {}, index.numel() = {}",
            st.numel(),
            it.numel()
        )));
    }
    let numel = xt.numel();
    if numel == 0 && it.numel() > 0 {
        return Err(Error::Index(
            "put_(): Tried to put elements into an empty tensor".into(),
        ));
    }
    let accumulate = ctx.bool_or(3, false)?;
    let idx = positions(ctx, 1, numel, "put_")?;
    let x = ctx.tensor(0)?;
    let src = ctx.tensor(2)?;
    let b = &mut ctx.b;
    let n = it.numel();
    if n == 0 {
        return one(x);
    }
    let flat = b.reshape(&x, &[numel])?;
    let at = b.reshape(&idx, &[n, 1])?;
    let src = b.reshape(&src, &[n])?;
    let dims = slices_along(1, 0);
    let r = b.scatter(&flat, &at, &src, &dims, accumulate.then_some(add_c as _));
    one(b.reshape(&r, &xt.shape)?)
}

pub(crate) fn register(reg: &mut Registry) {
    reg.ops(&["take", "take.out"], take).complex();
    reg.ops(&["put_", "put", "put.out"], put).complex();
}
