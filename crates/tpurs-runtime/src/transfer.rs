//! Copies between host and device and between devices.

use std::sync::Arc;

use tpurs_hlo::{DType, Precision};
use tpurs_pjrt::{Buffer, ElementType, HostBytes};

use crate::abi::{CArg, StorageRef, TensorRef, TpursWrite};
use crate::error::{invalid, ErrorKind, Result};
use crate::launch::{dtype_of, run, CallDesc};
use crate::metrics::bump;
use crate::profile::{now_ns, SpanKind};
use crate::runtime::Runtime;
use crate::storage::{Contents, Flat};

/// The PJRT element type of a dtype (complex32 is held as complex64).
pub(crate) fn element_type(d: DType) -> ElementType {
    match d {
        DType::Bool => ElementType::Pred,
        DType::U8 => ElementType::U8,
        DType::I8 => ElementType::S8,
        DType::I16 => ElementType::S16,
        DType::I32 => ElementType::S32,
        DType::I64 => ElementType::S64,
        DType::U16 => ElementType::U16,
        DType::U32 => ElementType::U32,
        DType::U64 => ElementType::U64,
        DType::F16 => ElementType::F16,
        DType::BF16 => ElementType::BF16,
        DType::F32 => ElementType::F32,
        DType::F64 => ElementType::F64,
        DType::C32 | DType::C64 => ElementType::C64,
        DType::C128 => ElementType::C128,
        DType::F8E5M2 => ElementType::F8E5M2,
        DType::F8E4M3FN => ElementType::F8E4M3FN,
        DType::F8E5M2FNUZ => ElementType::F8E5M2FNUZ,
        DType::F8E4M3FNUZ => ElementType::F8E4M3FNUZ,
    }
}

/// Host bytes of `dtype` (as torch holds them) as the device buffer holds them: complex32
/// parts widened to f32, other types as they are.
fn to_device_bytes(dtype: DType, bytes: &[u8]) -> std::borrow::Cow<'_, [u8]> {
    if dtype != DType::C32 {
        return bytes.into();
    }
    bytes
        .chunks_exact(2)
        .flat_map(|p| {
            half::f16::from_le_bytes([p[0], p[1]])
                .to_f32()
                .to_le_bytes()
        })
        .collect::<Vec<u8>>()
        .into()
}

/// Reads `buffer` (of `dtype`) into `out` as torch holds the type: complex32 parts are
/// narrowed back to half precision (exactly: the device keeps them rounded).
fn buffer_to_host(buffer: &Buffer, dtype: DType, out: &mut [u8]) -> Result<()> {
    if dtype != DType::C32 {
        return Ok(buffer.to_host(out)?);
    }
    let mut wide = vec![0u8; out.len() * 2];
    buffer.to_host(&mut wide)?;
    for (o, w) in out.chunks_exact_mut(2).zip(wide.chunks_exact(4)) {
        let part = f32::from_le_bytes([w[0], w[1], w[2], w[3]]);
        o.copy_from_slice(&half::f16::from_f32(part).to_le_bytes());
    }
    Ok(())
}

/// The dtype of a PJRT element type.
pub(crate) fn dtype_of_element(e: ElementType) -> DType {
    match e {
        ElementType::Pred => DType::Bool,
        ElementType::U8 => DType::U8,
        ElementType::S8 => DType::I8,
        ElementType::S16 => DType::I16,
        ElementType::S32 => DType::I32,
        ElementType::S64 => DType::I64,
        ElementType::U16 => DType::U16,
        ElementType::U32 => DType::U32,
        ElementType::U64 => DType::U64,
        ElementType::F16 => DType::F16,
        ElementType::BF16 => DType::BF16,
        ElementType::F32 => DType::F32,
        ElementType::F64 => DType::F64,
        ElementType::C64 => DType::C64,
        ElementType::C128 => DType::C128,
        ElementType::F8E5M2 => DType::F8E5M2,
        ElementType::F8E4M3FN => DType::F8E4M3FN,
        ElementType::F8E5M2FNUZ => DType::F8E5M2FNUZ,
        ElementType::F8E4M3FNUZ => DType::F8E4M3FNUZ,
    }
}

