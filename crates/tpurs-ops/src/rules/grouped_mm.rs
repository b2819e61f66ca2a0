//! `_grouped_mm(self, mat2, offs, bias, out_dtype)`: the grouped matmul of mixture-of-experts
//! layers (`torch.nn.functional.grouped_mm`; Transformers' "grouped_mm" experts run on it).
//! `offs` holds the groups' cumulative ends along the ragged dimension:
//! - 2-d x 3-d: rows of `self` in groups, group `g` times `mat2[g]` (`[m, n]`);
//! - 2-d x 2-d: the contraction dimension in groups, one product per group (`[g, m, n]`);
//! - 3-d x 2-d: columns of `mat2` in groups, group `g` from `self[g]` (`[m, n]`);
//! - 3-d x 3-d: a batched matmul, no `offs`.
//!
//! No host read, and the sizes may change without a new program. Ragged rows run as a loop
//! over tiles of up to `T` rows of one group (`T` about the mean group size), each tile one
//! small dot with its group's matrix: the work of the product itself, whatever the groups.
//! The other layouts spread the ragged operand into its group's block of a wider operand
//! (zeros elsewhere) for one dot, `groups` times the product's work. Positions past the last
//! end give zeros.

use tpurs_hlo::{Builder, CompareDir, DType, Literal, TensorType, Value};

use super::matmul::dot;
use super::reduce::{add_c, scan};
use super::search::search;
use super::{one, try_while};
use crate::ctx::{Ctx, Out};
use crate::dtype::opmath;
use crate::dtype::torch_name;
use crate::error::{runtime, Error, Result};
use crate::table::Registry;

/// `[len, groups]` true where position `p` lies in group `g` (`ends[g-1] <= p < ends[g]`).
fn membership(b: &mut Builder, ends: &Value, len: i64) -> Result<Value> {
    let groups = ends.shape()[0];
    let ends = b.convert(ends, DType::I64);
    let pos = b.iota(&TensorType::new(DType::I64, [len]), 0);
    // How many groups end at or before each position: its group (`groups` past the last).
    let group = search(b, &ends, &pos, true)?;
    let group = b.broadcast_in_dim(&group, &[len, groups], &[0])?;
    let g = b.iota(&TensorType::new(DType::I64, [len, groups]), 1);
    Ok(b.compare(CompareDir::Eq, &group, &g)?)
}

/// `x` (`[len, w]`, ragged along dim 0) spread to `[len, groups, w]`: each row in its
/// group's slot, zeros in the others.
fn spread(b: &mut Builder, x: &Value, ends: &Value) -> Result<Value> {
    let (len, w, groups) = (x.shape()[0], x.shape()[1], ends.shape()[0]);
    let member = membership(b, ends, len)?;
    let member = b.broadcast_in_dim(&member, &[len, groups, w], &[0, 1])?;
    let wide = b.broadcast_in_dim(x, &[len, groups, w], &[0, 2])?;
    let zero = b.full_like(&wide, Literal::Int(0));
    Ok(b.select(&member, &wide, &zero)?)
}

/// Element `i` (a 0-d i64) of the 1-d `x`, as a 0-d value.
fn element(b: &mut Builder, x: &Value, i: &Value) -> Result<Value> {
    let v = b.dynamic_slice(x, std::slice::from_ref(i), &[1]);
    Ok(b.reshape(&v, &[])?)
}

