//! A storage: the device memory behind one `c10::StorageImpl`, held as one flat PJRT buffer.
//!
//! PJRT buffers are immutable, so a write replaces the buffer; every view of the storage
//! sees the new contents because views hold the storage, never the buffer. In fused eager
//! mode the contents may be pending: an output of a deferred op not launched yet.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};

use tpurs_hlo::DType;
use tpurs_pjrt::Buffer;

/// Bytes held by the live storages of one device, and their peak.
#[derive(Debug, Default)]
pub struct DeviceMemory {
    allocated: AtomicU64,
    peak: AtomicU64,
}

impl DeviceMemory {
    fn add(&self, nbytes: usize) {
        let now = self.allocated.fetch_add(nbytes as u64, Relaxed) + nbytes as u64;
        self.peak.fetch_max(now, Relaxed);
    }

    /// Bytes held now.
    pub fn allocated(&self) -> u64 {
        self.allocated.load(Relaxed)
    }

    /// Most bytes held at once since creation or the last [`DeviceMemory::reset_peak`].
    pub fn peak(&self) -> u64 {
        self.peak.load(Relaxed)
    }

    /// Sets the peak to what is held now.
    pub fn reset_peak(&self) {
        self.peak.store(self.allocated(), Relaxed);
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
        self.memory.allocated.fetch_sub(self.nbytes as u64, Relaxed);
    }
}
