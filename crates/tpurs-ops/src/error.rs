//! The error type of lowering; each variant maps to the Python exception CPU PyTorch raises.

/// A lowering error. The variant decides the Python exception type.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Maps to `RuntimeError` (shape mismatches, dtype mismatches, device mismatches).
    #[error("{0}")]
    Runtime(String),
    /// Maps to `IndexError` (dimension or index out of range).
    #[error("{0}")]
    Index(String),
    /// Maps to `ValueError`.
    #[error("{0}")]
    Value(String),
    /// Maps to `TypeError` (wrong argument kinds or unsupported dtypes).
    #[error("{0}")]
    Type(String),
    /// Maps to `NotImplementedError`: what CPU PyTorch raises itself (a dtype its kernel
    /// does not handle).
    #[error("{0}")]
    NotImplemented(String),
    /// A valid call this rule does not cover (complex values where the rule is real-only):
    /// the bridge runs it on the CPU like an op with no rule, or raises
    /// `NotImplementedError` when `TPURS_FALLBACK=error`.
    #[error("{0}")]
    Uncovered(String),
    /// A builder constraint was violated: a bug in a rule, reported as `RuntimeError`.
    #[error("tpurs internal lowering error: {0}")]
    Hlo(#[from] tpurs_hlo::Error),
}

/// Result of lowering.
pub type Result<T> = std::result::Result<T, Error>;

/// Shorthand for a `RuntimeError`.
pub fn runtime<T>(msg: impl Into<String>) -> Result<T> {
    Err(Error::Runtime(msg.into()))
}
