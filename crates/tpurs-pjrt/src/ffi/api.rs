//! The function table of the PJRT C API (0.81 layout) and the signature of each entry
//! this crate calls. Split from the argument structs in `ffi.rs`, which it uses.

#![allow(non_camel_case_types, non_snake_case)]

use super::*;

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
