//! The C ABI the torch bridge calls: plain structs describing an op call and its results,
//! and one table of function pointers (`TpursCoreApi`) handed to the bridge at start-up
//! together with the runtime it serves.
//!
//! Every `unsafe` of this crate lives here: the entry points check the runtime pointer,
//! decode the bridge's structs once into safe borrowed types ([`CArg`], [`TensorRef`],
//! [`StorageRef`]) and hand them to safe code that never sees a raw pointer.
//!
//! Mirrored by `python/tpurs/csrc/tpurs_core_api.h`; change both together and bump
//! `API_VERSION`.

use std::cell::RefCell;
use std::ffi::{c_char, c_void, CStr};
use std::ops::Deref;
use std::sync::Arc;

use tpurs_hlo::Precision;
use tpurs_pjrt::HostBytes;

use crate::error::{invalid, Error, ErrorKind, Result};
use crate::runtime::{RngState, Runtime};
use crate::storage::Storage;

mod types;

pub use types::*;

thread_local! {
    static LAST_ERROR: RefCell<std::ffi::CString> = RefCell::new(std::ffi::CString::default());
}

/// Stores `e` as this thread's last error and returns its kind code.
pub(crate) fn fail(e: Error) -> i32 {
    let kind = e.kind();
    let msg = e.to_string().replace('\0', " ");
    LAST_ERROR.with(|l| *l.borrow_mut() = std::ffi::CString::new(msg).unwrap_or_default());
    kind as i32
}

/// Runs `f`, turning errors and panics into an error code (never unwinds into C++).
pub(crate) fn guarded(f: impl FnOnce() -> Result<()>) -> i32 {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(Ok(())) => 0,
        Ok(Err(e)) => fail(e),
        Err(p) => {
            let msg = p
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "unknown panic".into());
            fail(Error::Invalid(
                ErrorKind::Runtime,
                format!("tpurs internal error: {msg}"),
            ))
        }
    }
}

extern "C" fn num_ops() -> u32 {
    tpurs_ops::op_names().count() as u32
}

/// The name the bridge registers for op `i`; empty for graph-only rules, which the
/// dispatcher must not reach.
extern "C" fn op_name(i: u32) -> *const c_char {
    static NAMES: std::sync::OnceLock<Vec<std::ffi::CString>> = std::sync::OnceLock::new();
    let names = NAMES.get_or_init(|| {
        (0..num_ops())
            .map(|id| {
                let e = tpurs_ops::op_entry(id);
                let name = if e.graph_only { "" } else { e.name };
                std::ffi::CString::new(name).unwrap_or_default()
            })
            .collect()
    });
    names
        .get(i as usize)
        .map_or(std::ptr::null(), |c| c.as_ptr())
}

extern "C" fn last_error() -> *const c_char {
    LAST_ERROR.with(|l| l.borrow().as_ptr())
}

/// A storage of this crate that lives in an `Arc` held elsewhere (by torch, for a storage
/// the bridge passed; by the caller, for one made in Rust) for at least `'a`.
#[derive(Clone, Copy)]
pub(crate) struct StorageRef<'a>(&'a Storage);

impl<'a> StorageRef<'a> {
    /// A reference to a storage the caller holds.
    pub fn of(storage: &'a Arc<Storage>) -> StorageRef<'a> {
        StorageRef(storage)
    }

    /// The storage.
    pub fn get(self) -> &'a Storage {
        self.0
    }

    /// A new counted reference to the storage.
    pub fn to_arc(self) -> Arc<Storage> {
        let p: *const Storage = self.0;
        // SAFETY: both constructors only wrap storages inside an `Arc` (`of`, or a pointer
        // from `Arc::into_raw` that torch still holds), and `'a` keeps that `Arc` alive.
        unsafe {
            Arc::increment_strong_count(p);
            Arc::from_raw(p)
        }
    }
}

impl Deref for StorageRef<'_> {
    type Target = Storage;

    fn deref(&self) -> &Storage {
        self.0
    }
}

