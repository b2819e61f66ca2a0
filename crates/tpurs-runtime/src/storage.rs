//! A storage: the device memory behind one `c10::StorageImpl`, held as one flat PJRT buffer.
//!
//! PJRT buffers are immutable, so a write replaces the buffer; every view of the storage
//! sees the new contents because views hold the storage, never the buffer. In fused eager
//! mode the contents may be pending: an output of a deferred op not launched yet.

use std::ffi::c_void;
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
}

impl Storage {
    /// A storage with no contents yet.
    pub fn new(device: usize, nbytes: usize) -> Storage {
        let d = device.min(MAX_DEVICES - 1);
        let now = ALLOCATED[d].fetch_add(nbytes as u64, Relaxed) + nbytes as u64;
        PEAK[d].fetch_max(now, Relaxed);
        Storage {
            device,
            nbytes,
            contents: Mutex::new(Contents::Empty),
        }
    }

    /// A storage holding `contents`.
    pub fn with_contents(device: usize, nbytes: usize, contents: Contents) -> Storage {
        let s = Storage::new(device, nbytes);
        s.set_contents(contents);
        s
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

    /// Hands a new reference to torch as a raw pointer.
    pub fn into_raw(self: Arc<Self>) -> *mut c_void {
        Arc::into_raw(self) as *mut c_void
    }

    /// A new `Arc` for a pointer torch holds (torch keeps its own reference).
    ///
    /// # Safety
    /// `p` must come from [`Storage::into_raw`] and still be held by torch.
    pub unsafe fn arc_from_raw(p: *const c_void) -> Arc<Storage> {
        let p = p as *const Storage;
        Arc::increment_strong_count(p);
        Arc::from_raw(p)
    }

    /// Releases torch's reference.
    ///
    /// # Safety
    /// `p` must come from [`Storage::into_raw`]; called once per pointer.
    pub unsafe fn release_raw(p: *mut c_void) {
        drop(Arc::from_raw(p as *const Storage));
    }
}

impl Drop for Storage {
    fn drop(&mut self) {
        ALLOCATED[self.device.min(MAX_DEVICES - 1)].fetch_sub(self.nbytes as u64, Relaxed);
    }
}

/// Bytes held by live storages, per device.
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
