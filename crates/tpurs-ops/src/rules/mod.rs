//! Lowering rules, one file per op family, and the helpers they share (broadcasting, type
//! promotion, dimension wrapping) so that no rule re-implements PyTorch's conventions.

use tpurs_hlo::{Builder, DType, Literal, TensorType, Value};

use crate::ctx::Ctx;
use crate::dtype::result_type;
use crate::error::{Error, Result};
use crate::table::Registry;

/// Registers `name` and `name.out` (for each name) of a unary special function `f`
/// computed by `special::special`; defined before the modules that use it.
macro_rules! unary {
    ($reg:expr, $f:ident, $($name:literal),+) => {
        $reg.ops(&[$($name, concat!($name, ".out")),+], |ctx| $crate::rules::special::special(ctx, $f));
    };
}

mod activations;
mod adaptive_pool;
mod advanced_index;
mod attention;
mod batch_norm;
mod bessel;
mod combine;
mod complex;
mod complex_inverse;
mod complex_math;
mod conv;
mod conv_patches;
mod ctc;
mod decomp;
mod distance;
mod division;
mod eigh;
mod elementwise;
mod embedding_bag;
mod erfc;
mod factory;
mod flat_index;
mod float_bits;
mod foreach;
mod fractional_pool;
mod fused_optim;
mod gated;
mod grad_scaling;
mod graph_only;
mod grid_sample;
mod group_norm;
mod grouped_mm;
mod histogram;
mod igamma;
mod index;
mod index_reduce;
mod integer;
mod jacobi;
mod linalg;
mod losses;
mod lu;
mod matmul;
mod matrix_exp;
mod modified_bessel;
mod nn;
mod norms;
mod pad;
mod polar;
mod polynomials;
mod pool;
mod random;
mod reduce;
mod rnn_cells;
mod running;
mod search;
mod segment;
mod shape;
mod softmax;
mod sort;
mod special;
mod svd;
mod unpool;
mod upsample;
mod upsample_aa;

/// Registers every family's rules.
pub(crate) fn register_all(reg: &mut Registry) {
    elementwise::register(reg);
    division::register(reg);
    factory::register(reg);
    foreach::register(reg);
    fused_optim::register(reg);
    grad_scaling::register(reg);
    random::register(reg);
    matmul::register(reg);
    grouped_mm::register(reg);
    linalg::register(reg);
    matrix_exp::register(reg);
    decomp::register(reg);
    eigh::register(reg);
    lu::register(reg);
    gated::register(reg);
    rnn_cells::register(reg);
    polynomials::register(reg);
    nn::register(reg);
    attention::register(reg);
    losses::register(reg);
    ctc::register(reg);
    flat_index::register(reg);
    float_bits::register(reg);
    embedding_bag::register(reg);
    activations::register(reg);
    adaptive_pool::register(reg);
    group_norm::register(reg);
    conv::register(reg);
    pool::register(reg);
    fractional_pool::register(reg);
    distance::register(reg);
    batch_norm::register(reg);
    reduce::register(reg);
    norms::register(reg);
    running::register(reg);
    search::register(reg);
    histogram::register(reg);
    segment::register(reg);
    softmax::register(reg);
    index::register(reg);
    advanced_index::register(reg);
    index_reduce::register(reg);
    shape::register(reg);
    sort::register(reg);
    svd::register(reg);
    special::register(reg);
    complex::register(reg);
    erfc::register(reg);
    bessel::register(reg);
    modified_bessel::register(reg);
    igamma::register(reg);
    integer::register(reg);
    upsample::register(reg);
    upsample_aa::register(reg);
    grid_sample::register(reg);
    pad::register(reg);
    unpool::register(reg);
    graph_only::register(reg);
    polar::register(reg);
    crate::graph::register(reg);
    crate::external::register(reg);
}

/// PyTorch's broadcast of two shapes, with its error message.
pub(crate) fn broadcast_shapes(a: &[i64], b: &[i64]) -> Result<Vec<i64>> {
    let n = a.len().max(b.len());
    let mut out = vec![0; n];
    for i in 0..n {
        let da = if i + a.len() >= n {
            a[i + a.len() - n]
        } else {
            1
        };
        let db = if i + b.len() >= n {
            b[i + b.len() - n]
        } else {
            1
        };
        out[i] = if da == db || db == 1 {
            da
        } else if da == 1 {
            db
        } else {
            return Err(Error::Runtime(format!(
                "The size of tensor a ({da}) must match the size of tensor b ({db}) at non-singleton dimension {i}"
            )));
        };
    }
    Ok(out)
}

