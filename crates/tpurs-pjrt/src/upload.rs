//! Uploads that read host memory after the call returns (`kImmutableUntilTransferCompletes`):
//! the caller hands over ownership of the memory, and the plugin copies it while the host
//! goes on. This is what `non_blocking=True` copies from pinned memory use.

use std::sync::Arc;

use crate::buffer::{await_event, destroy_event, Buffer, ElementType};
use crate::client::{Client, ClientInner};
use crate::error::Result;
use crate::ffi::{self, Args};

/// Host bytes whose owner keeps them alive and unchanged until it is dropped.
pub struct HostBytes {
    ptr: *const u8,
    len: usize,
    _owner: Box<dyn Send>,
}

// SAFETY: the bytes are only read, and `owner` (which is `Send`) keeps them alive.
unsafe impl Send for HostBytes {}

impl HostBytes {
    /// # Safety
    /// `ptr` must point to `len` readable bytes that stay valid and are not written for as
    /// long as `owner` lives.
    pub unsafe fn new(ptr: *const u8, len: usize, owner: Box<dyn Send>) -> Self {
        HostBytes {
            ptr,
            len,
            _owner: owner,
        }
    }

    /// Their length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The bytes.
    pub fn as_slice(&self) -> &[u8] {
        if self.len == 0 {
            return &[];
        }
        // SAFETY: `new`'s contract keeps `len` bytes at `ptr` readable while `self` lives.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }
}

/// An upload in flight: holds the host bytes until the plugin is done reading them.
/// Dropping it waits for that.
pub struct PendingUpload {
    client: Arc<ClientInner>,
    event: *mut ffi::PJRT_Event,
    bytes: Option<HostBytes>,
}

// SAFETY: a PJRT event may be polled, awaited and destroyed from any thread; the client
// it belongs to is kept alive.
unsafe impl Send for PendingUpload {}

impl PendingUpload {
    /// Whether the plugin no longer reads the host bytes.
    pub fn is_done(&self) -> bool {
        let mut a = ffi::PJRT_Event_IsReady_Args::new();
        a.event = self.event;
        // SAFETY: live event owned by `self`. A failed query counts as not done: dropping
        // waits, which is always safe.
        unsafe { pjrt_call!(self.client.api, PJRT_Event_IsReady, &mut a) }.is_ok() && a.is_ready
    }

    /// Waits until the plugin no longer reads the host bytes and releases them.
    pub fn wait(mut self) -> Result<()> {
        let event = std::mem::replace(&mut self.event, std::ptr::null_mut());
        // SAFETY: live event owned by `self`, consumed here (Drop sees NULL).
        let status =
            unsafe { await_event(self.client.api, event, "PJRT_Client_BufferFromHostBuffer") };
        self.bytes = None;
        status
    }
}

impl Drop for PendingUpload {
    fn drop(&mut self) {
        if !self.event.is_null() {
            // SAFETY: live event owned by `self`; the bytes are released only after it.
            unsafe {
                let mut a = ffi::PJRT_Event_Await_Args::new();
                a.event = self.event;
                let _ = pjrt_call!(self.client.api, PJRT_Event_Await, &mut a);
                destroy_event(self.client.api, self.event);
            }
        }
    }
}

impl Client {
    /// Starts copying `bytes` (a dense row-major array) to device `device`; the buffer can be
    /// used at once (the plugin orders its readers after the copy). With no upload left in
    /// flight (the plugin copied during the call) the second value is `None`.
    pub fn buffer_from_host_async(
        &self,
        bytes: HostBytes,
        ty: ElementType,
        dims: &[i64],
        device: usize,
    ) -> Result<(Buffer, Option<PendingUpload>)> {
        // SAFETY: `bytes` stays alive and unwritten until the done event fires: it moves into
        // the returned `PendingUpload` (or is dropped here after a refused call, when the
        // plugin holds no reference).
        let (buffer, done) = unsafe {
            self.start_upload(
                bytes.ptr,
                bytes.len,
                ty,
                dims,
                device,
                ffi::PJRT_HostBufferSemantics_kImmutableUntilTransferCompletes,
            )
        }?;
        let pending = (!done.is_null()).then(|| PendingUpload {
            client: self.inner.clone(),
            event: done,
            bytes: Some(bytes),
        });
        Ok((buffer?, pending))
    }
}
