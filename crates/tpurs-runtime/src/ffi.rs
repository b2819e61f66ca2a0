//! The C ABI the torch bridge calls: plain structs describing an op call and its results,
//! and one table of function pointers (`TpursCoreApi`) handed to the bridge at start-up.
//!
//! Mirrored by `bridge/tpurs_core_api.h`; change both together and bump `API_VERSION`.

use std::cell::RefCell;
use std::ffi::{c_char, c_void, CStr};

use crate::error::{Error, ErrorKind};

/// Version of this ABI; the bridge refuses a table of another version.
pub const API_VERSION: u32 = 1;

/// Argument kinds of [`TpursArg`].
pub mod kind {
    /// `None` / undefined tensor.
    pub const NONE: i32 = 0;
    /// A tpu tensor.
    pub const TENSOR: i32 = 1;
    /// A host number (Scalar or 0-d CPU tensor).
    pub const SCALAR: i32 = 2;
    /// An int.
    pub const INT: i32 = 3;
    /// A float.
    pub const FLOAT: i32 = 4;
    /// A bool.
    pub const BOOL: i32 = 5;
    /// A string (`items` points at UTF-8 bytes, `ndim` is the length).
    pub const STR: i32 = 6;
    /// A dtype (`dtype` holds the ScalarType code).
    pub const DTYPE: i32 = 7;
    /// An int list (`sizes`, `ndim` items).
    pub const INT_LIST: i32 = 8;
    /// A float list (`items` as f64, `ndim` items).
    pub const FLOAT_LIST: i32 = 9;
    /// A bool list (`items` as u8, `ndim` items).
    pub const BOOL_LIST: i32 = 10;
    /// A list of tensors / numbers / None (`items` as TpursArg, `ndim` items).
    pub const LIST: i32 = 11;
}

/// One op argument.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct TpursArg {
    /// One of [`kind`].
    pub kind: i32,
    /// ScalarType code (tensors, numbers, dtypes).
    pub dtype: i32,
    /// Device index of a tensor.
    pub device: i32,
    /// 1 for Python numbers.
    pub wrapped: i32,
    /// Tensor rank, or list length.
    pub ndim: i64,
    /// Tensor sizes, or int list items.
    pub sizes: *const i64,
    /// Tensor strides.
    pub strides: *const i64,
    /// Tensor storage offset in elements.
    pub offset: i64,
    /// Tensor storage (a `Storage` created by this crate).
    pub storage: *const c_void,
    /// Integer / bool value.
    pub i: i64,
    /// Float value.
    pub f: f64,
    /// List items, string bytes.
    pub items: *const c_void,
}

/// A mutated argument of the op: argument index, list item (-1 for none), is `out=`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct TpursWrite {
    /// Argument index.
    pub arg: i32,
    /// Item of a list argument, or -1.
    pub item: i32,
    /// 1 for `out=` arguments.
    pub is_out: i32,
}

/// `TpursOpDesc.returns` entry for a new tensor.
pub const RETURN_FRESH: i32 = -1;
/// `TpursOpDesc.returns` entry for a new tensor list.
pub const RETURN_FRESH_LIST: i32 = -2;

/// Result kinds of [`TpursResult`].
pub mod result {
    /// An undefined tensor.
    pub const UNDEFINED: i32 = 0;
    /// A new tensor.
    pub const FRESH: i32 = 1;
    /// The mutated argument `alias`.
    pub const ALIAS: i32 = 2;
    /// Start of a list of `ndim` new tensors that follow.
    pub const LIST: i32 = 3;
}

/// One result of an op.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct TpursResult {
    /// One of [`result`].
    pub kind: i32,
    /// ScalarType code.
    pub dtype: i32,
    /// Write target index for aliases.
    pub alias: i32,
    /// Device index.
    pub device: i32,
    /// Rank (or list length).
    pub ndim: i64,
    /// Sizes (owned by the runtime until the next call on this thread).
    pub sizes: *const i64,
    /// The new storage (ownership passes to the caller).
    pub storage: *mut c_void,
    /// Its size in bytes.
    pub nbytes: i64,
}

/// A mutated `out=` argument whose storage must be swapped for a new one of new shape.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct TpursReplace {
    /// Write target index.
    pub target: i32,
    /// ScalarType code.
    pub dtype: i32,
    /// Rank.
    pub ndim: i64,
    /// Sizes (runtime-owned until the next call).
    pub sizes: *const i64,
    /// The new storage (ownership passes to the caller).
    pub storage: *mut c_void,
    /// Its size in bytes.
    pub nbytes: i64,
}

