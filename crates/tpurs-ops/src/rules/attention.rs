//! Fused attention: `_scaled_dot_product_flash_attention_for_cpu` and its backward, which
//! `scaled_dot_product_attention` reaches on the device when the bridge's backend choice
//! picks "flash" (no dropout, 4-d inputs). One rule instead of the math path's dozen ops;
//! grouped-query heads are read in place (no repeated keys and values), and the backward
//! reuses the forward's log-sum-exp instead of a second softmax.

use tpurs_hlo::{Builder, CompareDir, DType, Literal, TensorType, Value};

use super::nn::{sum_dims, widen};
use crate::ctx::{Ctx, Out};
use crate::dtype::torch_name;
use crate::error::{Error, Result};
use crate::table::Registry;

const KERNEL: &str = "scaled_dot_product_attention_flash_attention";

/// Shapes of one call: batch, query heads, key/value heads, query and key lengths.
struct Dims {
    batch: i64,
    heads: i64,
    kv_heads: i64,
    q_len: i64,
    kv_len: i64,
}

impl Dims {
    /// Query heads per key/value head.
    fn rep(&self) -> i64 {
        self.heads / self.kv_heads
    }

    /// The queries of the heads sharing a key/value head as the rows of one matrix:
    /// (B*Hkv, rep*L, tail), so that every product is a plain batched matmul.
    fn rows(&self, tail: i64) -> Vec<i64> {
        vec![self.batch * self.kv_heads, self.rep() * self.q_len, tail]
    }

    /// Keys or values per key/value head: (B*Hkv, S, tail).
    fn keys(&self, tail: i64) -> Vec<i64> {
        vec![self.batch * self.kv_heads, self.kv_len, tail]
    }

    /// Scores with the query rows split back: (B*Hkv, rep, L, S).
    fn split(&self) -> Vec<i64> {
        vec![
            self.batch * self.kv_heads,
            self.rep(),
            self.q_len,
            self.kv_len,
        ]
    }
}

/// CPU PyTorch's checks, in its order, for query `q`, key `k`, value `v` and `mask`.
fn check(ctx: &Ctx, q: usize, k: usize, v: usize, mask: usize, dropout: usize) -> Result<Dims> {
    let (qt, kt, vt) = (ctx.ty(q)?, ctx.ty(k)?, ctx.ty(v)?);
    let err = |m: String| Err(Error::Runtime(format!("{KERNEL}: {m}")));
    if !qt.dtype.is_float() {
        return err(format!(
            "Expected data type in FP32, FP64, BF16, FP16, but got {} instead.",
            torch_name(qt.dtype)
        ));
    }
    if qt.rank() != 4 || kt.rank() != 4 || vt.rank() != 4 {
        return err("Accept only 4 dims inputs shape of {B, H, T, K}".into());
    }
    if ctx.float(dropout)? != 0.0 {
        return err("Currently do not support dropout > 0".into());
    }
    if qt.shape[3] != vt.shape[3] || kt.shape[3] != vt.shape[3] {
        return err("Q/K/V should have the same head size".into());
    }
    if ctx.has(mask) {
        let mt = ctx.ty(mask)?;
        if mt.dtype != DType::F32 && mt.dtype != qt.dtype {
            return err("Attention mask is the same data type as query".into());
        }
        if mt.rank() != 2 && mt.rank() != 4 {
            return err("Attention mask dim in {2, 4}".into());
        }
    }
    let dims = Dims {
        batch: qt.shape[0],
        heads: qt.shape[1],
        kv_heads: kt.shape[1],
        q_len: qt.shape[2],
        kv_len: kt.shape[2],
    };
    let same = |t: &TensorType| t.dtype == qt.dtype && t.shape[0] == dims.batch;
    if !same(&kt) || !same(&vt) || vt.shape[1] != dims.kv_heads || vt.shape[2] != dims.kv_len {
        return err("query, key and value must agree in dtype, batch, heads and length".into());
    }
    if dims.kv_heads == 0 || dims.heads % dims.kv_heads != 0 {
        return err("the number of query heads must be a multiple of key/value heads".into());
    }
    Ok(dims)
}

