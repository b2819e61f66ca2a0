//! Convolution: `convolution` (1-3 spatial dims, strided, padded, dilated, grouped,
//! transposed) and `convolution_backward`, and the per-channel helpers pooling and batch
//! norm share.

use tpurs_hlo::{Builder, ConvDims, DType, Literal, Value};

use super::{conv_patches, one};
use crate::ctx::{Ctx, Out};
use crate::dtype::{opmath, torch_name};
use crate::error::{Error, Result};
use crate::table::Registry;
/// CPU PyTorch's `NotImplementedError` for a kernel without this dtype.
pub(super) fn not_for(kernel: &str, d: DType) -> Error {
    Error::NotImplemented(format!(
        "\"{kernel}\" not implemented for '{}'",
        torch_name(d)
    ))
}

/// Sum of `x` over `dims`.
pub(super) fn sum(b: &mut Builder, x: &Value, dims: &[i64]) -> Value {
    let zero = b.constant(Literal::Int(0), x.dtype());
    b.reduce(x, &zero, dims, |b, a, c| b.add(a, c).expect("same types"))
}

/// Every dim of a rank-`r` tensor except the channel dim 1.
pub(super) fn non_channel_dims(r: usize) -> Vec<i64> {
    (0..r as i64).filter(|&d| d != 1).collect()
}

/// Broadcasts a per-channel vector `(C,)` along dim 1 of `shape`.
pub(super) fn per_channel(b: &mut Builder, v: &Value, shape: &[i64]) -> Result<Value> {
    Ok(b.broadcast_in_dim(v, shape, &[1])?)
}

/// Stride, symmetric padding, dilation and groups of a convolution.
struct Window {
    stride: Vec<i64>,
    padding: Vec<i64>,
    dilation: Vec<i64>,
    groups: i64,
}

/// Expands a one-element list to every spatial dim, with PyTorch's error otherwise.
fn expand(v: Vec<i64>, nsp: usize, what: &str) -> Result<Vec<i64>> {
    match v.len() {
        1 => Ok(vec![v[0]; nsp]),
        n if n == nsp => Ok(v),
        _ => Err(Error::Runtime(format!(
            "expected {what} to be a single integer value or a list of {nsp} values to match the convolution dimensions, but got {what}={v:?}"
        ))),
    }
}

/// Reads the window from schema positions `at` (stride, padding, dilation) and `groups_at`.
fn conv_window(ctx: &Ctx, at: usize, groups_at: usize, nsp: usize) -> Result<Window> {
    let win = Window {
        stride: expand(ctx.int_list(at)?, nsp, "stride")?,
        padding: expand(ctx.int_list(at + 1)?, nsp, "padding")?,
        dilation: expand(ctx.int_list(at + 2)?, nsp, "dilation")?,
        groups: ctx.int(groups_at)?,
    };
    if win.stride.iter().any(|&s| s <= 0) {
        return Err(Error::Runtime(
            "non-positive stride is not supported".into(),
        ));
    }
    if win.padding.iter().any(|&p| p < 0) {
        return Err(Error::Runtime("negative padding is not supported".into()));
    }
    if win.dilation.iter().any(|&d| d <= 0) {
        return Err(Error::Runtime(
            "dilation should be greater than zero".into(),
        ));
    }
    if win.groups <= 0 {
        return Err(Error::Runtime(
            "non-positive groups is not supported".into(),
        ));
    }
    Ok(win)
}

/// The window of a plain convolution as `stablehlo.convolution` dimensions.
fn fwd_dims(win: &Window) -> ConvDims {
    let nsp = win.stride.len();
    ConvDims {
        strides: win.stride.clone(),
        padding: win.padding.iter().map(|&p| (p, p)).collect(),
        lhs_dilation: vec![1; nsp],
        rhs_dilation: win.dilation.clone(),
        feature_group_count: win.groups,
        batch_group_count: 1,
    }
}

/// A plain convolution of `x` (N, C, *) with `w` (O, C/g, *k), accumulated in `acc`.
fn conv_fwd(b: &mut Builder, x: &Value, w: &Value, win: &Window, acc: DType) -> Result<Value> {
    conv_patches::convolution(b, x, w, &fwd_dims(win), acc, true)
}

