//! Raw `repr(C)` bindings to the subset of the PJRT C API (header version
//! 0.81) that this crate calls.
//!
//! Layout rules: every argument struct begins with `struct_size`, which we set
//! to `size_of::<ThisStruct>()` (the 0.81 layout). Plugins implementing newer
//! API versions only ever append fields, so these layouts stay valid. C enums
//! are bound as `c_int` so that an unexpected value from a newer plugin can
//! never be an invalid Rust enum discriminant. Every struct here is valid when
//! zero-initialised (raw pointers, integers, `bool`, `Option<fn>`), which is
//! what [`Args::new`] relies on.
//!
//! Nothing in this module is safe to call directly; the safe wrappers live in
//! the sibling modules.

#![allow(
    non_camel_case_types,
    non_snake_case,
    non_upper_case_globals,
    dead_code
)]

use std::ffi::{c_char, c_int, c_void};

/// Major version of the header these bindings were written against.
pub const PJRT_API_MAJOR: c_int = 0;
/// Minor version of the header these bindings were written against.
pub const PJRT_API_MINOR: c_int = 81;

/// Argument structs that start with `size_t struct_size` and are valid when
/// zeroed.
///
/// # Safety
/// Implementors must be `repr(C)`, start with a `usize` `struct_size` field and
/// be valid for the all-zero bit pattern.
pub unsafe trait Args: Sized {
    /// A zeroed struct whose `struct_size` is `size_of::<Self>()`.
    #[inline]
    fn new() -> Self {
        // SAFETY: guaranteed by the trait contract (zero is a valid value and
        // the first field is a usize).
        unsafe {
            let mut v: Self = std::mem::zeroed();
            *(&mut v as *mut Self as *mut usize) = std::mem::size_of::<Self>();
            v
        }
    }
}

macro_rules! args {
    ($($t:ident),* $(,)?) => { $(
        // SAFETY: all listed structs are repr(C), begin with struct_size and
        // contain only pointer/integer/bool/Option<fn> fields.
        unsafe impl Args for $t {}
    )* };
}

// ------------------------------- Opaque types --------------------------------

