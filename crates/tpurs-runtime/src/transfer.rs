//! Storages as the torch allocator sees them, and copies between host and device and
//! between devices.

use std::ffi::c_void;
use std::sync::Arc;

use tpurs_hlo::DType;
use tpurs_pjrt::ElementType;

use crate::error::{invalid, ErrorKind, Result};
use crate::ffi::{self, kind, TpursArg, TpursWrite};
use crate::launch::{run, slice, CallDesc};
use crate::metrics::{bump, metrics};
use crate::runtime::{runtime, Runtime};
use crate::storage::{Flat, Storage};

/// The PJRT element type of a dtype.
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
    }
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
    }
}

/// A zero-filled flat buffer.
pub(crate) fn zeros(rt: &Runtime, device: usize, dtype: DType, numel: i64) -> Result<Flat> {
    let bytes = vec![0u8; numel as usize * dtype.byte_size()];
    let buffer = rt
        .client
        .buffer_from_host(&bytes, element_type(dtype), &[numel], device)?;
    Ok(Flat {
        buffer: Arc::new(buffer),
        dtype,
        numel,
    })
}

pub(crate) extern "C" fn storage_new(device: i32, nbytes: i64) -> *mut c_void {
    Arc::new(Storage::new(device.max(0) as usize, nbytes.max(0) as usize)).into_raw()
}

pub(crate) extern "C" fn storage_free(p: *mut c_void) {
    if !p.is_null() {
        // SAFETY: `p` came from `Storage::into_raw` and torch frees it once.
        unsafe { Storage::release_raw(p) };
    }
}

/// A view described by a tensor argument.
struct View<'a> {
    arg: &'a TpursArg,
    dtype: DType,
    sizes: &'a [i64],
    strides: &'a [i64],
    storage: &'a Storage,
}

