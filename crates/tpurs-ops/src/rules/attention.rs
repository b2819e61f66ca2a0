//! Fused attention: `_scaled_dot_product_flash_attention_for_cpu` and its backward, which
//! `scaled_dot_product_attention` reaches on the device when the bridge's backend choice
//! picks "flash" (no dropout, 4-d inputs). One rule instead of the math path's dozen ops;
//! grouped-query heads are read in place (no repeated keys and values), and the backward
//! reuses the forward's log-sum-exp instead of a second softmax. Past a size
//! (`TPURS_ATTENTION_BLOCK_BYTES` of scores, 256 MiB by default) both run in a loop over
//! blocks of query positions, so the scores of every head for all queries never exist at
//! once.

use std::sync::OnceLock;

use tpurs_hlo::{Builder, CompareDir, DType, Literal, TensorType, Value};

use super::nn::{sum_dims, widen};
use super::try_while;
use crate::ctx::{Ctx, Out};
use crate::dtype::torch_name;
use crate::error::{Error, Result};
use crate::table::Registry;

const KERNEL: &str = "scaled_dot_product_attention_flash_attention";

/// Shapes of one call: batch, query heads, key/value heads, query and key lengths.
#[derive(Clone, Copy)]
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

/// Masked scores (B*Hkv, rep*L, S) of the widened, already scaled query rows and keys, for
/// the `L` query positions from `first` (a 0-d i64) on; `mask` holds their rows.
fn scores(
    b: &mut Builder,
    d: &Dims,
    q: &Value,
    k: &Value,
    mask: Option<&Value>,
    causal: bool,
    first: &Value,
) -> Result<Value> {
    let s = b.dot_general(q, k, (&[0], &[0]), (&[2], &[2]))?;
    let mut s = b.reshape(&s, &d.split())?;
    if let Some(m) = mask {
        let m = b.broadcast_to(m, &[d.batch, d.heads, d.q_len, d.kv_len])?;
        let m = b.reshape(&m, &d.split())?;
        s = b.add(&s, &m)?;
    }
    if causal {
        // Upper-left aligned, as on the CPU: query row i sees keys 0..=i.
        let ty = TensorType::new(DType::I64, vec![d.q_len, d.kv_len]);
        let row = b.iota(&ty, 0);
        let first = b.broadcast_in_dim(first, &ty.shape, &[])?;
        let row = b.add(&row, &first)?;
        let col = b.iota(&ty, 1);
        let keep = b.compare(CompareDir::Le, &col, &row)?;
        let keep = b.broadcast_in_dim(&keep, s.shape(), &[2, 3])?;
        let ninf = b.full_like(&s, Literal::Float(f64::NEG_INFINITY));
        s = b.select(&keep, &s, &ninf)?;
    }
    Ok(b.reshape(&s, &d.rows(d.kv_len))?)
}

/// The mask rows (`[.., L or 1, S]`) of the `len` query positions from `first` on.
fn mask_rows(b: &mut Builder, mask: &Value, first: &Value, len: i64, q_len: i64) -> Value {
    let r = mask.rank();
    if mask.shape()[r - 2] != q_len || len == q_len {
        return mask.clone();
    }
    let zero = b.constant(Literal::Int(0), DType::I64);
    let mut starts = vec![zero; r];
    starts[r - 2] = first.clone();
    let mut sizes = mask.shape().to_vec();
    sizes[r - 2] = len;
    b.dynamic_slice(mask, &starts, &sizes)
}

/// Score bytes past which attention runs over blocks of query positions.
fn block_bytes() -> i64 {
    static BYTES: OnceLock<i64> = OnceLock::new();
    *BYTES.get_or_init(|| {
        std::env::var("TPURS_ATTENTION_BLOCK_BYTES")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(256 << 20)
    })
}

/// Query positions per block: all of them when every score fits in [`block_bytes`], else
/// the largest divisor of L whose block takes at most a quarter of it.
fn block_len(d: &Dims, dtype: DType) -> i64 {
    let per_query = d.batch * d.heads * d.kv_len * dtype.byte_size() as i64;
    if per_query * d.q_len <= block_bytes() {
        return d.q_len;
    }
    let most = (block_bytes() / 4 / per_query.max(1)).clamp(1, d.q_len);
    (1..=most).rev().find(|n| d.q_len % n == 0).unwrap_or(1)
}

/// Rows (B*Hkv, rep*len, tail) of the `len` query positions from `first` on of `x` viewed
/// as (B*Hkv, rep, L, tail).
fn block_rows(b: &mut Builder, d: &Dims, x: &Value, first: &Value, len: i64) -> Result<Value> {
    let tail = x.shape()[3];
    let zero = b.constant(Literal::Int(0), DType::I64);
    let starts = [zero.clone(), zero.clone(), first.clone(), zero];
    let sizes = [d.batch * d.kv_heads, d.rep(), len, tail];
    let block = b.dynamic_slice(x, &starts, &sizes);
    Ok(b.reshape(&block, &[sizes[0], d.rep() * len, tail])?)
}