/// `a` (`[m, k]`, rows in groups ending at `ends`) times `w[g]` (`[g, k, n]`) for the rows of
/// group `g`, in the accumulation dtype: a loop over tiles of `t` rows of one group. A tile
/// may run past its group's end; the next group's tiles, which come later, rewrite those
/// rows, and rows past the last group are zeroed at the end.
fn ragged_rows(b: &mut Builder, a: &Value, w: &Value, ends: &Value) -> Result<Value> {
    let (m, k, n, groups) = (a.shape()[0], a.shape()[1], w.shape()[2], w.shape()[0]);
    let wide = opmath(a.dtype());
    let mean = ((m + groups - 1) / groups).clamp(8, 256) as u64;
    let t = (mean.next_power_of_two() as i64).min(m);
    let i64s = |b: &mut Builder, v: i64| b.constant(Literal::Int(v), DType::I64);
    // Group g covers rows starts[g]..ends[g] and tiles tile_end[g] - tiles[g]..tile_end[g].
    let ends = b.convert(ends, DType::I64);
    let (zero_v, m_v) = (
        b.full_like(&ends, Literal::Int(0)),
        b.full_like(&ends, Literal::Int(m)),
    );
    let ends = b.max(&ends, &zero_v)?;
    let ends = b.min(&ends, &m_v)?;
    let head = b.slice(&ends, &[0], &[groups - 1], &[1])?;
    let zero1 = b.splat(Literal::Int(0), &TensorType::new(DType::I64, [1]));
    let starts = b.concatenate(&[&zero1, &head], 0)?;
    let sizes = b.sub(&ends, &starts)?;
    let sizes = b.max(&sizes, &zero_v)?;
    let (t_m1, t_v) = (
        b.full_like(&sizes, Literal::Int(t - 1)),
        b.full_like(&sizes, Literal::Int(t)),
    );
    let tiles = b.add(&sizes, &t_m1)?;
    let tiles = b.div(&tiles, &t_v)?;
    let tile_end = scan(b, &tiles, 0, Literal::Int(0), add_c)?;
    let last = i64s(b, groups - 1);
    let total = element(b, &tile_end, &last)?;
    let a = b.convert(a, wide);
    let w = b.convert(w, wide);
    // Flat, so that the loop reads it row-major: a weight that arrives transposed (as
    // Transformers passes it) was otherwise read through its transposed layout by every
    // iteration, 10x slower.
    let w = b.reshape(&w, &[groups * k * n])?;
    let pad_rows = b.splat(Literal::Int(0), &TensorType::new(wide, [t, k]));
    let a = b.concatenate(&[&a, &pad_rows], 0)?;
    let out = b.splat(Literal::Int(0), &TensorType::new(wide, [m + t, n]));
    let first = i64s(b, 0);
    let done = try_while(
        b,
        &[&first, &out, &a, &w],
        |b, s| Ok(b.compare(CompareDir::Lt, &s[0], &total)?),
        |b, s| {
            let (i, out, a, w) = (&s[0], &s[1], &s[2], &s[3]);
            // The tile's group: how many groups' tiles end at or before it.
            let i_g = b.broadcast_in_dim(i, &[groups], &[])?;
            let before = b.compare(CompareDir::Le, &tile_end, &i_g)?;
            let before = b.convert(&before, DType::I64);
            let init = i64s(b, 0);
            let g = b.reduce(&before, &init, &[0], add_c);
            let (end, count) = (element(b, &tile_end, &g)?, element(b, &tiles, &g)?);
            let first_tile = b.sub(&end, &count)?;
            let within = b.sub(i, &first_tile)?;
            let t_s = i64s(b, t);
            let offset = b.mul(&within, &t_s)?;
            let start = element(b, &starts, &g)?;
            let row = b.add(&start, &offset)?;
            let zero = i64s(b, 0);
            let x = b.dynamic_slice(a, &[row.clone(), zero.clone()], &[t, k]);
            let x = b.reshape(&x, &[1, t, k])?;
            // The weight slice stays 3-d: reshaping it would copy it whenever the weight
            // arrives transposed (as Transformers passes it).
            let kn = i64s(b, k * n);
            let at = b.mul(&g, &kn)?;
            let wg = b.dynamic_slice(w, &[at], &[k * n]);
            let wg = b.reshape(&wg, &[1, k, n])?;
            let y = b.dot_general(&x, &wg, (&[0], &[0]), (&[2], &[1]))?;
            let y = b.reshape(&y, &[t, n])?;
            let out = b.dynamic_update_slice(out, &y, &[row, zero]);
            let one = i64s(b, 1);
            Ok(vec![b.add(i, &one)?, out, a.clone(), w.clone()])
        },
    )?;
    let out = b.slice(&done[1], &[0, 0], &[m, n], &[1, 1])?;
    let rows = b.iota(&TensorType::new(DType::I64, [m, n]), 0);
    let total_rows = element(b, &ends, &last)?;
    let total_rows = b.broadcast_in_dim(&total_rows, &[m, n], &[])?;
    let inside = b.compare(CompareDir::Lt, &rows, &total_rows)?;
    let zero = b.full_like(&out, Literal::Int(0));
    Ok(b.select(&inside, &out, &zero)?)
}

