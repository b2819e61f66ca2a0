//! Views, conversions and factories as plain values, for graphs only. In eager mode the
//! bridge makes real views that share storage, and torch's own kernels build factories
//! from `empty` + `fill_`, so these names are not registered with the dispatcher; in a
//! functional graph from aot_autograd they are ordinary value-to-value ops.

use tpurs_hlo::{Builder, DType, Literal, TensorType, Value};

use super::elementwise::copy;
use super::factory::arange_of;
use super::shape::{contiguous_strides, diagonal_view, select_view, slice_view, View};
use super::{common_dtype, one, operands, wrap_dim};
use crate::ctx::{Arg, Ctx, Out};
use crate::dtype::{cast, opmath};
use crate::eager::TensorMeta;
use crate::error::{runtime, Result};
use crate::table::Registry;
use crate::view::{read_view, Start};

/// The view `v` of the contiguous value `x`.
fn read(b: &mut Builder, x: &Value, v: &View) -> Result<Value> {
    let flat = b.reshape(x, &[x.ty.numel()])?;
    let meta = TensorMeta {
        dtype: x.dtype(),
        sizes: v.sizes.clone(),
        strides: v.strides.clone(),
        offset: v.offset,
        slot: 0,
    };
    read_view(b, &flat, &meta, &Start::Fixed(v.offset))
}

/// Sizes with one `-1` inferred from `numel`, with torch's error for impossible shapes.
fn infer_sizes(sizes: &[i64], numel: i64) -> Result<Vec<i64>> {
    let known: i64 = sizes.iter().filter(|&&n| n != -1).product();
    let mut out = sizes.to_vec();
    if let Some(i) = sizes.iter().position(|&n| n == -1) {
        if known == 0 || numel % known != 0 {
            return runtime(format!(
                "shape '{sizes:?}' is invalid for input of size {numel}"
            ));
        }
        out[i] = numel / known;
    } else if known != numel {
        return runtime(format!(
            "shape '{sizes:?}' is invalid for input of size {numel}"
        ));
    }
    Ok(out)
}

fn view(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let x = ctx.tensor(0)?;
    let sizes = infer_sizes(&ctx.int_list(1)?, x.ty.numel())?;
    one(ctx.b.reshape(&x, &sizes)?)
}

fn permute_of(ctx: &mut Ctx, x: &Value, dims: &[i64]) -> Result<Value> {
    let perm = dims
        .iter()
        .map(|&d| Ok(wrap_dim(d, x.rank())? as i64))
        .collect::<Result<Vec<_>>>()?;
    Ok(ctx.b.transpose(x, &perm)?)
}

fn swap(ctx: &mut Ctx, d0: i64, d1: i64) -> Result<Vec<Out>> {
    let x = ctx.tensor(0)?;
    let mut perm: Vec<i64> = (0..x.rank() as i64).collect();
    if x.rank() > 0 {
        perm.swap(wrap_dim(d0, x.rank())?, wrap_dim(d1, x.rank())?);
    }
    one(ctx.b.transpose(&x, &perm)?)
}

fn transpose(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let (d0, d1) = (ctx.int(1)?, ctx.int(2)?);
    swap(ctx, d0, d1)
}

fn t(ctx: &mut Ctx) -> Result<Vec<Out>> {
    if ctx.ty(0)?.rank() > 2 {
        return runtime("t() expects a tensor with <= 2 dimensions");
    }
    swap(ctx, 0, -1)
}

fn permute(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let x = ctx.tensor(0)?;
    let dims = ctx.int_list(1)?;
    one(permute_of(ctx, &x, &dims)?)
}

fn expand(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let x = ctx.tensor(0)?;
    let mut sizes = ctx.int_list(1)?;
    let lead = sizes.len().saturating_sub(x.rank());
    for (i, s) in sizes.iter_mut().enumerate().skip(lead) {
        if *s == -1 {
            *s = x.shape()[i - lead];
        }
    }
    one(ctx.b.broadcast_to(&x, &sizes)?)
}

fn unsqueeze(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let x = ctx.tensor(0)?;
    let d = wrap_dim(ctx.int(1)?, x.rank() + 1)?;
    let mut sizes = x.shape().to_vec();
    sizes.insert(d, 1);
    one(ctx.b.reshape(&x, &sizes)?)
}

