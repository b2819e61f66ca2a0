//! Matrix products: `mm`, `bmm`, `addmm`, `baddbmm`, `mv`, `addmv` and `dot` (with their
//! in-place and `out=` forms). `matmul` and `linear` are CompositeImplicit and decompose into
//! these. Products use `dot_general`; bf16/f16 accumulate in f32 and round once, like PyTorch.

use tpurs_hlo::{CompareDir, DType, Literal, Value};

use super::one;
use crate::ctx::{Ctx, Out};
use crate::dtype::{opmath, torch_name};
use crate::error::{runtime, Error, Result};
use crate::table::Registry;

/// Fails like CPU PyTorch for dtypes its matmul kernels lack (bool) or mismatched operands.
fn check_dtypes(ctx: &Ctx, idxs: &[usize], kernel: &str) -> Result<DType> {
    let d0 = ctx.ty(idxs[0])?.dtype;
    for &i in &idxs[1..] {
        let d = ctx.ty(i)?.dtype;
        if d != d0 {
            return runtime(format!(
                "expected m1 and m2 to have the same dtype, but got: {} != {}",
                crate::dtype::cpp_name(d0),
                crate::dtype::cpp_name(d)
            ));
        }
    }
    if d0 == DType::Bool {
        return Err(Error::NotImplemented(format!(
            "\"{kernel}\" not implemented for 'Bool'"
        )));
    }
    Ok(d0)
}

/// `dot_general` that accumulates bf16/f16 in f32 and rounds the result back.
pub(crate) fn dot(
    ctx: &mut Ctx,
    lhs: &Value,
    rhs: &Value,
    batch: (&[i64], &[i64]),
    contract: (&[i64], &[i64]),
) -> Result<Value> {
    let dtype = lhs.dtype();
    let p = ctx
        .b
        .dot_general_to(lhs, rhs, batch, contract, opmath(dtype))?;
    Ok(ctx.b.convert(&p, dtype))
}

/// Checks `mat1 @ mat2` shapes of two matrices with PyTorch's messages (`op` prefixes them).
fn check_mm(ctx: &Ctx, i: usize, j: usize, op: &str) -> Result<(i64, i64)> {
    let (a, b) = (ctx.ty(i)?.shape, ctx.ty(j)?.shape);
    for (name, s) in [("self", &a), ("mat2", &b)] {
        if s.len() != 2 {
            let name = if op == "addmm" && name == "self" {
                "mat1"
            } else {
                name
            };
            return runtime(format!(
                "{op}: {name} must be a matrix, got {}-D tensor",
                s.len()
            ));
        }
    }
    if a[1] != b[0] {
        return runtime(format!(
            "{op}: mat1 and mat2 shapes cannot be multiplied ({}x{} and {}x{})",
            a[0], a[1], b[0], b[1]
        ));
    }
    Ok((a[0], b[1]))
}

/// Checks `batch1 @ batch2` shapes of two 3-d tensors with PyTorch's messages.
fn check_bmm(ctx: &Ctx, i: usize, j: usize) -> Result<()> {
    let (a, b) = (ctx.ty(i)?.shape, ctx.ty(j)?.shape);
    if a.len() != 3 {
        return runtime("batch1 must be a 3D tensor");
    }
    if b.len() != 3 {
        return runtime("batch2 must be a 3D tensor");
    }
    if b[0] != a[0] || b[1] != a[2] {
        return runtime(format!(
            "Expected size for first two dimensions of batch2 tensor to be: [{}, {}] but got: [{}, {}].",
            a[0], a[2], b[0], b[1]
        ));
    }
    Ok(())
}

/// PyTorch's `expand` error when `from` cannot broadcast to `to`.
fn check_expand(from: &[i64], to: &[i64]) -> Result<()> {
    let fmt = |v: &[i64]| format!("{v:?}");
    if from.len() > to.len() {
        return runtime(format!(
            "The expanded size of the tensor ({}) isn't allowed in a leading, non-existing dimension 0",
            to.len()
        ));
    }
    let off = to.len() - from.len();
    for (i, &f) in from.iter().enumerate() {
        let t = to[i + off];
        if f != t && f != 1 {
            return runtime(format!(
                "The expanded size of the tensor ({t}) must match the existing size ({f}) at non-singleton dimension {}.  Target sizes: {}.  Tensor sizes: {}",
                i + off,
                fmt(to),
                fmt(from)
            ));
        }
    }
    Ok(())
}

