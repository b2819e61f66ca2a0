//! Device-side checks: conditions CPU PyTorch raises on (an index out of range) that only
//! the data can tell. A rule computes the condition inside its own program, beside its
//! result, as one extra `i64[2]` output `[failed, offending value]`; the runtime reads it at
//! the next point where the host waits anyway and raises there (at the op itself in
//! launch-blocking mode), as CUDA's device-side assertions do. No extra launch, no sync.
//! The few conditions PyTorch itself reads on the host on every device (normal's std) are
//! read at the op instead ([`Check::at_op`]). An index the host already knows (one just
//! copied from the CPU, as `x[[1, 2]]` makes) is checked at the op, on the host, before the
//! program runs ([`Check::host`]).
//! `TORCH_TPU_ENABLE_DEBUG_CHECKS=0` leaves them out of programs.

use std::sync::OnceLock;

use tpurs_hlo::{Builder, CompareDir, DType, Literal, TensorType, Value};

use crate::error::{Error, Result};

/// The Python exception a failed check raises.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CheckKind {
    /// `IndexError`
    Index,
    /// `RuntimeError`
    Runtime,
}

/// What a failed check raises: `message` with `{}` replaced by the offending value.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Check {
    /// The exception type.
    pub kind: CheckKind,
    /// The message (CPU PyTorch's wording), `{}` standing for the offending value.
    pub message: String,
    /// Read at the op itself, not at the next host wait: PyTorch waits for this condition
    /// on every device (normal's `std.min().ge(0).item()`), so code relies on the error
    /// coming from the call.
    pub at_op: bool,
    /// The range check of one tensor argument's elements, for the runtime to evaluate on
    /// the host when it knows them.
    pub host: Option<HostRange>,
}

/// "Every element of tensor argument `arg` (item `item` of a list) lies in `lo..hi` or
/// equals `ignore`".
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct HostRange {
    /// Argument index.
    pub arg: usize,
    /// Item of a list argument.
    pub item: Option<usize>,
    /// Lowest allowed value.
    pub lo: i64,
    /// One past the highest allowed value.
    pub hi: i64,
    /// A value allowed besides (a loss's `ignore_index`).
    pub ignore: Option<i64>,
}

impl Check {
    /// The error for a failed check whose offending value is `value`.
    pub fn error(&self, value: i64) -> Error {
        let msg = self.message.replace("{}", &value.to_string());
        match self.kind {
            CheckKind::Index => Error::Index(msg),
            CheckKind::Runtime => Error::Runtime(msg),
        }
    }
}

/// Whether programs carry checks (`TORCH_TPU_ENABLE_DEBUG_CHECKS`, on unless `0`).
pub fn enabled() -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| std::env::var("TORCH_TPU_ENABLE_DEBUG_CHECKS").as_deref() != Ok("0"))
}

/// `[failed, first offending element]` (`i64[2]`) for "every element of `idx` lies in
/// `lo..hi`"; `None` for an empty `idx`.
pub(crate) fn out_of_range(
    b: &mut Builder,
    idx: &Value,
    lo: i64,
    hi: i64,
) -> Result<Option<Value>> {
    let n = idx.ty.numel();
    if n == 0 {
        return Ok(None);
    }
    let flat = b.convert(idx, DType::I64);
    let flat = b.reshape(&flat, &[n])?;
    let (low, high) = (
        b.full_like(&flat, Literal::Int(lo)),
        b.full_like(&flat, Literal::Int(hi)),
    );
    let below = b.compare(CompareDir::Lt, &flat, &low)?;
    let above = b.compare(CompareDir::Ge, &flat, &high)?;
    let bad = b.or(&below, &above)?;
    // The first bad position (n when none), then the element there.
    let pos = b.iota(&TensorType::new(DType::I64, [n]), 0);
    let none = b.full_like(&pos, Literal::Int(n));
    let at = b.select(&bad, &pos, &none)?;
    let init = b.constant(Literal::Int(n), DType::I64);
    let first = b.reduce(&at, &init, &[0], |b, x, y| b.min(x, y).expect("same types"));
    let first_b = b.broadcast_in_dim(&first, &[n], &[])?;
    let here = b.compare(CompareDir::Eq, &pos, &first_b)?;
    let zero = b.full_like(&flat, Literal::Int(0));
    let picked = b.select(&here, &flat, &zero)?;
    let init = b.constant(Literal::Int(0), DType::I64);
    let value = b.reduce(&picked, &init, &[0], |b, x, y| {
        b.add(x, y).expect("same types")
    });
    let n_c = b.constant(Literal::Int(n), DType::I64);
    let failed = b.compare(CompareDir::Lt, &first, &n_c)?;
    let failed = b.convert(&failed, DType::I64);
    let (failed, value) = (b.reshape(&failed, &[1])?, b.reshape(&value, &[1])?);
    Ok(Some(b.concatenate(&[&failed, &value], 0)?))
}

/// `[failed, 0]` (`i64[2]`) for "the 0-d predicate `ok` holds".
pub(crate) fn holds(b: &mut Builder, ok: &Value) -> Result<Value> {
    let failed = b.not(ok);
    let failed = b.convert(&failed, DType::I64);
    let failed = b.reshape(&failed, &[1])?;
    let zero = b.splat(Literal::Int(0), &TensorType::new(DType::I64, [1]));
    Ok(b.concatenate(&[&failed, &zero], 0)?)
}