/// A zero-filled flat buffer.
pub(crate) fn zeros(rt: &Runtime, device: usize, dtype: DType, numel: i64) -> Result<Flat> {
    let bytes = vec![0u8; numel as usize * element_type(dtype).byte_size()];
    let buffer = rt
        .client
        .buffer_from_host(&bytes, element_type(dtype), &[numel], device)?;
    Ok(Flat::new(Arc::new(buffer), dtype, numel))
}

/// A view described by a tensor argument.
struct View<'a> {
    tensor: &'a TensorRef<'a>,
    dtype: DType,
}

impl<'a> View<'a> {
    fn new(tensor: &'a TensorRef<'a>) -> Result<View<'a>> {
        Ok(View {
            tensor,
            dtype: dtype_of(tensor.dtype)?,
        })
    }

    fn storage(&self) -> StorageRef<'a> {
        self.tensor.storage
    }

    fn device(&self) -> usize {
        self.tensor.storage.device
    }

    fn numel(&self) -> i64 {
        self.tensor.sizes.iter().product()
    }

    fn nbytes(&self) -> usize {
        self.numel() as usize * self.dtype.byte_size()
    }

    /// True when the view is the whole storage, dense, of the storage's dtype.
    fn is_whole(&self) -> bool {
        let t = self.tensor;
        let dense = t.offset == 0 && tpurs_ops::is_contiguous(t.sizes, t.strides);
        dense && self.nbytes() == t.storage.nbytes
    }
}

/// Copies the tensor `src` into the tensor `dst` on the same device (`tpurs::copy_`).
fn copy_on_device(rt: &Runtime, dst: &TensorRef, src: &TensorRef) -> Result<()> {
    if share_contents(rt, &View::new(dst)?, &View::new(src)?) {
        return Ok(());
    }
    let op = tpurs_ops::lookup("tpurs::copy_").ok_or_else(|| {
        crate::Error::Invalid(ErrorKind::Runtime, "no rule for tpurs::copy_".into())
    })?;
    let writes = [TpursWrite {
        arg: 0,
        item: -1,
        is_out: 0,
    }];
    run(
        rt,
        &CallDesc {
            op,
            args: &[CArg::Tensor(*dst), CArg::Tensor(*src)],
            writes: &writes,
            returns: &[0],
            default_dtype: 6,
            precision: Precision::Highest,
        },
    )?;
    Ok(())
}

/// A copy of one whole storage into another of the same type and size makes the destination
/// hold the source's buffer (buffers are never written in place) or, when the source waits
/// in the device's open batch, the same batch output. So the updates `torch.compile` copies
/// back into parameters and optimizer state cost no copy of the weights. False where this
/// does not apply.
fn share_contents(rt: &Runtime, dst: &View, src: &View) -> bool {
    if !(dst.is_whole() && src.is_whole())
        || dst.dtype != src.dtype
        || dst.numel() != src.numel()
        || dst.device() != src.device()
    {
        return false;
    }
    match src.storage().contents() {
        Contents::Ready(f) if f.dtype == src.dtype && f.numel == src.numel() => {
            dst.storage().set(f);
            true
        }
        Contents::Pending {
            batch,
            node,
            dtype,
            numel,
        } if dtype == src.dtype && numel == src.numel() => {
            let mut open = rt.batch(src.device());
            if open.id() != batch {
                return false;
            }
            open.bind(node, &dst.storage().to_arc());
            true
        }
        _ => false,
    }
}