/// `squeeze`, `squeeze.dim`, `squeeze.dims`: drops the named size-1 dims (all when none).
fn squeeze(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let x = ctx.tensor(0)?;
    let dims: Vec<usize> = match ctx.arg(1) {
        Arg::None => (0..x.rank()).collect(),
        _ => ctx
            .int_list(1)?
            .iter()
            .map(|&d| wrap_dim(d, x.rank()))
            .collect::<Result<_>>()?,
    };
    let sizes: Vec<i64> = (0..x.rank())
        .filter(|d| !(dims.contains(d) && x.shape()[*d] == 1))
        .map(|d| x.shape()[d])
        .collect();
    one(ctx.b.reshape(&x, &sizes)?)
}

fn slice(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let x = ctx.tensor(0)?;
    let v = slice_view(
        x.shape(),
        ctx.int_or(1, 0)?,
        ctx.opt_int(2)?,
        ctx.opt_int(3)?,
        ctx.int_or(4, 1)?,
    )?;
    one(read(&mut ctx.b, &x, &v)?)
}

fn select(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let x = ctx.tensor(0)?;
    let v = select_view(x.shape(), ctx.int(1)?, ctx.int(2)?)?;
    one(read(&mut ctx.b, &x, &v)?)
}

fn diagonal(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let x = ctx.tensor(0)?;
    let v = diagonal_view(
        x.shape(),
        ctx.int_or(1, 0)?,
        ctx.int_or(2, 0)?,
        ctx.int_or(3, 1)?,
    )?;
    one(read(&mut ctx.b, &x, &v)?)
}

fn as_strided(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let x = ctx.tensor(0)?;
    let v = View {
        sizes: ctx.int_list(1)?,
        strides: ctx.int_list(2)?,
        offset: ctx.int_or(3, 0)?,
    };
    one(read(&mut ctx.b, &x, &v)?)
}

/// `unfold(self, dimension, size, step)`: windows of `size` along `dimension` as a new
/// last dim.
fn unfold(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let x = ctx.tensor(0)?;
    let d = wrap_dim(ctx.int(1)?, x.rank())?;
    let (size, step) = (ctx.int(2)?, ctx.int(3)?);
    let shape = x.shape().to_vec();
    let n = shape.get(d).copied().unwrap_or(1);
    if size > n || step <= 0 {
        return runtime(format!(
            "maximum size for tensor at dimension {d} is {n} but size is {size}"
        ));
    }
    let strides = contiguous_strides(&shape);
    let mut sizes = shape.clone();
    let mut vstrides = strides.clone();
    if !shape.is_empty() {
        sizes[d] = (n - size) / step + 1;
        vstrides[d] = strides[d] * step;
    }
    sizes.push(size);
    vstrides.push(strides.get(d).copied().unwrap_or(1));
    let v = View {
        sizes,
        strides: vstrides,
        offset: 0,
    };
    one(read(&mut ctx.b, &x, &v)?)
}

/// Consecutive pieces of `sizes` along `dim`.
fn pieces(ctx: &mut Ctx, x: &Value, sizes: &[i64], dim: usize) -> Result<Vec<Out>> {
    let mut out = Vec::new();
    let mut start = 0;
    for &n in sizes {
        let v = slice_view(x.shape(), dim as i64, Some(start), Some(start + n), 1)?;
        out.push(Some(read(&mut ctx.b, x, &v)?));
        start += n;
    }
    Ok(out)
}

/// `split.Tensor(self, split_size, dim)` and `split_with_sizes(self, split_sizes, dim)`.
fn split(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let x = ctx.tensor(0)?;
    let dim = wrap_dim(ctx.int_or(2, 0)?, x.rank())?;
    let n = x.shape()[dim];
    let sizes = match ctx.arg(1) {
        Arg::Int(k) => {
            let k = (*k).max(1);
            let count = ((n + k - 1) / k).max(1);
            (0..count).map(|i| k.min(n - i * k)).collect()
        }
        _ => ctx.int_list(1)?,
    };
    pieces(ctx, &x, &sizes, dim)
}

fn unbind(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let x = ctx.tensor(0)?;
    let dim = wrap_dim(ctx.int_or(1, 0)?, x.rank())?;
    let mut out = Vec::new();
    for i in 0..x.shape()[dim] {
        let v = select_view(x.shape(), dim as i64, i)?;
        out.push(Some(read(&mut ctx.b, &x, &v)?));
    }
    Ok(out)
}