/// The promoted dtype of the arguments `idxs` (tensors and numbers).
pub(crate) fn common_dtype(ctx: &Ctx, idxs: &[usize]) -> Result<DType> {
    let mut ops = Vec::new();
    for &i in idxs {
        if ctx.has(i) {
            ops.push((ctx.ty(i)?.dtype, ctx.participation(i, None)));
        }
    }
    Ok(result_type(&ops, ctx.default_float()))
}

/// Reads arguments `idxs`, converts them to `dtype` and broadcasts them to a common shape.
pub(crate) fn operands(ctx: &mut Ctx, idxs: &[usize], dtype: DType) -> Result<Vec<Value>> {
    let mut shape: Vec<i64> = Vec::new();
    for &i in idxs {
        shape = broadcast_shapes(&shape, &ctx.ty(i)?.shape)?;
    }
    idxs.iter()
        .map(|&i| {
            let v = ctx.tensor(i)?;
            let v = ctx.b.convert(&v, dtype);
            Ok(ctx.b.broadcast_to(&v, &shape)?)
        })
        .collect()
}

/// Converts values to `dtype` and broadcasts them to a common shape.
pub(crate) fn broadcast_all(b: &mut Builder, vs: &[Value], dtype: DType) -> Result<Vec<Value>> {
    let mut shape: Vec<i64> = Vec::new();
    for v in vs {
        shape = broadcast_shapes(&shape, v.shape())?;
    }
    vs.iter()
        .map(|v| {
            let v = b.convert(v, dtype);
            Ok(b.broadcast_to(&v, &shape)?)
        })
        .collect()
}

/// `Builder::while_loop` with fallible region builders: the first error either region hits
/// is returned (the region is finished with its arguments so the builder stays consistent).
pub(crate) fn try_while(
    b: &mut Builder,
    init: &[&Value],
    cond: impl FnOnce(&mut Builder, &[Value]) -> Result<Value>,
    body: impl FnOnce(&mut Builder, &[Value]) -> Result<Vec<Value>>,
) -> Result<Vec<Value>> {
    let (mut cond_err, mut body_err) = (None, None);
    let out = b.while_loop(
        init,
        |b, s| {
            cond(b, s).unwrap_or_else(|e| {
                cond_err = Some(e);
                b.constant(Literal::Bool(false), DType::Bool)
            })
        },
        |b, s| {
            body(b, s).unwrap_or_else(|e| {
                body_err = Some(e);
                s.to_vec()
            })
        },
    );
    match cond_err.or(body_err) {
        Some(e) => Err(e),
        None => Ok(out),
    }
}

/// An empty `(0,)` tensor of `d`: what an output torch does not compute returns (eval-mode
/// batch-norm statistics, eigenvectors not asked for, Q of a mode-"r" QR).
pub(crate) fn empty(b: &mut Builder, d: DType) -> Value {
    b.splat(Literal::Int(0), &TensorType::new(d, [0]))
}

/// Wraps a possibly negative dimension into `0..rank`, with PyTorch's `IndexError`.
pub(crate) fn wrap_dim(dim: i64, rank: usize) -> Result<usize> {
    let r = rank.max(1) as i64;
    if dim < -r || dim >= r {
        return Err(Error::Index(format!(
            "Dimension out of range (expected to be in range of [{}, {}], but got {dim})",
            -r,
            r - 1
        )));
    }
    Ok(if dim < 0 { dim + r } else { dim } as usize)
}

/// A constant of `like`'s shape and dtype.
pub(crate) fn full(b: &mut Builder, like: &Value, value: f64) -> Value {
    b.full_like(like, Literal::Float(value))
}

/// Converts integer and bool dtypes to the default float (for ops such as `exp`); float and
/// complex dtypes stay.
pub(crate) fn float_dtype(d: DType, default_float: DType) -> DType {
    if d.is_float() || d.is_complex() {
        d
    } else {
        default_float
    }
}

/// Results of a rule that returns one value.
pub(crate) fn one(v: Value) -> Result<Vec<crate::ctx::Out>> {
    Ok(vec![Some(v)])
}

/// `coeffs` (highest degree first) evaluated at `x` by Horner's rule (Cephes' `polevl`).
pub(crate) fn polevl(b: &mut Builder, x: &Value, coeffs: &[f64]) -> Result<Value> {
    let mut acc = full(b, x, coeffs[0]);
    for &c in &coeffs[1..] {
        let m = b.mul(&acc, x)?;
        let k = full(b, x, c);
        acc = b.add(&m, &k)?;
    }
    Ok(acc)
}
