//! The tpurs device runtime: one PJRT client, storages that own device buffers, the
//! compile cache, op launch, host transfers, the device generator and metrics, plus the C
//! ABI (`ffi`) that the C++ torch bridge calls.
//!
//! Nothing here knows torch's C++ types: the bridge describes each call with plain C
//! structs, so one build of this crate serves every torch version.

mod cache;
pub mod collectives;
mod defer;
mod error;
pub mod ffi;
mod graph;
mod launch;
mod metrics;
mod programs;
mod runtime;
mod storage;
mod transfer;

pub use cache::cache_len;
pub use error::{Error, ErrorKind, Result};
pub use graph::register_graph;
pub use metrics::{metrics_snapshot, record_fallback, reset_metrics, MetricsSnapshot};
pub use runtime::RngState;
pub use runtime::{eager_mode, init, runtime, set_eager_mode, EagerMode, Runtime};
pub use storage::Storage;
pub use storage::{max_memory_allocated, memory_allocated, reset_peak};