/// `_to_copy(self, dtype?, ...)`: a conversion (devices and layouts are the graph's).
fn to_copy(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let x = ctx.tensor(0)?;
    let dtype = ctx.opt_dtype(1)?.unwrap_or(x.dtype());
    one(cast(&mut ctx.b, &x, dtype)?)
}

/// The dtype a factory fills with: the `dtype` argument, else the number's own kind.
fn fill_dtype(ctx: &Ctx, dtype_arg: usize, value_arg: usize) -> Result<DType> {
    if let Some(d) = ctx.opt_dtype(dtype_arg)? {
        return Ok(d);
    }
    Ok(match ctx.scalar_value(value_arg)? {
        Literal::Complex(..) => ctx.default_float().to_complex(),
        Literal::Float(_) => ctx.default_float(),
        Literal::Int(_) => DType::I64,
        // CPU infers int64 for an int, which such a number overflows.
        Literal::UInt(_) => {
            return runtime("value cannot be converted to type int64_t without overflow")
        }
        Literal::Bool(_) => DType::Bool,
    })
}

fn filled(ctx: &mut Ctx, value_arg: usize, dtype: DType, sizes: Vec<i64>) -> Result<Vec<Out>> {
    let v = ctx.tensor(value_arg)?;
    let v = ctx.b.convert(&v, dtype);
    one(ctx.b.broadcast_to(&v, &sizes)?)
}

fn constant(ctx: &mut Ctx, value: f64, dtype: DType, sizes: Vec<i64>) -> Result<Vec<Out>> {
    one(ctx
        .b
        .splat(Literal::Float(value), &TensorType::new(dtype, sizes)))
}

/// `full(size, fill_value, dtype?, ...)`.
fn full(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let dtype = fill_dtype(ctx, 2, 1)?;
    let sizes = ctx.int_list(0)?;
    filled(ctx, 1, dtype, sizes)
}

/// `scalar_tensor(s, dtype?, ...)`.
fn scalar_tensor(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let dtype = ctx.opt_dtype(1)?.unwrap_or(ctx.default_float());
    filled(ctx, 0, dtype, vec![])
}

/// `full_like(self, fill_value, dtype?, ...)`.
fn full_like(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let x = ctx.ty(0)?;
    let dtype = ctx.opt_dtype(2)?.unwrap_or(x.dtype);
    filled(ctx, 1, dtype, x.shape)
}

/// `zeros_like` / `empty_like` / `ones_like(self, dtype?, ...)`.
fn like(ctx: &mut Ctx, value: f64) -> Result<Vec<Out>> {
    let x = ctx.ty(0)?;
    let dtype = ctx.opt_dtype(1)?.unwrap_or(x.dtype);
    constant(ctx, value, dtype, x.shape)
}

/// `empty.memory_format(size, dtype?, ...)` / `zeros` / `ones`: new memory reads as zeros.
fn sized(ctx: &mut Ctx, value: f64) -> Result<Vec<Out>> {
    let dtype = ctx.opt_dtype(1)?.unwrap_or(ctx.default_float());
    let sizes = ctx.int_list(0)?;
    constant(ctx, value, dtype, sizes)
}

/// `new_zeros` / `new_empty` / `new_ones(self, size, dtype?, ...)`.
fn new_sized(ctx: &mut Ctx, value: f64) -> Result<Vec<Out>> {
    let dtype = ctx.opt_dtype(2)?.unwrap_or(ctx.ty(0)?.dtype);
    let sizes = ctx.int_list(1)?;
    constant(ctx, value, dtype, sizes)
}

/// `new_full(self, size, fill_value, dtype?, ...)`.
fn new_full(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let dtype = ctx.opt_dtype(3)?.unwrap_or(ctx.ty(0)?.dtype);
    let sizes = ctx.int_list(1)?;
    filled(ctx, 2, dtype, sizes)
}

/// `fill.Scalar(self, value)` / `fill.Tensor`: a tensor like `self` holding `value`.
fn fill(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let x = ctx.ty(0)?;
    filled(ctx, 1, x.dtype, x.shape)
}

