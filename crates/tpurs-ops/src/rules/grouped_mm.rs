//! `_grouped_mm(self, mat2, offs, bias, out_dtype)`: the grouped matmul of mixture-of-experts
//! layers (`torch.nn.functional.grouped_mm`; Transformers' "grouped_mm" experts run on it).
//! `offs` holds the groups' cumulative ends along the ragged dimension:
//! - 2-d x 3-d: rows of `self` in groups, group `g` times `mat2[g]` (`[m, n]`);
//! - 2-d x 2-d: the contraction dimension in groups, one product per group (`[g, m, n]`);
//! - 3-d x 2-d: columns of `mat2` in groups, group `g` from `self[g]` (`[m, n]`);
//! - 3-d x 3-d: a batched matmul, no `offs`.
//!
//! No host read, and the sizes may change without a new program. Ragged rows and a ragged
//! contraction run as a loop over tiles of up to `T` positions of one group (`T` about the
//! mean group size), each tile one small dot with its group's operand: the work of the
//! product itself, whatever the groups. Ragged columns compute every group's product and
//! keep each column's own (`groups` times the work). Positions past the last end give zeros.

use tpurs_hlo::{Builder, CompareDir, DType, Literal, TensorType, Value};

use super::combine::add_c;
use super::matmul::dot;
use super::reduce::scan;
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

/// Element `i` (a 0-d i64) of the 1-d `x`, as a 0-d value.
fn element(b: &mut Builder, x: &Value, i: &Value) -> Result<Value> {
    let v = b.dynamic_slice(x, std::slice::from_ref(i), &[1]);
    Ok(b.reshape(&v, &[])?)
}

/// A 0-d i64 constant.
fn i64s(b: &mut Builder, v: i64) -> Value {
    b.constant(Literal::Int(v), DType::I64)
}

/// The tiles of a ragged dimension of length `len` in `groups` groups ending at `ends`:
/// each group's positions cut into tiles of `t` (about the mean group size, a power of two
/// in 8..256), numbered group after group.
struct Tiles {
    t: i64,
    /// Each group's first position (`[groups]`).
    starts: Value,
    /// Each group's end, clamped to `0..len`.
    ends: Value,
    /// Each group's tile count, and the cumulative counts.
    count: Value,
    tile_end: Value,
    /// The number of tiles (0-d).
    total: Value,
}

impl Tiles {
    fn new(b: &mut Builder, ends: &Value, len: i64) -> Result<Tiles> {
        let groups = ends.shape()[0];
        let mean = ((len + groups - 1) / groups).clamp(8, 256) as u64;
        let t = (mean.next_power_of_two() as i64).min(len);
        let ends = b.convert(ends, DType::I64);
        let zero = b.full_like(&ends, Literal::Int(0));
        let len_v = b.full_like(&ends, Literal::Int(len));
        let ends = b.max(&ends, &zero)?;
        let ends = b.min(&ends, &len_v)?;
        let head = b.slice(&ends, &[0], &[groups - 1], &[1])?;
        let zero1 = b.splat(Literal::Int(0), &TensorType::new(DType::I64, [1]));
        let starts = b.concatenate(&[&zero1, &head], 0)?;
        let sizes = b.sub(&ends, &starts)?;
        let sizes = b.max(&sizes, &zero)?;
        let t_m1 = b.full_like(&sizes, Literal::Int(t - 1));
        let t_v = b.full_like(&sizes, Literal::Int(t));
        let count = b.add(&sizes, &t_m1)?;
        let count = b.div(&count, &t_v)?;
        let tile_end = scan(b, &count, 0, Literal::Int(0), add_c)?;
        let last = i64s(b, groups - 1);
        let total = element(b, &tile_end, &last)?;
        Ok(Tiles {
            t,
            starts,
            ends,
            count,
            tile_end,
            total,
        })
    }

