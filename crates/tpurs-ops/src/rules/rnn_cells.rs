//! The fused LSTM and GRU cells `nn.LSTM` / `nn.GRU` (and `LSTMCell` / `GRUCell`) call on
//! every non-CPU device, and their backward ops, with CUDA's gate order and workspace
//! layout: LSTM gates `[i, f, g, o]` (workspace: the four activated gates), GRU gates
//! `[r, z, n]` (workspace: `r`, `z`, `n`, `hx` and the hidden state's `n` part). Computed in
//! opmath.

use tpurs_hlo::{Builder, DType, Literal, Value};

use super::conv::sum;
use crate::ctx::{Ctx, Out};
use crate::dtype::opmath;
use crate::error::{runtime, Result};
use crate::table::Registry;

/// `k` gate blocks of width `h` of `x` (B, k*h).
fn gates(b: &mut Builder, x: &Value, k: i64) -> Result<Vec<Value>> {
    let h = x.shape()[1] / k;
    (0..k)
        .map(|i| Ok(b.slice_dim(x, 1, i * h, (i + 1) * h, 1)?))
        .collect()
}

/// CUDA's shape checks: 2-d gates of equal sizes, `k` gates per hidden unit of `state`
/// (B, H), biases of `k * H` elements.
fn check_cell(ctx: &Ctx, k: i64, kernel: &str) -> Result<()> {
    let (ig, hg, state) = (ctx.ty(0)?, ctx.ty(1)?, ctx.ty(2)?);
    let [bsz, h] = state.shape[..] else {
        return runtime(format!(
            "{kernel}: expected a 2-d hidden state, got {:?}",
            state.shape
        ));
    };
    for (t, name) in [(&ig, "input_gates"), (&hg, "hidden_gates")] {
        if t.shape != [bsz, k * h] {
            return runtime(format!(
                "{kernel}: {name} must have shape {:?}, got {:?}",
                [bsz, k * h],
                t.shape
            ));
        }
    }
    for i in [3, 4] {
        if ctx.has(i) && ctx.ty(i)?.numel() != k * h {
            return runtime(format!(
                "{kernel}: biases must have {} elements, got {}",
                k * h,
                ctx.ty(i)?.numel()
            ));
        }
    }
    if [&hg, &state].iter().any(|t| t.dtype != ig.dtype) {
        return runtime(format!(
            "{kernel}: expected all tensors to have the same dtype"
        ));
    }
    Ok(())
}

/// `gates + bias` with a 1-d bias broadcast over the batch (no bias: `gates`).
fn plus_bias(b: &mut Builder, gates: &Value, bias: Option<&Value>, w: DType) -> Result<Value> {
    let Some(bias) = bias else {
        return Ok(gates.clone());
    };
    let bias = b.convert(bias, w);
    let bias = b.reshape(&bias, &[gates.shape()[1]])?;
    let bias = b.broadcast_in_dim(&bias, gates.shape(), &[1])?;
    Ok(b.add(gates, &bias)?)
}

/// `s * (1 - s)`, a sigmoid's derivative from its value.
fn sigmoid_grad(b: &mut Builder, s: &Value) -> Result<Value> {
    let one = b.full_like(s, Literal::Float(1.0));
    let d = b.sub(&one, s)?;
    Ok(b.mul(s, &d)?)
}

/// `1 - t * t`, a tanh's derivative from its value.
fn tanh_grad(b: &mut Builder, t: &Value) -> Result<Value> {
    let one = b.full_like(t, Literal::Float(1.0));
    let tt = b.mul(t, t)?;
    Ok(b.sub(&one, &tt)?)
}

/// The gradients' sum over the batch when the cell had biases.
fn bias_grad(b: &mut Builder, g: &Value, has_bias: bool, dtype: DType) -> Out {
    has_bias.then(|| {
        let s = sum(b, g, &[0]);
        b.convert(&s, dtype)
    })
}