/// `arange(end, dtype?, ...)`, `arange.start(start, end, dtype?)`,
/// `arange.start_step(start, end, step, dtype?, ...)`.
fn arange(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let (start, end, step, dtype_at) = match ctx.overload() {
        "start" => (
            ctx.scalar_value(0)?,
            ctx.scalar_value(1)?,
            Literal::Int(1),
            2,
        ),
        "start_step" => (
            ctx.scalar_value(0)?,
            ctx.scalar_value(1)?,
            ctx.scalar_value(2)?,
            3,
        ),
        _ => (Literal::Int(0), ctx.scalar_value(0)?, Literal::Int(1), 1),
    };
    let is_float = |v: Literal| matches!(v, Literal::Float(_));
    let dtype = match ctx.opt_dtype(dtype_at)? {
        Some(d) => d,
        None if is_float(start) || is_float(end) || is_float(step) => ctx.default_float(),
        None => DType::I64,
    };
    one(arange_of(&mut ctx.b, start, end, step, dtype)?)
}

/// `prims::broadcast_in_dim(a, shape, broadcast_dimensions)`.
fn prims_broadcast_in_dim(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let x = ctx.tensor(0)?;
    let (shape, dims) = (ctx.int_list(1)?, ctx.int_list(2)?);
    one(ctx.b.broadcast_in_dim(&x, &shape, &dims)?)
}

/// `prims::convert_element_type(a, dtype)`.
/// `prims::fma(a, b, c) = a * b + c`, which dynamo writes for `addcmul_`/`addcdiv_` with a
/// value and for `add_` with a tensor alpha; computed in opmath, as those ops are.
fn prims_fma(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let dtype = common_dtype(ctx, &[0, 1, 2])?;
    let vs = operands(ctx, &[0, 1, 2], opmath(dtype))?;
    let product = ctx.b.mul(&vs[0], &vs[1])?;
    let sum = ctx.b.add(&product, &vs[2])?;
    one(cast(&mut ctx.b, &sum, dtype)?)
}

fn prims_convert(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let x = ctx.tensor(0)?;
    let dtype = ctx.opt_dtype(1)?.unwrap_or(x.dtype());
    one(cast(&mut ctx.b, &x, dtype)?)
}

pub(crate) fn register(reg: &mut Registry) {
    let ops: &[(&[&'static str], crate::table::Rule)] = &[
        (&["view", "_unsafe_view", "view_copy", "reshape"], view),
        (
            &["alias", "detach", "lift", "lift_fresh", "lift_fresh_copy"],
            |ctx| one(ctx.tensor(0)?),
        ),
        (&["t", "t_copy"], t),
        (&["transpose.int", "transpose_copy.int"], transpose),
        (&["permute", "permute_copy"], permute),
        (&["expand", "expand_copy"], expand),
        (&["unsqueeze", "unsqueeze_copy"], unsqueeze),
        (&["squeeze", "squeeze.dim", "squeeze.dims"], squeeze),
        (&["slice.Tensor", "slice_copy.Tensor"], slice),
        (&["select.int", "select_copy.int"], select),
        (&["diagonal", "diagonal_copy"], diagonal),
        (&["as_strided", "as_strided_copy"], as_strided),
        (&["unfold", "unfold_copy"], unfold),
        (&["split.Tensor", "split_with_sizes"], split),
        (&["unbind.int"], unbind),
        (&["_to_copy"], to_copy),
        (&["copy"], copy),
        (&["full"], full),
        (&["full_like"], full_like),
        (&["scalar_tensor"], scalar_tensor),
        (&["zeros_like", "empty_like"], |ctx| like(ctx, 0.0)),
        (&["ones_like"], |ctx| like(ctx, 1.0)),
        (&["empty.memory_format", "zeros"], |ctx| sized(ctx, 0.0)),
        (&["ones"], |ctx| sized(ctx, 1.0)),
        (&["new_zeros", "new_empty"], |ctx| new_sized(ctx, 0.0)),
        (&["new_ones"], |ctx| new_sized(ctx, 1.0)),
        (&["new_full"], new_full),
        (&["fill.Scalar", "fill.Tensor"], fill),
        (&["arange", "arange.start", "arange.start_step"], arange),
        // Primitives some of torch's decompositions produce.
        (&["prims::broadcast_in_dim"], prims_broadcast_in_dim),
        (&["prims::convert_element_type"], prims_convert),
        (&["prims::fma"], prims_fma),
    ];
    for (names, rule) in ops {
        reg.ops(names, *rule).graph_only();
    }
}