/// `beta * self + alpha * prod` with self broadcast to `prod`'s shape; `beta == 0` ignores
/// `self` (NaNs included), like PyTorch.
fn add_scaled(
    ctx: &mut Ctx,
    prod: Value,
    self_i: usize,
    beta_i: usize,
    alpha_i: usize,
) -> Result<Value> {
    let dtype = prod.dtype();
    let shape = prod.shape().to_vec();
    let s = ctx.tensor(self_i)?;
    let s = ctx.b.convert(&s, dtype);
    check_expand(s.shape(), &shape)?;
    let s = ctx.b.broadcast_to(&s, &shape)?;
    let scale = |ctx: &mut Ctx, i: usize| -> Result<Option<Value>> {
        if !ctx.has(i) {
            return Ok(None);
        }
        let v = ctx.tensor(i)?;
        let v = ctx.b.convert(&v, dtype);
        Ok(Some(ctx.b.broadcast_to(&v, &shape)?))
    };
    let prod = match scale(ctx, alpha_i)? {
        Some(alpha) => ctx.b.mul(&prod, &alpha)?,
        None => prod,
    };
    let term = match scale(ctx, beta_i)? {
        Some(beta) => {
            let scaled = ctx.b.mul(&s, &beta)?;
            let zero = ctx.b.full_like(&beta, Literal::Int(0));
            let is_zero = ctx.b.compare(CompareDir::Eq, &beta, &zero)?;
            ctx.b.select(&is_zero, &zero, &scaled)?
        }
        None => s,
    };
    Ok(ctx.b.add(&term, &prod)?)
}

/// `mm(self, mat2)`.
fn mm(ctx: &mut Ctx) -> Result<Vec<Out>> {
    check_mm(ctx, 0, 1, "mm")?;
    check_dtypes(ctx, &[0, 1], "addmm_impl_cpu_")?;
    let (a, b) = (ctx.tensor(0)?, ctx.tensor(1)?);
    one(dot(ctx, &a, &b, (&[], &[]), (&[1], &[0]))?)
}

/// `bmm(self, mat2)`.
fn bmm(ctx: &mut Ctx) -> Result<Vec<Out>> {
    check_bmm(ctx, 0, 1)?;
    check_dtypes(ctx, &[0, 1], "bmm")?;
    let (a, b) = (ctx.tensor(0)?, ctx.tensor(1)?);
    one(dot(ctx, &a, &b, (&[0], &[0]), (&[2], &[1]))?)
}

/// `addmm(self, mat1, mat2, beta, alpha)`.
fn addmm(ctx: &mut Ctx) -> Result<Vec<Out>> {
    check_mm(ctx, 1, 2, "addmm")?;
    check_dtypes(ctx, &[1, 2, 0], "addmm_impl_cpu_")?;
    let (a, b) = (ctx.tensor(1)?, ctx.tensor(2)?);
    let p = dot(ctx, &a, &b, (&[], &[]), (&[1], &[0]))?;
    one(add_scaled(ctx, p, 0, 3, 4)?)
}

/// `baddbmm(self, batch1, batch2, beta, alpha)`.
fn baddbmm(ctx: &mut Ctx) -> Result<Vec<Out>> {
    check_bmm(ctx, 1, 2)?;
    check_dtypes(ctx, &[1, 2, 0], "baddbmm")?;
    let (a, b) = (ctx.tensor(1)?, ctx.tensor(2)?);
    let p = dot(ctx, &a, &b, (&[0], &[0]), (&[2], &[1]))?;
    one(add_scaled(ctx, p, 0, 3, 4)?)
}

/// `addbmm(self, batch1, batch2, beta, alpha)`: the batch of products summed into one
/// matrix (one dot contracting the batch and inner dims).
fn addbmm(ctx: &mut Ctx) -> Result<Vec<Out>> {
    check_bmm(ctx, 1, 2)?;
    check_dtypes(ctx, &[1, 2, 0], "addbmm")?;
    let (a, b) = (ctx.tensor(1)?, ctx.tensor(2)?);
    let p = dot(ctx, &a, &b, (&[], &[]), (&[0, 2], &[0, 1]))?;
    one(add_scaled(ctx, p, 0, 3, 4)?)
}

