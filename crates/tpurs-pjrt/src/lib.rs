//! Safe Rust bindings to XLA's PJRT C API.
//!
//! This crate loads a PJRT plugin (`GetPjrtApi`), creates a [`Client`],
//! compiles StableHLO (MLIR text) into [`LoadedExecutable`]s, moves data with
//! [`Buffer`]s and launches executables asynchronously. All `unsafe` FFI is
//! contained here; every plugin failure becomes an [`Error`] carrying the
//! plugin's message.
//!
//! Bindings follow the 0.81 C header. Newer plugins only append fields, and
//! every function-table slot is checked against the plugin's reported
//! `PJRT_Api.struct_size` before use ([`Error::Unsupported`] otherwise).
//!
//! Devices are addressed by *ordinal*: the index into the client's
//! addressable-device list.
//!
//! ```no_run
//! use tpurs_pjrt::{Client, CompileOptions, ElementType, NamedValue};
//! # fn main() -> tpurs_pjrt::Result<()> {
//! let client = Client::load(
//!     std::path::Path::new("libpjrt_cpu.so"),
//!     &[NamedValue::int64("cpu_device_count", 2)],
//! )?;
//! let exe = client.compile(
//!     "module { func.func @main(%a: tensor<f32>) -> tensor<f32> { return %a : tensor<f32> } }",
//!     &CompileOptions::default(),
//! )?;
//! let x = client.buffer_from_host(&1.5f32.to_le_bytes(), ElementType::F32, &[], 1)?;
//! let out = exe.execute(&[&x], 1)?; // asynchronous: returns before completion
//! let mut host = [0u8; 4];
//! out[0].to_host(&mut host)?; // waits for the result
//! # Ok(()) }
//! ```

/// Reads a function slot out of the plugin's `PJRT_Api` table, refusing
/// slots past the plugin-reported `struct_size` or NULL slots. Must be used
/// inside `unsafe` (it dereferences the table pointer).
macro_rules! api_fn {
    ($api:expr, $name:ident) => {{
        let api: $crate::client::Api = $api;
        if ::std::mem::offset_of!($crate::ffi::PJRT_Api, $name) + ::std::mem::size_of::<usize>()
            > api.size
        {
            Err($crate::Error::Unsupported(stringify!($name)))
        } else {
            // The slot lies inside the table the plugin reported.
            let slot = ::std::ptr::addr_of!((*api.raw).$name).read();
            slot.ok_or($crate::Error::Unsupported(stringify!($name)))
        }
    }};
}

/// `pjrt_call!(api, PJRT_Fn, &mut args)`: looks up the slot, calls it and
/// converts the returned `PJRT_Error*`. Must be used inside `unsafe`.
macro_rules! pjrt_call {
    ($api:expr, $name:ident, $args:expr) => {{
        let api: $crate::client::Api = $api;
        let args = $args;
        match api_fn!(api, $name) {
            Ok(f) => $crate::error::call(api, stringify!($name), f, args),
            Err(e) => Err(e),
        }
    }};
}

mod buffer;
mod client;
mod compile_options;
mod error;
mod executable;
mod ffi;
mod upload;

pub use buffer::{Buffer, ElementType};
pub use client::{Client, DeviceInfo, MemoryStats, NamedValue};
pub use compile_options::{CompileOptions, OverrideValue};
pub use error::{code_name, Error, Result};
pub use executable::LoadedExecutable;
pub use upload::{HostBytes, PendingUpload};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handles_are_thread_safe() {
        fn is<T: Send + Sync>() {}
        is::<Client>();
        is::<Buffer>();
        is::<LoadedExecutable>();
        is::<Error>();
    }

    #[test]
    fn element_type_codes_round_trip() {
        use ElementType::*;
        for t in [
            Pred, S8, S16, S32, S64, U8, U16, U32, U64, F16, F32, F64, BF16, C64, C128, F8E5M2,
            F8E4M3FN, F8E5M2FNUZ, F8E4M3FNUZ,
        ] {
            assert_eq!(ElementType::from_pjrt(t.to_pjrt()), Some(t));
        }
        assert_eq!(ElementType::from_pjrt(0), None);
        assert_eq!(ElementType::from_pjrt(18), None); // F8E4M3B11FNUZ
        assert_eq!(C128.byte_size(), 16);
        assert_eq!(BF16.byte_size(), 2);
        assert_eq!(Pred.byte_size(), 1);
        assert_eq!(S64.byte_size(), 8);
    }
}