/// A dense tensor over all of `storage`.
fn dense<'a>(
    storage: StorageRef<'a>,
    dtype: DType,
    sizes: &'a [i64],
    strides: &'a [i64],
) -> TensorRef<'a> {
    TensorRef {
        dtype: tpurs_ops::dtype::to_scalar_type(dtype),
        device: storage.device as i32,
        sizes,
        strides,
        offset: 0,
        storage,
    }
}

fn contiguous_strides(sizes: &[i64]) -> Vec<i64> {
    let mut strides = vec![1; sizes.len()];
    for i in (0..sizes.len().saturating_sub(1)).rev() {
        strides[i] = strides[i + 1] * sizes[i + 1].max(1);
    }
    strides
}

/// Writes `flat` (dense, the view's shape and dtype) into the view `dst`.
fn write_flat(rt: &Runtime, dst: &View, flat: Flat) -> Result<()> {
    if dst.is_whole() {
        dst.storage().set(flat);
        return Ok(());
    }
    let tmp = Arc::new(rt.new_storage(dst.device(), dst.nbytes()));
    tmp.set(flat);
    let strides = contiguous_strides(dst.tensor.sizes);
    let src = dense(StorageRef::of(&tmp), dst.dtype, dst.tensor.sizes, &strides);
    copy_on_device(rt, dst.tensor, &src)
}

/// The contents of the view `src` as a dense flat buffer on its device.
fn read_flat(rt: &Runtime, src: &View) -> Result<Flat> {
    if src.is_whole() {
        match crate::defer::ready(rt, &src.storage())? {
            Some(f) if f.dtype == src.dtype => return Ok(f),
            None => return zeros(rt, src.device(), src.dtype, src.numel()),
            _ => {}
        }
    }
    let tmp = Arc::new(rt.new_storage(src.device(), src.nbytes()));
    let strides = contiguous_strides(src.tensor.sizes);
    let dst = dense(StorageRef::of(&tmp), src.dtype, src.tensor.sizes, &strides);
    copy_on_device(rt, &dst, src.tensor)?;
    crate::defer::ready(rt, &tmp)?
        .ok_or_else(|| crate::Error::Invalid(ErrorKind::Runtime, "copy produced no buffer".into()))
}

fn record_copy(rt: &Runtime, name: &str, device: usize, bytes: usize, start: i64) {
    rt.profile.record(
        SpanKind::Copy,
        name.into(),
        String::new(),
        device,
        bytes as u64,
        start,
    );
}

/// Copies `bytes` (dense, host) into the tensor `dst`; the copy is done when this returns.
pub(crate) fn copy_from_host(rt: &Runtime, dst: &TensorRef, bytes: &[u8]) -> Result<()> {
    let dst = View::new(dst)?;
    check_upload_size(&dst, bytes.len())?;
    let start = rt.profile.on(SpanKind::Copy).then(now_ns);
    let buffer = rt.client.buffer_from_host(
        &to_device_bytes(dst.dtype, bytes),
        element_type(dst.dtype),
        &[dst.numel()],
        dst.device(),
    )?;
    // Small integer tensors are what Python indexing copies over (`x[[1, 2]]`); keeping
    // their bytes lets index checks run on the host at the op.
    let known = (dst.is_whole()
        && bytes.len() <= KNOWN_BYTES
        && (dst.dtype.is_int() || dst.dtype == DType::Bool))
        .then(|| Arc::from(bytes));
    finish_upload(rt, &dst, buffer, bytes.len(), start, known)
}

/// The largest upload whose bytes the host keeps (see `Flat::known`).
const KNOWN_BYTES: usize = 4096;