/// Writes block rows (B*Hkv, rep*len, tail) into `acc` (B*Hkv, rep, L, tail) at `first`.
fn put_rows(b: &mut Builder, acc: &Value, rows: &Value, first: &Value) -> Result<Value> {
    let mut shape = acc.shape().to_vec();
    shape[2] = rows.shape()[1] / shape[1];
    let rows = b.reshape(rows, &shape)?;
    let zero = b.constant(Literal::Int(0), DType::I64);
    let starts = [zero.clone(), zero.clone(), first.clone(), zero];
    Ok(b.dynamic_update_slice(acc, &rows, &starts))
}

/// Runs `step(b, block, first)` for the blocks of `len` query positions, threading `state`
/// (the loop-carried values; `step` returns their next values).
fn over_blocks(
    b: &mut Builder,
    d: &Dims,
    len: i64,
    state: Vec<Value>,
    step: impl FnOnce(&mut Builder, &Dims, &Value, &[Value]) -> Result<Vec<Value>>,
) -> Result<Vec<Value>> {
    let block = Dims { q_len: len, ..*d };
    let count = d.q_len / len;
    let i0 = b.constant(Literal::Int(0), DType::I64);
    let mut init = vec![&i0];
    init.extend(state.iter());
    let out = try_while(
        b,
        &init,
        |b, s| {
            let n = b.constant(Literal::Int(count), DType::I64);
            Ok(b.compare(CompareDir::Lt, &s[0], &n)?)
        },
        |b, s| {
            let step_len = b.constant(Literal::Int(len), DType::I64);
            let first = b.mul(&s[0], &step_len)?;
            let mut next = vec![];
            let one = b.constant(Literal::Int(1), DType::I64);
            next.push(b.add(&s[0], &one)?);
            next.extend(step(b, &block, &first, &s[1..])?);
            Ok(next)
        },
    )?;
    Ok(out[1..].to_vec())
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

/// Output rows (B*Hkv, rep*L, E) and log-sum-exp (B*Hkv, rep*L) of scaled query rows.
#[allow(clippy::too_many_arguments)]
fn attend(
    b: &mut Builder,
    d: &Dims,
    q: &Value,
    k: &Value,
    v: &Value,
    mask: Option<&Value>,
    causal: bool,
    first: &Value,
) -> Result<(Value, Value)> {
    let s = scores(b, d, q, k, mask, causal, first)?;
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
    let out = b.dot_general(&p, v, (&[0], &[0]), (&[2], &[1]))?;
    Ok((out, lse))
}

/// The call's mask (converted to the scores' dtype), if any.
fn mask_arg(ctx: &mut Ctx, at: usize, dtype: DType) -> Result<Option<Value>> {
    Ok(ctx.opt_tensor(at)?.map(|m| ctx.b.convert(&m, dtype)))
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
    let v = keys(&mut ctx.b, &d, &v)?;
    let mask = mask_arg(ctx, 5, q.dtype())?;
    let b = &mut ctx.b;
    let len = block_len(&d, q.dtype());
    let (out, lse) = if len == d.q_len {
        let first = b.constant(Literal::Int(0), DType::I64);
        attend(b, &d, &q, &k, &v, mask.as_ref(), causal, &first)?
    } else {
        let split = [d.batch * d.kv_heads, d.rep(), d.q_len];
        let q4 = b.reshape(&q, &[split[0], split[1], split[2], head])?;
        let out0 = b.full_like(&q4, Literal::Int(0));
        let lse0 = b.splat(Literal::Int(0), &TensorType::new(q.dtype(), split));
        let mut state = vec![q4, k, v, out0, lse0];
        state.extend(mask);
        let done = over_blocks(b, &d, len, state, |b, blk, first, s| {
            let q = block_rows(b, &d, &s[0], first, len)?;
            let mask = s.get(5).map(|m| mask_rows(b, m, first, len, d.q_len));
            let (out, lse) = attend(b, blk, &q, &s[1], &s[2], mask.as_ref(), causal, first)?;
            let out = put_rows(b, &s[3], &out, first)?;
            let lse3 = b.reshape(&lse, &[split[0], split[1] * len, 1])?;
            let lse4 = b.reshape(&s[4], &[split[0], split[1], split[2], 1])?;
            let lse = put_rows(b, &lse4, &lse3, first)?;
            let lse = b.reshape(&lse, &split)?;
            let mut next = vec![s[0].clone(), s[1].clone(), s[2].clone(), out, lse];
            next.extend(s.get(5).cloned());
            Ok(next)
        })?;
        (done[3].clone(), done[4].clone())
    };
    let out = b.reshape(&out, &[d.batch, d.heads, d.q_len, head])?;
    let lse = b.reshape(&lse, &[d.batch, d.heads, d.q_len])?;
    Ok(vec![Some(b.convert(&out, dt)), Some(lse)])
}

/// Gradients of attention over scaled query rows: dQ rows (B*Hkv, rep*L, E, the scale
/// applied), dK and dV (B*Hkv, S, E), from the output rows, their gradient `go` and the
/// forward's log-sum-exp (B*Hkv, rep*L).
#[allow(clippy::too_many_arguments)]
fn attend_backward(
    b: &mut Builder,
    d: &Dims,
    rows_in: [&Value; 4],
    k: &Value,
    v: &Value,
    mask: Option<&Value>,
    causal: bool,
    first: &Value,
    scale: f64,
) -> Result<[Value; 3]> {
    let [go, q, out, lse] = rows_in;
    let s = scores(b, d, q, k, mask, causal, first)?;
    let p = weights(b, &s, lse)?;
    // dV sums over the queries of every head sharing a key/value head: one matmul.
    let gv = b.dot_general(&p, go, (&[0], &[0]), (&[1], &[1]))?;
    let gp = b.dot_general(go, v, (&[0], &[0]), (&[2], &[2]))?;
    let row = b.mul(go, out)?;
    let row = sum_dims(b, &row, &[2], false)?;
    let row = b.broadcast_in_dim(&row, gp.shape(), &[0, 1])?;
    let gs = b.sub(&gp, &row)?;
    let gs = b.mul(&p, &gs)?;
    // The scale was folded into the query: dQ takes it from dS, dK from the scaled query.
    let gq = b.dot_general(&gs, k, (&[0], &[0]), (&[2], &[1]))?;
    let c = b.full_like(&gq, Literal::Float(scale));
    let gq = b.mul(&gq, &c)?;
    let gk = b.dot_general(&gs, q, (&[0], &[0]), (&[1], &[1]))?;
    Ok([gq, gk, gv])
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
    let mask = mask_arg(ctx, 8, q.dtype())?;
    let b = &mut ctx.b;
    let lse = b.convert(&lse, q.dtype());
    let len = block_len(&d, q.dtype());
    let [gq, gk, gv] = if len == d.q_len {
        let lse = b.reshape(&lse, &d.rows(1)[..2])?;
        let first = b.constant(Literal::Int(0), DType::I64);
        let rows_in = [&go, &q, &out, &lse];
        attend_backward(b, &d, rows_in, &k, &v, mask.as_ref(), causal, &first, scale)?
    } else {
        let split = |b: &mut Builder, x: &Value, tail: i64| {
            b.reshape(x, &[d.batch * d.kv_heads, d.rep(), d.q_len, tail])
        };
        let (go4, q4, out4, lse4) = (
            split(b, &go, head)?,
            split(b, &q, head)?,
            split(b, &out, head)?,
            split(b, &lse, 1)?,
        );
        let gq0 = b.full_like(&q4, Literal::Int(0));
        let gk0 = b.full_like(&k, Literal::Int(0));
        let mut state = vec![go4, q4, out4, lse4, k, v, gq0, gk0.clone(), gk0];
        state.extend(mask);
        let done = over_blocks(b, &d, len, state, |b, blk, first, s| {
            let go = block_rows(b, &d, &s[0], first, len)?;
            let q = block_rows(b, &d, &s[1], first, len)?;
            let out = block_rows(b, &d, &s[2], first, len)?;
            let lse = block_rows(b, &d, &s[3], first, len)?;
            let lse = b.reshape(&lse, &lse.shape()[..2])?;
            let mask = s.get(9).map(|m| mask_rows(b, m, first, len, d.q_len));
            let rows_in = [&go, &q, &out, &lse];
            let [gq, gk, gv] = attend_backward(
                b,
                blk,
                rows_in,
                &s[4],
                &s[5],
                mask.as_ref(),
                causal,
                first,
                scale,
            )?;
            let mut next = s[..6].to_vec();
            next.push(put_rows(b, &s[6], &gq, first)?);
            next.push(b.add(&s[7], &gk)?);
            next.push(b.add(&s[8], &gv)?);
            next.extend(s.get(9).cloned());
            Ok(next)
        })?;
        [done[6].clone(), done[7].clone(), done[8].clone()]
    };
    let gq = b.reshape(&gq, &[d.batch, d.heads, d.q_len, head])?;
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