macro_rules! opaque {
    ($($(#[$m:meta])* $t:ident),* $(,)?) => { $(
        $(#[$m])*
        #[repr(C)]
        pub struct $t {
            _private: [u8; 0],
        }
    )* };
}

opaque!(
    /// Chain of extension structs (never used by us; always passed as NULL).
    PJRT_Extension_Base,
    /// Opaque error object; must be freed with `PJRT_Error_Destroy`.
    PJRT_Error,
    /// Opaque asynchronous completion event; freed with `PJRT_Event_Destroy`.
    PJRT_Event,
    /// Opaque client handle.
    PJRT_Client,
    /// Opaque device handle (owned by the client).
    PJRT_Device,
    /// Opaque memory-space handle (owned by the client).
    PJRT_Memory,
    /// Opaque device description (owned by the device).
    PJRT_DeviceDescription,
    /// Opaque unloaded executable; freed with `PJRT_Executable_Destroy`.
    PJRT_Executable,
    /// Opaque loaded executable; freed with `PJRT_LoadedExecutable_Destroy`.
    PJRT_LoadedExecutable,
    /// Opaque device buffer; freed with `PJRT_Buffer_Destroy`.
    PJRT_Buffer,
    /// Opaque execute context (unused, NULL).
    PJRT_ExecuteContext,
    /// Opaque memory layout description (unused, NULL = dense major-to-minor).
    PJRT_Buffer_MemoryLayout,
    /// Opaque send-callback info (unused).
    PJRT_SendCallbackInfo,
    /// Opaque recv-callback info (unused).
    PJRT_RecvCallbackInfo,
    /// Opaque owner of serialized executable bytes; freed by its deleter.
    PJRT_SerializedExecutable,
);

// ---------------------------------- Enums ------------------------------------

/// `PJRT_Error_Code` (absl status codes).
pub type PJRT_Error_Code = c_int;

/// `PJRT_NamedValue_Type`.
pub type PJRT_NamedValue_Type = c_int;
/// `PJRT_NamedValue_kString`.
pub const PJRT_NamedValue_kString: PJRT_NamedValue_Type = 0;
/// `PJRT_NamedValue_kInt64`.
pub const PJRT_NamedValue_kInt64: PJRT_NamedValue_Type = 1;
/// `PJRT_NamedValue_kInt64List`.
pub const PJRT_NamedValue_kInt64List: PJRT_NamedValue_Type = 2;
/// `PJRT_NamedValue_kFloat`.
pub const PJRT_NamedValue_kFloat: PJRT_NamedValue_Type = 3;
/// `PJRT_NamedValue_kBool`.
pub const PJRT_NamedValue_kBool: PJRT_NamedValue_Type = 4;

/// `PJRT_Buffer_Type` (element type of a buffer); see `ElementType`.
pub type PJRT_Buffer_Type = c_int;

/// `PJRT_HostBufferSemantics`.
pub type PJRT_HostBufferSemantics = c_int;
/// The runtime copies `data` before `BufferFromHostBuffer` returns.
pub const PJRT_HostBufferSemantics_kImmutableOnlyDuringCall: PJRT_HostBufferSemantics = 0;
/// The runtime may read `data` until `done_with_host_buffer` fires.
pub const PJRT_HostBufferSemantics_kImmutableUntilTransferCompletes: PJRT_HostBufferSemantics = 1;

// --------------------------------- Structs -----------------------------------

/// `PJRT_Api_Version`: the API version the plugin was built with.
#[repr(C)]
pub struct PJRT_Api_Version {
    pub struct_size: usize,
    pub extension_start: *mut PJRT_Extension_Base,
    pub major_version: c_int,
    pub minor_version: c_int,
}

/// `PJRT_Error_Destroy_Args`.
#[repr(C)]
pub struct PJRT_Error_Destroy_Args {
    pub struct_size: usize,
    pub extension_start: *mut PJRT_Extension_Base,
    pub error: *mut PJRT_Error,
}

/// `PJRT_Error_Message_Args`: `message` has the lifetime of `error`.
#[repr(C)]
pub struct PJRT_Error_Message_Args {
    pub struct_size: usize,
    pub extension_start: *mut PJRT_Extension_Base,
    pub error: *const PJRT_Error,
    pub message: *const c_char,
    pub message_size: usize,
}

/// `PJRT_Error_GetCode_Args`.
#[repr(C)]
pub struct PJRT_Error_GetCode_Args {
    pub struct_size: usize,
    pub extension_start: *mut PJRT_Extension_Base,
    pub error: *const PJRT_Error,
    pub code: PJRT_Error_Code,
}

/// Value of a `PJRT_NamedValue` (anonymous union in C).
#[repr(C)]
#[derive(Clone, Copy)]
pub union PJRT_NamedValue_Value {
    pub string_value: *const c_char,
    pub int64_value: i64,
    pub int64_array_value: *const i64,
    pub float_value: f32,
    pub bool_value: bool,
}

/// `PJRT_NamedValue`: a key/value pair used for options and attributes.
/// `value_size` is the element count for strings/lists and 1 for scalars.
#[repr(C)]
pub struct PJRT_NamedValue {
    pub struct_size: usize,
    pub extension_start: *mut PJRT_Extension_Base,
    pub name: *const c_char,
    pub name_size: usize,
    pub type_: PJRT_NamedValue_Type,
    pub value: PJRT_NamedValue_Value,
    pub value_size: usize,
}

/// `PJRT_Plugin_Initialize_Args`.
#[repr(C)]
pub struct PJRT_Plugin_Initialize_Args {
    pub struct_size: usize,
    pub extension_start: *mut PJRT_Extension_Base,
}

/// `PJRT_Plugin_Attributes_Args`: attributes live as long as the process.
#[repr(C)]
pub struct PJRT_Plugin_Attributes_Args {
    pub struct_size: usize,
    pub extension_start: *mut PJRT_Extension_Base,
    pub attributes: *const PJRT_NamedValue,
    pub num_attributes: usize,
}

/// `PJRT_Event_Destroy_Args`.
#[repr(C)]
pub struct PJRT_Event_Destroy_Args {
    pub struct_size: usize,
    pub extension_start: *mut PJRT_Extension_Base,
    pub event: *mut PJRT_Event,
}

/// `PJRT_Event_IsReady_Args`.
#[repr(C)]
pub struct PJRT_Event_IsReady_Args {
    pub struct_size: usize,
    pub extension_start: *mut PJRT_Extension_Base,
    pub event: *mut PJRT_Event,
    pub is_ready: bool,
}

/// `PJRT_Event_Await_Args`: blocks until the event is ready; the call's
/// return value is the event's error status.
#[repr(C)]
pub struct PJRT_Event_Await_Args {
    pub struct_size: usize,
    pub extension_start: *mut PJRT_Extension_Base,
    pub event: *mut PJRT_Event,
}

/// Key-value callback pointer types (unused; always NULL).
pub type KvCallback = Option<unsafe extern "C" fn(*mut c_void) -> *mut PJRT_Error>;

/// `PJRT_Client_Create_Args`.
#[repr(C)]
pub struct PJRT_Client_Create_Args {
    pub struct_size: usize,
    pub extension_start: *mut PJRT_Extension_Base,
    pub create_options: *const PJRT_NamedValue,
    pub num_options: usize,
    pub kv_get_callback: KvCallback,
    pub kv_get_user_arg: *mut c_void,
    pub kv_put_callback: KvCallback,
    pub kv_put_user_arg: *mut c_void,
    pub client: *mut PJRT_Client,
    pub kv_try_get_callback: KvCallback,
    pub kv_try_get_user_arg: *mut c_void,
}

/// `PJRT_Client_Destroy_Args`.
#[repr(C)]
pub struct PJRT_Client_Destroy_Args {
    pub struct_size: usize,
    pub extension_start: *mut PJRT_Extension_Base,
    pub client: *mut PJRT_Client,
}

/// `PJRT_Client_PlatformName_Args`: the string is owned by the client.
#[repr(C)]
pub struct PJRT_Client_PlatformName_Args {
    pub struct_size: usize,
    pub extension_start: *mut PJRT_Extension_Base,
    pub client: *mut PJRT_Client,
    pub platform_name: *const c_char,
    pub platform_name_size: usize,
}

/// `PJRT_Client_PlatformVersion_Args`: the string is owned by the client.
#[repr(C)]
pub struct PJRT_Client_PlatformVersion_Args {
    pub struct_size: usize,
    pub extension_start: *mut PJRT_Extension_Base,
    pub client: *mut PJRT_Client,
    pub platform_version: *const c_char,
    pub platform_version_size: usize,
}

/// `PJRT_Client_AddressableDevices_Args`: the array is owned by the client.
#[repr(C)]
pub struct PJRT_Client_AddressableDevices_Args {
    pub struct_size: usize,
    pub extension_start: *mut PJRT_Extension_Base,
    pub client: *mut PJRT_Client,
    pub addressable_devices: *const *mut PJRT_Device,
    pub num_addressable_devices: usize,
}

/// `PJRT_Program`: code + format ("mlir", "hlo", ...), owned by the caller.
#[repr(C)]
pub struct PJRT_Program {
    pub struct_size: usize,
    pub extension_start: *mut PJRT_Extension_Base,
    pub code: *mut c_char,
    pub code_size: usize,
    pub format: *const c_char,
    pub format_size: usize,
}

/// `PJRT_Client_Compile_Args`: `compile_options` is a serialized
/// `xla.CompileOptionsProto` (must not be empty).
#[repr(C)]
pub struct PJRT_Client_Compile_Args {
    pub struct_size: usize,
    pub extension_start: *mut PJRT_Extension_Base,
    pub client: *mut PJRT_Client,
    pub program: *const PJRT_Program,
    pub compile_options: *const c_char,
    pub compile_options_size: usize,
    pub executable: *mut PJRT_LoadedExecutable,
}

/// `PJRT_Client_BufferFromHostBuffer_Args`.
#[repr(C)]
pub struct PJRT_Client_BufferFromHostBuffer_Args {
    pub struct_size: usize,
    pub extension_start: *mut PJRT_Extension_Base,
    pub client: *mut PJRT_Client,
    pub data: *const c_void,
    pub type_: PJRT_Buffer_Type,
    pub dims: *const i64,
    pub num_dims: usize,
    /// NULL/0 = dense major-to-minor.
    pub byte_strides: *const i64,
    pub num_byte_strides: usize,
    pub host_buffer_semantics: PJRT_HostBufferSemantics,
    pub device: *mut PJRT_Device,
    pub memory: *mut PJRT_Memory,
    pub device_layout: *mut PJRT_Buffer_MemoryLayout,
    /// Out: signals when `data` may be freed; caller destroys it.
    pub done_with_host_buffer: *mut PJRT_Event,
    /// Out: the new buffer; caller destroys it.
    pub buffer: *mut PJRT_Buffer,
}

/// `PJRT_DeviceDescription_Id_Args`.
#[repr(C)]
pub struct PJRT_DeviceDescription_Id_Args {
    pub struct_size: usize,
    pub extension_start: *mut PJRT_Extension_Base,
    pub device_description: *mut PJRT_DeviceDescription,
    pub id: c_int,
}

/// `PJRT_DeviceDescription_ProcessIndex_Args`.
#[repr(C)]
pub struct PJRT_DeviceDescription_ProcessIndex_Args {
    pub struct_size: usize,
    pub extension_start: *mut PJRT_Extension_Base,
    pub device_description: *mut PJRT_DeviceDescription,
    pub process_index: c_int,
}

/// `PJRT_DeviceDescription_Kind_Args`.
#[repr(C)]
pub struct PJRT_DeviceDescription_Kind_Args {
    pub struct_size: usize,
    pub extension_start: *mut PJRT_Extension_Base,
    pub device_description: *mut PJRT_DeviceDescription,
    pub device_kind: *const c_char,
    pub device_kind_size: usize,
}

/// `PJRT_DeviceDescription_DebugString_Args`.
#[repr(C)]
pub struct PJRT_DeviceDescription_DebugString_Args {
    pub struct_size: usize,
    pub extension_start: *mut PJRT_Extension_Base,
    pub device_description: *mut PJRT_DeviceDescription,
    pub debug_string: *const c_char,
    pub debug_string_size: usize,
}

/// `PJRT_DeviceDescription_ToString_Args`.
#[repr(C)]
pub struct PJRT_DeviceDescription_ToString_Args {
    pub struct_size: usize,
    pub extension_start: *mut PJRT_Extension_Base,
    pub device_description: *mut PJRT_DeviceDescription,
    pub to_string: *const c_char,
    pub to_string_size: usize,
}

/// `PJRT_Device_GetDescription_Args`.
#[repr(C)]
pub struct PJRT_Device_GetDescription_Args {
    pub struct_size: usize,
    pub extension_start: *mut PJRT_Extension_Base,
    pub device: *mut PJRT_Device,
    pub device_description: *mut PJRT_DeviceDescription,
}

/// `PJRT_Device_MemoryStats_Args`: only `bytes_in_use` is mandatory.
#[repr(C)]
pub struct PJRT_Device_MemoryStats_Args {
    pub struct_size: usize,
    pub extension_start: *mut PJRT_Extension_Base,
    pub device: *mut PJRT_Device,
    pub bytes_in_use: i64,
    pub peak_bytes_in_use: i64,
    pub peak_bytes_in_use_is_set: bool,
    pub num_allocs: i64,
    pub num_allocs_is_set: bool,
    pub largest_alloc_size: i64,
    pub largest_alloc_size_is_set: bool,
    pub bytes_limit: i64,
    pub bytes_limit_is_set: bool,
    pub bytes_reserved: i64,
    pub bytes_reserved_is_set: bool,
    pub peak_bytes_reserved: i64,
    pub peak_bytes_reserved_is_set: bool,
    pub bytes_reservable_limit: i64,
    pub bytes_reservable_limit_is_set: bool,
    pub largest_free_block_bytes: i64,
    pub largest_free_block_bytes_is_set: bool,
    pub pool_bytes: i64,
    pub pool_bytes_is_set: bool,
    pub peak_pool_bytes: i64,
    pub peak_pool_bytes_is_set: bool,
}

/// `PJRT_Executable_Destroy_Args`.
#[repr(C)]
pub struct PJRT_Executable_Destroy_Args {
    pub struct_size: usize,
    pub extension_start: *mut PJRT_Extension_Base,
    pub executable: *mut PJRT_Executable,
}

/// `PJRT_Executable_Serialize_Args`: `serialized_bytes` lives until
/// `serialized_executable_deleter(serialized_executable)` is called.
#[repr(C)]
pub struct PJRT_Executable_Serialize_Args {
    pub struct_size: usize,
    pub extension_start: *mut PJRT_Extension_Base,
    pub executable: *const PJRT_Executable,
    pub serialized_bytes: *const c_char,
    pub serialized_bytes_size: usize,
    pub serialized_executable: *mut PJRT_SerializedExecutable,
    pub serialized_executable_deleter: Option<unsafe extern "C" fn(*mut PJRT_SerializedExecutable)>,
}

/// `PJRT_Executable_DeserializeAndLoad_Args` (NULL overridden options: the serialized
/// executable's own options apply).
#[repr(C)]
pub struct PJRT_Executable_DeserializeAndLoad_Args {
    pub struct_size: usize,
    pub extension_start: *mut PJRT_Extension_Base,
    pub client: *mut PJRT_Client,
    pub serialized_executable: *const c_char,
    pub serialized_executable_size: usize,
    pub loaded_executable: *mut PJRT_LoadedExecutable,
    pub overridden_serialized_compile_options: *const c_char,
    pub overridden_serialized_compile_options_size: usize,
}

/// `PJRT_Executable_NumOutputs_Args`.
#[repr(C)]
pub struct PJRT_Executable_NumOutputs_Args {
    pub struct_size: usize,
    pub extension_start: *mut PJRT_Extension_Base,
    pub executable: *mut PJRT_Executable,
    pub num_outputs: usize,
}

/// `PJRT_Executable_OutputElementTypes_Args`: array lives as long as the
/// `PJRT_Executable`.
#[repr(C)]
pub struct PJRT_Executable_OutputElementTypes_Args {
    pub struct_size: usize,
    pub extension_start: *mut PJRT_Extension_Base,
    pub executable: *mut PJRT_Executable,
    pub output_types: *mut PJRT_Buffer_Type,
    pub num_output_types: usize,
}

/// `PJRT_Executable_OutputDimensions_Args`: `dims` is the concatenation of
/// every output's dimensions, `dim_sizes[i]` the rank of output `i`.
#[repr(C)]
pub struct PJRT_Executable_OutputDimensions_Args {
    pub struct_size: usize,
    pub extension_start: *mut PJRT_Extension_Base,
    pub executable: *mut PJRT_Executable,
    pub num_outputs: usize,
    pub dims: *const i64,
    pub dim_sizes: *const usize,
}

/// `PJRT_LoadedExecutable_Destroy_Args`.
#[repr(C)]
pub struct PJRT_LoadedExecutable_Destroy_Args {
    pub struct_size: usize,
    pub extension_start: *mut PJRT_Extension_Base,
    pub executable: *mut PJRT_LoadedExecutable,
}

/// `PJRT_LoadedExecutable_GetExecutable_Args`: the returned executable must
/// be destroyed by the caller.
#[repr(C)]
pub struct PJRT_LoadedExecutable_GetExecutable_Args {
    pub struct_size: usize,
    pub extension_start: *mut PJRT_Extension_Base,
    pub loaded_executable: *mut PJRT_LoadedExecutable,
    pub executable: *mut PJRT_Executable,
}

/// `PJRT_ExecuteOptions`.
#[repr(C)]
pub struct PJRT_ExecuteOptions {
    pub struct_size: usize,
    pub extension_start: *mut PJRT_Extension_Base,
    pub send_callbacks: *mut *mut PJRT_SendCallbackInfo,
    pub recv_callbacks: *mut *mut PJRT_RecvCallbackInfo,
    pub num_send_ops: usize,
    pub num_recv_ops: usize,
    pub launch_id: c_int,
    pub non_donatable_input_indices: *const i64,
    pub num_non_donatable_input_indices: usize,
    pub context: *mut PJRT_ExecuteContext,
    pub call_location: *const c_char,
    pub num_tasks: usize,
    pub task_ids: *mut c_int,
    pub incarnation_ids: *mut i64,
}

/// `PJRT_LoadedExecutable_Execute_Args`. `device_complete_events` may be NULL
/// (then no completion events are produced); with `execute_device` set,
/// `num_devices` must be 1.
#[repr(C)]
pub struct PJRT_LoadedExecutable_Execute_Args {
    pub struct_size: usize,
    pub extension_start: *mut PJRT_Extension_Base,
    pub executable: *mut PJRT_LoadedExecutable,
    pub options: *mut PJRT_ExecuteOptions,
    /// `[num_devices][num_args]`.
    pub argument_lists: *const *const *mut PJRT_Buffer,
    pub num_devices: usize,
    pub num_args: usize,
    /// `[num_devices][num_outputs]`, allocated by the caller, filled by the
    /// plugin.
    pub output_lists: *const *mut *mut PJRT_Buffer,
    pub device_complete_events: *mut *mut PJRT_Event,
    pub execute_device: *mut PJRT_Device,
}

/// `PJRT_Buffer_Destroy_Args`.
#[repr(C)]
pub struct PJRT_Buffer_Destroy_Args {
    pub struct_size: usize,
    pub extension_start: *mut PJRT_Extension_Base,
    pub buffer: *mut PJRT_Buffer,
}

/// `PJRT_Buffer_ElementType_Args`.
#[repr(C)]
pub struct PJRT_Buffer_ElementType_Args {
    pub struct_size: usize,
    pub extension_start: *mut PJRT_Extension_Base,
    pub buffer: *mut PJRT_Buffer,
    pub type_: PJRT_Buffer_Type,
}

/// `PJRT_Buffer_Dimensions_Args`: `dims` lives as long as the buffer.
#[repr(C)]
pub struct PJRT_Buffer_Dimensions_Args {
    pub struct_size: usize,
    pub extension_start: *mut PJRT_Extension_Base,
    pub buffer: *mut PJRT_Buffer,
    pub dims: *const i64,
    pub num_dims: usize,
}

/// `PJRT_Buffer_OnDeviceSizeInBytes_Args`.
#[repr(C)]
pub struct PJRT_Buffer_OnDeviceSizeInBytes_Args {
    pub struct_size: usize,
    pub extension_start: *mut PJRT_Extension_Base,
    pub buffer: *mut PJRT_Buffer,
    pub on_device_size_in_bytes: usize,
}

/// `PJRT_Buffer_IsDeleted_Args`.
#[repr(C)]
pub struct PJRT_Buffer_IsDeleted_Args {
    pub struct_size: usize,
    pub extension_start: *mut PJRT_Extension_Base,
    pub buffer: *mut PJRT_Buffer,
    pub is_deleted: bool,
}

/// `PJRT_Buffer_CopyToDevice_Args`.
#[repr(C)]
pub struct PJRT_Buffer_CopyToDevice_Args {
    pub struct_size: usize,
    pub extension_start: *mut PJRT_Extension_Base,
    pub buffer: *mut PJRT_Buffer,
    pub dst_device: *mut PJRT_Device,
    pub dst_buffer: *mut PJRT_Buffer,
}

/// `PJRT_Buffer_ToHostBuffer_Args`: with `dst == NULL` the call only reports
/// the required `dst_size`.
#[repr(C)]
pub struct PJRT_Buffer_ToHostBuffer_Args {
    pub struct_size: usize,
    pub extension_start: *mut PJRT_Extension_Base,
    pub src: *mut PJRT_Buffer,
    pub host_layout: *mut PJRT_Buffer_MemoryLayout,
    pub dst: *mut c_void,
    pub dst_size: usize,
    pub event: *mut PJRT_Event,
}

/// `PJRT_Buffer_ReadyEvent_Args`.
#[repr(C)]
pub struct PJRT_Buffer_ReadyEvent_Args {
    pub struct_size: usize,
    pub extension_start: *mut PJRT_Extension_Base,
    pub buffer: *mut PJRT_Buffer,
    pub event: *mut PJRT_Event,
}

args!(
    PJRT_Error_Destroy_Args,
    PJRT_Error_Message_Args,
    PJRT_Error_GetCode_Args,
    PJRT_NamedValue,
    PJRT_Plugin_Initialize_Args,
    PJRT_Plugin_Attributes_Args,
    PJRT_Event_Destroy_Args,
    PJRT_Event_IsReady_Args,
    PJRT_Event_Await_Args,
    PJRT_Client_Create_Args,
    PJRT_Client_Destroy_Args,
    PJRT_Client_PlatformName_Args,
    PJRT_Client_PlatformVersion_Args,
    PJRT_Client_AddressableDevices_Args,
    PJRT_Program,
    PJRT_Client_Compile_Args,
    PJRT_Client_BufferFromHostBuffer_Args,
    PJRT_DeviceDescription_Id_Args,
    PJRT_DeviceDescription_ProcessIndex_Args,
    PJRT_DeviceDescription_Kind_Args,
    PJRT_DeviceDescription_DebugString_Args,
    PJRT_DeviceDescription_ToString_Args,
    PJRT_Device_GetDescription_Args,
    PJRT_Device_MemoryStats_Args,
    PJRT_Executable_Destroy_Args,
    PJRT_Executable_NumOutputs_Args,
    PJRT_Executable_Serialize_Args,
    PJRT_Executable_DeserializeAndLoad_Args,
    PJRT_Executable_OutputElementTypes_Args,
    PJRT_Executable_OutputDimensions_Args,
    PJRT_LoadedExecutable_Destroy_Args,
    PJRT_LoadedExecutable_GetExecutable_Args,
    PJRT_ExecuteOptions,
    PJRT_LoadedExecutable_Execute_Args,
    PJRT_Buffer_Destroy_Args,
    PJRT_Buffer_ElementType_Args,
    PJRT_Buffer_Dimensions_Args,
    PJRT_Buffer_OnDeviceSizeInBytes_Args,
    PJRT_Buffer_IsDeleted_Args,
    PJRT_Buffer_CopyToDevice_Args,
    PJRT_Buffer_ToHostBuffer_Args,
    PJRT_Buffer_ReadyEvent_Args,
);

mod api;
pub use api::*;

#[cfg(all(test, target_pointer_width = "64"))]
mod layout_tests;