/// Masked scores (B*Hkv, rep*L, S) of the widened, already scaled query rows and keys.
fn scores(
    ctx: &mut Ctx,
    d: &Dims,
    q: &Value,
    k: &Value,
    mask: usize,
    causal: bool,
) -> Result<Value> {
    let s = ctx.b.dot_general(q, k, (&[0], &[0]), (&[2], &[2]))?;
    let mut s = ctx.b.reshape(&s, &d.split())?;
    if let Some(m) = ctx.opt_tensor(mask)? {
        let b = &mut ctx.b;
        let m = b.convert(&m, s.dtype());
        let m = b.broadcast_to(&m, &[d.batch, d.heads, d.q_len, d.kv_len])?;
        let m = b.reshape(&m, &d.split())?;
        s = b.add(&s, &m)?;
    }
    if causal {
        // Upper-left aligned, as on the CPU: query row i sees keys 0..=i.
        let b = &mut ctx.b;
        let ty = TensorType::new(DType::I64, vec![d.q_len, d.kv_len]);
        let row = b.iota(&ty, 0);
        let col = b.iota(&ty, 1);
        let keep = b.compare(CompareDir::Le, &col, &row)?;
        let keep = b.broadcast_in_dim(&keep, s.shape(), &[2, 3])?;
        let ninf = b.full_like(&s, Literal::Float(f64::NEG_INFINITY));
        s = b.select(&keep, &s, &ninf)?;
    }
    Ok(ctx.b.reshape(&s, &d.rows(d.kv_len))?)
}

/// The widened query (B, H, L, E) as scaled rows (B*Hkv, rep*L, E).
fn query_rows(b: &mut Builder, d: &Dims, q: &Value, scale: f64) -> Result<Value> {
    let q = rows(b, d, q)?;
    let c = b.full_like(&q, Literal::Float(scale));
    Ok(b.mul(&q, &c)?)
}

/// A widened (B, H, L, E) tensor as rows (B*Hkv, rep*L, E).
fn rows(b: &mut Builder, d: &Dims, x: &Value) -> Result<Value> {
    let x = widen(b, x);
    Ok(b.reshape(&x, &d.rows(x.shape()[3]))?)
}

/// A widened key or value (B, Hkv, S, E) as (B*Hkv, S, E).
fn keys(b: &mut Builder, d: &Dims, x: &Value) -> Result<Value> {
    let x = widen(b, x);
    Ok(b.reshape(&x, &d.keys(x.shape()[3]))?)
}

/// Softmax weights `exp(s - lse)` of scores (B*Hkv, rep*L, S) for per-row log-sum-exp
/// `lse` (B*Hkv, rep*L).
fn weights(b: &mut Builder, s: &Value, lse: &Value) -> Result<Value> {
    let lse = b.broadcast_in_dim(lse, s.shape(), &[0, 1])?;
    let shifted = b.sub(s, &lse)?;
    Ok(b.exp(&shifted))
}

/// The softmax scale: `scale` or 1/sqrt(head size).
fn softmax_scale(ctx: &Ctx, at: usize, head: i64) -> Result<f64> {
    Ok(ctx
        .opt_float(at)?
        .unwrap_or_else(|| 1.0 / (head as f64).sqrt()))
}

/// `_scaled_dot_product_flash_attention_for_cpu(query, key, value, dropout_p, is_causal, *,
/// attn_mask, scale)` -> (output, logsumexp).
fn flash_attention(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let d = check(ctx, 0, 1, 2, 5, 3)?;
    let dt = ctx.ty(0)?.dtype;
    let head = ctx.ty(0)?.shape[3];
    let causal = ctx.bool_or(4, false)?;
    let scale = softmax_scale(ctx, 6, head)?;
    let q = ctx.tensor(0)?;
    let q = query_rows(&mut ctx.b, &d, &q, scale)?;
    let k = ctx.tensor(1)?;
    let k = keys(&mut ctx.b, &d, &k)?;
    let v = ctx.tensor(2)?;
    let s = scores(ctx, &d, &q, &k, 5, causal)?;
    let b = &mut ctx.b;
    let ninf = b.constant(Literal::Float(f64::NEG_INFINITY), s.dtype());
    let max = b.reduce(&s, &ninf, &[2], |b, x, y| b.max(x, y).expect("same type"));
    // A row that sees no key gives zeros and a log-sum-exp of 0, as on the CPU.
    let dead = {
        let ninf = b.full_like(&max, Literal::Float(f64::NEG_INFINITY));
        b.compare(CompareDir::Eq, &max, &ninf)?
    };
    let zero = b.full_like(&max, Literal::Int(0));
    let safe_max = b.select(&dead, &zero, &max)?;
    let e = weights(b, &s, &safe_max)?;
    let total = sum_dims(b, &e, &[2], false)?;
    let lse = b.log(&total);
    let lse = b.add(&lse, &safe_max)?;
    let lse = b.select(&dead, &zero, &lse)?;
    let one = b.full_like(&total, Literal::Int(1));
    let total = b.select(&dead, &one, &total)?;
    let total = b.broadcast_in_dim(&total, e.shape(), &[0, 1])?;
    let p = b.div(&e, &total)?;
    let v = keys(b, &d, &v)?;
    let out = b.dot_general(&p, &v, (&[0], &[0]), (&[2], &[1]))?;
    let out = b.reshape(&out, &[d.batch, d.heads, d.q_len, head])?;
    let lse = b.reshape(&lse, &[d.batch, d.heads, d.q_len])?;
    Ok(vec![Some(b.convert(&out, dt)), Some(lse)])
}

