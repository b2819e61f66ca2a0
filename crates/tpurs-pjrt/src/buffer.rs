//! Device buffers and element types.

use std::ffi::c_void;
use std::sync::Arc;

use crate::client::{checked_byte_len, Api, ClientInner};
use crate::error::{Error, Result};
use crate::ffi::{self, Args};

/// Array element type (the `PJRT_Buffer_Type` values this crate supports).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ElementType {
    /// Boolean, one byte per element.
    Pred,
    /// Signed 8-bit integer.
    S8,
    /// Signed 16-bit integer.
    S16,
    /// Signed 32-bit integer.
    S32,
    /// Signed 64-bit integer.
    S64,
    /// Unsigned 8-bit integer.
    U8,
    /// Unsigned 16-bit integer.
    U16,
    /// Unsigned 32-bit integer.
    U32,
    /// Unsigned 64-bit integer.
    U64,
    /// IEEE half precision.
    F16,
    /// IEEE single precision.
    F32,
    /// IEEE double precision.
    F64,
    /// bfloat16.
    BF16,
    /// Complex of two f32 (real, imaginary).
    C64,
    /// Complex of two f64 (real, imaginary).
    C128,
    /// 8-bit float, 5 exponent and 2 mantissa bits.
    F8E5M2,
    /// 8-bit float, 4 exponent and 3 mantissa bits, finite.
    F8E4M3FN,
    /// 8-bit float, 5 exponent and 2 mantissa bits, finite, unsigned zero.
    F8E5M2FNUZ,
    /// 8-bit float, 4 exponent and 3 mantissa bits, finite, unsigned zero.
    F8E4M3FNUZ,
}

impl ElementType {
    /// Bytes per element in the dense host representation.
    pub fn byte_size(self) -> usize {
        match self {
            ElementType::Pred | ElementType::S8 | ElementType::U8 => 1,
            ElementType::F8E5M2
            | ElementType::F8E4M3FN
            | ElementType::F8E5M2FNUZ
            | ElementType::F8E4M3FNUZ => 1,
            ElementType::S16 | ElementType::U16 | ElementType::F16 | ElementType::BF16 => 2,
            ElementType::S32 | ElementType::U32 | ElementType::F32 => 4,
            ElementType::S64 | ElementType::U64 | ElementType::F64 | ElementType::C64 => 8,
            ElementType::C128 => 16,
        }
    }

    /// The `PJRT_Buffer_Type` enum value.
    pub fn to_pjrt(self) -> i32 {
        match self {
            ElementType::Pred => 1,
            ElementType::S8 => 2,
            ElementType::S16 => 3,
            ElementType::S32 => 4,
            ElementType::S64 => 5,
            ElementType::U8 => 6,
            ElementType::U16 => 7,
            ElementType::U32 => 8,
            ElementType::U64 => 9,
            ElementType::F16 => 10,
            ElementType::F32 => 11,
            ElementType::F64 => 12,
            ElementType::BF16 => 13,
            ElementType::C64 => 14,
            ElementType::C128 => 15,
            ElementType::F8E5M2 => 16,
            ElementType::F8E4M3FN => 17,
            ElementType::F8E5M2FNUZ => 19,
            ElementType::F8E4M3FNUZ => 20,
        }
    }

    /// Inverse of [`ElementType::to_pjrt`]; `None` for types this crate does
    /// not support (int4, token, the other fp8 kinds, ...).
    pub fn from_pjrt(v: i32) -> Option<ElementType> {
        Some(match v {
            1 => ElementType::Pred,
            2 => ElementType::S8,
            3 => ElementType::S16,
            4 => ElementType::S32,
            5 => ElementType::S64,
            6 => ElementType::U8,
            7 => ElementType::U16,
            8 => ElementType::U32,
            9 => ElementType::U64,
            10 => ElementType::F16,
            11 => ElementType::F32,
            12 => ElementType::F64,
            13 => ElementType::BF16,
            14 => ElementType::C64,
            15 => ElementType::C128,
            16 => ElementType::F8E5M2,
            17 => ElementType::F8E4M3FN,
            19 => ElementType::F8E5M2FNUZ,
            20 => ElementType::F8E4M3FNUZ,
            _ => return None,
        })
    }
}

/// Awaits `event`, destroys it and returns its status.
///
/// # Safety
/// `event` must be a live event of `api`'s plugin; it is consumed.
pub(crate) unsafe fn await_event(
    api: Api,
    event: *mut ffi::PJRT_Event,
    call: &'static str,
) -> Result<()> {
    let mut a = ffi::PJRT_Event_Await_Args::new();
    a.event = event;
    let status = match pjrt_call!(api, PJRT_Event_Await, &mut a) {
        // Attribute failures to the operation, not to the await.
        Err(Error::Plugin { code, message, .. }) => Err(Error::Plugin {
            call,
            code,
            message,
        }),
        other => other,
    };
    destroy_event(api, event);
    status
}