    /// Tile `i`'s group and first position (0-d values).
    fn locate(&self, b: &mut Builder, i: &Value) -> Result<(Value, Value)> {
        let groups = self.tile_end.shape()[0];
        // Its group: how many groups' tiles end at or before it.
        let i_g = b.broadcast_in_dim(i, &[groups], &[])?;
        let before = b.compare(CompareDir::Le, &self.tile_end, &i_g)?;
        let before = b.convert(&before, DType::I64);
        let init = i64s(b, 0);
        let g = b.reduce(&before, &init, &[0], add_c);
        let end = element(b, &self.tile_end, &g)?;
        let count = element(b, &self.count, &g)?;
        let first_tile = b.sub(&end, &count)?;
        let within = b.sub(i, &first_tile)?;
        let t = i64s(b, self.t);
        let offset = b.mul(&within, &t)?;
        let start = element(b, &self.starts, &g)?;
        let pos = b.add(&start, &offset)?;
        Ok((g, pos))
    }

    /// Runs `body(state, group, first position)` once per tile; the state's first value is
    /// the loop counter, added here.
    fn run(
        &self,
        b: &mut Builder,
        state: &[&Value],
        body: impl FnOnce(&mut Builder, &[Value], Value, Value) -> Result<Vec<Value>>,
    ) -> Result<Vec<Value>> {
        let first = i64s(b, 0);
        let mut init = vec![&first];
        init.extend(state);
        let out = try_while(
            b,
            &init,
            |b, s| Ok(b.compare(CompareDir::Lt, &s[0], &self.total)?),
            |b, s| {
                let (g, pos) = self.locate(b, &s[0])?;
                let mut next = body(b, &s[1..], g, pos)?;
                let one = i64s(b, 1);
                next.insert(0, b.add(&s[0], &one)?);
                Ok(next)
            },
        )?;
        Ok(out[1..].to_vec())
    }
}

/// `x` (`[len, w]`) padded with `t` zero rows and flattened, so that the loop slices rows
/// out of it row-major: an operand that arrives transposed (Transformers passes its expert
/// weights transposed) was otherwise read through its transposed layout by every
/// iteration, 10x slower.
fn flat_rows(b: &mut Builder, x: &Value, t: i64) -> Result<Value> {
    let (len, w) = (x.shape()[0], x.shape()[1]);
    let pad = b.splat(Literal::Int(0), &TensorType::new(x.dtype(), [t, w]));
    let x = b.concatenate(&[x, &pad], 0)?;
    Ok(b.reshape(&x, &[(len + t) * w])?)
}

/// Rows `pos..pos + t` of a `flat_rows` operand of width `w`.
fn rows_at(b: &mut Builder, flat: &Value, pos: &Value, t: i64, w: i64) -> Result<Value> {
    let w_v = i64s(b, w);
    let at = b.mul(pos, &w_v)?;
    let rows = b.dynamic_slice(flat, &[at], &[t * w]);
    Ok(b.reshape(&rows, &[t, w])?)
}