/// A tpu tensor argument: a strided view of one storage.
#[derive(Clone, Copy)]
pub(crate) struct TensorRef<'a> {
    /// ScalarType code.
    pub dtype: i32,
    /// Device index.
    pub device: i32,
    /// Sizes.
    pub sizes: &'a [i64],
    /// Strides in elements.
    pub strides: &'a [i64],
    /// Storage offset in elements.
    pub offset: i64,
    /// The storage.
    pub storage: StorageRef<'a>,
}

/// A host number argument.
#[derive(Clone, Copy)]
pub(crate) struct ScalarRef {
    /// ScalarType code.
    pub dtype: i32,
    /// A Python number (weak in type promotion).
    pub wrapped: bool,
    /// Integer / bool value.
    pub i: i64,
    /// Float value, or a complex number's real part.
    pub f: f64,
    /// A complex number's imaginary part.
    pub im: f64,
}

/// One op argument, decoded from its [`TpursArg`].
pub(crate) enum CArg<'a> {
    None,
    Tensor(TensorRef<'a>),
    Scalar(ScalarRef),
    Int(i64),
    Float(f64),
    Bool(bool),
    Str(&'a [u8]),
    /// A ScalarType code.
    Dtype(i32),
    IntList(&'a [i64]),
    FloatList(&'a [f64]),
    BoolList(&'a [u8]),
    List(Vec<CArg<'a>>),
}

/// `n` items at `p` (none for a null pointer or a non-positive count).
///
/// # Safety
/// A non-null `p` must point at `n` initialised items that stay valid for `'a`.
unsafe fn slice<'a, T>(p: *const T, n: i64) -> &'a [T] {
    if p.is_null() || n <= 0 {
        &[]
    } else {
        std::slice::from_raw_parts(p, n as usize)
    }
}

/// Decodes one argument.
///
/// # Safety
/// `a` must describe its payload as [`TpursArg`] documents it (`ndim` items behind
/// `sizes` / `strides` / `items`, a storage made by this crate that torch holds), valid for
/// `'a`.
unsafe fn decode(a: &TpursArg) -> Result<CArg<'_>> {
    Ok(match a.kind {
        kind::NONE => CArg::None,
        kind::TENSOR => {
            if a.storage.is_null() {
                return invalid(ErrorKind::Runtime, "tpu tensor without storage");
            }
            CArg::Tensor(TensorRef {
                dtype: a.dtype,
                device: a.device,
                sizes: slice(a.sizes, a.ndim),
                strides: slice(a.strides, a.ndim),
                offset: a.offset,
                storage: StorageRef(&*(a.storage as *const Storage)),
            })
        }
        kind::SCALAR => CArg::Scalar(ScalarRef {
            dtype: a.dtype,
            wrapped: a.wrapped != 0,
            i: a.i,
            f: a.f,
            im: a.im,
        }),
        kind::INT => CArg::Int(a.i),
        kind::FLOAT => CArg::Float(a.f),
        kind::BOOL => CArg::Bool(a.i != 0),
        kind::STR => CArg::Str(slice(a.items as *const u8, a.ndim)),
        kind::DTYPE => CArg::Dtype(a.dtype),
        kind::INT_LIST => CArg::IntList(slice(a.sizes, a.ndim)),
        kind::FLOAT_LIST => CArg::FloatList(slice(a.items as *const f64, a.ndim)),
        kind::BOOL_LIST => CArg::BoolList(slice(a.items as *const u8, a.ndim)),
        kind::LIST => CArg::List(
            slice(a.items as *const TpursArg, a.ndim)
                .iter()
                .map(|i| decode(i))
                .collect::<Result<_>>()?,
        ),
        other => return invalid(ErrorKind::Runtime, format!("unknown argument kind {other}")),
    })
}

/// Decodes a tensor argument (copies take one).
///
/// # Safety
/// As [`decode`]; `a` may be null.
unsafe fn decode_tensor<'a>(a: *const TpursArg) -> Result<TensorRef<'a>> {
    match a.as_ref().map(|a| decode(a)).transpose()? {
        Some(CArg::Tensor(t)) => Ok(t),
        _ => invalid(ErrorKind::Runtime, "expected a tpu tensor"),
    }
}

/// The runtime behind the bridge's context pointer.
///
/// # Safety
/// A non-null `rt` must point at a `Runtime` that outlives the call (the bridge holds the
/// default runtime, which lives as long as the process).
unsafe fn runtime<'a>(rt: *const c_void) -> Result<&'a Runtime> {
    (rt as *const Runtime).as_ref().ok_or(Error::NotInitialised)
}

/// The precision of `at::Float32MatmulPrecision` code `code` (HIGHEST, HIGH, MEDIUM).
fn precision_of(code: i32) -> Result<Precision> {
    match code {
        0 => Ok(Precision::Highest),
        1 => Ok(Precision::High),
        2 => Ok(Precision::Default),
        _ => invalid(
            ErrorKind::Runtime,
            format!("unknown float32 matmul precision {code}"),
        ),
    }
}

/// Hands a new reference to torch as a raw pointer (released by `storage_free`).
pub(crate) fn storage_into_raw(storage: Arc<Storage>) -> *mut c_void {
    Arc::into_raw(storage) as *mut c_void
}

/// A new counted reference to a storage torch holds, from its data pointer (what
/// `untyped_storage().data_ptr()` shows Python).
///
/// # Safety
/// `p` must come from this crate (a storage torch still holds) and stay held for the call.
pub unsafe fn storage_from_torch(p: *const c_void) -> Arc<Storage> {
    StorageRef(&*(p as *const Storage)).to_arc()
}

#[allow(clippy::too_many_arguments)]
extern "C" fn run_op(
    rt: *const c_void,
    op: u32,
    args: *const TpursArg,
    nargs: i64,
    writes: *const TpursWrite,
    nwrites: i64,
    returns: *const i32,
    nreturns: i64,
    default_dtype: i32,
    matmul_precision: i32,
    out: *mut TpursOpResults,
) -> i32 {
    guarded(|| {
        // SAFETY: the bridge passes its runtime and arrays of the stated lengths, valid for
        // this call.
        let (rt, args, writes, returns) = unsafe {
            (
                runtime(rt)?,
                slice(args, nargs)
                    .iter()
                    .map(|a| decode(a))
                    .collect::<Result<Vec<_>>>()?,
                slice(writes, nwrites),
                slice(returns, nreturns),
            )
        };
        let call = crate::launch::CallDesc {
            op,
            args: &args,
            writes,
            returns,
            default_dtype,
            precision: precision_of(matmul_precision)?,
        };
        let produced = crate::launch::run(rt, &call)?;
        if !out.is_null() {
            // SAFETY: `out` points at a results struct owned by the caller.
            unsafe { *out = produced };
        }
        Ok(())
    })
}

extern "C" fn storage_new(rt: *const c_void, device: i32, nbytes: i64) -> *mut c_void {
    let made = (|| {
        // SAFETY: the bridge passes its runtime.
        let rt = unsafe { runtime(rt)? };
        let device = rt.check_device(device as i64)?;
        Ok(Arc::new(rt.new_storage(device, nbytes.max(0) as usize)))
    })();
    match made {
        Ok(s) => storage_into_raw(s),
        Err(e) => {
            fail(e);
            std::ptr::null_mut()
        }
    }
}

extern "C" fn storage_free(p: *mut c_void) {
    if !p.is_null() {
        // SAFETY: `p` came from `storage_into_raw` and torch frees it once.
        drop(unsafe { Arc::from_raw(p as *const Storage) });
    }
}

extern "C" fn copy_from_host(
    rt: *const c_void,
    dst: *const TpursArg,
    src: *const c_void,
    nbytes: i64,
) -> i32 {
    guarded(|| {
        // SAFETY: the bridge passes its runtime, a live tensor and `nbytes` readable bytes.
        let (rt, dst, bytes) = unsafe {
            (
                runtime(rt)?,
                decode_tensor(dst)?,
                slice(src as *const u8, nbytes),
            )
        };
        crate::transfer::copy_from_host(rt, &dst, bytes)
    })
}

/// The bridge's handle on host memory: released when dropped.
struct BridgeOwner {
    owner: *mut c_void,
    release: extern "C" fn(*mut c_void),
}

// SAFETY: the bridge's release function may run on any thread (it drops a reference).
unsafe impl Send for BridgeOwner {}

impl Drop for BridgeOwner {
    fn drop(&mut self) {
        (self.release)(self.owner);
    }
}

extern "C" fn copy_from_host_async(
    rt: *const c_void,
    dst: *const TpursArg,
    src: *const c_void,
    nbytes: i64,
    owner: *mut c_void,
    release: extern "C" fn(*mut c_void),
) -> i32 {
    let owner = BridgeOwner { owner, release };
    guarded(|| {
        let len = usize::try_from(nbytes).unwrap_or(0);
        // SAFETY: the bridge passes its runtime, a live tensor and `nbytes` bytes that `owner`
        // keeps alive and unwritten until it is released.
        let (rt, dst, bytes) = unsafe {
            (
                runtime(rt)?,
                decode_tensor(dst)?,
                HostBytes::new(src as *const u8, len, Box::new(owner)),
            )
        };
        crate::transfer::copy_from_host_async(rt, &dst, bytes)
    })
}

extern "C" fn copy_to_host(
    rt: *const c_void,
    src: *const TpursArg,
    dst: *mut c_void,
    nbytes: i64,
) -> i32 {
    guarded(|| {
        // SAFETY: the bridge passes its runtime, a live tensor and `nbytes` writable bytes
        // nothing else touches during the call.
        let (rt, src, out) = unsafe {
            let out: &mut [u8] = if dst.is_null() || nbytes <= 0 {
                &mut []
            } else {
                std::slice::from_raw_parts_mut(dst as *mut u8, nbytes as usize)
            };
            (runtime(rt)?, decode_tensor(src)?, out)
        };
        crate::transfer::copy_to_host(rt, &src, out)
    })
}

extern "C" fn copy_between(rt: *const c_void, dst: *const TpursArg, src: *const TpursArg) -> i32 {
    guarded(|| {
        // SAFETY: the bridge passes its runtime and two live tensors.
        let (rt, dst, src) = unsafe { (runtime(rt)?, decode_tensor(dst)?, decode_tensor(src)?) };
        crate::transfer::copy_between(rt, &dst, &src)
    })
}

extern "C" fn record_fallback(rt: *const c_void, name: *const c_char) -> u64 {
    // SAFETY: the bridge passes its runtime and a NUL-terminated op name.
    let (rt, name) = unsafe {
        match (runtime(rt), name.is_null()) {
            (Ok(rt), false) => (rt, CStr::from_ptr(name).to_string_lossy()),
            _ => return 0,
        }
    };
    rt.record_fallback(&name)
}

extern "C" fn device_count(rt: *const c_void) -> i32 {
    // SAFETY: the bridge passes its runtime.
    unsafe { runtime(rt) }.map_or(0, |rt| rt.device_count() as i32)
}

extern "C" fn synchronize(rt: *const c_void, device: i32) -> i32 {
    guarded(|| {
        // SAFETY: the bridge passes its runtime.
        let rt = unsafe { runtime(rt)? };
        rt.synchronize(rt.check_device(device as i64)?)
    })
}

extern "C" fn rng_get(rt: *const c_void, device: i32, seed: *mut u64, offset: *mut u64) -> i32 {
    guarded(|| {
        // SAFETY: the bridge passes its runtime.
        let rt = unsafe { runtime(rt)? };
        let s = rt.rng_state(rt.check_device(device as i64)?);
        // SAFETY: the bridge passes two writable u64s.
        unsafe {
            *seed = s.seed;
            *offset = s.offset;
        }
        Ok(())
    })
}

extern "C" fn rng_set(rt: *const c_void, device: i32, seed: u64, offset: u64) -> i32 {
    guarded(|| {
        // SAFETY: the bridge passes its runtime.
        let rt = unsafe { runtime(rt)? };
        let d = rt.check_device(device as i64)?;
        rt.set_rng_state(d, RngState { seed, offset });
        Ok(())
    })
}

extern "C" fn memory_stats(rt: *const c_void, device: i32, out: *mut TpursMemoryStats) -> i32 {
    guarded(|| {
        // SAFETY: the bridge passes its runtime.
        let rt = unsafe { runtime(rt)? };
        let m = rt.memory(rt.check_device(device as i64)?);
        let four =
            |v: crate::StatValues| [v.current, v.peak, v.allocated, v.freed].map(|x| x as i64);
        let stats = TpursMemoryStats {
            bytes: four(m.bytes()),
            count: four(m.count()),
        };
        // SAFETY: the bridge passes a writable stats struct.
        unsafe { *out = stats };
        Ok(())
    })
}

extern "C" fn memory_reset(rt: *const c_void, device: i32, what: i32) -> i32 {
    guarded(|| {
        // SAFETY: the bridge passes its runtime.
        let rt = unsafe { runtime(rt)? };
        let m = rt.memory(rt.check_device(device as i64)?);
        match what {
            reset::PEAK => m.reset_peak(),
            reset::ACCUMULATED => m.reset_accumulated(),
            other => return invalid(ErrorKind::Runtime, format!("unknown memory reset {other}")),
        }
        Ok(())
    })
}

extern "C" fn memory_info(rt: *const c_void, device: i32, free: *mut u64, total: *mut u64) -> i32 {
    guarded(|| {
        // SAFETY: the bridge passes its runtime.
        let rt = unsafe { runtime(rt)? };
        let (f, t) = rt.memory_info(rt.check_device(device as i64)?)?;
        // SAFETY: the bridge passes two writable u64s.
        unsafe {
            *free = f;
            *total = t;
        }
        Ok(())
    })
}

extern "C" fn profile_record(rt: *const c_void, what: i32) -> i32 {
    guarded(|| {
        // SAFETY: the bridge passes its runtime.
        let rt = unsafe { runtime(rt)? };
        if what != 0 {
            rt.profile_start(what & record::DEVICE != 0, what & record::HOST != 0);
        } else {
            rt.profile_stop();
        }
        Ok(())
    })
}

extern "C" fn profile_drain(rt: *const c_void, callback: SpanCallback, user: *mut c_void) -> i32 {
    guarded(|| {
        // SAFETY: the bridge passes its runtime.
        let rt = unsafe { runtime(rt)? };
        for span in rt.profile_take() {
            let text = |s: &str| std::ffi::CString::new(s.replace('\0', " ")).unwrap_or_default();
            let (name, detail) = (text(&span.name), text(&span.detail));
            let c = TpursSpan {
                kind: span.kind as i32,
                device: span.device as i32,
                bytes: span.bytes as i64,
                start_ns: span.start_ns,
                end_ns: span.end_ns,
                name: name.as_ptr(),
                detail: detail.as_ptr(),
            };
            callback(user, &c);
        }
        Ok(())
    })
}

/// The table handed to the bridge.
pub static CORE_API: TpursCoreApi = TpursCoreApi {
    version: API_VERSION,
    num_ops,
    op_name,
    run_op,
    storage_new,
    storage_free,
    copy_from_host,
    copy_from_host_async,
    copy_to_host,
    copy_between,
    last_error,
    record_fallback,
    device_count,
    rng_get,
    rng_set,
    memory_stats,
    memory_reset,
    memory_info,
    profile_record,
    profile_drain,
    synchronize,
};