/// Destroys an event without waiting for it.
///
/// # Safety
/// `event` must be NULL or a live event of `api`'s plugin.
pub(crate) unsafe fn destroy_event(api: Api, event: *mut ffi::PJRT_Event) {
    if event.is_null() {
        return;
    }
    let mut d = ffi::PJRT_Event_Destroy_Args::new();
    d.event = event;
    let _ = pjrt_call!(api, PJRT_Event_Destroy, &mut d);
}

/// An array on a device. Operations on it are ordered by the PJRT runtime,
/// so a buffer returned by an asynchronous execute can be used right away;
/// reading it back ([`Buffer::to_host`]) waits for its producer.
///
/// `Send + Sync`; dropping it calls `PJRT_Buffer_Destroy` (device memory is
/// released once pending work using it has finished).
pub struct Buffer {
    raw: *mut ffi::PJRT_Buffer,
    client: Arc<ClientInner>,
    ty: ElementType,
    dims: Arc<[i64]>,
    device: usize,
}

// SAFETY: PJRT buffers are thread-safe handles; Rust-side fields are
// immutable.
unsafe impl Send for Buffer {}
// SAFETY: as above.
unsafe impl Sync for Buffer {}

impl std::fmt::Debug for Buffer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Buffer")
            .field("type", &self.ty)
            .field("dims", &&*self.dims)
            .field("device", &self.device)
            .finish()
    }
}

impl Drop for Buffer {
    fn drop(&mut self) {
        let mut a = ffi::PJRT_Buffer_Destroy_Args::new();
        a.buffer = self.raw;
        // SAFETY: we own the buffer; errors cannot be reported from drop.
        let _ = unsafe { pjrt_call!(self.client.api, PJRT_Buffer_Destroy, &mut a) };
    }
}

impl Buffer {
    /// Wraps an owned PJRT buffer.
    ///
    /// # Safety
    /// `raw` must be a live buffer of `client`, owned by the caller, with the
    /// given element type, dims and device ordinal.
    pub(crate) unsafe fn from_raw(
        client: Arc<ClientInner>,
        raw: *mut ffi::PJRT_Buffer,
        ty: ElementType,
        dims: Arc<[i64]>,
        device: usize,
    ) -> Buffer {
        Buffer {
            raw,
            client,
            ty,
            dims,
            device,
        }
    }

    /// Raw handle (for passing to execute).
    pub(crate) fn raw(&self) -> *mut ffi::PJRT_Buffer {
        self.raw
    }

    /// Whether `self` belongs to the given client.
    pub(crate) fn same_client(&self, c: &Arc<ClientInner>) -> bool {
        Arc::ptr_eq(&self.client, c)
    }

    /// Array dimensions.
    pub fn dims(&self) -> Vec<i64> {
        self.dims.to_vec()
    }

    /// Array dimensions, borrowed.
    pub fn shape(&self) -> &[i64] {
        &self.dims
    }

    /// Element type.
    pub fn element_type(&self) -> ElementType {
        self.ty
    }

    /// Ordinal of the device holding this buffer.
    pub fn device_ordinal(&self) -> usize {
        self.device
    }

    /// Number of elements.
    pub fn element_count(&self) -> usize {
        self.dims.iter().map(|&d| d.max(0) as usize).product()
    }

    /// Size of the dense host representation in bytes.
    pub fn host_size(&self) -> usize {
        self.element_count() * self.ty.byte_size()
    }

    /// Asks the plugin for dims and element type (instead of the values
    /// recorded when the buffer was created).
    pub fn query_metadata(&self) -> Result<(ElementType, Vec<i64>)> {
        // SAFETY: live buffer.
        let (ty, dims) = unsafe { query_meta(self.client.api, self.raw) }?;
        Ok((ty, dims.to_vec()))
    }

    /// Bytes the buffer occupies on the device.
    pub fn on_device_size(&self) -> Result<usize> {
        let mut a = ffi::PJRT_Buffer_OnDeviceSizeInBytes_Args::new();
        a.buffer = self.raw;
        // SAFETY: live buffer.
        unsafe { pjrt_call!(self.client.api, PJRT_Buffer_OnDeviceSizeInBytes, &mut a) }?;
        Ok(a.on_device_size_in_bytes)
    }

    /// Whether the buffer was deleted or donated to an execution.
    pub fn is_deleted(&self) -> Result<bool> {
        let mut a = ffi::PJRT_Buffer_IsDeleted_Args::new();
        a.buffer = self.raw;
        // SAFETY: live buffer.
        unsafe { pjrt_call!(self.client.api, PJRT_Buffer_IsDeleted, &mut a) }?;
        Ok(a.is_deleted)
    }