/// The gradient of [`conv_fwd`] with respect to an input of spatial size `in_sp`, given
/// `gy` (N, O, *): a convolution with the flipped, group-transposed kernel over the
/// stride-dilated `gy`. This is also the transposed convolution of `gy`.
fn conv_grad_input(
    b: &mut Builder,
    gy: &Value,
    w: &Value,
    win: &Window,
    in_sp: &[i64],
    acc: DType,
) -> Result<Value> {
    let nsp = gy.rank() - 2;
    let (o, cg, g) = (w.shape()[0], w.shape()[1], win.groups);
    let k = w.shape()[2..].to_vec();
    let grouped: Vec<i64> = [g, o / g, cg].iter().chain(&k).copied().collect();
    let wt = b.reshape(w, &grouped)?;
    let perm: Vec<i64> = [0, 2, 1].into_iter().chain(3..3 + nsp as i64).collect();
    let wt = b.transpose(&wt, &perm)?;
    let flat: Vec<i64> = [g * cg, o / g].iter().chain(&k).copied().collect();
    let wt = b.reshape(&wt, &flat)?;
    let spatial: Vec<i64> = (2..2 + nsp as i64).collect();
    let wt = b.reverse(&wt, &spatial);
    let padding = (0..nsp)
        .map(|i| {
            let lo = win.dilation[i] * (k[i] - 1) - win.padding[i];
            let hi = in_sp[i] - 1 - (gy.shape()[i + 2] - 1) * win.stride[i] + win.padding[i];
            (lo, hi)
        })
        .collect();
    let dims = ConvDims {
        strides: vec![1; nsp],
        padding,
        lhs_dilation: win.stride.clone(),
        rhs_dilation: win.dilation.clone(),
        feature_group_count: g,
        batch_group_count: 1,
    };
    conv_patches::convolution(b, gy, &wt, &dims, acc, false)
}

/// The gradient of [`conv_fwd`] with respect to its kernel of spatial size `k`: a
/// convolution of `x` with `gy` over the batch (batch groups for grouped convolutions).
fn conv_grad_weight(
    b: &mut Builder,
    x: &Value,
    gy: &Value,
    k: &[i64],
    win: &Window,
    acc: DType,
) -> Result<Value> {
    let fwd = fwd_dims(win);
    if conv_patches::prefers_patches(x.shape(), k, &fwd) {
        return conv_patches::weight_grad(b, x, gy, k, &fwd, acc);
    }
    let nsp = x.rank() - 2;
    let perm: Vec<i64> = [1, 0].into_iter().chain(2..2 + nsp as i64).collect();
    let xt = b.transpose(x, &perm)?;
    let gt = b.transpose(gy, &perm)?;
    let padding = (0..nsp)
        .map(|i| {
            let covered =
                (k[i] - 1) * win.dilation[i] + (gy.shape()[i + 2] - 1) * win.stride[i] + 1;
            (win.padding[i], covered - x.shape()[i + 2] - win.padding[i])
        })
        .collect();
    let dims = ConvDims {
        strides: win.dilation.clone(),
        padding,
        lhs_dilation: vec![1; nsp],
        rhs_dilation: win.stride.clone(),
        feature_group_count: 1,
        batch_group_count: win.groups,
    };
    let r = b.convolution(&xt, &gt, &dims, acc)?;
    Ok(b.transpose(&r, &perm)?)
}

/// Checks the input / weight / bias dtypes agree, with CPU PyTorch's message.
fn check_same_dtype(x: DType, other: DType, what: &str) -> Result<()> {
    if x != other {
        return Err(Error::Runtime(format!(
            "Input type ({}) and {what} type ({}) should be the same",
            torch_name(x),
            torch_name(other)
        )));
    }
    Ok(())
}

