//! Reflection and replication padding (1-3 d) and their backwards. Along each padded dim
//! the output is `M x` for a one-hot `[out, in]` matrix that names each output element's
//! source; the backward is `M^T g`, which sums the gradient of every copy of an element as
//! PyTorch does. Circular padding decomposes into slices and `cat` before it gets here.

use tpurs_hlo::{Builder, CompareDir, DType, Literal, TensorType, Value};

use super::one;
use super::upsample::apply;
use crate::ctx::{Ctx, Out};
use crate::dtype::opmath;
use crate::error::{runtime, Error, Result};
use crate::table::Registry;

/// The one-hot `[input + before + after, input]` source matrix of one dim, in `dtype`.
fn sources(
    b: &mut Builder,
    reflect: bool,
    input: i64,
    before: i64,
    after: i64,
    dtype: DType,
) -> Result<Value> {
    let ty = TensorType::new(DType::I64, vec![input + before + after, input]);
    let row = b.iota(&ty, 0);
    let col = b.iota(&ty, 1);
    let shift = b.splat(Literal::Int(before), &ty);
    let i = b.sub(&row, &shift)?;
    let last = b.splat(Literal::Int(input - 1), &ty);
    let src = if reflect {
        // Mirror at 0 and at input - 1 (pads are smaller than the input).
        let i = b.abs(&i);
        let from_end = b.sub(&last, &i)?;
        let from_end = b.abs(&from_end);
        b.sub(&last, &from_end)?
    } else {
        let zero = b.splat(Literal::Int(0), &ty);
        b.clamp(&zero, &i, &last)
    };
    let hit = b.compare(CompareDir::Eq, &col, &src)?;
    Ok(b.convert(&hit, dtype))
}

/// `{reflection,replication}_pad{1,2,3}d(self, padding)` and their backwards
/// `(grad_output, self, padding)`.
fn pad(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let base = ctx.name.split('.').next().unwrap_or("");
    let reflect = base.starts_with("reflection");
    let backward = base.ends_with("_backward");
    let pad_at = if backward { 2 } else { 1 };
    let padding = ctx.int_list(pad_at)?;
    let input = ctx.ty(if backward { 1 } else { 0 })?;
    let k = padding.len() / 2;
    if padding.len() % 2 != 0 || k == 0 || input.rank() < k + 1 {
        return runtime(format!(
            "{base}: expected a padding of 2 x dims for an input of at least {} dims",
            k + 1
        ));
    }
    let x = ctx.tensor(0)?;
    let dtype = x.dtype();
    if !dtype.is_float() && backward {
        return runtime(format!("{base}: expected a floating point gradient"));
    }
    let wide = opmath(dtype);
    let mut v = ctx.b.convert(&x, wide);
    for j in 0..k {
        // padding = (last-dim before, last-dim after, next-to-last before, ...).
        let d = input.rank() - 1 - j;
        let (before, after) = (padding[2 * j], padding[2 * j + 1]);
        let n = input.shape[d];
        if before < 0 || after < 0 {
            return Err(Error::Uncovered(format!(
                "{base}: negative padding is not supported on the tpu device"
            )));
        }
        if reflect && (before >= n || after >= n) {
            return runtime(format!(
                "Argument #4: Padding size should be less than the corresponding input dimension, but got: padding ({before}, {after}) at dimension {d} of input {:?}",
                input.shape
            ));
        }
        if !reflect && n == 0 {
            return runtime(format!("{base}: input dimension {d} is empty"));
        }
        let m = sources(&mut ctx.b, reflect, n, before, after, wide)?;
        v = apply(&mut ctx.b, &v, &m, d, if backward { 0 } else { 1 })?;
    }
    one(ctx.b.convert(&v, dtype))
}

pub(crate) fn register(reg: &mut Registry) {
    reg.ops(
        &[
            "reflection_pad1d",
            "reflection_pad1d.out",
            "reflection_pad2d",
            "reflection_pad2d.out",
            "reflection_pad3d",
            "reflection_pad3d.out",
            "replication_pad1d",
            "replication_pad1d.out",
            "replication_pad2d",
            "replication_pad2d.out",
            "replication_pad3d",
            "replication_pad3d.out",
            "reflection_pad1d_backward",
            "reflection_pad1d_backward.grad_input",
            "reflection_pad2d_backward",
            "reflection_pad2d_backward.grad_input",
            "reflection_pad3d_backward",
            "reflection_pad3d_backward.grad_input",
            "replication_pad1d_backward",
            "replication_pad1d_backward.grad_input",
            "replication_pad2d_backward",
            "replication_pad2d_backward.grad_input",
            "replication_pad3d_backward",
            "replication_pad3d_backward.grad_input",
        ],
        pad,
    );
}