/// Checks a matrix-vector product's shapes (`mat` at `m`, `vec` at `v`; `input` for addmv).
fn check_mv(ctx: &Ctx, m: usize, v: usize, input: Option<usize>) -> Result<()> {
    let (a, b) = (ctx.ty(m)?.shape, ctx.ty(v)?.shape);
    if a.len() != 2 || b.len() != 1 {
        return runtime(format!(
            "vector + matrix @ vector expected, got {}, {}, {}",
            input.map_or(Ok(1), |i| ctx.ty(i).map(|t| t.rank()))?,
            a.len(),
            b.len()
        ));
    }
    if a[1] != b[0] {
        let inp = match input {
            Some(i) => format!("{:?}", ctx.ty(i)?.shape)
                .replace(['[', ']'], "")
                .replace(", ", "x"),
            None => a[0].to_string(),
        };
        return runtime(format!(
            "size mismatch, got input ({inp}), mat ({}x{}), vec ({})",
            a[0], a[1], b[0]
        ));
    }
    Ok(())
}

/// `mv(self, vec)`.
fn mv(ctx: &mut Ctx) -> Result<Vec<Out>> {
    check_mv(ctx, 0, 1, None)?;
    check_dtypes(ctx, &[0, 1], "addmv_impl_cpu")?;
    let (a, b) = (ctx.tensor(0)?, ctx.tensor(1)?);
    one(dot(ctx, &a, &b, (&[], &[]), (&[1], &[0]))?)
}

/// `addmv(self, mat, vec, beta, alpha)`.
fn addmv(ctx: &mut Ctx) -> Result<Vec<Out>> {
    check_mv(ctx, 1, 2, Some(0))?;
    check_dtypes(ctx, &[1, 2, 0], "addmv_impl_cpu")?;
    let (a, b) = (ctx.tensor(1)?, ctx.tensor(2)?);
    let p = dot(ctx, &a, &b, (&[], &[]), (&[1], &[0]))?;
    one(add_scaled(ctx, p, 0, 3, 4)?)
}

/// `dot(self, tensor)` of two vectors; also `vdot`, which conjugates `self`.
fn dot_rule(ctx: &mut Ctx) -> Result<Vec<Out>> {
    let op = ctx.name.split('.').next().unwrap_or("dot");
    let (a, b) = (ctx.ty(0)?, ctx.ty(1)?);
    if a.rank() != 1 || b.rank() != 1 {
        return runtime(format!(
            "1D tensors expected, but got {}D and {}D tensors",
            a.rank(),
            b.rank()
        ));
    }
    if a.shape[0] != b.shape[0] {
        return runtime(format!(
            "inconsistent tensor size, expected tensor [{}] and src [{}] to have the same number of elements, but got {} and {} elements respectively",
            a.shape[0], b.shape[0], a.shape[0], b.shape[0]
        ));
    }
    if a.dtype != b.dtype {
        return runtime(format!(
            "{op} : expected both vectors to have same dtype, but found {} and {}",
            torch_name(a.dtype),
            torch_name(b.dtype)
        ));
    }
    check_dtypes(ctx, &[0, 1], op)?;
    let (x, y) = (ctx.tensor(0)?, ctx.tensor(1)?);
    let x = if op == "vdot" {
        super::complex::conjugate(&mut ctx.b, &x)?
    } else {
        x
    };
    one(dot(ctx, &x, &y, (&[], &[]), (&[0], &[0]))?)
}

/// Registers the family.
pub(crate) fn register(reg: &mut Registry) {
    // `dot_general` multiplies complex operands as complex numbers.
    reg.ops(&["mm", "mm.out"], mm).complex();
    reg.ops(&["bmm", "bmm.out"], bmm).complex();
    reg.ops(&["addmm", "addmm_", "addmm.out"], addmm).complex();
    reg.ops(&["baddbmm", "baddbmm_", "baddbmm.out"], baddbmm)
        .complex();
    reg.ops(&["addbmm", "addbmm_", "addbmm.out"], addbmm)
        .complex();
    reg.ops(&["mv", "mv.out"], mv).complex();
    reg.ops(&["addmv", "addmv_", "addmv.out"], addmv).complex();
    reg.ops(&["dot", "dot.out", "vdot", "vdot.out"], dot_rule)
        .complex();
}
