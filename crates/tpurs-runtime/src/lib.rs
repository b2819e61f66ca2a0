//! The tpurs device runtime: a [`Runtime`] value holding one PJRT client, storages that own
//! device buffers, the compile cache, op launch, host transfers, the device generator and
//! metrics, plus the C ABI (`abi`) that the C++ torch bridge calls with a runtime pointer.
//!
//! Nothing here knows torch's C++ types: the bridge describes each call with plain C
//! structs, so one build of this crate serves every torch version.

pub mod abi;
mod cache;
pub mod collectives;
mod defer;
mod error;
mod host_numbers;
mod known;
mod launch;
mod metrics;
mod profile;
mod programs;
mod runtime;
mod storage;
mod transfer;

pub use error::{Error, ErrorKind, Result};
pub use metrics::MetricsSnapshot;
pub use profile::{Span, SpanKind};
pub use runtime::{EagerMode, RngState, Runtime};
pub use storage::{DeviceMemory, StatValues, Storage};

#[cfg(test)]
mod tests;
