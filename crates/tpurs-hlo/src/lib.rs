//! A typed builder that emits StableHLO programs as MLIR text (generic op syntax).
//!
//! The builder knows nothing about PyTorch or PJRT: it only checks the shapes it is
//! given and writes text that `PJRT_Client_Compile` accepts with program format "mlir".

mod builder;
mod complex;
mod contract;
mod control;
mod float8;
mod ops;
mod types;

pub use builder::{Builder, Precision, Value};
pub use complex::FftKind;
pub use contract::ConvDims;
pub use float8::float8_bits;
pub use ops::{CompareDir, GatherDims, ScatterDims};
pub use types::{DType, Literal, TensorType};

/// Errors raised while building a program (shape or dtype constraints violated).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// An op was given operands whose shapes or dtypes break one of its constraints.
    #[error("{op}: {msg}")]
    Invalid {
        /// The StableHLO op being built.
        op: &'static str,
        /// What was wrong.
        msg: String,
    },
}

/// Result of a builder call.
pub type Result<T> = std::result::Result<T, Error>;

pub(crate) fn invalid<T>(op: &'static str, msg: impl Into<String>) -> Result<T> {
    Err(Error::Invalid {
        op,
        msg: msg.into(),
    })
}