/// `_thnn_fused_lstm_cell(input_gates, hidden_gates, cx, input_bias, hidden_bias)` ->
/// `(hy, cy, workspace)`.
fn lstm_cell(ctx: &mut Ctx) -> Result<Vec<Out>> {
    check_cell(ctx, 4, "_thnn_fused_lstm_cell")?;
    let dtype = ctx.ty(0)?.dtype;
    let w = opmath(dtype);
    let (ig, hg, cx) = (ctx.tensor(0)?, ctx.tensor(1)?, ctx.tensor(2)?);
    let (ib, hb) = (ctx.opt_tensor(3)?, ctx.opt_tensor(4)?);
    let b = &mut ctx.b;
    let (ig, hg, cx) = (b.convert(&ig, w), b.convert(&hg, w), b.convert(&cx, w));
    let g = b.add(&ig, &hg)?;
    let g = plus_bias(b, &g, ib.as_ref(), w)?;
    let g = plus_bias(b, &g, hb.as_ref(), w)?;
    let parts = gates(b, &g, 4)?;
    let (i, f) = (b.logistic(&parts[0]), b.logistic(&parts[1]));
    let (c, o) = (b.tanh(&parts[2]), b.logistic(&parts[3]));
    let fc = b.mul(&f, &cx)?;
    let ic = b.mul(&i, &c)?;
    let cy = b.add(&fc, &ic)?;
    let t = b.tanh(&cy);
    let hy = b.mul(&o, &t)?;
    let workspace = b.concatenate(&[&i, &f, &c, &o], 1)?;
    Ok(vec![
        Some(b.convert(&hy, dtype)),
        Some(b.convert(&cy, dtype)),
        Some(b.convert(&workspace, dtype)),
    ])
}

/// `_thnn_fused_lstm_cell_backward_impl(grad_hy, grad_cy, cx, cy, workspace, has_bias)` ->
/// `(grad_gates, grad_cx, grad_bias)`; a missing gradient counts as zeros.
fn lstm_cell_backward(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let dtype = ctx.ty(2)?.dtype;
    let w = opmath(dtype);
    let has_bias = ctx.bool_or(5, false)?;
    let (ghy, gcy) = (ctx.opt_tensor(0)?, ctx.opt_tensor(1)?);
    let (cx, cy, ws) = (ctx.tensor(2)?, ctx.tensor(3)?, ctx.tensor(4)?);
    let b = &mut ctx.b;
    let (cx, cy, ws) = (b.convert(&cx, w), b.convert(&cy, w), b.convert(&ws, w));
    let zero = b.full_like(&cx, Literal::Float(0.0));
    let ghy = ghy.map_or(zero.clone(), |g| b.convert(&g, w));
    let gcy = gcy.map_or(zero, |g| b.convert(&g, w));
    let parts = gates(b, &ws, 4)?;
    let (i, f, c, o) = (&parts[0], &parts[1], &parts[2], &parts[3]);
    let t = b.tanh(&cy);
    // The gradient reaching cy: through hy = o * tanh(cy), plus cy's own.
    let dt = tanh_grad(b, &t)?;
    let gt = b.mul(&ghy, o)?;
    let gt = b.mul(&gt, &dt)?;
    let gc = b.add(&gt, &gcy)?;
    let gi = b.mul(&gc, c)?;
    let dgi = sigmoid_grad(b, i)?;
    let gi = b.mul(&gi, &dgi)?;
    let gf = b.mul(&gc, &cx)?;
    let dgf = sigmoid_grad(b, f)?;
    let gf = b.mul(&gf, &dgf)?;
    let gg = b.mul(&gc, i)?;
    let dgg = tanh_grad(b, c)?;
    let gg = b.mul(&gg, &dgg)?;
    let go = b.mul(&ghy, &t)?;
    let dgo = sigmoid_grad(b, o)?;
    let go = b.mul(&go, &dgo)?;
    let grad_gates = b.concatenate(&[&gi, &gf, &gg, &go], 1)?;
    let grad_cx = b.mul(&gc, f)?;
    let grad_bias = bias_grad(b, &grad_gates, has_bias, dtype);
    Ok(vec![
        Some(b.convert(&grad_gates, dtype)),
        Some(b.convert(&grad_cx, dtype)),
        grad_bias,
    ])
}

