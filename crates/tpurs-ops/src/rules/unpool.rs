//! `max_unpool2d` / `max_unpool3d`: each input value goes to the flat position its index
//! names within its plane of a zero output (one scatter). Indices out of range are dropped,
//! not reported (checking them would need a host read; see the README's known limits).

use tpurs_hlo::{Builder, DType, Literal, ScatterDims, TensorType, Value};

use super::combine::Combine;
use super::one;
use crate::ctx::{Ctx, Out};
use crate::error::{runtime, Result};
use crate::table::Registry;

/// `values` (any shape with `planes * n` elements) placed at the flat positions `idx` (same
/// shape, int64) within each of `planes` planes of `per_plane` zeros; `combine` merges
/// values that meet (`None`: the last one wins). Returns `[planes, per_plane]`.
pub(crate) fn scatter_into_planes(
    b: &mut Builder,
    values: &Value,
    idx: &Value,
    planes: i64,
    per_plane: i64,
    combine: Option<Combine>,
) -> Result<Value> {
    let n = values.ty.numel() / planes.max(1);
    let values = b.reshape(values, &[planes, n])?;
    let flat = b.reshape(idx, &[planes, n, 1])?;
    let plane = b.iota(&TensorType::new(DType::I64, vec![planes, n, 1]), 0);
    let at = b.concatenate(&[&plane, &flat], 2)?;
    let zeros = b.splat(
        Literal::Int(0),
        &TensorType::new(values.dtype(), vec![planes, per_plane]),
    );
    let dims = ScatterDims {
        update_window_dims: vec![],
        inserted_window_dims: vec![0, 1],
        scatter_dims_to_operand_dims: vec![0, 1],
        index_vector_dim: 2,
    };
    Ok(b.scatter(&zeros, &at, &values, &dims, combine))
}

/// `max_unpool{2,3}d(self, indices, output_size, ...)` and `out=`.
fn max_unpool(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let spatial = if ctx.name.starts_with("max_unpool3d") {
        3
    } else {
        2
    };
    let (x_ty, i_ty) = (ctx.ty(0)?, ctx.ty(1)?);
    let out_size = ctx.int_list(2)?;
    if x_ty.shape != i_ty.shape || i_ty.dtype != DType::I64 {
        return runtime(format!(
            "{}: Expected shape of indices to be same as that of the input tensor and indices of type int64",
            ctx.name
        ));
    }
    if out_size.len() != spatial || !(spatial + 1..=spatial + 2).contains(&x_ty.rank()) {
        return runtime(format!(
            "{}: expected a {}-d or {}-d input and {spatial} output sizes",
            ctx.name,
            spatial + 1,
            spatial + 2
        ));
    }
    let lead = &x_ty.shape[..x_ty.rank() - spatial];
    let planes: i64 = lead.iter().product();
    let per_out: i64 = out_size.iter().product();
    let x = ctx.tensor(0)?;
    let idx = ctx.tensor(1)?;
    let out = scatter_into_planes(&mut ctx.b, &x, &idx, planes, per_out, None)?;
    let mut shape = lead.to_vec();
    shape.extend(&out_size);
    one(ctx.b.reshape(&out, &shape)?)
}

pub(crate) fn register(reg: &mut Registry) {
    reg.ops(
        &[
            "max_unpool2d",
            "max_unpool2d.out",
            "max_unpool3d",
            "max_unpool3d.out",
        ],
        max_unpool,
    );
}