impl<'a> View<'a> {
    fn new(arg: &'a TpursArg) -> Result<View<'a>> {
        if arg.kind != kind::TENSOR || arg.storage.is_null() {
            return invalid(ErrorKind::Runtime, "expected a tpu tensor");
        }
        let dtype = crate::launch::dtype_of(arg.dtype)?;
        // SAFETY: the bridge passes a live tensor's metadata and storage.
        unsafe {
            Ok(View {
                arg,
                dtype,
                sizes: slice(arg.sizes, arg.ndim),
                strides: slice(arg.strides, arg.ndim),
                storage: &*(arg.storage as *const Storage),
            })
        }
    }

    fn numel(&self) -> i64 {
        self.sizes.iter().product()
    }

    fn nbytes(&self) -> usize {
        self.numel() as usize * self.dtype.byte_size()
    }

    /// True when the view is the whole storage, dense, of the storage's dtype.
    fn is_whole(&self) -> bool {
        let dense = self.arg.offset == 0 && tpurs_ops::is_contiguous(self.sizes, self.strides);
        dense && self.nbytes() == self.storage.nbytes
    }
}

/// Runs the table's `name` op with args and the given write / return layout.
fn run_named(
    name: &str,
    args: &[TpursArg],
    writes: &[TpursWrite],
    returns: &[i32],
) -> Result<ffi::TpursOpResults> {
    let op = tpurs_ops::lookup(name)
        .ok_or_else(|| crate::Error::Invalid(ErrorKind::Runtime, format!("no rule for {name}")))?;
    run(&CallDesc {
        op,
        args,
        writes,
        returns,
        default_dtype: 6,
    })
}

/// A tensor argument for a dense flat storage.
fn dense_arg(
    storage: &Storage,
    dtype: DType,
    sizes: &[i64],
    strides: &[i64],
    device: usize,
) -> TpursArg {
    TpursArg {
        kind: kind::TENSOR,
        dtype: tpurs_ops::dtype::to_scalar_type(dtype),
        device: device as i32,
        wrapped: 0,
        ndim: sizes.len() as i64,
        sizes: sizes.as_ptr(),
        strides: strides.as_ptr(),
        offset: 0,
        storage: storage as *const Storage as *const c_void,
        i: 0,
        f: 0.0,
        items: std::ptr::null(),
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
fn write_flat(dst: &View, flat: Flat) -> Result<()> {
    if dst.is_whole() {
        dst.storage.set(flat);
        return Ok(());
    }
    let tmp = Storage::new(dst.storage.device, dst.nbytes());
    tmp.set(flat);
    let strides = contiguous_strides(dst.sizes);
    let src = dense_arg(&tmp, dst.dtype, dst.sizes, &strides, dst.storage.device);
    let writes = [TpursWrite {
        arg: 0,
        item: -1,
        is_out: 0,
    }];
    run_named("tpurs::copy_", &[*dst.arg, src], &writes, &[0])?;
    Ok(())
}

/// The contents of the view `src` as a dense flat buffer on its device.
fn read_flat(rt: &Runtime, src: &View) -> Result<Flat> {
    if src.is_whole() {
        match crate::defer::ready(rt, src.storage)? {
            Some(f) if f.dtype == src.dtype => return Ok(f),
            None => return zeros(rt, src.storage.device, src.dtype, src.numel()),
            _ => {}
        }
    }
    let r = run_named("clone", &[*src.arg], &[], &[ffi::RETURN_FRESH])?;
    // SAFETY: `clone` returns exactly one fresh result whose reference we now own.
    let p = unsafe { (*r.results).storage };
    let storage = unsafe { Storage::arc_from_raw(p) };
    unsafe { Storage::release_raw(p) };
    crate::defer::ready(rt, &storage)?
        .ok_or_else(|| crate::Error::Invalid(ErrorKind::Runtime, "clone produced no buffer".into()))
}

pub(crate) extern "C" fn copy_from_host(
    dst: *const TpursArg,
    src: *const c_void,
    nbytes: i64,
) -> i32 {
    ffi::guarded(|| {
        let rt = runtime()?;
        // SAFETY: `dst` points at a live tensor argument.
        let dst = View::new(unsafe { &*dst })?;
        if nbytes as usize != dst.nbytes() {
            return invalid(
                ErrorKind::Runtime,
                format!("copy of {nbytes} bytes into a tensor of {}", dst.nbytes()),
            );
        }
        // SAFETY: `src` holds `nbytes` bytes.
        let bytes = unsafe { slice(src as *const u8, nbytes) };
        let device = dst.storage.device;
        let numel = dst.numel();
        let buffer =
            rt.client
                .buffer_from_host(bytes, element_type(dst.dtype), &[numel], device)?;
        bump(&metrics().h2d_bytes, nbytes as u64);
        write_flat(
            &dst,
            Flat {
                buffer: Arc::new(buffer),
                dtype: dst.dtype,
                numel,
            },
        )
    })
}

pub(crate) extern "C" fn copy_to_host(src: *const TpursArg, dst: *mut c_void, nbytes: i64) -> i32 {
    ffi::guarded(|| {
        let rt = runtime()?;
        // SAFETY: `src` points at a live tensor argument.
        let src = View::new(unsafe { &*src })?;
        if nbytes as usize != src.nbytes() {
            return invalid(
                ErrorKind::Runtime,
                format!("copy of a tensor of {} bytes into {nbytes}", src.nbytes()),
            );
        }
        if nbytes == 0 {
            return Ok(());
        }
        // A read ends the batch, so batches line up with the program's own sync points.
        rt.batch(src.storage.device).flush(rt, src.storage.device)?;
        let flat = read_flat(rt, &src)?;
        // SAFETY: `dst` holds `nbytes` writable bytes.
        let out = unsafe { std::slice::from_raw_parts_mut(dst as *mut u8, nbytes as usize) };
        flat.buffer.to_host(out)?;
        bump(&metrics().d2h_bytes, nbytes as u64);
        Ok(())
    })
}

pub(crate) extern "C" fn copy_between(dst: *const TpursArg, src: *const TpursArg) -> i32 {
    ffi::guarded(|| {
        let rt = runtime()?;
        // SAFETY: both point at live tensor arguments.
        let (dst_arg, src_arg) = unsafe { (&*dst, &*src) };
        let (d, s) = (View::new(dst_arg)?, View::new(src_arg)?);
        if d.storage.device == s.storage.device {
            let writes = [TpursWrite {
                arg: 0,
                item: -1,
                is_out: 0,
            }];
            run_named("tpurs::copy_", &[*dst_arg, *src_arg], &writes, &[0])?;
            return Ok(());
        }
        if d.sizes != s.sizes || d.dtype != s.dtype {
            return invalid(
                ErrorKind::Runtime,
                "cross-device copy needs equal shapes and dtypes",
            );
        }
        let flat = read_flat(rt, &s)?;
        let moved = flat.buffer.copy_to_device(d.storage.device)?;
        bump(&metrics().d2d_bytes, d.nbytes() as u64);
        write_flat(
            &d,
            Flat {
                buffer: Arc::new(moved),
                dtype: flat.dtype,
                numel: flat.numel,
            },
        )
    })
}