/// `_scaled_dot_product_flash_attention_for_cpu_backward(grad_out, query, key, value, out,
/// logsumexp, dropout_p, is_causal, *, attn_mask, scale)` -> (grad_query, grad_key,
/// grad_value).
fn flash_attention_backward(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let d = check(ctx, 1, 2, 3, 8, 6)?;
    let dt = ctx.ty(1)?.dtype;
    let head = ctx.ty(1)?.shape[3];
    let causal = ctx.bool_or(7, false)?;
    let scale = softmax_scale(ctx, 9, head)?;
    let go = ctx.tensor(0)?;
    let go = rows(&mut ctx.b, &d, &go)?;
    let q = ctx.tensor(1)?;
    let q = query_rows(&mut ctx.b, &d, &q, scale)?;
    let k = ctx.tensor(2)?;
    let k = keys(&mut ctx.b, &d, &k)?;
    let v = ctx.tensor(3)?;
    let v = keys(&mut ctx.b, &d, &v)?;
    let out = ctx.tensor(4)?;
    let out = rows(&mut ctx.b, &d, &out)?;
    let lse = ctx.tensor(5)?;
    let s = scores(ctx, &d, &q, &k, 8, causal)?;
    let b = &mut ctx.b;
    let lse = b.convert(&lse, s.dtype());
    let lse = b.reshape(&lse, &d.rows(1)[..2])?;
    let p = weights(b, &s, &lse)?;
    // dV sums over the queries of every head sharing a key/value head: one matmul.
    let gv = b.dot_general(&p, &go, (&[0], &[0]), (&[1], &[1]))?;
    let gp = b.dot_general(&go, &v, (&[0], &[0]), (&[2], &[2]))?;
    let row = b.mul(&go, &out)?;
    let row = sum_dims(b, &row, &[2], false)?;
    let row = b.broadcast_in_dim(&row, gp.shape(), &[0, 1])?;
    let gs = b.sub(&gp, &row)?;
    let gs = b.mul(&p, &gs)?;
    // The scale was folded into the query: dQ takes it from dS, dK from the scaled query.
    let gq = b.dot_general(&gs, &k, (&[0], &[0]), (&[2], &[1]))?;
    let c = b.full_like(&gq, Literal::Float(scale));
    let gq = b.mul(&gq, &c)?;
    let gq = b.reshape(&gq, &[d.batch, d.heads, d.q_len, head])?;
    let gk = b.dot_general(&gs, &q, (&[0], &[0]), (&[1], &[1]))?;
    let kv_shape = [d.batch, d.kv_heads, d.kv_len, head];
    let gk = b.reshape(&gk, &kv_shape)?;
    let gv = b.reshape(&gv, &kv_shape)?;
    Ok(vec![
        Some(b.convert(&gq, dt)),
        Some(b.convert(&gk, dt)),
        Some(b.convert(&gv, dt)),
    ])
}

pub(crate) fn register(reg: &mut Registry) {
    reg.ops(
        &["_scaled_dot_product_flash_attention_for_cpu"],
        flash_attention,
    );
    reg.ops(
        &["_scaled_dot_product_flash_attention_for_cpu_backward"],
        flash_attention_backward,
    );
}