/// `_thnn_fused_gru_cell(input_gates, hidden_gates, hx, input_bias, hidden_bias)` ->
/// `(hy, workspace)`.
fn gru_cell(ctx: &mut Ctx) -> Result<Vec<Out>> {
    check_cell(ctx, 3, "_thnn_fused_gru_cell")?;
    let dtype = ctx.ty(0)?.dtype;
    let w = opmath(dtype);
    let (ig, hg, hx) = (ctx.tensor(0)?, ctx.tensor(1)?, ctx.tensor(2)?);
    let (ib, hb) = (ctx.opt_tensor(3)?, ctx.opt_tensor(4)?);
    let b = &mut ctx.b;
    let (ig, hg, hx) = (b.convert(&ig, w), b.convert(&hg, w), b.convert(&hx, w));
    let ig = plus_bias(b, &ig, ib.as_ref(), w)?;
    let hg = plus_bias(b, &hg, hb.as_ref(), w)?;
    let (ip, hp) = (gates(b, &ig, 3)?, gates(b, &hg, 3)?);
    let r = b.add(&ip[0], &hp[0])?;
    let r = b.logistic(&r);
    let z = b.add(&ip[1], &hp[1])?;
    let z = b.logistic(&z);
    let rn = b.mul(&r, &hp[2])?;
    let n = b.add(&ip[2], &rn)?;
    let n = b.tanh(&n);
    // hy = n + z * (hx - n)
    let d = b.sub(&hx, &n)?;
    let zd = b.mul(&z, &d)?;
    let hy = b.add(&n, &zd)?;
    let workspace = b.concatenate(&[&r, &z, &n, &hx, &hp[2]], 1)?;
    Ok(vec![
        Some(b.convert(&hy, dtype)),
        Some(b.convert(&workspace, dtype)),
    ])
}

/// `_thnn_fused_gru_cell_backward(grad_hy, workspace, has_bias)` -> `(grad_input_gates,
/// grad_hidden_gates, grad_hx, grad_input_bias, grad_hidden_bias)`.
fn gru_cell_backward(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let dtype = ctx.ty(0)?.dtype;
    let w = opmath(dtype);
    let has_bias = ctx.bool_or(2, false)?;
    let (go, ws) = (ctx.tensor(0)?, ctx.tensor(1)?);
    let b = &mut ctx.b;
    let (go, ws) = (b.convert(&go, w), b.convert(&ws, w));
    let p = gates(b, &ws, 5)?;
    let (r, z, n, hx, hn) = (&p[0], &p[1], &p[2], &p[3], &p[4]);
    let one = b.full_like(z, Literal::Float(1.0));
    let d = b.sub(hx, n)?;
    let gz = b.mul(&go, &d)?;
    let dgz = sigmoid_grad(b, z)?;
    let gz = b.mul(&gz, &dgz)?;
    let ghx = b.mul(&go, z)?;
    let not_z = b.sub(&one, z)?;
    let gn = b.mul(&go, &not_z)?;
    let dgn = tanh_grad(b, n)?;
    let gn = b.mul(&gn, &dgn)?;
    let ghn = b.mul(&gn, r)?;
    let gr = b.mul(&gn, hn)?;
    let dgr = sigmoid_grad(b, r)?;
    let gr = b.mul(&gr, &dgr)?;
    let grad_input = b.concatenate(&[&gr, &gz, &gn], 1)?;
    let grad_hidden = b.concatenate(&[&gr, &gz, &ghn], 1)?;
    let input_bias = bias_grad(b, &grad_input, has_bias, dtype);
    let hidden_bias = bias_grad(b, &grad_hidden, has_bias, dtype);
    Ok(vec![
        Some(b.convert(&grad_input, dtype)),
        Some(b.convert(&grad_hidden, dtype)),
        Some(b.convert(&ghx, dtype)),
        input_bias,
        hidden_bias,
    ])
}

/// Registers the family.
pub(crate) fn register(reg: &mut Registry) {
    reg.ops(
        &["_thnn_fused_lstm_cell", "_thnn_fused_lstm_cell.out"],
        lstm_cell,
    );
    reg.ops(
        &[
            "_thnn_fused_lstm_cell_backward_impl",
            "_thnn_fused_lstm_cell_backward_impl.out",
        ],
        lstm_cell_backward,
    );
    reg.ops(
        &["_thnn_fused_gru_cell", "_thnn_fused_gru_cell.out"],
        gru_cell,
    );
    reg.ops(
        &[
            "_thnn_fused_gru_cell_backward",
            "_thnn_fused_gru_cell_backward.out",
        ],
        gru_cell_backward,
    );
}