/// What an op call produced.
#[repr(C)]
pub struct TpursOpResults {
    /// Number of results.
    pub n: i64,
    /// Results.
    pub results: *const TpursResult,
    /// Number of replaced out arguments.
    pub nreplace: i64,
    /// Replacements.
    pub replaces: *const TpursReplace,
}

/// The function table handed to the bridge.
#[repr(C)]
pub struct TpursCoreApi {
    /// [`API_VERSION`].
    pub version: u32,
    /// Number of ops in the lowering table.
    pub num_ops: extern "C" fn() -> u32,
    /// Name of op `i` (`add.Tensor`), NUL-terminated, static.
    pub op_name: extern "C" fn(u32) -> *const c_char,
    /// Runs op `op` with writes and returns as declared; returns 0 or an error kind.
    #[allow(clippy::type_complexity)]
    pub run_op: extern "C" fn(
        op: u32,
        args: *const TpursArg,
        nargs: i64,
        writes: *const TpursWrite,
        nwrites: i64,
        returns: *const i32,
        nreturns: i64,
        default_dtype: i32,
        out: *mut TpursOpResults,
    ) -> i32,
    /// A new empty storage of `nbytes` on `device`.
    pub storage_new: extern "C" fn(device: i32, nbytes: i64) -> *mut c_void,
    /// Frees a storage.
    pub storage_free: extern "C" fn(*mut c_void),
    /// Copies a dense host array into the view `dst` of a tpu tensor; returns 0 or a kind.
    pub copy_from_host: extern "C" fn(dst: *const TpursArg, src: *const c_void, nbytes: i64) -> i32,
    /// Copies the view `src` of a tpu tensor into a dense host array; returns 0 or a kind.
    pub copy_to_host: extern "C" fn(src: *const TpursArg, dst: *mut c_void, nbytes: i64) -> i32,
    /// Copies the tpu view `src` into the tpu view `dst` (any devices, same dtype and shape).
    pub copy_between: extern "C" fn(dst: *const TpursArg, src: *const TpursArg) -> i32,
    /// The message of the last error on this thread (NUL-terminated, valid until the next).
    pub last_error: extern "C" fn() -> *const c_char,
    /// Counts a CPU fallback of the named op; returns its count so far.
    pub record_fallback: extern "C" fn(*const c_char) -> u64,
    /// Number of devices.
    pub device_count: extern "C" fn() -> i32,
    /// Reads the generator state (seed, offset) of a device; returns 0 or a kind.
    pub rng_get: extern "C" fn(device: i32, seed: *mut u64, offset: *mut u64) -> i32,
    /// Sets the generator state of a device; returns 0 or a kind.
    pub rng_set: extern "C" fn(device: i32, seed: u64, offset: u64) -> i32,
}

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
pub(crate) fn guarded(f: impl FnOnce() -> crate::Result<()>) -> i32 {
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

extern "C" fn record_fallback(name: *const c_char) -> u64 {
    if name.is_null() {
        return 0;
    }
    // SAFETY: the bridge passes a NUL-terminated op name.
    let name = unsafe { CStr::from_ptr(name) }.to_string_lossy();
    crate::metrics::record_fallback(&name)
}

extern "C" fn device_count() -> i32 {
    crate::runtime().map_or(0, |rt| rt.device_count() as i32)
}

extern "C" fn rng_get(device: i32, seed: *mut u64, offset: *mut u64) -> i32 {
    guarded(|| {
        let rt = crate::runtime()?;
        let s = rt.rng_state(rt.check_device(device as i64)?);
        // SAFETY: the bridge passes two writable u64s.
        unsafe {
            *seed = s.seed;
            *offset = s.offset;
        }
        Ok(())
    })
}

extern "C" fn rng_set(device: i32, seed: u64, offset: u64) -> i32 {
    guarded(|| {
        let rt = crate::runtime()?;
        let d = rt.check_device(device as i64)?;
        rt.set_rng_state(d, crate::RngState { seed, offset });
        Ok(())
    })
}

/// The table handed to the bridge.
pub static CORE_API: TpursCoreApi = TpursCoreApi {
    version: API_VERSION,
    num_ops,
    op_name,
    run_op: crate::launch::run_op,
    storage_new: crate::transfer::storage_new,
    storage_free: crate::transfer::storage_free,
    copy_from_host: crate::transfer::copy_from_host,
    copy_to_host: crate::transfer::copy_to_host,
    copy_between: crate::transfer::copy_between,
    last_error,
    record_fallback,
    device_count,
    rng_get,
    rng_set,
};
