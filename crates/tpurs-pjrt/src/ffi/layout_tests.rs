//! Layout checks: every size/offset below was produced by compiling the 0.81
//! `pjrt_c_api.h` with a C compiler (sizeof/offsetof) on x86_64 Linux.

use super::*;
use std::mem::{offset_of, size_of};

#[test]
fn layouts_match_c_header() {
    assert_eq!(size_of::<PJRT_Api_Version>(), 24, "sizeof PJRT_Api_Version");
    assert_eq!(
        offset_of!(PJRT_Api_Version, struct_size),
        0,
        "offsetof PJRT_Api_Version.struct_size"
    );
    assert_eq!(
        offset_of!(PJRT_Api_Version, extension_start),
        8,
        "offsetof PJRT_Api_Version.extension_start"
    );
    assert_eq!(
        offset_of!(PJRT_Api_Version, major_version),
        16,
        "offsetof PJRT_Api_Version.major_version"
    );
    assert_eq!(
        offset_of!(PJRT_Api_Version, minor_version),
        20,
        "offsetof PJRT_Api_Version.minor_version"
    );
    assert_eq!(
        size_of::<PJRT_Error_Destroy_Args>(),
        24,
        "sizeof PJRT_Error_Destroy_Args"
    );
    assert_eq!(
        offset_of!(PJRT_Error_Destroy_Args, struct_size),
        0,
        "offsetof PJRT_Error_Destroy_Args.struct_size"
    );
    assert_eq!(
        offset_of!(PJRT_Error_Destroy_Args, extension_start),
        8,
        "offsetof PJRT_Error_Destroy_Args.extension_start"
    );
    assert_eq!(
        offset_of!(PJRT_Error_Destroy_Args, error),
        16,
        "offsetof PJRT_Error_Destroy_Args.error"
    );
    assert_eq!(
        size_of::<PJRT_Error_Message_Args>(),
        40,
        "sizeof PJRT_Error_Message_Args"
    );
    assert_eq!(
        offset_of!(PJRT_Error_Message_Args, struct_size),
        0,
        "offsetof PJRT_Error_Message_Args.struct_size"
    );
    assert_eq!(
        offset_of!(PJRT_Error_Message_Args, extension_start),
        8,
        "offsetof PJRT_Error_Message_Args.extension_start"
    );
    assert_eq!(
        offset_of!(PJRT_Error_Message_Args, error),
        16,
        "offsetof PJRT_Error_Message_Args.error"
    );
    assert_eq!(
        offset_of!(PJRT_Error_Message_Args, message),
        24,
        "offsetof PJRT_Error_Message_Args.message"
    );
    assert_eq!(
        offset_of!(PJRT_Error_Message_Args, message_size),
        32,
        "offsetof PJRT_Error_Message_Args.message_size"
    );
    assert_eq!(
        size_of::<PJRT_Error_GetCode_Args>(),
        32,
        "sizeof PJRT_Error_GetCode_Args"
    );
    assert_eq!(
        offset_of!(PJRT_Error_GetCode_Args, struct_size),
        0,
        "offsetof PJRT_Error_GetCode_Args.struct_size"
    );
    assert_eq!(
        offset_of!(PJRT_Error_GetCode_Args, extension_start),
        8,
        "offsetof PJRT_Error_GetCode_Args.extension_start"
    );
    assert_eq!(
        offset_of!(PJRT_Error_GetCode_Args, error),
        16,
        "offsetof PJRT_Error_GetCode_Args.error"
    );
    assert_eq!(
        offset_of!(PJRT_Error_GetCode_Args, code),
        24,
        "offsetof PJRT_Error_GetCode_Args.code"
    );
    assert_eq!(size_of::<PJRT_NamedValue>(), 56, "sizeof PJRT_NamedValue");
    assert_eq!(
        offset_of!(PJRT_NamedValue, struct_size),
        0,
        "offsetof PJRT_NamedValue.struct_size"
    );
    assert_eq!(
        offset_of!(PJRT_NamedValue, extension_start),
        8,
        "offsetof PJRT_NamedValue.extension_start"
    );
    assert_eq!(
        offset_of!(PJRT_NamedValue, name),
        16,
        "offsetof PJRT_NamedValue.name"
    );
    assert_eq!(
        offset_of!(PJRT_NamedValue, name_size),
        24,
        "offsetof PJRT_NamedValue.name_size"
    );
    assert_eq!(
        offset_of!(PJRT_NamedValue, type_),
        32,
        "offsetof PJRT_NamedValue.type_"
    );
    assert_eq!(
        offset_of!(PJRT_NamedValue, value),
        40,
        "offsetof PJRT_NamedValue.value"
    );
    assert_eq!(
        offset_of!(PJRT_NamedValue, value_size),
        48,
        "offsetof PJRT_NamedValue.value_size"
    );
    assert_eq!(
        size_of::<PJRT_Plugin_Initialize_Args>(),
        16,
        "sizeof PJRT_Plugin_Initialize_Args"
    );
    assert_eq!(
        offset_of!(PJRT_Plugin_Initialize_Args, struct_size),
        0,
        "offsetof PJRT_Plugin_Initialize_Args.struct_size"
    );
    assert_eq!(
        offset_of!(PJRT_Plugin_Initialize_Args, extension_start),
        8,
        "offsetof PJRT_Plugin_Initialize_Args.extension_start"
    );
    assert_eq!(
        size_of::<PJRT_Plugin_Attributes_Args>(),
        32,
        "sizeof PJRT_Plugin_Attributes_Args"
    );
    assert_eq!(
        offset_of!(PJRT_Plugin_Attributes_Args, struct_size),
        0,
        "offsetof PJRT_Plugin_Attributes_Args.struct_size"
    );
    assert_eq!(
        offset_of!(PJRT_Plugin_Attributes_Args, extension_start),
        8,
        "offsetof PJRT_Plugin_Attributes_Args.extension_start"
    );
    assert_eq!(
        offset_of!(PJRT_Plugin_Attributes_Args, attributes),
        16,
        "offsetof PJRT_Plugin_Attributes_Args.attributes"
    );
    assert_eq!(
        offset_of!(PJRT_Plugin_Attributes_Args, num_attributes),
        24,
        "offsetof PJRT_Plugin_Attributes_Args.num_attributes"
    );
    assert_eq!(
        size_of::<PJRT_Event_Destroy_Args>(),
        24,
        "sizeof PJRT_Event_Destroy_Args"
    );
    assert_eq!(
        offset_of!(PJRT_Event_Destroy_Args, struct_size),
        0,
        "offsetof PJRT_Event_Destroy_Args.struct_size"
    );
    assert_eq!(
        offset_of!(PJRT_Event_Destroy_Args, extension_start),
        8,
        "offsetof PJRT_Event_Destroy_Args.extension_start"
    );
    assert_eq!(
        offset_of!(PJRT_Event_Destroy_Args, event),
        16,
        "offsetof PJRT_Event_Destroy_Args.event"
    );
    assert_eq!(
        size_of::<PJRT_Event_IsReady_Args>(),
        32,
        "sizeof PJRT_Event_IsReady_Args"
    );
    assert_eq!(
        offset_of!(PJRT_Event_IsReady_Args, struct_size),
        0,
        "offsetof PJRT_Event_IsReady_Args.struct_size"
    );
    assert_eq!(
        offset_of!(PJRT_Event_IsReady_Args, extension_start),
        8,
        "offsetof PJRT_Event_IsReady_Args.extension_start"
    );
    assert_eq!(
        offset_of!(PJRT_Event_IsReady_Args, event),
        16,
        "offsetof PJRT_Event_IsReady_Args.event"
    );
    assert_eq!(
        offset_of!(PJRT_Event_IsReady_Args, is_ready),
        24,
        "offsetof PJRT_Event_IsReady_Args.is_ready"
    );
    assert_eq!(
        size_of::<PJRT_Event_Await_Args>(),
        24,
        "sizeof PJRT_Event_Await_Args"
    );
    assert_eq!(
        offset_of!(PJRT_Event_Await_Args, struct_size),
        0,
        "offsetof PJRT_Event_Await_Args.struct_size"
    );
    assert_eq!(
        offset_of!(PJRT_Event_Await_Args, extension_start),
        8,
        "offsetof PJRT_Event_Await_Args.extension_start"
    );
    assert_eq!(
        offset_of!(PJRT_Event_Await_Args, event),
        16,
        "offsetof PJRT_Event_Await_Args.event"
    );
    assert_eq!(
        size_of::<PJRT_Client_Create_Args>(),
        88,
        "sizeof PJRT_Client_Create_Args"
    );
    assert_eq!(
        offset_of!(PJRT_Client_Create_Args, struct_size),
        0,
        "offsetof PJRT_Client_Create_Args.struct_size"
    );
    assert_eq!(
        offset_of!(PJRT_Client_Create_Args, extension_start),
        8,
        "offsetof PJRT_Client_Create_Args.extension_start"
    );
    assert_eq!(
        offset_of!(PJRT_Client_Create_Args, create_options),
        16,
        "offsetof PJRT_Client_Create_Args.create_options"
    );
    assert_eq!(
        offset_of!(PJRT_Client_Create_Args, num_options),
        24,
        "offsetof PJRT_Client_Create_Args.num_options"
    );
    assert_eq!(
        offset_of!(PJRT_Client_Create_Args, kv_get_callback),
        32,
        "offsetof PJRT_Client_Create_Args.kv_get_callback"
    );
    assert_eq!(
        offset_of!(PJRT_Client_Create_Args, kv_get_user_arg),
        40,
        "offsetof PJRT_Client_Create_Args.kv_get_user_arg"
    );
    assert_eq!(
        offset_of!(PJRT_Client_Create_Args, kv_put_callback),
        48,
        "offsetof PJRT_Client_Create_Args.kv_put_callback"
    );
    assert_eq!(
        offset_of!(PJRT_Client_Create_Args, kv_put_user_arg),
        56,
        "offsetof PJRT_Client_Create_Args.kv_put_user_arg"
    );
    assert_eq!(
        offset_of!(PJRT_Client_Create_Args, client),
        64,
        "offsetof PJRT_Client_Create_Args.client"
    );
    assert_eq!(
        offset_of!(PJRT_Client_Create_Args, kv_try_get_callback),
        72,
        "offsetof PJRT_Client_Create_Args.kv_try_get_callback"
    );
    assert_eq!(
        offset_of!(PJRT_Client_Create_Args, kv_try_get_user_arg),
        80,
        "offsetof PJRT_Client_Create_Args.kv_try_get_user_arg"
    );
    assert_eq!(
        size_of::<PJRT_Client_Destroy_Args>(),
        24,
        "sizeof PJRT_Client_Destroy_Args"
    );
    assert_eq!(
        offset_of!(PJRT_Client_Destroy_Args, struct_size),
        0,
        "offsetof PJRT_Client_Destroy_Args.struct_size"
    );
    assert_eq!(
        offset_of!(PJRT_Client_Destroy_Args, extension_start),
        8,
        "offsetof PJRT_Client_Destroy_Args.extension_start"
    );
    assert_eq!(
        offset_of!(PJRT_Client_Destroy_Args, client),
        16,
        "offsetof PJRT_Client_Destroy_Args.client"
    );
    assert_eq!(
        size_of::<PJRT_Client_PlatformName_Args>(),
        40,
        "sizeof PJRT_Client_PlatformName_Args"
    );
    assert_eq!(
        offset_of!(PJRT_Client_PlatformName_Args, struct_size),
        0,
        "offsetof PJRT_Client_PlatformName_Args.struct_size"
    );
    assert_eq!(
        offset_of!(PJRT_Client_PlatformName_Args, extension_start),
        8,
        "offsetof PJRT_Client_PlatformName_Args.extension_start"
    );
    assert_eq!(
        offset_of!(PJRT_Client_PlatformName_Args, client),
        16,
        "offsetof PJRT_Client_PlatformName_Args.client"
    );
    assert_eq!(
        offset_of!(PJRT_Client_PlatformName_Args, platform_name),
        24,
        "offsetof PJRT_Client_PlatformName_Args.platform_name"
    );
    assert_eq!(
        offset_of!(PJRT_Client_PlatformName_Args, platform_name_size),
        32,
        "offsetof PJRT_Client_PlatformName_Args.platform_name_size"
    );
    assert_eq!(
        size_of::<PJRT_Client_PlatformVersion_Args>(),
        40,
        "sizeof PJRT_Client_PlatformVersion_Args"
    );
    assert_eq!(
        offset_of!(PJRT_Client_PlatformVersion_Args, struct_size),
        0,
        "offsetof PJRT_Client_PlatformVersion_Args.struct_size"
    );
    assert_eq!(
        offset_of!(PJRT_Client_PlatformVersion_Args, extension_start),
        8,
        "offsetof PJRT_Client_PlatformVersion_Args.extension_start"
    );
    assert_eq!(
        offset_of!(PJRT_Client_PlatformVersion_Args, client),
        16,
        "offsetof PJRT_Client_PlatformVersion_Args.client"
    );
    assert_eq!(
        offset_of!(PJRT_Client_PlatformVersion_Args, platform_version),
        24,
        "offsetof PJRT_Client_PlatformVersion_Args.platform_version"
    );
    assert_eq!(
        offset_of!(PJRT_Client_PlatformVersion_Args, platform_version_size),
        32,
        "offsetof PJRT_Client_PlatformVersion_Args.platform_version_size"
    );
    assert_eq!(
        size_of::<PJRT_Client_AddressableDevices_Args>(),
        40,
        "sizeof PJRT_Client_AddressableDevices_Args"
    );
    assert_eq!(
        offset_of!(PJRT_Client_AddressableDevices_Args, struct_size),
        0,
        "offsetof PJRT_Client_AddressableDevices_Args.struct_size"
    );
    assert_eq!(
        offset_of!(PJRT_Client_AddressableDevices_Args, extension_start),
        8,
        "offsetof PJRT_Client_AddressableDevices_Args.extension_start"
    );
    assert_eq!(
        offset_of!(PJRT_Client_AddressableDevices_Args, client),
        16,
        "offsetof PJRT_Client_AddressableDevices_Args.client"
    );
    assert_eq!(
        offset_of!(PJRT_Client_AddressableDevices_Args, addressable_devices),
        24,
        "offsetof PJRT_Client_AddressableDevices_Args.addressable_devices"
    );
    assert_eq!(
        offset_of!(PJRT_Client_AddressableDevices_Args, num_addressable_devices),
        32,
        "offsetof PJRT_Client_AddressableDevices_Args.num_addressable_devices"
    );
    assert_eq!(size_of::<PJRT_Program>(), 48, "sizeof PJRT_Program");
    assert_eq!(
        offset_of!(PJRT_Program, struct_size),
        0,
        "offsetof PJRT_Program.struct_size"
    );
    assert_eq!(
        offset_of!(PJRT_Program, extension_start),
        8,
        "offsetof PJRT_Program.extension_start"
    );
    assert_eq!(
        offset_of!(PJRT_Program, code),
        16,
        "offsetof PJRT_Program.code"
    );
    assert_eq!(
        offset_of!(PJRT_Program, code_size),
        24,
        "offsetof PJRT_Program.code_size"
    );
    assert_eq!(
        offset_of!(PJRT_Program, format),
        32,
        "offsetof PJRT_Program.format"
    );
    assert_eq!(
        offset_of!(PJRT_Program, format_size),
        40,
        "offsetof PJRT_Program.format_size"
    );
    assert_eq!(
        size_of::<PJRT_Client_Compile_Args>(),
        56,
        "sizeof PJRT_Client_Compile_Args"
    );
    assert_eq!(
        offset_of!(PJRT_Client_Compile_Args, struct_size),
        0,
        "offsetof PJRT_Client_Compile_Args.struct_size"
    );
    assert_eq!(
        offset_of!(PJRT_Client_Compile_Args, extension_start),
        8,
        "offsetof PJRT_Client_Compile_Args.extension_start"
    );
    assert_eq!(
        offset_of!(PJRT_Client_Compile_Args, client),
        16,
        "offsetof PJRT_Client_Compile_Args.client"
    );
    assert_eq!(
        offset_of!(PJRT_Client_Compile_Args, program),
        24,
        "offsetof PJRT_Client_Compile_Args.program"
    );
    assert_eq!(
        offset_of!(PJRT_Client_Compile_Args, compile_options),
        32,
        "offsetof PJRT_Client_Compile_Args.compile_options"
    );
    assert_eq!(
        offset_of!(PJRT_Client_Compile_Args, compile_options_size),
        40,
        "offsetof PJRT_Client_Compile_Args.compile_options_size"
    );
    assert_eq!(
        offset_of!(PJRT_Client_Compile_Args, executable),
        48,
        "offsetof PJRT_Client_Compile_Args.executable"
    );
    assert_eq!(
        size_of::<PJRT_Client_BufferFromHostBuffer_Args>(),
        120,
        "sizeof PJRT_Client_BufferFromHostBuffer_Args"
    );
    assert_eq!(
        offset_of!(PJRT_Client_BufferFromHostBuffer_Args, struct_size),
        0,
        "offsetof PJRT_Client_BufferFromHostBuffer_Args.struct_size"
    );
    assert_eq!(
        offset_of!(PJRT_Client_BufferFromHostBuffer_Args, extension_start),
        8,
        "offsetof PJRT_Client_BufferFromHostBuffer_Args.extension_start"
    );
    assert_eq!(
        offset_of!(PJRT_Client_BufferFromHostBuffer_Args, client),
        16,
        "offsetof PJRT_Client_BufferFromHostBuffer_Args.client"
    );
    assert_eq!(
        offset_of!(PJRT_Client_BufferFromHostBuffer_Args, data),
        24,
        "offsetof PJRT_Client_BufferFromHostBuffer_Args.data"
    );
    assert_eq!(
        offset_of!(PJRT_Client_BufferFromHostBuffer_Args, type_),
        32,
        "offsetof PJRT_Client_BufferFromHostBuffer_Args.type_"
    );
    assert_eq!(
        offset_of!(PJRT_Client_BufferFromHostBuffer_Args, dims),
        40,
        "offsetof PJRT_Client_BufferFromHostBuffer_Args.dims"
    );
    assert_eq!(
        offset_of!(PJRT_Client_BufferFromHostBuffer_Args, num_dims),
        48,
        "offsetof PJRT_Client_BufferFromHostBuffer_Args.num_dims"
    );
    assert_eq!(
        offset_of!(PJRT_Client_BufferFromHostBuffer_Args, byte_strides),
        56,
        "offsetof PJRT_Client_BufferFromHostBuffer_Args.byte_strides"
    );
    assert_eq!(
        offset_of!(PJRT_Client_BufferFromHostBuffer_Args, num_byte_strides),
        64,
        "offsetof PJRT_Client_BufferFromHostBuffer_Args.num_byte_strides"
    );
    assert_eq!(
        offset_of!(PJRT_Client_BufferFromHostBuffer_Args, host_buffer_semantics),
        72,
        "offsetof PJRT_Client_BufferFromHostBuffer_Args.host_buffer_semantics"
    );
    assert_eq!(
        offset_of!(PJRT_Client_BufferFromHostBuffer_Args, device),
        80,
        "offsetof PJRT_Client_BufferFromHostBuffer_Args.device"
    );
    assert_eq!(
        offset_of!(PJRT_Client_BufferFromHostBuffer_Args, memory),
        88,
        "offsetof PJRT_Client_BufferFromHostBuffer_Args.memory"
    );
    assert_eq!(
        offset_of!(PJRT_Client_BufferFromHostBuffer_Args, device_layout),
        96,
        "offsetof PJRT_Client_BufferFromHostBuffer_Args.device_layout"
    );
    assert_eq!(
        offset_of!(PJRT_Client_BufferFromHostBuffer_Args, done_with_host_buffer),
        104,
        "offsetof PJRT_Client_BufferFromHostBuffer_Args.done_with_host_buffer"
    );
    assert_eq!(
        offset_of!(PJRT_Client_BufferFromHostBuffer_Args, buffer),
        112,
        "offsetof PJRT_Client_BufferFromHostBuffer_Args.buffer"
    );
    assert_eq!(
        size_of::<PJRT_DeviceDescription_Id_Args>(),
        32,
        "sizeof PJRT_DeviceDescription_Id_Args"
    );
    assert_eq!(
        offset_of!(PJRT_DeviceDescription_Id_Args, struct_size),
        0,
        "offsetof PJRT_DeviceDescription_Id_Args.struct_size"
    );
    assert_eq!(
        offset_of!(PJRT_DeviceDescription_Id_Args, extension_start),
        8,
        "offsetof PJRT_DeviceDescription_Id_Args.extension_start"
    );
    assert_eq!(
        offset_of!(PJRT_DeviceDescription_Id_Args, device_description),
        16,
        "offsetof PJRT_DeviceDescription_Id_Args.device_description"
    );
    assert_eq!(
        offset_of!(PJRT_DeviceDescription_Id_Args, id),
        24,
        "offsetof PJRT_DeviceDescription_Id_Args.id"
    );
    assert_eq!(
        size_of::<PJRT_DeviceDescription_ProcessIndex_Args>(),
        32,
        "sizeof PJRT_DeviceDescription_ProcessIndex_Args"
    );
    assert_eq!(
        offset_of!(PJRT_DeviceDescription_ProcessIndex_Args, struct_size),
        0,
        "offsetof PJRT_DeviceDescription_ProcessIndex_Args.struct_size"
    );
    assert_eq!(
        offset_of!(PJRT_DeviceDescription_ProcessIndex_Args, extension_start),
        8,
        "offsetof PJRT_DeviceDescription_ProcessIndex_Args.extension_start"
    );
    assert_eq!(
        offset_of!(PJRT_DeviceDescription_ProcessIndex_Args, device_description),
        16,
        "offsetof PJRT_DeviceDescription_ProcessIndex_Args.device_description"
    );
    assert_eq!(
        offset_of!(PJRT_DeviceDescription_ProcessIndex_Args, process_index),
        24,
        "offsetof PJRT_DeviceDescription_ProcessIndex_Args.process_index"
    );
    assert_eq!(
        size_of::<PJRT_DeviceDescription_Kind_Args>(),
        40,
        "sizeof PJRT_DeviceDescription_Kind_Args"
    );
    assert_eq!(
        offset_of!(PJRT_DeviceDescription_Kind_Args, struct_size),
        0,
        "offsetof PJRT_DeviceDescription_Kind_Args.struct_size"
    );
    assert_eq!(
        offset_of!(PJRT_DeviceDescription_Kind_Args, extension_start),
        8,
        "offsetof PJRT_DeviceDescription_Kind_Args.extension_start"
    );
    assert_eq!(
        offset_of!(PJRT_DeviceDescription_Kind_Args, device_description),
        16,
        "offsetof PJRT_DeviceDescription_Kind_Args.device_description"
    );
    assert_eq!(
        offset_of!(PJRT_DeviceDescription_Kind_Args, device_kind),
        24,
        "offsetof PJRT_DeviceDescription_Kind_Args.device_kind"
    );
    assert_eq!(
        offset_of!(PJRT_DeviceDescription_Kind_Args, device_kind_size),
        32,
        "offsetof PJRT_DeviceDescription_Kind_Args.device_kind_size"
    );
    assert_eq!(
        size_of::<PJRT_DeviceDescription_DebugString_Args>(),
        40,
        "sizeof PJRT_DeviceDescription_DebugString_Args"
    );
    assert_eq!(
        offset_of!(PJRT_DeviceDescription_DebugString_Args, struct_size),
        0,
        "offsetof PJRT_DeviceDescription_DebugString_Args.struct_size"
    );
    assert_eq!(
        offset_of!(PJRT_DeviceDescription_DebugString_Args, extension_start),
        8,
        "offsetof PJRT_DeviceDescription_DebugString_Args.extension_start"
    );
    assert_eq!(
        offset_of!(PJRT_DeviceDescription_DebugString_Args, device_description),
        16,
        "offsetof PJRT_DeviceDescription_DebugString_Args.device_description"
    );
    assert_eq!(
        offset_of!(PJRT_DeviceDescription_DebugString_Args, debug_string),
        24,
        "offsetof PJRT_DeviceDescription_DebugString_Args.debug_string"
    );
    assert_eq!(
        offset_of!(PJRT_DeviceDescription_DebugString_Args, debug_string_size),
        32,
        "offsetof PJRT_DeviceDescription_DebugString_Args.debug_string_size"
    );
    assert_eq!(
        size_of::<PJRT_DeviceDescription_ToString_Args>(),
        40,
        "sizeof PJRT_DeviceDescription_ToString_Args"
    );
    assert_eq!(
        offset_of!(PJRT_DeviceDescription_ToString_Args, struct_size),
        0,
        "offsetof PJRT_DeviceDescription_ToString_Args.struct_size"
    );
    assert_eq!(
        offset_of!(PJRT_DeviceDescription_ToString_Args, extension_start),
        8,
        "offsetof PJRT_DeviceDescription_ToString_Args.extension_start"
    );
    assert_eq!(
        offset_of!(PJRT_DeviceDescription_ToString_Args, device_description),
        16,
        "offsetof PJRT_DeviceDescription_ToString_Args.device_description"
    );
    assert_eq!(
        offset_of!(PJRT_DeviceDescription_ToString_Args, to_string),
        24,
        "offsetof PJRT_DeviceDescription_ToString_Args.to_string"
    );
    assert_eq!(
        offset_of!(PJRT_DeviceDescription_ToString_Args, to_string_size),
        32,
        "offsetof PJRT_DeviceDescription_ToString_Args.to_string_size"
    );
    assert_eq!(
        size_of::<PJRT_Device_GetDescription_Args>(),
        32,
        "sizeof PJRT_Device_GetDescription_Args"
    );
    assert_eq!(
        offset_of!(PJRT_Device_GetDescription_Args, struct_size),
        0,
        "offsetof PJRT_Device_GetDescription_Args.struct_size"
    );
    assert_eq!(
        offset_of!(PJRT_Device_GetDescription_Args, extension_start),
        8,
        "offsetof PJRT_Device_GetDescription_Args.extension_start"
    );
    assert_eq!(
        offset_of!(PJRT_Device_GetDescription_Args, device),
        16,
        "offsetof PJRT_Device_GetDescription_Args.device"
    );
    assert_eq!(
        offset_of!(PJRT_Device_GetDescription_Args, device_description),
        24,
        "offsetof PJRT_Device_GetDescription_Args.device_description"
    );
    assert_eq!(
        size_of::<PJRT_Device_MemoryStats_Args>(),
        192,
        "sizeof PJRT_Device_MemoryStats_Args"
    );
    assert_eq!(
        offset_of!(PJRT_Device_MemoryStats_Args, struct_size),
        0,
        "offsetof PJRT_Device_MemoryStats_Args.struct_size"
    );
    assert_eq!(
        offset_of!(PJRT_Device_MemoryStats_Args, extension_start),
        8,
        "offsetof PJRT_Device_MemoryStats_Args.extension_start"
    );
    assert_eq!(
        offset_of!(PJRT_Device_MemoryStats_Args, device),
        16,
        "offsetof PJRT_Device_MemoryStats_Args.device"
    );
    assert_eq!(
        offset_of!(PJRT_Device_MemoryStats_Args, bytes_in_use),
        24,
        "offsetof PJRT_Device_MemoryStats_Args.bytes_in_use"
    );
    assert_eq!(
        offset_of!(PJRT_Device_MemoryStats_Args, peak_bytes_in_use),
        32,
        "offsetof PJRT_Device_MemoryStats_Args.peak_bytes_in_use"
    );
    assert_eq!(
        offset_of!(PJRT_Device_MemoryStats_Args, peak_bytes_in_use_is_set),
        40,
        "offsetof PJRT_Device_MemoryStats_Args.peak_bytes_in_use_is_set"
    );
    assert_eq!(
        offset_of!(PJRT_Device_MemoryStats_Args, num_allocs),
        48,
        "offsetof PJRT_Device_MemoryStats_Args.num_allocs"
    );
    assert_eq!(
        offset_of!(PJRT_Device_MemoryStats_Args, num_allocs_is_set),
        56,
        "offsetof PJRT_Device_MemoryStats_Args.num_allocs_is_set"
    );
    assert_eq!(
        offset_of!(PJRT_Device_MemoryStats_Args, largest_alloc_size),
        64,
        "offsetof PJRT_Device_MemoryStats_Args.largest_alloc_size"
    );
    assert_eq!(
        offset_of!(PJRT_Device_MemoryStats_Args, largest_alloc_size_is_set),
        72,
        "offsetof PJRT_Device_MemoryStats_Args.largest_alloc_size_is_set"
    );
    assert_eq!(
        offset_of!(PJRT_Device_MemoryStats_Args, bytes_limit),
        80,
        "offsetof PJRT_Device_MemoryStats_Args.bytes_limit"
    );
    assert_eq!(
        offset_of!(PJRT_Device_MemoryStats_Args, bytes_limit_is_set),
        88,
        "offsetof PJRT_Device_MemoryStats_Args.bytes_limit_is_set"
    );
    assert_eq!(
        offset_of!(PJRT_Device_MemoryStats_Args, bytes_reserved),
        96,
        "offsetof PJRT_Device_MemoryStats_Args.bytes_reserved"
    );
    assert_eq!(
        offset_of!(PJRT_Device_MemoryStats_Args, bytes_reserved_is_set),
        104,
        "offsetof PJRT_Device_MemoryStats_Args.bytes_reserved_is_set"
    );
    assert_eq!(
        offset_of!(PJRT_Device_MemoryStats_Args, peak_bytes_reserved),
        112,
        "offsetof PJRT_Device_MemoryStats_Args.peak_bytes_reserved"
    );
    assert_eq!(
        offset_of!(PJRT_Device_MemoryStats_Args, peak_bytes_reserved_is_set),
        120,
        "offsetof PJRT_Device_MemoryStats_Args.peak_bytes_reserved_is_set"
    );
    assert_eq!(
        offset_of!(PJRT_Device_MemoryStats_Args, bytes_reservable_limit),
        128,
        "offsetof PJRT_Device_MemoryStats_Args.bytes_reservable_limit"
    );
    assert_eq!(
        offset_of!(PJRT_Device_MemoryStats_Args, bytes_reservable_limit_is_set),
        136,
        "offsetof PJRT_Device_MemoryStats_Args.bytes_reservable_limit_is_set"
    );
    assert_eq!(
        offset_of!(PJRT_Device_MemoryStats_Args, largest_free_block_bytes),
        144,
        "offsetof PJRT_Device_MemoryStats_Args.largest_free_block_bytes"
    );
    assert_eq!(
        offset_of!(
            PJRT_Device_MemoryStats_Args,
            largest_free_block_bytes_is_set
        ),
        152,
        "offsetof PJRT_Device_MemoryStats_Args.largest_free_block_bytes_is_set"
    );
    assert_eq!(
        offset_of!(PJRT_Device_MemoryStats_Args, pool_bytes),
        160,
        "offsetof PJRT_Device_MemoryStats_Args.pool_bytes"
    );
    assert_eq!(
        offset_of!(PJRT_Device_MemoryStats_Args, pool_bytes_is_set),
        168,
        "offsetof PJRT_Device_MemoryStats_Args.pool_bytes_is_set"
    );
    assert_eq!(
        offset_of!(PJRT_Device_MemoryStats_Args, peak_pool_bytes),
        176,
        "offsetof PJRT_Device_MemoryStats_Args.peak_pool_bytes"
    );
    assert_eq!(
        offset_of!(PJRT_Device_MemoryStats_Args, peak_pool_bytes_is_set),
        184,
        "offsetof PJRT_Device_MemoryStats_Args.peak_pool_bytes_is_set"
    );
    assert_eq!(
        size_of::<PJRT_Executable_Destroy_Args>(),
        24,
        "sizeof PJRT_Executable_Destroy_Args"
    );
    assert_eq!(
        offset_of!(PJRT_Executable_Destroy_Args, struct_size),
        0,
        "offsetof PJRT_Executable_Destroy_Args.struct_size"
    );
    assert_eq!(
        offset_of!(PJRT_Executable_Destroy_Args, extension_start),
        8,
        "offsetof PJRT_Executable_Destroy_Args.extension_start"
    );
    assert_eq!(
        offset_of!(PJRT_Executable_Destroy_Args, executable),
        16,
        "offsetof PJRT_Executable_Destroy_Args.executable"
    );
    assert_eq!(
        size_of::<PJRT_Executable_NumOutputs_Args>(),
        32,
        "sizeof PJRT_Executable_NumOutputs_Args"
    );
    assert_eq!(
        offset_of!(PJRT_Executable_NumOutputs_Args, struct_size),
        0,
        "offsetof PJRT_Executable_NumOutputs_Args.struct_size"
    );
    assert_eq!(
        offset_of!(PJRT_Executable_NumOutputs_Args, extension_start),
        8,
        "offsetof PJRT_Executable_NumOutputs_Args.extension_start"
    );
    assert_eq!(
        offset_of!(PJRT_Executable_NumOutputs_Args, executable),
        16,
        "offsetof PJRT_Executable_NumOutputs_Args.executable"
    );
    assert_eq!(
        offset_of!(PJRT_Executable_NumOutputs_Args, num_outputs),
        24,
        "offsetof PJRT_Executable_NumOutputs_Args.num_outputs"
    );
    assert_eq!(
        size_of::<PJRT_Executable_OutputElementTypes_Args>(),
        40,
        "sizeof PJRT_Executable_OutputElementTypes_Args"
    );
    assert_eq!(
        offset_of!(PJRT_Executable_OutputElementTypes_Args, struct_size),
        0,
        "offsetof PJRT_Executable_OutputElementTypes_Args.struct_size"
    );
    assert_eq!(
        offset_of!(PJRT_Executable_OutputElementTypes_Args, extension_start),
        8,
        "offsetof PJRT_Executable_OutputElementTypes_Args.extension_start"
    );
    assert_eq!(
        offset_of!(PJRT_Executable_OutputElementTypes_Args, executable),
        16,
        "offsetof PJRT_Executable_OutputElementTypes_Args.executable"
    );
    assert_eq!(
        offset_of!(PJRT_Executable_OutputElementTypes_Args, output_types),
        24,
        "offsetof PJRT_Executable_OutputElementTypes_Args.output_types"
    );
    assert_eq!(
        offset_of!(PJRT_Executable_OutputElementTypes_Args, num_output_types),
        32,
        "offsetof PJRT_Executable_OutputElementTypes_Args.num_output_types"
    );
    assert_eq!(
        size_of::<PJRT_Executable_OutputDimensions_Args>(),
        48,
        "sizeof PJRT_Executable_OutputDimensions_Args"
    );
    assert_eq!(
        offset_of!(PJRT_Executable_OutputDimensions_Args, struct_size),
        0,
        "offsetof PJRT_Executable_OutputDimensions_Args.struct_size"
    );
    assert_eq!(
        offset_of!(PJRT_Executable_OutputDimensions_Args, extension_start),
        8,
        "offsetof PJRT_Executable_OutputDimensions_Args.extension_start"
    );
    assert_eq!(
        offset_of!(PJRT_Executable_OutputDimensions_Args, executable),
        16,
        "offsetof PJRT_Executable_OutputDimensions_Args.executable"
    );
    assert_eq!(
        offset_of!(PJRT_Executable_OutputDimensions_Args, num_outputs),
        24,
        "offsetof PJRT_Executable_OutputDimensions_Args.num_outputs"
    );
    assert_eq!(
        offset_of!(PJRT_Executable_OutputDimensions_Args, dims),
        32,
        "offsetof PJRT_Executable_OutputDimensions_Args.dims"
    );
    assert_eq!(
        offset_of!(PJRT_Executable_OutputDimensions_Args, dim_sizes),
        40,
        "offsetof PJRT_Executable_OutputDimensions_Args.dim_sizes"
    );
    assert_eq!(
        size_of::<PJRT_LoadedExecutable_Destroy_Args>(),
        24,
        "sizeof PJRT_LoadedExecutable_Destroy_Args"
    );
    assert_eq!(
        offset_of!(PJRT_LoadedExecutable_Destroy_Args, struct_size),
        0,
        "offsetof PJRT_LoadedExecutable_Destroy_Args.struct_size"
    );
    assert_eq!(
        offset_of!(PJRT_LoadedExecutable_Destroy_Args, extension_start),
        8,
        "offsetof PJRT_LoadedExecutable_Destroy_Args.extension_start"
    );
    assert_eq!(
        offset_of!(PJRT_LoadedExecutable_Destroy_Args, executable),
        16,
        "offsetof PJRT_LoadedExecutable_Destroy_Args.executable"
    );
    assert_eq!(
        size_of::<PJRT_LoadedExecutable_GetExecutable_Args>(),
        32,
        "sizeof PJRT_LoadedExecutable_GetExecutable_Args"
    );
    assert_eq!(
        offset_of!(PJRT_LoadedExecutable_GetExecutable_Args, struct_size),
        0,
        "offsetof PJRT_LoadedExecutable_GetExecutable_Args.struct_size"
    );
    assert_eq!(
        offset_of!(PJRT_LoadedExecutable_GetExecutable_Args, extension_start),
        8,
        "offsetof PJRT_LoadedExecutable_GetExecutable_Args.extension_start"
    );
    assert_eq!(
        offset_of!(PJRT_LoadedExecutable_GetExecutable_Args, loaded_executable),
        16,
        "offsetof PJRT_LoadedExecutable_GetExecutable_Args.loaded_executable"
    );
    assert_eq!(
        offset_of!(PJRT_LoadedExecutable_GetExecutable_Args, executable),
        24,
        "offsetof PJRT_LoadedExecutable_GetExecutable_Args.executable"
    );
    assert_eq!(
        size_of::<PJRT_ExecuteOptions>(),
        112,
        "sizeof PJRT_ExecuteOptions"
    );
    assert_eq!(
        offset_of!(PJRT_ExecuteOptions, struct_size),
        0,
        "offsetof PJRT_ExecuteOptions.struct_size"
    );
    assert_eq!(
        offset_of!(PJRT_ExecuteOptions, extension_start),
        8,
        "offsetof PJRT_ExecuteOptions.extension_start"
    );
    assert_eq!(
        offset_of!(PJRT_ExecuteOptions, send_callbacks),
        16,
        "offsetof PJRT_ExecuteOptions.send_callbacks"
    );
    assert_eq!(
        offset_of!(PJRT_ExecuteOptions, recv_callbacks),
        24,
        "offsetof PJRT_ExecuteOptions.recv_callbacks"
    );
    assert_eq!(
        offset_of!(PJRT_ExecuteOptions, num_send_ops),
        32,
        "offsetof PJRT_ExecuteOptions.num_send_ops"
    );
    assert_eq!(
        offset_of!(PJRT_ExecuteOptions, num_recv_ops),
        40,
        "offsetof PJRT_ExecuteOptions.num_recv_ops"
    );
    assert_eq!(
        offset_of!(PJRT_ExecuteOptions, launch_id),
        48,
        "offsetof PJRT_ExecuteOptions.launch_id"
    );
    assert_eq!(
        offset_of!(PJRT_ExecuteOptions, non_donatable_input_indices),
        56,
        "offsetof PJRT_ExecuteOptions.non_donatable_input_indices"
    );
    assert_eq!(
        offset_of!(PJRT_ExecuteOptions, num_non_donatable_input_indices),
        64,
        "offsetof PJRT_ExecuteOptions.num_non_donatable_input_indices"
    );
    assert_eq!(
        offset_of!(PJRT_ExecuteOptions, context),
        72,
        "offsetof PJRT_ExecuteOptions.context"
    );
    assert_eq!(
        offset_of!(PJRT_ExecuteOptions, call_location),
        80,
        "offsetof PJRT_ExecuteOptions.call_location"
    );
    assert_eq!(
        offset_of!(PJRT_ExecuteOptions, num_tasks),
        88,
        "offsetof PJRT_ExecuteOptions.num_tasks"
    );
    assert_eq!(
        offset_of!(PJRT_ExecuteOptions, task_ids),
        96,
        "offsetof PJRT_ExecuteOptions.task_ids"
    );
    assert_eq!(
        offset_of!(PJRT_ExecuteOptions, incarnation_ids),
        104,
        "offsetof PJRT_ExecuteOptions.incarnation_ids"
    );
    assert_eq!(
        size_of::<PJRT_LoadedExecutable_Execute_Args>(),
        80,
        "sizeof PJRT_LoadedExecutable_Execute_Args"
    );
    assert_eq!(
        offset_of!(PJRT_LoadedExecutable_Execute_Args, struct_size),
        0,
        "offsetof PJRT_LoadedExecutable_Execute_Args.struct_size"
    );
    assert_eq!(
        offset_of!(PJRT_LoadedExecutable_Execute_Args, extension_start),
        8,
        "offsetof PJRT_LoadedExecutable_Execute_Args.extension_start"
    );
    assert_eq!(
        offset_of!(PJRT_LoadedExecutable_Execute_Args, executable),
        16,
        "offsetof PJRT_LoadedExecutable_Execute_Args.executable"
    );
    assert_eq!(
        offset_of!(PJRT_LoadedExecutable_Execute_Args, options),
        24,
        "offsetof PJRT_LoadedExecutable_Execute_Args.options"
    );
    assert_eq!(
        offset_of!(PJRT_LoadedExecutable_Execute_Args, argument_lists),
        32,
        "offsetof PJRT_LoadedExecutable_Execute_Args.argument_lists"
    );
    assert_eq!(
        offset_of!(PJRT_LoadedExecutable_Execute_Args, num_devices),
        40,
        "offsetof PJRT_LoadedExecutable_Execute_Args.num_devices"
    );
    assert_eq!(
        offset_of!(PJRT_LoadedExecutable_Execute_Args, num_args),
        48,
        "offsetof PJRT_LoadedExecutable_Execute_Args.num_args"
    );
    assert_eq!(
        offset_of!(PJRT_LoadedExecutable_Execute_Args, output_lists),
        56,
        "offsetof PJRT_LoadedExecutable_Execute_Args.output_lists"
    );
    assert_eq!(
        offset_of!(PJRT_LoadedExecutable_Execute_Args, device_complete_events),
        64,
        "offsetof PJRT_LoadedExecutable_Execute_Args.device_complete_events"
    );
    assert_eq!(
        offset_of!(PJRT_LoadedExecutable_Execute_Args, execute_device),
        72,
        "offsetof PJRT_LoadedExecutable_Execute_Args.execute_device"
    );
    assert_eq!(
        size_of::<PJRT_Buffer_Destroy_Args>(),
        24,
        "sizeof PJRT_Buffer_Destroy_Args"
    );
    assert_eq!(
        offset_of!(PJRT_Buffer_Destroy_Args, struct_size),
        0,
        "offsetof PJRT_Buffer_Destroy_Args.struct_size"
    );
    assert_eq!(
        offset_of!(PJRT_Buffer_Destroy_Args, extension_start),
        8,
        "offsetof PJRT_Buffer_Destroy_Args.extension_start"
    );
    assert_eq!(
        offset_of!(PJRT_Buffer_Destroy_Args, buffer),
        16,
        "offsetof PJRT_Buffer_Destroy_Args.buffer"
    );
    assert_eq!(
        size_of::<PJRT_Buffer_ElementType_Args>(),
        32,
        "sizeof PJRT_Buffer_ElementType_Args"
    );
    assert_eq!(
        offset_of!(PJRT_Buffer_ElementType_Args, struct_size),
        0,
        "offsetof PJRT_Buffer_ElementType_Args.struct_size"
    );
    assert_eq!(
        offset_of!(PJRT_Buffer_ElementType_Args, extension_start),
        8,
        "offsetof PJRT_Buffer_ElementType_Args.extension_start"
    );
    assert_eq!(
        offset_of!(PJRT_Buffer_ElementType_Args, buffer),
        16,
        "offsetof PJRT_Buffer_ElementType_Args.buffer"
    );
    assert_eq!(
        offset_of!(PJRT_Buffer_ElementType_Args, type_),
        24,
        "offsetof PJRT_Buffer_ElementType_Args.type_"
    );
    assert_eq!(
        size_of::<PJRT_Buffer_Dimensions_Args>(),
        40,
        "sizeof PJRT_Buffer_Dimensions_Args"
    );
    assert_eq!(
        offset_of!(PJRT_Buffer_Dimensions_Args, struct_size),
        0,
        "offsetof PJRT_Buffer_Dimensions_Args.struct_size"
    );
    assert_eq!(
        offset_of!(PJRT_Buffer_Dimensions_Args, extension_start),
        8,
        "offsetof PJRT_Buffer_Dimensions_Args.extension_start"
    );
    assert_eq!(
        offset_of!(PJRT_Buffer_Dimensions_Args, buffer),
        16,
        "offsetof PJRT_Buffer_Dimensions_Args.buffer"
    );
    assert_eq!(
        offset_of!(PJRT_Buffer_Dimensions_Args, dims),
        24,
        "offsetof PJRT_Buffer_Dimensions_Args.dims"
    );
    assert_eq!(
        offset_of!(PJRT_Buffer_Dimensions_Args, num_dims),
        32,
        "offsetof PJRT_Buffer_Dimensions_Args.num_dims"
    );
    assert_eq!(
        size_of::<PJRT_Buffer_OnDeviceSizeInBytes_Args>(),
        32,
        "sizeof PJRT_Buffer_OnDeviceSizeInBytes_Args"
    );
    assert_eq!(
        offset_of!(PJRT_Buffer_OnDeviceSizeInBytes_Args, struct_size),
        0,
        "offsetof PJRT_Buffer_OnDeviceSizeInBytes_Args.struct_size"
    );
    assert_eq!(
        offset_of!(PJRT_Buffer_OnDeviceSizeInBytes_Args, extension_start),
        8,
        "offsetof PJRT_Buffer_OnDeviceSizeInBytes_Args.extension_start"
    );
    assert_eq!(
        offset_of!(PJRT_Buffer_OnDeviceSizeInBytes_Args, buffer),
        16,
        "offsetof PJRT_Buffer_OnDeviceSizeInBytes_Args.buffer"
    );
    assert_eq!(
        offset_of!(
            PJRT_Buffer_OnDeviceSizeInBytes_Args,
            on_device_size_in_bytes
        ),
        24,
        "offsetof PJRT_Buffer_OnDeviceSizeInBytes_Args.on_device_size_in_bytes"
    );
    assert_eq!(
        size_of::<PJRT_Buffer_IsDeleted_Args>(),
        32,
        "sizeof PJRT_Buffer_IsDeleted_Args"
    );
    assert_eq!(
        offset_of!(PJRT_Buffer_IsDeleted_Args, struct_size),
        0,
        "offsetof PJRT_Buffer_IsDeleted_Args.struct_size"
    );
    assert_eq!(
        offset_of!(PJRT_Buffer_IsDeleted_Args, extension_start),
        8,
        "offsetof PJRT_Buffer_IsDeleted_Args.extension_start"
    );
    assert_eq!(
        offset_of!(PJRT_Buffer_IsDeleted_Args, buffer),
        16,
        "offsetof PJRT_Buffer_IsDeleted_Args.buffer"
    );
    assert_eq!(
        offset_of!(PJRT_Buffer_IsDeleted_Args, is_deleted),
        24,
        "offsetof PJRT_Buffer_IsDeleted_Args.is_deleted"
    );
    assert_eq!(
        size_of::<PJRT_Buffer_CopyToDevice_Args>(),
        40,
        "sizeof PJRT_Buffer_CopyToDevice_Args"
    );
    assert_eq!(
        offset_of!(PJRT_Buffer_CopyToDevice_Args, struct_size),
        0,
        "offsetof PJRT_Buffer_CopyToDevice_Args.struct_size"
    );
    assert_eq!(
        offset_of!(PJRT_Buffer_CopyToDevice_Args, extension_start),
        8,
        "offsetof PJRT_Buffer_CopyToDevice_Args.extension_start"
    );
    assert_eq!(
        offset_of!(PJRT_Buffer_CopyToDevice_Args, buffer),
        16,
        "offsetof PJRT_Buffer_CopyToDevice_Args.buffer"
    );
    assert_eq!(
        offset_of!(PJRT_Buffer_CopyToDevice_Args, dst_device),
        24,
        "offsetof PJRT_Buffer_CopyToDevice_Args.dst_device"
    );
    assert_eq!(
        offset_of!(PJRT_Buffer_CopyToDevice_Args, dst_buffer),
        32,
        "offsetof PJRT_Buffer_CopyToDevice_Args.dst_buffer"
    );
    assert_eq!(
        size_of::<PJRT_Buffer_ToHostBuffer_Args>(),
        56,
        "sizeof PJRT_Buffer_ToHostBuffer_Args"
    );
    assert_eq!(
        offset_of!(PJRT_Buffer_ToHostBuffer_Args, struct_size),
        0,
        "offsetof PJRT_Buffer_ToHostBuffer_Args.struct_size"
    );
    assert_eq!(
        offset_of!(PJRT_Buffer_ToHostBuffer_Args, extension_start),
        8,
        "offsetof PJRT_Buffer_ToHostBuffer_Args.extension_start"
    );
    assert_eq!(
        offset_of!(PJRT_Buffer_ToHostBuffer_Args, src),
        16,
        "offsetof PJRT_Buffer_ToHostBuffer_Args.src"
    );
    assert_eq!(
        offset_of!(PJRT_Buffer_ToHostBuffer_Args, host_layout),
        24,
        "offsetof PJRT_Buffer_ToHostBuffer_Args.host_layout"
    );
    assert_eq!(
        offset_of!(PJRT_Buffer_ToHostBuffer_Args, dst),
        32,
        "offsetof PJRT_Buffer_ToHostBuffer_Args.dst"
    );
    assert_eq!(
        offset_of!(PJRT_Buffer_ToHostBuffer_Args, dst_size),
        40,
        "offsetof PJRT_Buffer_ToHostBuffer_Args.dst_size"
    );
    assert_eq!(
        offset_of!(PJRT_Buffer_ToHostBuffer_Args, event),
        48,
        "offsetof PJRT_Buffer_ToHostBuffer_Args.event"
    );
    assert_eq!(
        size_of::<PJRT_Buffer_ReadyEvent_Args>(),
        32,
        "sizeof PJRT_Buffer_ReadyEvent_Args"
    );
    assert_eq!(
        offset_of!(PJRT_Buffer_ReadyEvent_Args, struct_size),
        0,
        "offsetof PJRT_Buffer_ReadyEvent_Args.struct_size"
    );
    assert_eq!(
        offset_of!(PJRT_Buffer_ReadyEvent_Args, extension_start),
        8,
        "offsetof PJRT_Buffer_ReadyEvent_Args.extension_start"
    );
    assert_eq!(
        offset_of!(PJRT_Buffer_ReadyEvent_Args, buffer),
        16,
        "offsetof PJRT_Buffer_ReadyEvent_Args.buffer"
    );
    assert_eq!(
        offset_of!(PJRT_Buffer_ReadyEvent_Args, event),
        24,
        "offsetof PJRT_Buffer_ReadyEvent_Args.event"
    );
    assert_eq!(size_of::<PJRT_Api>(), 984, "sizeof PJRT_Api");
    assert_eq!(
        offset_of!(PJRT_Api, struct_size),
        0,
        "offsetof PJRT_Api.struct_size"
    );
    assert_eq!(
        offset_of!(PJRT_Api, extension_start),
        8,
        "offsetof PJRT_Api.extension_start"
    );
    assert_eq!(
        offset_of!(PJRT_Api, pjrt_api_version),
        16,
        "offsetof PJRT_Api.pjrt_api_version"
    );
    assert_eq!(
        offset_of!(PJRT_Api, PJRT_Error_Destroy),
        40,
        "offsetof PJRT_Api.PJRT_Error_Destroy"
    );
    assert_eq!(
        offset_of!(PJRT_Api, PJRT_Error_Message),
        48,
        "offsetof PJRT_Api.PJRT_Error_Message"
    );
    assert_eq!(
        offset_of!(PJRT_Api, PJRT_Error_GetCode),
        56,
        "offsetof PJRT_Api.PJRT_Error_GetCode"
    );
    assert_eq!(
        offset_of!(PJRT_Api, PJRT_Plugin_Initialize),
        64,
        "offsetof PJRT_Api.PJRT_Plugin_Initialize"
    );
    assert_eq!(
        offset_of!(PJRT_Api, PJRT_Plugin_Attributes),
        72,
        "offsetof PJRT_Api.PJRT_Plugin_Attributes"
    );
    assert_eq!(
        offset_of!(PJRT_Api, PJRT_Event_Destroy),
        80,
        "offsetof PJRT_Api.PJRT_Event_Destroy"
    );
    assert_eq!(
        offset_of!(PJRT_Api, PJRT_Event_IsReady),
        88,
        "offsetof PJRT_Api.PJRT_Event_IsReady"
    );
    assert_eq!(
        offset_of!(PJRT_Api, PJRT_Event_Error),
        96,
        "offsetof PJRT_Api.PJRT_Event_Error"
    );
    assert_eq!(
        offset_of!(PJRT_Api, PJRT_Event_Await),
        104,
        "offsetof PJRT_Api.PJRT_Event_Await"
    );
    assert_eq!(
        offset_of!(PJRT_Api, PJRT_Event_OnReady),
        112,
        "offsetof PJRT_Api.PJRT_Event_OnReady"
    );
    assert_eq!(
        offset_of!(PJRT_Api, PJRT_Client_Create),
        120,
        "offsetof PJRT_Api.PJRT_Client_Create"
    );
    assert_eq!(
        offset_of!(PJRT_Api, PJRT_Client_Destroy),
        128,
        "offsetof PJRT_Api.PJRT_Client_Destroy"
    );
    assert_eq!(
        offset_of!(PJRT_Api, PJRT_Client_PlatformName),
        136,
        "offsetof PJRT_Api.PJRT_Client_PlatformName"
    );
    assert_eq!(
        offset_of!(PJRT_Api, PJRT_Client_ProcessIndex),
        144,
        "offsetof PJRT_Api.PJRT_Client_ProcessIndex"
    );
    assert_eq!(
        offset_of!(PJRT_Api, PJRT_Client_PlatformVersion),
        152,
        "offsetof PJRT_Api.PJRT_Client_PlatformVersion"
    );
    assert_eq!(
        offset_of!(PJRT_Api, PJRT_Client_Devices),
        160,
        "offsetof PJRT_Api.PJRT_Client_Devices"
    );
    assert_eq!(
        offset_of!(PJRT_Api, PJRT_Client_AddressableDevices),
        168,
        "offsetof PJRT_Api.PJRT_Client_AddressableDevices"
    );
    assert_eq!(
        offset_of!(PJRT_Api, PJRT_Client_LookupDevice),
        176,
        "offsetof PJRT_Api.PJRT_Client_LookupDevice"
    );
    assert_eq!(
        offset_of!(PJRT_Api, PJRT_Client_LookupAddressableDevice),
        184,
        "offsetof PJRT_Api.PJRT_Client_LookupAddressableDevice"
    );
    assert_eq!(
        offset_of!(PJRT_Api, PJRT_Client_AddressableMemories),
        192,
        "offsetof PJRT_Api.PJRT_Client_AddressableMemories"
    );
    assert_eq!(
        offset_of!(PJRT_Api, PJRT_Client_Compile),
        200,
        "offsetof PJRT_Api.PJRT_Client_Compile"
    );
    assert_eq!(
        offset_of!(PJRT_Api, PJRT_Client_DefaultDeviceAssignment),
        208,
        "offsetof PJRT_Api.PJRT_Client_DefaultDeviceAssignment"
    );
    assert_eq!(
        offset_of!(PJRT_Api, PJRT_Client_BufferFromHostBuffer),
        216,
        "offsetof PJRT_Api.PJRT_Client_BufferFromHostBuffer"
    );
    assert_eq!(
        offset_of!(PJRT_Api, PJRT_DeviceDescription_Id),
        224,
        "offsetof PJRT_Api.PJRT_DeviceDescription_Id"
    );
    assert_eq!(
        offset_of!(PJRT_Api, PJRT_DeviceDescription_ProcessIndex),
        232,
        "offsetof PJRT_Api.PJRT_DeviceDescription_ProcessIndex"
    );
    assert_eq!(
        offset_of!(PJRT_Api, PJRT_DeviceDescription_Attributes),
        240,
        "offsetof PJRT_Api.PJRT_DeviceDescription_Attributes"
    );
    assert_eq!(
        offset_of!(PJRT_Api, PJRT_DeviceDescription_Kind),
        248,
        "offsetof PJRT_Api.PJRT_DeviceDescription_Kind"
    );
    assert_eq!(
        offset_of!(PJRT_Api, PJRT_DeviceDescription_DebugString),
        256,
        "offsetof PJRT_Api.PJRT_DeviceDescription_DebugString"
    );
    assert_eq!(
        offset_of!(PJRT_Api, PJRT_DeviceDescription_ToString),
        264,
        "offsetof PJRT_Api.PJRT_DeviceDescription_ToString"
    );
    assert_eq!(
        offset_of!(PJRT_Api, PJRT_Device_GetDescription),
        272,
        "offsetof PJRT_Api.PJRT_Device_GetDescription"
    );
    assert_eq!(
        offset_of!(PJRT_Api, PJRT_Device_IsAddressable),
        280,
        "offsetof PJRT_Api.PJRT_Device_IsAddressable"
    );
    assert_eq!(
        offset_of!(PJRT_Api, PJRT_Device_LocalHardwareId),
        288,
        "offsetof PJRT_Api.PJRT_Device_LocalHardwareId"
    );
    assert_eq!(
        offset_of!(PJRT_Api, PJRT_Device_AddressableMemories),
        296,
        "offsetof PJRT_Api.PJRT_Device_AddressableMemories"
    );
    assert_eq!(
        offset_of!(PJRT_Api, PJRT_Device_DefaultMemory),
        304,
        "offsetof PJRT_Api.PJRT_Device_DefaultMemory"
    );
    assert_eq!(
        offset_of!(PJRT_Api, PJRT_Device_MemoryStats),
        312,
        "offsetof PJRT_Api.PJRT_Device_MemoryStats"
    );
    assert_eq!(
        offset_of!(PJRT_Api, PJRT_Memory_Id),
        320,
        "offsetof PJRT_Api.PJRT_Memory_Id"
    );
    assert_eq!(
        offset_of!(PJRT_Api, PJRT_Memory_Kind),
        328,
        "offsetof PJRT_Api.PJRT_Memory_Kind"
    );
    assert_eq!(
        offset_of!(PJRT_Api, PJRT_Memory_DebugString),
        336,
        "offsetof PJRT_Api.PJRT_Memory_DebugString"
    );
    assert_eq!(
        offset_of!(PJRT_Api, PJRT_Memory_ToString),
        344,
        "offsetof PJRT_Api.PJRT_Memory_ToString"
    );
    assert_eq!(
        offset_of!(PJRT_Api, PJRT_Memory_AddressableByDevices),
        352,
        "offsetof PJRT_Api.PJRT_Memory_AddressableByDevices"
    );
    assert_eq!(
        offset_of!(PJRT_Api, PJRT_Executable_Destroy),
        360,
        "offsetof PJRT_Api.PJRT_Executable_Destroy"
    );
    assert_eq!(
        offset_of!(PJRT_Api, PJRT_Executable_Name),
        368,
        "offsetof PJRT_Api.PJRT_Executable_Name"
    );
    assert_eq!(
        offset_of!(PJRT_Api, PJRT_Executable_NumReplicas),
        376,
        "offsetof PJRT_Api.PJRT_Executable_NumReplicas"
    );
    assert_eq!(
        offset_of!(PJRT_Api, PJRT_Executable_NumPartitions),
        384,
        "offsetof PJRT_Api.PJRT_Executable_NumPartitions"
    );
    assert_eq!(
        offset_of!(PJRT_Api, PJRT_Executable_NumOutputs),
        392,
        "offsetof PJRT_Api.PJRT_Executable_NumOutputs"
    );
    assert_eq!(
        offset_of!(PJRT_Api, PJRT_Executable_SizeOfGeneratedCodeInBytes),
        400,
        "offsetof PJRT_Api.PJRT_Executable_SizeOfGeneratedCodeInBytes"
    );
    assert_eq!(
        offset_of!(PJRT_Api, PJRT_Executable_GetCostAnalysis),
        408,
        "offsetof PJRT_Api.PJRT_Executable_GetCostAnalysis"
    );
    assert_eq!(
        offset_of!(PJRT_Api, PJRT_Executable_OutputMemoryKinds),
        416,
        "offsetof PJRT_Api.PJRT_Executable_OutputMemoryKinds"
    );
    assert_eq!(
        offset_of!(PJRT_Api, PJRT_Executable_OptimizedProgram),
        424,
        "offsetof PJRT_Api.PJRT_Executable_OptimizedProgram"
    );
    assert_eq!(
        offset_of!(PJRT_Api, PJRT_Executable_Serialize),
        432,
        "offsetof PJRT_Api.PJRT_Executable_Serialize"
    );
    assert_eq!(
        offset_of!(PJRT_Api, PJRT_LoadedExecutable_Destroy),
        440,
        "offsetof PJRT_Api.PJRT_LoadedExecutable_Destroy"
    );
    assert_eq!(
        offset_of!(PJRT_Api, PJRT_LoadedExecutable_GetExecutable),
        448,
        "offsetof PJRT_Api.PJRT_LoadedExecutable_GetExecutable"
    );
    assert_eq!(
        offset_of!(PJRT_Api, PJRT_LoadedExecutable_AddressableDevices),
        456,
        "offsetof PJRT_Api.PJRT_LoadedExecutable_AddressableDevices"
    );
    assert_eq!(
        offset_of!(PJRT_Api, PJRT_LoadedExecutable_Delete),
        464,
        "offsetof PJRT_Api.PJRT_LoadedExecutable_Delete"
    );
    assert_eq!(
        offset_of!(PJRT_Api, PJRT_LoadedExecutable_IsDeleted),
        472,
        "offsetof PJRT_Api.PJRT_LoadedExecutable_IsDeleted"
    );
    assert_eq!(
        offset_of!(PJRT_Api, PJRT_LoadedExecutable_Execute),
        480,
        "offsetof PJRT_Api.PJRT_LoadedExecutable_Execute"
    );
    assert_eq!(
        offset_of!(PJRT_Api, PJRT_Executable_DeserializeAndLoad),
        488,
        "offsetof PJRT_Api.PJRT_Executable_DeserializeAndLoad"
    );
    assert_eq!(
        offset_of!(PJRT_Api, PJRT_LoadedExecutable_Fingerprint),
        496,
        "offsetof PJRT_Api.PJRT_LoadedExecutable_Fingerprint"
    );
    assert_eq!(
        offset_of!(PJRT_Api, PJRT_Buffer_Destroy),
        504,
        "offsetof PJRT_Api.PJRT_Buffer_Destroy"
    );
    assert_eq!(
        offset_of!(PJRT_Api, PJRT_Buffer_ElementType),
        512,
        "offsetof PJRT_Api.PJRT_Buffer_ElementType"
    );
    assert_eq!(
        offset_of!(PJRT_Api, PJRT_Buffer_Dimensions),
        520,
        "offsetof PJRT_Api.PJRT_Buffer_Dimensions"
    );
    assert_eq!(
        offset_of!(PJRT_Api, PJRT_Buffer_UnpaddedDimensions),
        528,
        "offsetof PJRT_Api.PJRT_Buffer_UnpaddedDimensions"
    );
    assert_eq!(
        offset_of!(PJRT_Api, PJRT_Buffer_DynamicDimensionIndices),
        536,
        "offsetof PJRT_Api.PJRT_Buffer_DynamicDimensionIndices"
    );
    assert_eq!(
        offset_of!(PJRT_Api, PJRT_Buffer_GetMemoryLayout),
        544,
        "offsetof PJRT_Api.PJRT_Buffer_GetMemoryLayout"
    );
    assert_eq!(
        offset_of!(PJRT_Api, PJRT_Buffer_OnDeviceSizeInBytes),
        552,
        "offsetof PJRT_Api.PJRT_Buffer_OnDeviceSizeInBytes"
    );
    assert_eq!(
        offset_of!(PJRT_Api, PJRT_Buffer_Device),
        560,
        "offsetof PJRT_Api.PJRT_Buffer_Device"
    );
    assert_eq!(
        offset_of!(PJRT_Api, PJRT_Buffer_Memory),
        568,
        "offsetof PJRT_Api.PJRT_Buffer_Memory"
    );
    assert_eq!(
        offset_of!(PJRT_Api, PJRT_Buffer_Delete),
        576,
        "offsetof PJRT_Api.PJRT_Buffer_Delete"
    );
    assert_eq!(
        offset_of!(PJRT_Api, PJRT_Buffer_IsDeleted),
        584,
        "offsetof PJRT_Api.PJRT_Buffer_IsDeleted"
    );
    assert_eq!(
        offset_of!(PJRT_Api, PJRT_Buffer_CopyToDevice),
        592,
        "offsetof PJRT_Api.PJRT_Buffer_CopyToDevice"
    );
    assert_eq!(
        offset_of!(PJRT_Api, PJRT_Buffer_ToHostBuffer),
        600,
        "offsetof PJRT_Api.PJRT_Buffer_ToHostBuffer"
    );
    assert_eq!(
        offset_of!(PJRT_Api, PJRT_Buffer_IsOnCpu),
        608,
        "offsetof PJRT_Api.PJRT_Buffer_IsOnCpu"
    );
    assert_eq!(
        offset_of!(PJRT_Api, PJRT_Buffer_ReadyEvent),
        616,
        "offsetof PJRT_Api.PJRT_Buffer_ReadyEvent"
    );
    assert_eq!(
        offset_of!(PJRT_Api, PJRT_Buffer_UnsafePointer),
        624,
        "offsetof PJRT_Api.PJRT_Buffer_UnsafePointer"
    );
    assert_eq!(
        offset_of!(PJRT_Api, PJRT_Buffer_IncreaseExternalReferenceCount),
        632,
        "offsetof PJRT_Api.PJRT_Buffer_IncreaseExternalReferenceCount"
    );
    assert_eq!(
        offset_of!(PJRT_Api, PJRT_Buffer_DecreaseExternalReferenceCount),
        640,
        "offsetof PJRT_Api.PJRT_Buffer_DecreaseExternalReferenceCount"
    );
    assert_eq!(
        offset_of!(PJRT_Api, PJRT_Buffer_OpaqueDeviceMemoryDataPointer),
        648,
        "offsetof PJRT_Api.PJRT_Buffer_OpaqueDeviceMemoryDataPointer"
    );
    assert_eq!(
        offset_of!(PJRT_Api, PJRT_CopyToDeviceStream_Destroy),
        656,
        "offsetof PJRT_Api.PJRT_CopyToDeviceStream_Destroy"
    );
    assert_eq!(
        offset_of!(PJRT_Api, PJRT_CopyToDeviceStream_AddChunk),
        664,
        "offsetof PJRT_Api.PJRT_CopyToDeviceStream_AddChunk"
    );
    assert_eq!(
        offset_of!(PJRT_Api, PJRT_CopyToDeviceStream_TotalBytes),
        672,
        "offsetof PJRT_Api.PJRT_CopyToDeviceStream_TotalBytes"
    );
    assert_eq!(
        offset_of!(PJRT_Api, PJRT_CopyToDeviceStream_GranuleSize),
        680,
        "offsetof PJRT_Api.PJRT_CopyToDeviceStream_GranuleSize"
    );
    assert_eq!(
        offset_of!(PJRT_Api, PJRT_CopyToDeviceStream_CurrentBytes),
        688,
        "offsetof PJRT_Api.PJRT_CopyToDeviceStream_CurrentBytes"
    );
    assert_eq!(
        offset_of!(PJRT_Api, PJRT_TopologyDescription_Create),
        696,
        "offsetof PJRT_Api.PJRT_TopologyDescription_Create"
    );
    assert_eq!(
        offset_of!(PJRT_Api, PJRT_TopologyDescription_Destroy),
        704,
        "offsetof PJRT_Api.PJRT_TopologyDescription_Destroy"
    );
    assert_eq!(
        offset_of!(PJRT_Api, PJRT_TopologyDescription_PlatformName),
        712,
        "offsetof PJRT_Api.PJRT_TopologyDescription_PlatformName"
    );
    assert_eq!(
        offset_of!(PJRT_Api, PJRT_TopologyDescription_PlatformVersion),
        720,
        "offsetof PJRT_Api.PJRT_TopologyDescription_PlatformVersion"
    );
    assert_eq!(
        offset_of!(PJRT_Api, PJRT_TopologyDescription_GetDeviceDescriptions),
        728,
        "offsetof PJRT_Api.PJRT_TopologyDescription_GetDeviceDescriptions"
    );
    assert_eq!(
        offset_of!(PJRT_Api, PJRT_TopologyDescription_Serialize),
        736,
        "offsetof PJRT_Api.PJRT_TopologyDescription_Serialize"
    );
    assert_eq!(
        offset_of!(PJRT_Api, PJRT_TopologyDescription_Attributes),
        744,
        "offsetof PJRT_Api.PJRT_TopologyDescription_Attributes"
    );
    assert_eq!(
        offset_of!(PJRT_Api, PJRT_Compile),
        752,
        "offsetof PJRT_Api.PJRT_Compile"
    );
    assert_eq!(
        offset_of!(PJRT_Api, PJRT_Executable_OutputElementTypes),
        760,
        "offsetof PJRT_Api.PJRT_Executable_OutputElementTypes"
    );
    assert_eq!(
        offset_of!(PJRT_Api, PJRT_Executable_OutputDimensions),
        768,
        "offsetof PJRT_Api.PJRT_Executable_OutputDimensions"
    );
    assert_eq!(
        offset_of!(PJRT_Api, PJRT_Buffer_CopyToMemory),
        776,
        "offsetof PJRT_Api.PJRT_Buffer_CopyToMemory"
    );
    assert_eq!(
        offset_of!(PJRT_Api, PJRT_Client_CreateViewOfDeviceBuffer),
        784,
        "offsetof PJRT_Api.PJRT_Client_CreateViewOfDeviceBuffer"
    );
    assert_eq!(
        offset_of!(PJRT_Api, PJRT_Executable_Fingerprint),
        792,
        "offsetof PJRT_Api.PJRT_Executable_Fingerprint"
    );
    assert_eq!(
        offset_of!(PJRT_Api, PJRT_Client_TopologyDescription),
        800,
        "offsetof PJRT_Api.PJRT_Client_TopologyDescription"
    );
    assert_eq!(
        offset_of!(PJRT_Api, PJRT_Executable_GetCompiledMemoryStats),
        808,
        "offsetof PJRT_Api.PJRT_Executable_GetCompiledMemoryStats"
    );
    assert_eq!(
        offset_of!(PJRT_Api, PJRT_Memory_Kind_Id),
        816,
        "offsetof PJRT_Api.PJRT_Memory_Kind_Id"
    );
    assert_eq!(
        offset_of!(PJRT_Api, PJRT_ExecuteContext_Create),
        824,
        "offsetof PJRT_Api.PJRT_ExecuteContext_Create"
    );
    assert_eq!(
        offset_of!(PJRT_Api, PJRT_ExecuteContext_Destroy),
        832,
        "offsetof PJRT_Api.PJRT_ExecuteContext_Destroy"
    );
    assert_eq!(
        offset_of!(PJRT_Api, PJRT_Buffer_CopyRawToHost),
        840,
        "offsetof PJRT_Api.PJRT_Buffer_CopyRawToHost"
    );
    assert_eq!(
        offset_of!(PJRT_Api, PJRT_AsyncHostToDeviceTransferManager_Destroy),
        848,
        "offsetof PJRT_Api.PJRT_AsyncHostToDeviceTransferManager_Destroy"
    );
    assert_eq!(
        offset_of!(PJRT_Api, PJRT_AsyncHostToDeviceTransferManager_TransferData),
        856,
        "offsetof PJRT_Api.PJRT_AsyncHostToDeviceTransferManager_TransferData"
    );
    assert_eq!(
        offset_of!(PJRT_Api, PJRT_Client_CreateBuffersForAsyncHostToDevice),
        864,
        "offsetof PJRT_Api.PJRT_Client_CreateBuffersForAsyncHostToDevice"
    );
    assert_eq!(
        offset_of!(
            PJRT_Api,
            PJRT_AsyncHostToDeviceTransferManager_RetrieveBuffer
        ),
        872,
        "offsetof PJRT_Api.PJRT_AsyncHostToDeviceTransferManager_RetrieveBuffer"
    );
    assert_eq!(
        offset_of!(PJRT_Api, PJRT_AsyncHostToDeviceTransferManager_Device),
        880,
        "offsetof PJRT_Api.PJRT_AsyncHostToDeviceTransferManager_Device"
    );
    assert_eq!(
        offset_of!(PJRT_Api, PJRT_AsyncHostToDeviceTransferManager_BufferCount),
        888,
        "offsetof PJRT_Api.PJRT_AsyncHostToDeviceTransferManager_BufferCount"
    );
    assert_eq!(
        offset_of!(PJRT_Api, PJRT_AsyncHostToDeviceTransferManager_BufferSize),
        896,
        "offsetof PJRT_Api.PJRT_AsyncHostToDeviceTransferManager_BufferSize"
    );
    assert_eq!(
        offset_of!(
            PJRT_Api,
            PJRT_AsyncHostToDeviceTransferManager_SetBufferError
        ),
        904,
        "offsetof PJRT_Api.PJRT_AsyncHostToDeviceTransferManager_SetBufferError"
    );
    assert_eq!(
        offset_of!(PJRT_Api, PJRT_AsyncHostToDeviceTransferManager_AddMetadata),
        912,
        "offsetof PJRT_Api.PJRT_AsyncHostToDeviceTransferManager_AddMetadata"
    );
    assert_eq!(
        offset_of!(PJRT_Api, PJRT_Client_DmaMap),
        920,
        "offsetof PJRT_Api.PJRT_Client_DmaMap"
    );
    assert_eq!(
        offset_of!(PJRT_Api, PJRT_Client_DmaUnmap),
        928,
        "offsetof PJRT_Api.PJRT_Client_DmaUnmap"
    );
    assert_eq!(
        offset_of!(PJRT_Api, PJRT_Client_CreateUninitializedBuffer),
        936,
        "offsetof PJRT_Api.PJRT_Client_CreateUninitializedBuffer"
    );
    assert_eq!(
        offset_of!(PJRT_Api, PJRT_Client_UpdateGlobalProcessInfo),
        944,
        "offsetof PJRT_Api.PJRT_Client_UpdateGlobalProcessInfo"
    );
    assert_eq!(
        offset_of!(PJRT_Api, PJRT_TopologyDescription_Deserialize),
        952,
        "offsetof PJRT_Api.PJRT_TopologyDescription_Deserialize"
    );
    assert_eq!(
        offset_of!(PJRT_Api, PJRT_Client_CreateAliasBuffer),
        960,
        "offsetof PJRT_Api.PJRT_Client_CreateAliasBuffer"
    );
    assert_eq!(
        offset_of!(PJRT_Api, PJRT_Client_FulfillAliasBuffer),
        968,
        "offsetof PJRT_Api.PJRT_Client_FulfillAliasBuffer"
    );
    assert_eq!(
        offset_of!(PJRT_Api, PJRT_LoadedExecutable_GetDeviceAssignment),
        976,
        "offsetof PJRT_Api.PJRT_LoadedExecutable_GetDeviceAssignment"
    );
}