/// Starts copying `bytes` (dense, host, kept alive by their owner) into the tensor `dst`
/// and returns while the plugin may still read them (`non_blocking=True` from pinned
/// memory). The bytes are released once the plugin is done, at the latest at the next
/// `synchronize`.
pub(crate) fn copy_from_host_async(rt: &Runtime, dst: &TensorRef, bytes: HostBytes) -> Result<()> {
    let dst_ref = dst;
    let dst = View::new(dst)?;
    if dst.dtype == DType::C32 {
        // The device holds complex32 widened, so the plugin cannot read torch's bytes.
        return copy_from_host(rt, dst_ref, bytes.as_slice());
    }
    check_upload_size(&dst, bytes.len())?;
    let len = bytes.len();
    let start = rt.profile.on(SpanKind::Copy).then(now_ns);
    let (buffer, pending) = rt.client.buffer_from_host_async(
        bytes,
        element_type(dst.dtype),
        &[dst.numel()],
        dst.device(),
    )?;
    if let Some(pending) = pending {
        let mut uploads = rt.uploads.lock().unwrap_or_else(|e| e.into_inner());
        uploads.retain(|u| !u.is_done());
        uploads.push(pending);
    }
    finish_upload(rt, &dst, buffer, len, start, None)
}

fn check_upload_size(dst: &View, len: usize) -> Result<()> {
    if len != dst.nbytes() {
        return invalid(
            ErrorKind::Runtime,
            format!("copy of {len} bytes into a tensor of {}", dst.nbytes()),
        );
    }
    Ok(())
}

fn finish_upload(
    rt: &Runtime,
    dst: &View,
    buffer: Buffer,
    len: usize,
    start: Option<i64>,
    known: Option<Arc<[u8]>>,
) -> Result<()> {
    bump(&rt.metrics.h2d_bytes, len as u64);
    if let Some(start) = start {
        buffer.block_until_ready()?;
        record_copy(rt, "copy host to device", dst.device(), len, start);
    }
    let flat = Flat {
        known,
        ..Flat::new(Arc::new(buffer), dst.dtype, dst.numel())
    };
    write_flat(rt, dst, flat)
}

/// Copies the tensor `src` into `out` (dense, host).
pub(crate) fn copy_to_host(rt: &Runtime, src: &TensorRef, out: &mut [u8]) -> Result<()> {
    let src = View::new(src)?;
    if out.len() != src.nbytes() {
        return invalid(
            ErrorKind::Runtime,
            format!(
                "copy of a tensor of {} bytes into {}",
                src.nbytes(),
                out.len()
            ),
        );
    }
    if out.is_empty() {
        return Ok(());
    }
    // A read ends the batch, so batches line up with the program's own sync points.
    rt.batch(src.device()).flush(rt, src.device())?;
    rt.raise_checks()?;
    let start = rt.profile.on(SpanKind::Copy).then(now_ns);
    let flat = read_flat(rt, &src)?;
    buffer_to_host(&flat.buffer, flat.dtype, out)?;
    bump(&rt.metrics.d2h_bytes, out.len() as u64);
    if let Some(start) = start {
        record_copy(rt, "copy device to host", src.device(), out.len(), start);
    }
    Ok(())
}

/// Copies the tensor `src` into the tensor `dst` (any devices).
pub(crate) fn copy_between(rt: &Runtime, dst: &TensorRef, src: &TensorRef) -> Result<()> {
    let (d, s) = (View::new(dst)?, View::new(src)?);
    if d.device() == s.device() {
        return copy_on_device(rt, dst, src);
    }
    if dst.sizes != src.sizes || d.dtype != s.dtype {
        return invalid(
            ErrorKind::Runtime,
            "cross-device copy needs equal shapes and dtypes",
        );
    }
    let flat = read_flat(rt, &s)?;
    let start = rt.profile.on(SpanKind::Copy).then(now_ns);
    let moved = flat.buffer.copy_to_device(d.device())?;
    bump(&rt.metrics.d2d_bytes, d.nbytes() as u64);
    if let Some(start) = start {
        moved.block_until_ready()?;
        record_copy(rt, "copy device to device", d.device(), d.nbytes(), start);
    }
    write_flat(rt, &d, Flat::new(Arc::new(moved), flat.dtype, flat.numel))
}
