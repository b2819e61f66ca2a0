//! A storage: the device memory behind one `c10::StorageImpl`, held as one flat PJRT buffer.
//!
//! PJRT buffers are immutable, so a write replaces the buffer; every view of the storage
//! sees the new contents because views hold the storage, never the buffer. In fused eager
//! mode the contents may be pending: an output of a deferred op not launched yet.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};

use tpurs_hlo::DType;
use tpurs_pjrt::Buffer;

/// One statistic as torch's allocators report it: what is held now, the most held at once,
/// and the totals allocated and freed (since creation or the last reset).
#[derive(Debug, Default)]
struct Stat {
    current: AtomicU64,
    peak: AtomicU64,
    allocated: AtomicU64,
    freed: AtomicU64,
}

impl Stat {
    fn increase(&self, n: u64) {
        let now = self.current.fetch_add(n, Relaxed) + n;
        self.peak.fetch_max(now, Relaxed);
        self.allocated.fetch_add(n, Relaxed);
    }

    fn decrease(&self, n: u64) {
        self.current.fetch_sub(n, Relaxed);
        self.freed.fetch_add(n, Relaxed);
    }

    fn read(&self) -> StatValues {
        StatValues {
            current: self.current.load(Relaxed),
            peak: self.peak.load(Relaxed),
            allocated: self.allocated.load(Relaxed),
            freed: self.freed.load(Relaxed),
        }
    }
}

/// A read of one [`DeviceMemory`] statistic.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StatValues {
    /// Held now.
    pub current: u64,
    /// Most held at once.
    pub peak: u64,
    /// Total allocated.
    pub allocated: u64,
    /// Total freed.
    pub freed: u64,
}

/// The live storages of one device: their bytes and their number.
#[derive(Debug, Default)]
pub struct DeviceMemory {
    bytes: Stat,
    count: Stat,
}

impl DeviceMemory {
    fn add(&self, nbytes: usize) {
        self.bytes.increase(nbytes as u64);
        self.count.increase(1);
    }

    fn remove(&self, nbytes: usize) {
        self.bytes.decrease(nbytes as u64);
        self.count.decrease(1);
    }

    /// Bytes held now.
    pub fn allocated(&self) -> u64 {
        self.bytes.current.load(Relaxed)
    }

    /// Most bytes held at once since creation or the last [`DeviceMemory::reset_peak`].
    pub fn peak(&self) -> u64 {
        self.bytes.peak.load(Relaxed)
    }

    /// Byte statistics.
    pub fn bytes(&self) -> StatValues {
        self.bytes.read()
    }

    /// Storage-count statistics.
    pub fn count(&self) -> StatValues {
        self.count.read()
    }

    /// Sets the peaks to what is held now.
    pub fn reset_peak(&self) {
        for s in [&self.bytes, &self.count] {
            s.peak.store(s.current.load(Relaxed), Relaxed);
        }
    }

    /// Zeroes the totals allocated and freed.
    pub fn reset_accumulated(&self) {
        for s in [&self.bytes, &self.count] {
            s.allocated.store(0, Relaxed);
            s.freed.store(0, Relaxed);
        }
    }
}

/// The flat buffer of a storage and its element type.
#[derive(Clone)]
pub struct Flat {
    /// The buffer (shape `[numel]`).
    pub buffer: Arc<Buffer>,
    /// Its element type.
    pub dtype: DType,
    /// Its element count.
    pub numel: i64,
    /// The buffer's bytes, when the host has them anyway (a small integer tensor copied
    /// from the CPU): index checks read them instead of waiting for the device. A write
    /// replaces the whole `Flat`, so they never go stale.
    pub known: Option<Arc<[u8]>>,
}

impl Flat {
    /// A buffer whose contents only the device knows.
    pub fn new(buffer: Arc<Buffer>, dtype: DType, numel: i64) -> Flat {
        Flat {
            buffer,
            dtype,
            numel,
            known: None,
        }
    }
}

/// What a storage holds.
#[derive(Clone)]
pub enum Contents {
    /// Nothing written yet (reads as zeros).
    Empty,
    /// A computed buffer.
    Ready(Flat),
    /// Output `node` of the deferred batch `batch`, of this type.
    Pending {
        /// Batch id.
        batch: u64,
        /// Node index in the batch.
        node: u32,
        /// Element type.
        dtype: DType,
        /// Element count.
        numel: i64,
    },
    /// Never computed: the program that was to produce it failed (why). Reads raise.
    Lost(Arc<str>),
}

/// Device memory of one storage. Created by the allocator or as an op output; torch holds
/// one `Arc` reference (as a raw pointer) and frees it with the `StorageImpl`.
pub struct Storage {
    /// Device ordinal.
    pub device: usize,
    /// Size in bytes as torch sees it.
    pub nbytes: usize,
    contents: Mutex<Contents>,
    memory: Arc<DeviceMemory>,
}

impl Storage {
    /// A storage with no contents yet, counted in `memory` (its device's) while it lives.
    pub(crate) fn new(memory: Arc<DeviceMemory>, device: usize, nbytes: usize) -> Storage {
        memory.add(nbytes);
        Storage {
            device,
            nbytes,
            contents: Mutex::new(Contents::Empty),
            memory,
        }
    }

    /// The current contents.
    pub fn contents(&self) -> Contents {
        self.contents
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Replaces the contents.
    pub fn set_contents(&self, c: Contents) {
        *self.contents.lock().unwrap_or_else(|e| e.into_inner()) = c;
    }

    /// Replaces the contents with a computed buffer.
    pub fn set(&self, flat: Flat) {
        self.set_contents(Contents::Ready(flat));
    }
}

impl Drop for Storage {
    fn drop(&mut self) {
        self.memory.remove(self.nbytes);
    }
}
