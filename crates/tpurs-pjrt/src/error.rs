//! Error type and conversion of `PJRT_Error*` into Rust errors.

use std::path::PathBuf;

use crate::client::Api;
use crate::ffi;

/// Everything that can go wrong in this crate. Plugin failures carry the
/// plugin's own message.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The plugin shared library could not be opened.
    #[error("failed to load PJRT plugin {}: {msg}", path.display())]
    Load {
        /// Path that was given to [`crate::Client::load`].
        path: PathBuf,
        /// Loader / OS message.
        msg: String,
    },
    /// The plugin library lacks a required symbol (`GetPjrtApi`).
    #[error("PJRT plugin {} does not export `{symbol}`: {msg}", path.display())]
    MissingSymbol {
        /// Plugin path.
        path: PathBuf,
        /// Name of the missing symbol.
        symbol: &'static str,
        /// Loader message.
        msg: String,
    },
    /// The plugin implements an ABI-incompatible PJRT major version.
    #[error(
        "PJRT plugin reports API version {major}.{minor}, incompatible with these \
         bindings (0.{})",
        ffi::PJRT_API_MINOR
    )]
    IncompatibleApi {
        /// Plugin's major version.
        major: i32,
        /// Plugin's minor version.
        minor: i32,
    },
    /// A PJRT call returned an error.
    #[error("{call} failed [{}]: {message}", code_name(*code))]
    Plugin {
        /// Name of the PJRT C API function.
        call: &'static str,
        /// `PJRT_Error_Code` (absl status code; see [`code_name`]).
        code: i32,
        /// The plugin's error message.
        message: String,
    },
    /// The plugin's function table does not contain this function (its
    /// reported `PJRT_Api.struct_size` ends before the slot, or it is NULL).
    #[error("PJRT function {0} is not provided by this plugin")]
    Unsupported(&'static str),
    /// A caller-side argument was rejected before reaching the plugin.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// The plugin returned something that violates the C API contract (for
    /// example a NULL output on success).
    #[error("unexpected PJRT behaviour: {0}")]
    Internal(String),
}

/// Result alias for this crate.
pub type Result<T> = std::result::Result<T, Error>;

/// Human-readable name of a `PJRT_Error_Code`.
pub fn code_name(code: i32) -> &'static str {
    match code {
        0 => "OK",
        1 => "CANCELLED",
        2 => "UNKNOWN",
        3 => "INVALID_ARGUMENT",
        4 => "DEADLINE_EXCEEDED",
        5 => "NOT_FOUND",
        6 => "ALREADY_EXISTS",
        7 => "PERMISSION_DENIED",
        8 => "RESOURCE_EXHAUSTED",
        9 => "FAILED_PRECONDITION",
        10 => "ABORTED",
        11 => "OUT_OF_RANGE",
        12 => "UNIMPLEMENTED",
        13 => "INTERNAL",
        14 => "UNAVAILABLE",
        15 => "DATA_LOSS",
        16 => "UNAUTHENTICATED",
        _ => "UNKNOWN_CODE",
    }
}

impl Error {
    /// The `PJRT_Error_Code` if this is a plugin error.
    pub fn plugin_code(&self) -> Option<i32> {
        match self {
            Error::Plugin { code, .. } => Some(*code),
            _ => None,
        }
    }
}

/// Converts a returned `PJRT_Error*` into a `Result`, consuming (destroying)
/// the error.
///
/// # Safety
/// `err` must be NULL or a live error returned by `api`'s plugin, not used
/// afterwards.
pub(crate) unsafe fn check(api: Api, call: &'static str, err: *mut ffi::PJRT_Error) -> Result<()> {
    if err.is_null() {
        return Ok(());
    }
    let mut message = match api_fn!(api, PJRT_Error_Message) {
        Ok(f) => {
            let mut a = <ffi::PJRT_Error_Message_Args as ffi::Args>::new();
            a.error = err;
            f(&mut a);
            crate::client::lossy_string(a.message, a.message_size)
        }
        Err(_) => String::from("<PJRT_Error_Message unavailable>"),
    };
    let mut code = 2; // UNKNOWN
    if let Ok(f) = api_fn!(api, PJRT_Error_GetCode) {
        let mut a = <ffi::PJRT_Error_GetCode_Args as ffi::Args>::new();
        a.error = err;
        let e2 = f(&mut a);
        if e2.is_null() {
            code = a.code;
        } else {
            destroy_error(api, e2);
        }
    }
    if message.is_empty() {
        message = String::from("<empty message>");
    }
    destroy_error(api, err);
    Err(Error::Plugin {
        call,
        code,
        message,
    })
}

/// Frees an error without reading it.
///
/// # Safety
/// `err` must be NULL or a live error from `api`'s plugin.
unsafe fn destroy_error(api: Api, err: *mut ffi::PJRT_Error) {
    if let Ok(f) = api_fn!(api, PJRT_Error_Destroy) {
        let mut a = <ffi::PJRT_Error_Destroy_Args as ffi::Args>::new();
        a.error = err;
        f(&mut a);
    }
}

/// Calls a PJRT function and converts its returned error.
///
/// # Safety
/// `args` must point to a fully initialised argument struct whose embedded
/// pointers satisfy the callee's contract.
#[inline]
pub(crate) unsafe fn call<A>(
    api: Api,
    name: &'static str,
    f: unsafe extern "C" fn(*mut A) -> *mut ffi::PJRT_Error,
    args: *mut A,
) -> Result<()> {
    check(api, name, f(args))
}
