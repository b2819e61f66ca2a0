//! Runtime errors, classified by the Python exception they become.

/// Which Python exception an error becomes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(i32)]
pub enum ErrorKind {
    /// `RuntimeError`
    Runtime = 1,
    /// `IndexError`
    Index = 2,
    /// `ValueError`
    Value = 3,
    /// `TypeError`
    Type = 4,
    /// `NotImplementedError`
    NotImplemented = 5,
    /// `torch.OutOfMemoryError` (a `RuntimeError`, what CUDA raises)
    OutOfMemory = 6,
    /// A call the op's rule does not cover: the CPU fallback takes it (`NotImplementedError`
    /// when fallbacks are forbidden).
    Uncovered = 7,
}

/// A runtime error.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The plugin failed (compile, transfer, execute); carries the plugin's message.
    #[error(transparent)]
    Pjrt(#[from] tpurs_pjrt::Error),
    /// A lowering rule refused the call.
    #[error(transparent)]
    Lower(#[from] tpurs_ops::Error),
    /// The runtime is not initialised.
    #[error("tpurs is not initialised: import tpurs (or torch) first")]
    NotInitialised,
    /// A request that is invalid for this runtime (bad device, unsupported dtype, ...).
    #[error("{1}")]
    Invalid(ErrorKind, String),
}

impl Error {
    /// The Python exception class this error maps to.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::Lower(e) => match e {
                tpurs_ops::Error::Index(_) => ErrorKind::Index,
                tpurs_ops::Error::Value(_) => ErrorKind::Value,
                tpurs_ops::Error::Type(_) => ErrorKind::Type,
                tpurs_ops::Error::NotImplemented(_) => ErrorKind::NotImplemented,
                tpurs_ops::Error::Uncovered(_) => ErrorKind::Uncovered,
                _ => ErrorKind::Runtime,
            },
            Error::Invalid(k, _) => *k,
            // absl's RESOURCE_EXHAUSTED: the device (or host) memory ran out.
            Error::Pjrt(tpurs_pjrt::Error::Plugin { code: 8, .. }) => ErrorKind::OutOfMemory,
            _ => ErrorKind::Runtime,
        }
    }
}

/// Result of a runtime call.
pub type Result<T> = std::result::Result<T, Error>;

/// Shorthand for an `Error::Invalid` of kind `Runtime`.
pub fn invalid<T>(kind: ErrorKind, msg: impl Into<String>) -> Result<T> {
    Err(Error::Invalid(kind, msg.into()))
}