    /// Copies the contents into `dst` (dense row-major), waiting for the
    /// buffer's producer and the transfer. `dst.len()` must equal the
    /// buffer's host size. Errors of the computation that produced the
    /// buffer surface here.
    pub fn to_host(&self, dst: &mut [u8]) -> Result<()> {
        let api = self.client.api;
        let mut q = ffi::PJRT_Buffer_ToHostBuffer_Args::new();
        q.src = self.raw;
        // SAFETY: `dst == NULL` only queries the required size.
        unsafe { pjrt_call!(api, PJRT_Buffer_ToHostBuffer, &mut q) }?;
        if dst.len() != q.dst_size {
            return Err(Error::InvalidArgument(format!(
                "destination has {} bytes but the {:?} {:?} buffer needs {}",
                dst.len(),
                self.ty,
                &*self.dims,
                q.dst_size
            )));
        }
        if dst.is_empty() {
            return self.block_until_ready();
        }
        let mut a = ffi::PJRT_Buffer_ToHostBuffer_Args::new();
        a.src = self.raw;
        a.dst = dst.as_mut_ptr() as *mut c_void;
        a.dst_size = dst.len();
        // SAFETY: `dst` stays borrowed until the completion event is awaited
        // below, so the plugin's asynchronous write targets live memory.
        unsafe {
            pjrt_call!(api, PJRT_Buffer_ToHostBuffer, &mut a)?;
            if a.event.is_null() {
                return Ok(());
            }
            await_event(api, a.event, "PJRT_Buffer_ToHostBuffer")
        }
    }

    /// Copies the contents into a new `Vec<u8>`.
    pub fn to_host_vec(&self) -> Result<Vec<u8>> {
        let mut v = vec![0u8; checked_byte_len(&self.dims, self.ty)?];
        self.to_host(&mut v)?;
        Ok(v)
    }

    /// Copies the buffer to device `device` (ordinal). Asynchronous, like
    /// execute.
    pub fn copy_to_device(&self, device: usize) -> Result<Buffer> {
        let dev = self.client.device_ptr(device)?;
        let mut a = ffi::PJRT_Buffer_CopyToDevice_Args::new();
        a.buffer = self.raw;
        a.dst_device = dev;
        // SAFETY: live buffer and device of the same client.
        unsafe { pjrt_call!(self.client.api, PJRT_Buffer_CopyToDevice, &mut a) }?;
        if a.dst_buffer.is_null() {
            return Err(Error::Internal(
                "PJRT_Buffer_CopyToDevice returned NULL".into(),
            ));
        }
        // SAFETY: fresh buffer owned by us, same type/shape as `self`.
        Ok(unsafe {
            Buffer::from_raw(
                self.client.clone(),
                a.dst_buffer,
                self.ty,
                self.dims.clone(),
                device,
            )
        })
    }

    /// Blocks until the buffer's contents are computed; returns the error of
    /// the producing computation, if any.
    pub fn block_until_ready(&self) -> Result<()> {
        let api = self.client.api;
        let mut a = ffi::PJRT_Buffer_ReadyEvent_Args::new();
        a.buffer = self.raw;
        // SAFETY: live buffer; the event is consumed by `await_event`.
        unsafe {
            pjrt_call!(api, PJRT_Buffer_ReadyEvent, &mut a)?;
            if a.event.is_null() {
                return Err(Error::Internal(
                    "PJRT_Buffer_ReadyEvent returned NULL".into(),
                ));
            }
            await_event(api, a.event, "PJRT_Buffer_ReadyEvent")
        }
    }

    /// Non-blocking: whether the contents are computed (or failed).
    pub fn is_ready(&self) -> Result<bool> {
        let api = self.client.api;
        let mut a = ffi::PJRT_Buffer_ReadyEvent_Args::new();
        a.buffer = self.raw;
        // SAFETY: live buffer; the event is destroyed before returning.
        unsafe {
            pjrt_call!(api, PJRT_Buffer_ReadyEvent, &mut a)?;
            if a.event.is_null() {
                return Err(Error::Internal(
                    "PJRT_Buffer_ReadyEvent returned NULL".into(),
                ));
            }
            let mut r = ffi::PJRT_Event_IsReady_Args::new();
            r.event = a.event;
            let res = pjrt_call!(api, PJRT_Event_IsReady, &mut r);
            destroy_event(api, a.event);
            res.map(|()| r.is_ready)
        }
    }
}

/// Reads element type and dims of a buffer from the plugin.
///
/// # Safety
/// `raw` must be a live buffer of `api`'s plugin.
pub(crate) unsafe fn query_meta(
    api: Api,
    raw: *mut ffi::PJRT_Buffer,
) -> Result<(ElementType, Arc<[i64]>)> {
    let mut t = ffi::PJRT_Buffer_ElementType_Args::new();
    t.buffer = raw;
    pjrt_call!(api, PJRT_Buffer_ElementType, &mut t)?;
    let ty = ElementType::from_pjrt(t.type_).ok_or_else(|| {
        Error::InvalidArgument(format!("unsupported PJRT element type {}", t.type_))
    })?;
    let mut d = ffi::PJRT_Buffer_Dimensions_Args::new();
    d.buffer = raw;
    pjrt_call!(api, PJRT_Buffer_Dimensions, &mut d)?;
    let dims: Arc<[i64]> = if d.dims.is_null() || d.num_dims == 0 {
        Arc::from(&[][..])
    } else {
        Arc::from(std::slice::from_raw_parts(d.dims, d.num_dims))
    };
    Ok((ty, dims))
}
