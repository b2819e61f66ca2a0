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

// ----------------------------- Function types --------------------------------

macro_rules! fns {
    ($($(#[$m:meta])* $name:ident($args:ident) -> $ret:ty;)*) => { $(
        $(#[$m])*
        pub type $name = unsafe extern "C" fn(args: *mut $args) -> $ret;
    )* };
}

fns! {
    /// Frees an error (NULL allowed).
    PJRT_Error_Destroy(PJRT_Error_Destroy_Args) -> ();
    /// Reads an error's message.
    PJRT_Error_Message(PJRT_Error_Message_Args) -> ();
    /// Reads an error's status code.
    PJRT_Error_GetCode(PJRT_Error_GetCode_Args) -> *mut PJRT_Error;
    /// One-time plugin setup.
    PJRT_Plugin_Initialize(PJRT_Plugin_Initialize_Args) -> *mut PJRT_Error;
    /// Plugin attributes (xla_version, stablehlo versions, ...).
    PJRT_Plugin_Attributes(PJRT_Plugin_Attributes_Args) -> *mut PJRT_Error;
    /// Frees an event (NULL allowed).
    PJRT_Event_Destroy(PJRT_Event_Destroy_Args) -> *mut PJRT_Error;
    /// Non-blocking readiness query.
    PJRT_Event_IsReady(PJRT_Event_IsReady_Args) -> *mut PJRT_Error;
    /// Blocks until ready; returns the event's error status.
    PJRT_Event_Await(PJRT_Event_Await_Args) -> *mut PJRT_Error;
    /// Creates a client.
    PJRT_Client_Create(PJRT_Client_Create_Args) -> *mut PJRT_Error;
    /// Destroys a client.
    PJRT_Client_Destroy(PJRT_Client_Destroy_Args) -> *mut PJRT_Error;
    /// Platform name ("cpu", "cuda", "tpu", ...).
    PJRT_Client_PlatformName(PJRT_Client_PlatformName_Args) -> *mut PJRT_Error;
    /// Platform version string.
    PJRT_Client_PlatformVersion(PJRT_Client_PlatformVersion_Args) -> *mut PJRT_Error;
    /// Devices this client can issue commands to.
    PJRT_Client_AddressableDevices(PJRT_Client_AddressableDevices_Args) -> *mut PJRT_Error;
    /// Compiles and loads a program.
    PJRT_Client_Compile(PJRT_Client_Compile_Args) -> *mut PJRT_Error;
    /// Host -> device transfer.
    PJRT_Client_BufferFromHostBuffer(PJRT_Client_BufferFromHostBuffer_Args) -> *mut PJRT_Error;
    /// Device id.
    PJRT_DeviceDescription_Id(PJRT_DeviceDescription_Id_Args) -> *mut PJRT_Error;
    /// Process index of a device.
    PJRT_DeviceDescription_ProcessIndex(PJRT_DeviceDescription_ProcessIndex_Args) -> *mut PJRT_Error;
    /// Device kind string.
    PJRT_DeviceDescription_Kind(PJRT_DeviceDescription_Kind_Args) -> *mut PJRT_Error;
    /// Verbose device description.
    PJRT_DeviceDescription_DebugString(PJRT_DeviceDescription_DebugString_Args) -> *mut PJRT_Error;
    /// Terse device description.
    PJRT_DeviceDescription_ToString(PJRT_DeviceDescription_ToString_Args) -> *mut PJRT_Error;
    /// Device -> description.
    PJRT_Device_GetDescription(PJRT_Device_GetDescription_Args) -> *mut PJRT_Error;
    /// Allocator statistics.
    PJRT_Device_MemoryStats(PJRT_Device_MemoryStats_Args) -> *mut PJRT_Error;
    /// Frees an unloaded executable.
    PJRT_Executable_Destroy(PJRT_Executable_Destroy_Args) -> *mut PJRT_Error;
    /// Number of outputs per device.
    PJRT_Executable_NumOutputs(PJRT_Executable_NumOutputs_Args) -> *mut PJRT_Error;
    /// Output element types.
    PJRT_Executable_OutputElementTypes(PJRT_Executable_OutputElementTypes_Args) -> *mut PJRT_Error;
    /// Output dimensions.
    PJRT_Executable_OutputDimensions(PJRT_Executable_OutputDimensions_Args) -> *mut PJRT_Error;
    /// Serializes an executable (plugin-specific bytes).
    PJRT_Executable_Serialize(PJRT_Executable_Serialize_Args) -> *mut PJRT_Error;
    /// Loads a serialized executable.
    PJRT_Executable_DeserializeAndLoad(PJRT_Executable_DeserializeAndLoad_Args) -> *mut PJRT_Error;
    /// Frees a loaded executable.
    PJRT_LoadedExecutable_Destroy(PJRT_LoadedExecutable_Destroy_Args) -> *mut PJRT_Error;
    /// Loaded -> unloaded executable view (caller frees it).
    PJRT_LoadedExecutable_GetExecutable(PJRT_LoadedExecutable_GetExecutable_Args) -> *mut PJRT_Error;
    /// Launches an executable.
    PJRT_LoadedExecutable_Execute(PJRT_LoadedExecutable_Execute_Args) -> *mut PJRT_Error;
    /// Frees a buffer (and its device memory once no longer used).
    PJRT_Buffer_Destroy(PJRT_Buffer_Destroy_Args) -> *mut PJRT_Error;
    /// Element type of a buffer.
    PJRT_Buffer_ElementType(PJRT_Buffer_ElementType_Args) -> *mut PJRT_Error;
    /// Dimensions of a buffer.
    PJRT_Buffer_Dimensions(PJRT_Buffer_Dimensions_Args) -> *mut PJRT_Error;
    /// Bytes occupied on device.
    PJRT_Buffer_OnDeviceSizeInBytes(PJRT_Buffer_OnDeviceSizeInBytes_Args) -> *mut PJRT_Error;
    /// Whether the buffer was deleted (or donated).
    PJRT_Buffer_IsDeleted(PJRT_Buffer_IsDeleted_Args) -> *mut PJRT_Error;
    /// Device -> device copy.
    PJRT_Buffer_CopyToDevice(PJRT_Buffer_CopyToDevice_Args) -> *mut PJRT_Error;
    /// Device -> host copy.
    PJRT_Buffer_ToHostBuffer(PJRT_Buffer_ToHostBuffer_Args) -> *mut PJRT_Error;
    /// Event that fires when the buffer's contents are ready.
    PJRT_Buffer_ReadyEvent(PJRT_Buffer_ReadyEvent_Args) -> *mut PJRT_Error;
}

/// A function slot of `PJRT_Api` that this crate never calls.
pub type Slot = Option<unsafe extern "C" fn()>;

/// `PJRT_Api` (0.81 layout): the table returned by `GetPjrtApi`. Slots beyond
/// the plugin's reported `struct_size` must not be read.
#[repr(C)]
pub struct PJRT_Api {
    pub struct_size: usize,
    pub extension_start: *mut PJRT_Extension_Base,
    pub pjrt_api_version: PJRT_Api_Version,
    pub PJRT_Error_Destroy: Option<PJRT_Error_Destroy>,
    pub PJRT_Error_Message: Option<PJRT_Error_Message>,
    pub PJRT_Error_GetCode: Option<PJRT_Error_GetCode>,
    pub PJRT_Plugin_Initialize: Option<PJRT_Plugin_Initialize>,
    pub PJRT_Plugin_Attributes: Option<PJRT_Plugin_Attributes>,
    pub PJRT_Event_Destroy: Option<PJRT_Event_Destroy>,
    pub PJRT_Event_IsReady: Option<PJRT_Event_IsReady>,
    pub PJRT_Event_Error: Slot,
    pub PJRT_Event_Await: Option<PJRT_Event_Await>,
    pub PJRT_Event_OnReady: Slot,
    pub PJRT_Client_Create: Option<PJRT_Client_Create>,
    pub PJRT_Client_Destroy: Option<PJRT_Client_Destroy>,
    pub PJRT_Client_PlatformName: Option<PJRT_Client_PlatformName>,
    pub PJRT_Client_ProcessIndex: Slot,
    pub PJRT_Client_PlatformVersion: Option<PJRT_Client_PlatformVersion>,
    pub PJRT_Client_Devices: Slot,
    pub PJRT_Client_AddressableDevices: Option<PJRT_Client_AddressableDevices>,
    pub PJRT_Client_LookupDevice: Slot,
    pub PJRT_Client_LookupAddressableDevice: Slot,
    pub PJRT_Client_AddressableMemories: Slot,
    pub PJRT_Client_Compile: Option<PJRT_Client_Compile>,
    pub PJRT_Client_DefaultDeviceAssignment: Slot,
    pub PJRT_Client_BufferFromHostBuffer: Option<PJRT_Client_BufferFromHostBuffer>,
    pub PJRT_DeviceDescription_Id: Option<PJRT_DeviceDescription_Id>,
    pub PJRT_DeviceDescription_ProcessIndex: Option<PJRT_DeviceDescription_ProcessIndex>,
    pub PJRT_DeviceDescription_Attributes: Slot,
    pub PJRT_DeviceDescription_Kind: Option<PJRT_DeviceDescription_Kind>,
    pub PJRT_DeviceDescription_DebugString: Option<PJRT_DeviceDescription_DebugString>,
    pub PJRT_DeviceDescription_ToString: Option<PJRT_DeviceDescription_ToString>,
    pub PJRT_Device_GetDescription: Option<PJRT_Device_GetDescription>,
    pub PJRT_Device_IsAddressable: Slot,
    pub PJRT_Device_LocalHardwareId: Slot,
    pub PJRT_Device_AddressableMemories: Slot,
    pub PJRT_Device_DefaultMemory: Slot,
    pub PJRT_Device_MemoryStats: Option<PJRT_Device_MemoryStats>,
    pub PJRT_Memory_Id: Slot,
    pub PJRT_Memory_Kind: Slot,
    pub PJRT_Memory_DebugString: Slot,
    pub PJRT_Memory_ToString: Slot,
    pub PJRT_Memory_AddressableByDevices: Slot,
    pub PJRT_Executable_Destroy: Option<PJRT_Executable_Destroy>,
    pub PJRT_Executable_Name: Slot,
    pub PJRT_Executable_NumReplicas: Slot,
    pub PJRT_Executable_NumPartitions: Slot,
    pub PJRT_Executable_NumOutputs: Option<PJRT_Executable_NumOutputs>,
    pub PJRT_Executable_SizeOfGeneratedCodeInBytes: Slot,
    pub PJRT_Executable_GetCostAnalysis: Slot,
    pub PJRT_Executable_OutputMemoryKinds: Slot,
    pub PJRT_Executable_OptimizedProgram: Slot,
    pub PJRT_Executable_Serialize: Option<PJRT_Executable_Serialize>,
    pub PJRT_LoadedExecutable_Destroy: Option<PJRT_LoadedExecutable_Destroy>,
    pub PJRT_LoadedExecutable_GetExecutable: Option<PJRT_LoadedExecutable_GetExecutable>,
    pub PJRT_LoadedExecutable_AddressableDevices: Slot,
    pub PJRT_LoadedExecutable_Delete: Slot,
    pub PJRT_LoadedExecutable_IsDeleted: Slot,
    pub PJRT_LoadedExecutable_Execute: Option<PJRT_LoadedExecutable_Execute>,
    pub PJRT_Executable_DeserializeAndLoad: Option<PJRT_Executable_DeserializeAndLoad>,
    pub PJRT_LoadedExecutable_Fingerprint: Slot,
    pub PJRT_Buffer_Destroy: Option<PJRT_Buffer_Destroy>,
    pub PJRT_Buffer_ElementType: Option<PJRT_Buffer_ElementType>,
    pub PJRT_Buffer_Dimensions: Option<PJRT_Buffer_Dimensions>,
    pub PJRT_Buffer_UnpaddedDimensions: Slot,
    pub PJRT_Buffer_DynamicDimensionIndices: Slot,
    pub PJRT_Buffer_GetMemoryLayout: Slot,
    pub PJRT_Buffer_OnDeviceSizeInBytes: Option<PJRT_Buffer_OnDeviceSizeInBytes>,
    pub PJRT_Buffer_Device: Slot,
    pub PJRT_Buffer_Memory: Slot,
    pub PJRT_Buffer_Delete: Slot,
    pub PJRT_Buffer_IsDeleted: Option<PJRT_Buffer_IsDeleted>,
    pub PJRT_Buffer_CopyToDevice: Option<PJRT_Buffer_CopyToDevice>,
    pub PJRT_Buffer_ToHostBuffer: Option<PJRT_Buffer_ToHostBuffer>,
    pub PJRT_Buffer_IsOnCpu: Slot,
    pub PJRT_Buffer_ReadyEvent: Option<PJRT_Buffer_ReadyEvent>,
    pub PJRT_Buffer_UnsafePointer: Slot,
    pub PJRT_Buffer_IncreaseExternalReferenceCount: Slot,
    pub PJRT_Buffer_DecreaseExternalReferenceCount: Slot,
    pub PJRT_Buffer_OpaqueDeviceMemoryDataPointer: Slot,
    pub PJRT_CopyToDeviceStream_Destroy: Slot,
    pub PJRT_CopyToDeviceStream_AddChunk: Slot,
    pub PJRT_CopyToDeviceStream_TotalBytes: Slot,
    pub PJRT_CopyToDeviceStream_GranuleSize: Slot,
    pub PJRT_CopyToDeviceStream_CurrentBytes: Slot,
    pub PJRT_TopologyDescription_Create: Slot,
    pub PJRT_TopologyDescription_Destroy: Slot,
    pub PJRT_TopologyDescription_PlatformName: Slot,
    pub PJRT_TopologyDescription_PlatformVersion: Slot,
    pub PJRT_TopologyDescription_GetDeviceDescriptions: Slot,
    pub PJRT_TopologyDescription_Serialize: Slot,
    pub PJRT_TopologyDescription_Attributes: Slot,
    pub PJRT_Compile: Slot,
    pub PJRT_Executable_OutputElementTypes: Option<PJRT_Executable_OutputElementTypes>,
    pub PJRT_Executable_OutputDimensions: Option<PJRT_Executable_OutputDimensions>,
    pub PJRT_Buffer_CopyToMemory: Slot,
    pub PJRT_Client_CreateViewOfDeviceBuffer: Slot,
    pub PJRT_Executable_Fingerprint: Slot,
    pub PJRT_Client_TopologyDescription: Slot,
    pub PJRT_Executable_GetCompiledMemoryStats: Slot,
    pub PJRT_Memory_Kind_Id: Slot,
    pub PJRT_ExecuteContext_Create: Slot,
    pub PJRT_ExecuteContext_Destroy: Slot,
    pub PJRT_Buffer_CopyRawToHost: Slot,
    pub PJRT_AsyncHostToDeviceTransferManager_Destroy: Slot,
    pub PJRT_AsyncHostToDeviceTransferManager_TransferData: Slot,
    pub PJRT_Client_CreateBuffersForAsyncHostToDevice: Slot,
    pub PJRT_AsyncHostToDeviceTransferManager_RetrieveBuffer: Slot,
    pub PJRT_AsyncHostToDeviceTransferManager_Device: Slot,
    pub PJRT_AsyncHostToDeviceTransferManager_BufferCount: Slot,
    pub PJRT_AsyncHostToDeviceTransferManager_BufferSize: Slot,
    pub PJRT_AsyncHostToDeviceTransferManager_SetBufferError: Slot,
    pub PJRT_AsyncHostToDeviceTransferManager_AddMetadata: Slot,
    pub PJRT_Client_DmaMap: Slot,
    pub PJRT_Client_DmaUnmap: Slot,
    pub PJRT_Client_CreateUninitializedBuffer: Slot,
    pub PJRT_Client_UpdateGlobalProcessInfo: Slot,
    pub PJRT_TopologyDescription_Deserialize: Slot,
    pub PJRT_Client_CreateAliasBuffer: Slot,
    pub PJRT_Client_FulfillAliasBuffer: Slot,
    pub PJRT_LoadedExecutable_GetDeviceAssignment: Slot,
}

/// Signature of the plugin entry point `GetPjrtApi`.
pub type GetPjrtApiFn = unsafe extern "C" fn() -> *const PJRT_Api;

#[cfg(all(test, target_pointer_width = "64"))]
mod layout_tests;
