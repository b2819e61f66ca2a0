//! Counters reported by `torch.tpu.metrics()`.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Mutex;

/// One runtime's counters (relaxed atomics: they are statistics, not synchronisation).
#[derive(Default)]
pub(crate) struct Metrics {
    pub op_launches: AtomicU64,
    pub compiles: AtomicU64,
    pub graph_compiles: AtomicU64,
    pub cache_hits: AtomicU64,
    pub cache_misses: AtomicU64,
    pub compile_ns: AtomicU64,
    pub tier2_hits: AtomicU64,
    pub tier2_misses: AtomicU64,
    pub tier3_hits: AtomicU64,
    pub tier3_misses: AtomicU64,
    pub cache_rejected: AtomicU64,
    pub h2d_bytes: AtomicU64,
    pub d2h_bytes: AtomicU64,
    pub d2d_bytes: AtomicU64,
    pub collectives: AtomicU64,
    pub donated_buffers: AtomicU64,
    pub fallbacks: Mutex<BTreeMap<String, u64>>,
}

pub(crate) fn bump(counter: &AtomicU64, by: u64) {
    counter.fetch_add(by, Relaxed);
}

impl Metrics {
    /// Counts one CPU fallback of `op`; returns the new count for that op.
    pub fn record_fallback(&self, op: &str) -> u64 {
        let mut f = self.fallbacks.lock().unwrap_or_else(|e| e.into_inner());
        let n = f.entry(op.to_string()).or_insert(0);
        *n += 1;
        *n
    }

    /// Reads every counter.
    pub fn snapshot(&self) -> MetricsSnapshot {
        let m = self;
        MetricsSnapshot {
            op_launches: m.op_launches.load(Relaxed),
            compiles: m.compiles.load(Relaxed),
            graph_compiles: m.graph_compiles.load(Relaxed),
            cache_hits: m.cache_hits.load(Relaxed),
            cache_misses: m.cache_misses.load(Relaxed),
            compile_seconds: m.compile_ns.load(Relaxed) as f64 * 1e-9,
            tier2_hits: m.tier2_hits.load(Relaxed),
            tier2_misses: m.tier2_misses.load(Relaxed),
            tier3_hits: m.tier3_hits.load(Relaxed),
            tier3_misses: m.tier3_misses.load(Relaxed),
            cache_rejected: m.cache_rejected.load(Relaxed),
            bytes_to_device: m.h2d_bytes.load(Relaxed),
            bytes_to_host: m.d2h_bytes.load(Relaxed),
            bytes_device_to_device: m.d2d_bytes.load(Relaxed),
            collectives: m.collectives.load(Relaxed),
            donated_buffers: m.donated_buffers.load(Relaxed),
            fallbacks: m.fallbacks.lock().map(|f| f.clone()).unwrap_or_default(),
        }
    }

    /// Zeroes every counter.
    pub fn reset(&self) {
        let m = self;
        for c in [
            &m.op_launches,
            &m.compiles,
            &m.graph_compiles,
            &m.cache_hits,
            &m.cache_misses,
            &m.compile_ns,
            &m.tier2_hits,
            &m.tier2_misses,
            &m.tier3_hits,
            &m.tier3_misses,
            &m.cache_rejected,
            &m.h2d_bytes,
            &m.d2h_bytes,
            &m.d2d_bytes,
            &m.collectives,
            &m.donated_buffers,
        ] {
            c.store(0, Relaxed);
        }
        if let Ok(mut f) = m.fallbacks.lock() {
            f.clear();
        }
    }
}

/// A copy of every counter.
#[derive(Clone, Debug, Default)]
pub struct MetricsSnapshot {
    /// Programs launched (op executions).
    pub op_launches: u64,
    /// Programs compiled.
    pub compiles: u64,
    /// Graphs compiled by the `torch.compile` backend.
    pub graph_compiles: u64,
    /// Compile-cache hits.
    pub cache_hits: u64,
    /// Compile-cache misses.
    pub cache_misses: u64,
    /// Seconds spent compiling.
    pub compile_seconds: f64,
    /// Programs loaded from the node-shared cache directory (tier 2).
    pub tier2_hits: u64,
    /// Programs the node-shared cache directory did not have.
    pub tier2_misses: u64,
    /// Programs loaded from the persistent cache directory (tier 3).
    pub tier3_hits: u64,
    /// Programs the persistent cache directory did not have.
    pub tier3_misses: u64,
    /// Cache entries rejected as corrupt or unloadable (then recompiled).
    pub cache_rejected: u64,
    /// Bytes copied host to device.
    pub bytes_to_device: u64,
    /// Bytes copied device to host.
    pub bytes_to_host: u64,
    /// Bytes copied between devices.
    pub bytes_device_to_device: u64,
    /// Collectives launched across devices.
    pub collectives: u64,
    /// Input buffers a fused program took over for its outputs (their old values were dead).
    pub donated_buffers: u64,
    /// CPU fallbacks per op.
    pub fallbacks: BTreeMap<String, u64>,
}