/// `convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding,
/// groups)`, also `_convolution` (same leading arguments).
fn convolution(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let (xt, wt) = (ctx.ty(0)?, ctx.ty(1)?);
    let r = xt.rank();
    if !(3..=5).contains(&r) || wt.rank() != r {
        return Err(Error::Runtime(format!(
            "Expected {}D (unbatched) or {r}D (batched) input to conv, but got input of size: {:?}",
            wt.rank().max(3) - 1,
            xt.shape
        )));
    }
    let nsp = r - 2;
    let win = conv_window(ctx, 3, 8, nsp)?;
    let transposed = ctx.bool_or(6, false)?;
    let dt = xt.dtype;
    check_same_dtype(dt, wt.dtype, "weight")?;
    if ctx.has(2) {
        check_same_dtype(dt, ctx.ty(2)?.dtype, "bias")?;
    }
    if dt == DType::Bool {
        return Err(not_for("slow_conv2d_cpu", dt));
    }
    let g = win.groups;
    let (c, w0, w1) = (xt.shape[1], wt.shape[0], wt.shape[1]);
    let expected = if transposed { w0 } else { w1 * g };
    if c != expected || w0 % g != 0 {
        return Err(Error::Runtime(format!(
            "Given {}, weight of size {:?}, expected input{:?} to have {expected} channels, but got {c} channels instead",
            if transposed { "transposed=1".to_string() } else { format!("groups={g}") },
            wt.shape,
            xt.shape
        )));
    }
    let ct = opmath(dt);
    let x = ctx.tensor(0)?;
    let w = ctx.tensor(1)?;
    let bias = ctx.opt_tensor(2)?;
    let output_padding = if transposed {
        expand(ctx.int_list(7)?, nsp, "output_padding")?
    } else {
        vec![0; nsp]
    };
    let b = &mut ctx.b;
    let mut y = if transposed {
        let out_sp: Vec<i64> = (0..nsp)
            .map(|i| {
                (x.shape()[i + 2] - 1) * win.stride[i] - 2 * win.padding[i]
                    + win.dilation[i] * (w.shape()[i + 2] - 1)
                    + output_padding[i]
                    + 1
            })
            .collect();
        conv_grad_input(b, &x, &w, &win, &out_sp, ct)?
    } else {
        conv_fwd(b, &x, &w, &win, ct)?
    };
    if let Some(bias) = bias {
        let bias = b.convert(&bias, ct);
        let bias = per_channel(b, &bias, y.shape())?;
        y = b.add(&y, &bias)?;
    }
    one(b.convert(&y, dt))
}

/// `convolution_backward(grad_output, input, weight, bias_sizes, stride, padding, dilation,
/// transposed, output_padding, groups, output_mask)` -> (grad_input, grad_weight, grad_bias).
fn convolution_backward(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let nsp = ctx.ty(1)?.rank() - 2;
    let win = conv_window(ctx, 4, 9, nsp)?;
    let transposed = ctx.bool_or(7, false)?;
    let mask = ctx.bool_list(10)?;
    let gy = ctx.tensor(0)?;
    let x = ctx.tensor(1)?;
    let w = ctx.tensor(2)?;
    let b = &mut ctx.b;
    let ct = opmath(x.dtype());
    let gyc = b.convert(&gy, ct);
    let k = w.shape()[2..].to_vec();
    let gi = if mask.first().copied().unwrap_or(false) {
        let r = if transposed {
            // An output padding of at least the stride (allowed below the dilation) makes
            // the forward convolution of `gy` overshoot the input; the overshoot is cut.
            let r = conv_fwd(b, &gy, &w, &win, ct)?;
            let mut limit = r.shape().to_vec();
            limit[2..].copy_from_slice(&x.shape()[2..]);
            if limit == r.shape() {
                r
            } else {
                b.slice(&r, &vec![0; r.rank()], &limit, &vec![1; r.rank()])?
            }
        } else {
            conv_grad_input(b, &gy, &w, &win, &x.shape()[2..], ct)?
        };
        Some(b.convert(&r, x.dtype()))
    } else {
        None
    };
    let gw = if mask.get(1).copied().unwrap_or(false) {
        let r = if transposed {
            conv_grad_weight(b, &gy, &x, &k, &win, ct)?
        } else {
            conv_grad_weight(b, &x, &gy, &k, &win, ct)?
        };
        Some(b.convert(&r, w.dtype()))
    } else {
        None
    };
    let gb = if mask.get(2).copied().unwrap_or(false) {
        let s = sum(b, &gyc, &non_channel_dims(gy.rank()));
        Some(b.convert(&s, gy.dtype()))
    } else {
        None
    };
    Ok(vec![gi, gw, gb])
}

pub(crate) fn register(reg: &mut Registry) {
    reg.ops(
        &[
            "convolution",
            "convolution.out",
            "_convolution",
            "_convolution.out",
        ],
        convolution,
    );
    reg.ops(
        &["convolution_backward", "convolution_backward.out"],
        convolution_backward,
    );
}