/// `a` (`[m, k]`, rows in groups ending at `ends`) times `w[g]` (`[g, k, n]`) for the rows of
/// group `g`, in the accumulation dtype, one tile of rows per iteration. A tile may run past
/// its group's end; the next group's tiles, which come later, rewrite those rows, and rows
/// past the last group are zeroed at the end.
fn ragged_rows(b: &mut Builder, a: &Value, w: &Value, ends: &Value) -> Result<Value> {
    let (m, k, n, groups) = (a.shape()[0], a.shape()[1], w.shape()[2], w.shape()[0]);
    let wide = opmath(a.dtype());
    let tiles = Tiles::new(b, ends, m)?;
    let t = tiles.t;
    let a = flat_rows(b, a, t)?;
    let w = b.reshape(w, &[groups * k * n])?;
    let out = b.splat(Literal::Int(0), &TensorType::new(wide, [m + t, n]));
    let done = tiles.run(b, &[&out, &a, &w], |b, s, g, row| {
        let (out, a, w) = (&s[0], &s[1], &s[2]);
        let x = rows_at(b, a, &row, t, k)?;
        let k_v = i64s(b, k);
        let first = b.mul(&g, &k_v)?;
        let wg = rows_at(b, w, &first, k, n)?;
        let y = b.dot_general_to(&x, &wg, (&[], &[]), (&[1], &[0]), wide)?;
        let zero = i64s(b, 0);
        let out = b.dynamic_update_slice(out, &y, &[row, zero]);
        Ok(vec![out, a.clone(), w.clone()])
    })?;
    let out = b.slice(&done[0], &[0, 0], &[m, n], &[1, 1])?;
    let rows = b.iota(&TensorType::new(DType::I64, [m, n]), 0);
    let last = i64s(b, groups - 1);
    let total_rows = element(b, &tiles.ends, &last)?;
    let total_rows = b.broadcast_in_dim(&total_rows, &[m, n], &[])?;
    let inside = b.compare(CompareDir::Lt, &rows, &total_rows)?;
    let zero = b.full_like(&out, Literal::Int(0));
    Ok(b.select(&inside, &out, &zero)?)
}

/// `a` (`[m, k]`) times `c` (`[k, n]`) with the contraction dimension in groups ending at
/// `ends`: `[g, m, n]`, one product per group, in the accumulation dtype. One tile of the
/// contraction per iteration, its positions past the group's end masked out, added into its
/// group's product (the weight gradient of a ragged-rows product).
fn ragged_contraction(b: &mut Builder, a: &Value, c: &Value, ends: &Value) -> Result<Value> {
    let (m, k, n, groups) = (a.shape()[0], a.shape()[1], c.shape()[1], ends.shape()[0]);
    let wide = opmath(a.dtype());
    let tiles = Tiles::new(b, ends, k)?;
    let t = tiles.t;
    let at = b.transpose(a, &[1, 0])?;
    let at = flat_rows(b, &at, t)?;
    let c = flat_rows(b, c, t)?;
    let out = b.splat(Literal::Int(0), &TensorType::new(wide, [groups, m, n]));
    let done = tiles.run(b, &[&out, &at, &c], |b, s, g, pos| {
        let (out, at, c) = (&s[0], &s[1], &s[2]);
        let x = rows_at(b, at, &pos, t, m)?;
        let y = rows_at(b, c, &pos, t, n)?;
        // Positions of the tile past its group's end belong to the next group.
        let end = element(b, &tiles.ends, &g)?;
        let p = b.iota(&TensorType::new(DType::I64, [t, n]), 0);
        let pos_b = b.broadcast_in_dim(&pos, &[t, n], &[])?;
        let p = b.add(&p, &pos_b)?;
        let end_b = b.broadcast_in_dim(&end, &[t, n], &[])?;
        let mine = b.compare(CompareDir::Lt, &p, &end_b)?;
        let zero_y = b.full_like(&y, Literal::Int(0));
        let y = b.select(&mine, &y, &zero_y)?;
        let prod = b.dot_general_to(&x, &y, (&[], &[]), (&[0], &[0]), wide)?;
        let prod = b.reshape(&prod, &[1, m, n])?;
        let zero = i64s(b, 0);
        let at_g = [g, zero.clone(), zero];
        let cur = b.dynamic_slice(out, &at_g, &[1, m, n]);
        let sum = b.add(&cur, &prod)?;
        let out = b.dynamic_update_slice(out, &sum, &at_g);
        Ok(vec![out, at.clone(), c.clone()])
    })?;
    Ok(done[0].clone())
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
        (2, 2) if groups == 0 || at.shape[1] == 0 => {
            let shape = [groups, at.shape[0], bt.shape[1]];
            ctx.b
                .splat(Literal::Int(0), &TensorType::new(at.dtype, shape))
        }
        (2, 2) => {
            let ends = ctx.tensor(2)?;
            ragged_contraction(&mut ctx.b, &a, &m2, &ends)?
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
