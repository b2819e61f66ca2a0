//! A storage: the device memory behind one `c10::StorageImpl`, held as one flat PJRT buffer.
//!
//! PJRT buffers are immutable, so a write replaces the buffer; every view of the storage
//! sees the new contents because views hold the storage, never the buffer.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};

use tpurs_hlo::DType;
use tpurs_pjrt::Buffer;

const MAX_DEVICES: usize = 64;
static ALLOCATED: [AtomicU64; MAX_DEVICES] = [const { AtomicU64::new(0) }; MAX_DEVICES];
static PEAK: [AtomicU64; MAX_DEVICES] = [const { AtomicU64::new(0) }; MAX_DEVICES];

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

/// Device memory of one storage. Created by the allocator or as an op output; freed when
/// torch frees the `StorageImpl`.
pub struct Storage {
    /// Device ordinal.
    pub device: usize,
    /// Size in bytes as torch sees it.
    pub nbytes: usize,
    flat: Mutex<Option<Flat>>,
}

impl Storage {
    /// A storage with no contents yet (reads as zeros).
    pub fn new(device: usize, nbytes: usize) -> Storage {
        let d = device.min(MAX_DEVICES - 1);
        let now = ALLOCATED[d].fetch_add(nbytes as u64, Relaxed) + nbytes as u64;
        PEAK[d].fetch_max(now, Relaxed);
        Storage {
            device,
            nbytes,
            flat: Mutex::new(None),
        }
    }

    /// A storage holding `buffer`.
    pub fn with_buffer(device: usize, buffer: Buffer, dtype: DType, numel: i64) -> Storage {
        let s = Storage::new(device, numel as usize * dtype.byte_size());
        s.set(Flat {
            buffer: Arc::new(buffer),
            dtype,
            numel,
        });
        s
    }

    /// The current flat buffer, if any.
    pub fn get(&self) -> Option<Flat> {
        self.flat.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Replaces the contents.
    pub fn set(&self, flat: Flat) {
        *self.flat.lock().unwrap_or_else(|e| e.into_inner()) = Some(flat);
    }
}

impl Drop for Storage {
    fn drop(&mut self) {
        ALLOCATED[self.device.min(MAX_DEVICES - 1)].fetch_sub(self.nbytes as u64, Relaxed);
    }
}

/// Bytes held by live storages, per device (devices 0..=highest used).
pub fn memory_allocated() -> Vec<u64> {
    ALLOCATED.iter().map(|a| a.load(Relaxed)).collect()
}

/// Peak bytes held per device since start (or the last reset).
pub fn max_memory_allocated() -> Vec<u64> {
    PEAK.iter().map(|a| a.load(Relaxed)).collect()
}

/// Resets the peak of `device` to the current value.
pub fn reset_peak(device: usize) {
    let d = device.min(MAX_DEVICES - 1);
    PEAK[d].store(ALLOCATED[d].load(Relaxed), Relaxed);
}
