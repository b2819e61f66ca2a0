//! The C structs and the function table of the ABI, as `tpurs_core_api.h` declares them.

use std::ffi::{c_char, c_void};

/// Version of this ABI; the bridge refuses a table of another version.
pub const API_VERSION: u32 = 5;

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
    /// Float value, or a complex number's real part.
    pub f: f64,
    /// A complex number's imaginary part.
    pub im: f64,
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

/// Memory statistics of one device (`[current, peak, allocated, freed]` each).
#[repr(C)]
#[derive(Clone, Copy, Default)]
pub struct TpursMemoryStats {
    /// Bytes of live storages.
    pub bytes: [i64; 4],
    /// Number of live storages.
    pub count: [i64; 4],
}

/// One profiled span as the bridge reads it (strings valid during the callback only).
#[repr(C)]
pub struct TpursSpan {
    /// [`crate::SpanKind`] as an integer: 0 program, 1 compile, 2 copy.
    pub kind: i32,
    /// Device ordinal.
    pub device: i32,
    /// Bytes moved by a copy.
    pub bytes: i64,
    /// Start, nanoseconds since the Unix epoch.
    pub start_ns: i64,
    /// End, nanoseconds since the Unix epoch.
    pub end_ns: i64,
    /// Name (NUL-terminated).
    pub name: *const c_char,
    /// Details (NUL-terminated).
    pub detail: *const c_char,
}

/// Receives one span of `profile_drain`.
pub type SpanCallback = extern "C" fn(user: *mut c_void, span: *const TpursSpan);

/// What `profile_record` records (bits; 0 stops recording).
pub mod record {
    /// Device activities: program runs and copies.
    pub const DEVICE: i32 = 1;
    /// Host activities: compiles.
    pub const HOST: i32 = 2;
}

/// `memory_reset` targets.
pub mod reset {
    /// Peaks to the current values.
    pub const PEAK: i32 = 1;
    /// Totals allocated and freed to zero.
    pub const ACCUMULATED: i32 = 2;
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

/// The function table handed to the bridge. Every entry that needs a runtime takes the
/// `*const Runtime` the bridge was given at start-up (`rt`); `storage_free` needs none (a
/// storage knows its own runtime's memory counters), nor do the table-level entries.
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
    ) -> i32,
    /// A new empty storage of `nbytes` on `device` (null on an invalid device).
    pub storage_new: extern "C" fn(rt: *const c_void, device: i32, nbytes: i64) -> *mut c_void,
    /// Frees a storage.
    pub storage_free: extern "C" fn(*mut c_void),
    /// Copies a dense host array into the view `dst` of a tpu tensor; returns 0 or a kind.
    pub copy_from_host: extern "C" fn(
        rt: *const c_void,
        dst: *const TpursArg,
        src: *const c_void,
        nbytes: i64,
    ) -> i32,
    /// Starts copying `nbytes` of host memory into the view `dst` and returns while they may
    /// still be read; `release(owner)` is called once they are not (also on failure).
    pub copy_from_host_async: extern "C" fn(
        rt: *const c_void,
        dst: *const TpursArg,
        src: *const c_void,
        nbytes: i64,
        owner: *mut c_void,
        release: extern "C" fn(*mut c_void),
    ) -> i32,
    /// Copies the view `src` of a tpu tensor into a dense host array; returns 0 or a kind.
    pub copy_to_host: extern "C" fn(
        rt: *const c_void,
        src: *const TpursArg,
        dst: *mut c_void,
        nbytes: i64,
    ) -> i32,
    /// Copies the tpu view `src` into the tpu view `dst` (any devices, same dtype and shape).
    pub copy_between:
        extern "C" fn(rt: *const c_void, dst: *const TpursArg, src: *const TpursArg) -> i32,
    /// The message of the last error on this thread (NUL-terminated, valid until the next).
    pub last_error: extern "C" fn() -> *const c_char,
    /// Counts a CPU fallback of the named op; returns its count so far.
    pub record_fallback: extern "C" fn(rt: *const c_void, op: *const c_char) -> u64,
    /// Number of devices.
    pub device_count: extern "C" fn(rt: *const c_void) -> i32,
    /// Reads the generator state (seed, offset) of a device; returns 0 or a kind.
    pub rng_get:
        extern "C" fn(rt: *const c_void, device: i32, seed: *mut u64, offset: *mut u64) -> i32,
    /// Sets the generator state of a device; returns 0 or a kind.
    pub rng_set: extern "C" fn(rt: *const c_void, device: i32, seed: u64, offset: u64) -> i32,
    /// Reads the memory statistics of a device; returns 0 or a kind.
    pub memory_stats:
        extern "C" fn(rt: *const c_void, device: i32, out: *mut TpursMemoryStats) -> i32,
    /// Resets the peaks or the totals ([`reset`]) of a device; returns 0 or a kind.
    pub memory_reset: extern "C" fn(rt: *const c_void, device: i32, what: i32) -> i32,
    /// Free and total bytes of a device; returns 0 or a kind.
    pub memory_info:
        extern "C" fn(rt: *const c_void, device: i32, free: *mut u64, total: *mut u64) -> i32,
    /// Starts recording the profile spans `what` names ([`record`] bits), or stops (0);
    /// returns 0 or a kind.
    pub profile_record: extern "C" fn(rt: *const c_void, what: i32) -> i32,
    /// Hands every recorded span to `callback` (and forgets them); returns 0 or a kind.
    pub profile_drain:
        extern "C" fn(rt: *const c_void, callback: SpanCallback, user: *mut c_void) -> i32,
    /// Waits for all work launched on a device (and raises its pending checks); returns 0
    /// or a kind.
    pub synchronize: extern "C" fn(rt: *const c_void, device: i32) -> i32,
}