fn grouped_mm(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let (at, bt) = (ctx.ty(0)?, ctx.ty(1)?);
    if at.dtype != bt.dtype {
        return runtime(format!(
            "grouped_mm: expected mat_a and mat_b to have the same dtype, got {} and {}",
            torch_name(at.dtype),
            torch_name(bt.dtype)
        ));
    }
    if !at.dtype.is_float() {
        return Err(Error::NotImplemented(format!(
            "grouped_mm: {} operands are not supported",
            torch_name(at.dtype)
        )));
    }
    if ctx.has(3) {
        return Err(Error::NotImplemented(
            "grouped_mm: bias is not supported".into(),
        ));
    }
    let out_dtype = ctx.opt_dtype(4)?.unwrap_or(at.dtype);
    let offs = if ctx.has(2) { Some(ctx.ty(2)?) } else { None };
    let (ra, rb) = (at.rank(), bt.rank());
    if !matches!(ra, 2 | 3) || !matches!(rb, 2 | 3) {
        return runtime(format!(
            "grouped_mm: mat_a and mat_b must be 2-d or 3-d, got {ra}-d and {rb}-d"
        ));
    }
    let k = at.shape[ra - 1];
    if bt.shape[rb - 2] != k {
        return runtime(format!(
            "grouped_mm: contraction dimension of mat_a and mat_b must match, got {k} and {}",
            bt.shape[rb - 2]
        ));
    }
    let ragged = ra == 2 || rb == 2;
    match &offs {
        None if ragged => return runtime("grouped_mm: 2-d operands need offs"),
        Some(_) if !ragged => return runtime("grouped_mm: offs is only used with a 2-d operand"),
        Some(o) if o.rank() != 1 || !matches!(o.dtype, DType::I32 | DType::I64) => {
            return runtime("grouped_mm: offs must be a 1-d int32 tensor")
        }
        _ => {}
    }
    let groups = offs.as_ref().map_or(0, |o| o.shape[0]);
    let batch_of = |r: usize, t: &TensorType| if r == 3 { Some(t.shape[0]) } else { None };
    for b in [batch_of(ra, &at), batch_of(rb, &bt)].into_iter().flatten() {
        if ragged && b != groups {
            return runtime("grouped_mm: matrix batch sizes have to match");
        }
    }
    let (a, m2) = (ctx.tensor(0)?, ctx.tensor(1)?);
    let r = match (ra, rb) {
        (3, 3) => {
            if at.shape[0] != bt.shape[0] {
                return runtime("grouped_mm: batched dimension has to match");
            }
            dot(ctx, &a, &m2, (&[0], &[0]), (&[2], &[1]))?
        }
        (2, 3) if groups == 0 || at.shape[0] == 0 => {
            let m = at.shape[0];
            ctx.b.splat(
                Literal::Int(0),
                &TensorType::new(at.dtype, [m, bt.shape[2]]),
            )
        }
        (2, 3) => {
            let ends = ctx.tensor(2)?;
            ragged_rows(&mut ctx.b, &a, &m2, &ends)?
        }
        (2, 2) => {
            // [m, k] x [k, g, n] contracting k, then [g, m, n].
            let ends = ctx.tensor(2)?;
            let s = spread(&mut ctx.b, &m2, &ends)?;
            let p = dot(ctx, &a, &s, (&[], &[]), (&[1], &[0]))?;
            ctx.b.transpose(&p, &[1, 0, 2])?
        }
        _ => {
            // 3-d x 2-d: [g, m, k] x [k, n] per group, column c kept from its group's product.
            let n = bt.shape[1];
            let ends = ctx.tensor(2)?;
            let p = dot(ctx, &a, &m2, (&[], &[]), (&[2], &[0]))?;
            let member = membership(&mut ctx.b, &ends, n)?;
            let b = &mut ctx.b;
            let m = at.shape[1];
            let member = b.transpose(&member, &[1, 0])?;
            let member = b.broadcast_in_dim(&member, &[groups, m, n], &[0, 2])?;
            let zero = b.full_like(&p, Literal::Int(0));
            let kept = b.select(&member, &p, &zero)?;
            let init = b.constant(Literal::Int(0), kept.dtype());
            b.reduce(&kept, &init, &[0], |b, x, y| {
                b.add(x, y).expect("same type")
            })
        }
    };
    one(ctx.b.convert(&r, out_dtype))
}

pub(crate) fn register(reg: &mut Registry) {
    reg.ops(&["_grouped_mm"], grouped_mm);
}
