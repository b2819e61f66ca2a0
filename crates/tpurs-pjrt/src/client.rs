//! Plugin loading and the [`Client`].

use std::collections::HashSet;
use std::ffi::{c_char, c_void};
use std::path::{Path, PathBuf};
use std::ptr;
use std::sync::{Arc, Mutex, PoisonError};

use crate::buffer::{await_event, Buffer, ElementType};
use crate::compile_options::CompileOptions;
use crate::error::{Error, Result};
use crate::executable::LoadedExecutable;
use crate::ffi::{self, Args};

/// The plugin's function table plus the size it reported.
#[derive(Clone, Copy)]
pub(crate) struct Api {
    pub(crate) raw: *const ffi::PJRT_Api,
    /// `PJRT_Api.struct_size` as reported by the plugin.
    pub(crate) size: usize,
}

// SAFETY: the table is immutable, process-lived data; PJRT functions are
// thread-safe.
unsafe impl Send for Api {}
// SAFETY: as above.
unsafe impl Sync for Api {}

/// Copies a (pointer, length) string returned by the plugin.
///
/// # Safety
/// `ptr` must be NULL or valid for `len` bytes.
pub(crate) unsafe fn lossy_string(ptr: *const c_char, len: usize) -> String {
    if ptr.is_null() || len == 0 {
        return String::new();
    }
    String::from_utf8_lossy(std::slice::from_raw_parts(ptr as *const u8, len)).into_owned()
}

/// A loaded and initialised plugin. Never unloaded (plugins do not survive
/// `dlclose`), so it lives for the rest of the process.
struct Plugin {
    api: Api,
    path: PathBuf,
    attributes: Vec<NamedValue>,
}

/// Plugins loaded so far, by canonical path; each is initialised once.
static PLUGINS: Mutex<Vec<&'static Plugin>> = Mutex::new(Vec::new());

fn load_plugin(path: &Path) -> Result<&'static Plugin> {
    let load_err = |msg: String| Error::Load {
        path: path.to_path_buf(),
        msg,
    };
    let canon = std::fs::canonicalize(path).map_err(|e| load_err(e.to_string()))?;
    let mut registry = PLUGINS.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(p) = registry.iter().find(|p| p.path == canon) {
        return Ok(p);
    }

    use libloading::os::unix::{Library, RTLD_LOCAL, RTLD_NOW};
    // SAFETY: loading a PJRT plugin runs its static initialisers, which is
    // the documented way to use it.
    let lib = unsafe { Library::open(Some(&canon), RTLD_NOW | RTLD_LOCAL) }
        .map_err(|e| load_err(e.to_string()))?;
    // SAFETY: `GetPjrtApi` has this signature in every PJRT plugin.
    let get_api: ffi::GetPjrtApiFn = match unsafe { lib.get::<ffi::GetPjrtApiFn>(b"GetPjrtApi\0") }
    {
        Ok(sym) => *sym,
        Err(e) => {
            return Err(Error::MissingSymbol {
                path: path.to_path_buf(),
                symbol: "GetPjrtApi",
                msg: e.to_string(),
            })
        }
    };
    // Never unload: the function pointers stay valid for the process.
    std::mem::forget(lib);

    // SAFETY: plain call into the plugin's entry point.
    let raw = unsafe { get_api() };
    if raw.is_null() {
        return Err(Error::Internal("GetPjrtApi returned NULL".into()));
    }
    // SAFETY: every PJRT_Api begins with struct_size, extension_start and the
    // version struct (present since 0.1).
    let (size, major, minor) = unsafe {
        let size = ptr::addr_of!((*raw).struct_size).read();
        if size < std::mem::offset_of!(ffi::PJRT_Api, PJRT_Error_Destroy) {
            return Err(Error::Internal(format!(
                "PJRT_Api.struct_size {size} is too small"
            )));
        }
        let v = ptr::addr_of!((*raw).pjrt_api_version).read();
        (size, v.major_version, v.minor_version)
    };
    if major != ffi::PJRT_API_MAJOR {
        return Err(Error::IncompatibleApi { major, minor });
    }
    let api = Api { raw, size };

    let mut init = ffi::PJRT_Plugin_Initialize_Args::new();
    // SAFETY: args are fully initialised.
    unsafe { pjrt_call!(api, PJRT_Plugin_Initialize, &mut init) }?;

    let mut attrs = ffi::PJRT_Plugin_Attributes_Args::new();
    // SAFETY: args are fully initialised; the returned array lives for the
    // whole process and is copied right away.
    let attributes = match unsafe { pjrt_call!(api, PJRT_Plugin_Attributes, &mut attrs) } {
        Ok(()) => unsafe { named_values_from_c(attrs.attributes, attrs.num_attributes) },
        Err(Error::Unsupported(_)) => Vec::new(),
        Err(e) => return Err(e),
    };

    let plugin: &'static Plugin = Box::leak(Box::new(Plugin {
        api,
        path: canon,
        attributes,
    }));
    registry.push(plugin);
    Ok(plugin)
}

/// A named option/attribute value (`PJRT_NamedValue`): used for client create
/// options and reported plugin attributes.
#[derive(Debug, Clone, PartialEq)]
pub enum NamedValue {
    /// 64-bit integer.
    Int64(String, i64),
    /// String.
    Str(String, String),
    /// Boolean.
    Bool(String, bool),
    /// 32-bit float.
    Float(String, f32),
    /// List of 64-bit integers.
    Int64List(String, Vec<i64>),
}

impl NamedValue {
    /// `Int64` shorthand.
    pub fn int64(name: &str, v: i64) -> Self {
        NamedValue::Int64(name.into(), v)
    }
    /// `Str` shorthand.
    pub fn string(name: &str, v: &str) -> Self {
        NamedValue::Str(name.into(), v.into())
    }
    /// `Bool` shorthand.
    pub fn bool(name: &str, v: bool) -> Self {
        NamedValue::Bool(name.into(), v)
    }
    /// `Float` shorthand.
    pub fn float(name: &str, v: f32) -> Self {
        NamedValue::Float(name.into(), v)
    }
    /// `Int64List` shorthand.
    pub fn int64_list(name: &str, v: &[i64]) -> Self {
        NamedValue::Int64List(name.into(), v.to_vec())
    }

    /// The value's name.
    pub fn name(&self) -> &str {
        match self {
            NamedValue::Int64(n, _)
            | NamedValue::Str(n, _)
            | NamedValue::Bool(n, _)
            | NamedValue::Float(n, _)
            | NamedValue::Int64List(n, _) => n,
        }
    }

    /// C view borrowing from `self` (valid while `self` is).
    fn to_c(&self) -> ffi::PJRT_NamedValue {
        let mut c = ffi::PJRT_NamedValue::new();
        let name = self.name();
        c.name = name.as_ptr() as *const c_char;
        c.name_size = name.len();
        match self {
            NamedValue::Int64(_, v) => {
                c.type_ = ffi::PJRT_NamedValue_kInt64;
                c.value.int64_value = *v;
                c.value_size = 1;
            }
            NamedValue::Str(_, s) => {
                c.type_ = ffi::PJRT_NamedValue_kString;
                c.value.string_value = s.as_ptr() as *const c_char;
                c.value_size = s.len();
            }
            NamedValue::Bool(_, b) => {
                c.type_ = ffi::PJRT_NamedValue_kBool;
                c.value.bool_value = *b;
                c.value_size = 1;
            }
            NamedValue::Float(_, f) => {
                c.type_ = ffi::PJRT_NamedValue_kFloat;
                c.value.float_value = *f;
                c.value_size = 1;
            }
            NamedValue::Int64List(_, l) => {
                c.type_ = ffi::PJRT_NamedValue_kInt64List;
                c.value.int64_array_value = l.as_ptr();
                c.value_size = l.len();
            }
        }
        c
    }
}

/// Copies a plugin-owned `PJRT_NamedValue` array (unknown types are skipped).
///
/// # Safety
/// `ptr` must be NULL or valid for `n` well-formed entries.
unsafe fn named_values_from_c(ptr: *const ffi::PJRT_NamedValue, n: usize) -> Vec<NamedValue> {
    if ptr.is_null() {
        return Vec::new();
    }
    let mut out = Vec::with_capacity(n);
    for v in std::slice::from_raw_parts(ptr, n) {
        let name = lossy_string(v.name, v.name_size);
        let nv = match v.type_ {
            ffi::PJRT_NamedValue_kInt64 => NamedValue::Int64(name, v.value.int64_value),
            ffi::PJRT_NamedValue_kString => {
                NamedValue::Str(name, lossy_string(v.value.string_value, v.value_size))
            }
            ffi::PJRT_NamedValue_kBool => NamedValue::Bool(name, v.value.bool_value),
            ffi::PJRT_NamedValue_kFloat => NamedValue::Float(name, v.value.float_value),
            ffi::PJRT_NamedValue_kInt64List => {
                let p = v.value.int64_array_value;
                let list = if p.is_null() || v.value_size == 0 {
                    Vec::new()
                } else {
                    std::slice::from_raw_parts(p, v.value_size).to_vec()
                };
                NamedValue::Int64List(name, list)
            }
            _ => continue,
        };
        out.push(nv);
    }
    out
}

/// Static description of one addressable device.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceInfo {
    /// Device id (`PJRT_DeviceDescription_Id`); what device assignments use.
    pub id: i32,
    /// Owning process (`PJRT_DeviceDescription_ProcessIndex`).
    pub process_index: i32,
    /// Device kind, e.g. "cpu" (`PJRT_DeviceDescription_Kind`).
    pub kind: String,
    /// Verbose description (`PJRT_DeviceDescription_DebugString`).
    pub debug_string: String,
    /// Terse description, e.g. "CpuDevice(id=0)" (`..._ToString`).
    pub display: String,
}

/// Allocator statistics of a device (`PJRT_Device_MemoryStats`); optional
/// fields are `None` when the plugin does not report them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct MemoryStats {
    /// Bytes currently allocated.
    pub bytes_in_use: i64,
    /// Peak of `bytes_in_use`.
    pub peak_bytes_in_use: Option<i64>,
    /// Number of allocations.
    pub num_allocs: Option<i64>,
    /// Largest single allocation.
    pub largest_alloc_size: Option<i64>,
    /// Allocatable limit.
    pub bytes_limit: Option<i64>,
    /// Reserved bytes.
    pub bytes_reserved: Option<i64>,
    /// Peak reserved bytes.
    pub peak_bytes_reserved: Option<i64>,
    /// Reservable limit.
    pub bytes_reservable_limit: Option<i64>,
    /// Largest free block.
    pub largest_free_block_bytes: Option<i64>,
    /// Bytes held by the allocator pool.
    pub pool_bytes: Option<i64>,
    /// Peak pool bytes.
    pub peak_pool_bytes: Option<i64>,
}

/// Shared state of a client; kept alive by every buffer and executable so
/// the PJRT client is destroyed only after all of them.
pub(crate) struct ClientInner {
    pub(crate) api: Api,
    pub(crate) raw: *mut ffi::PJRT_Client,
    pub(crate) devices: Vec<*mut ffi::PJRT_Device>,
    device_info: Vec<DeviceInfo>,
    platform_name: String,
    platform_version: String,
    plugin: &'static Plugin,
}

// SAFETY: PJRT clients, devices and their methods are thread-safe; the Rust
// side is immutable after construction.
unsafe impl Send for ClientInner {}
// SAFETY: as above.
unsafe impl Sync for ClientInner {}

impl Drop for ClientInner {
    fn drop(&mut self) {
        let mut a = ffi::PJRT_Client_Destroy_Args::new();
        a.client = self.raw;
        // SAFETY: no buffer or executable of this client is alive any more
        // (each holds an Arc to us). Errors cannot be reported from drop.
        let _ = unsafe { pjrt_call!(self.api, PJRT_Client_Destroy, &mut a) };
    }
}

/// A PJRT client: owns the devices of one plugin instance. Cheap to clone
/// (shared handle); `Send + Sync`.
#[derive(Clone)]
pub struct Client {
    pub(crate) inner: Arc<ClientInner>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("platform", &self.inner.platform_name)
            .field("devices", &self.inner.devices.len())
            .finish()
    }
}

impl Client {
    /// Loads (once per process) and initialises the plugin at `plugin_path`,
    /// then creates a client with the given create options (e.g.
    /// `NamedValue::int64("cpu_device_count", 2)` for the CPU plugin).
    pub fn load(plugin_path: &Path, create_options: &[NamedValue]) -> Result<Client> {
        let plugin = load_plugin(plugin_path)?;
        let api = plugin.api;

        let c_opts: Vec<ffi::PJRT_NamedValue> =
            create_options.iter().map(NamedValue::to_c).collect();
        let mut a = ffi::PJRT_Client_Create_Args::new();
        a.create_options = c_opts.as_ptr();
        a.num_options = c_opts.len();
        // SAFETY: `c_opts` and the strings it points into outlive the call.
        unsafe { pjrt_call!(api, PJRT_Client_Create, &mut a) }?;
        drop(c_opts);
        if a.client.is_null() {
            return Err(Error::Internal("PJRT_Client_Create returned NULL".into()));
        }
        // From here on, dropping `inner` destroys the client.
        let mut inner = ClientInner {
            api,
            raw: a.client,
            devices: Vec::new(),
            device_info: Vec::new(),
            platform_name: String::new(),
            platform_version: String::new(),
            plugin,
        };

        let mut pn = ffi::PJRT_Client_PlatformName_Args::new();
        pn.client = inner.raw;
        // SAFETY: valid client; the returned string is owned by the client.
        unsafe {
            pjrt_call!(api, PJRT_Client_PlatformName, &mut pn)?;
            inner.platform_name = lossy_string(pn.platform_name, pn.platform_name_size);
        }
        let mut pv = ffi::PJRT_Client_PlatformVersion_Args::new();
        pv.client = inner.raw;
        // SAFETY: as above.
        unsafe {
            pjrt_call!(api, PJRT_Client_PlatformVersion, &mut pv)?;
            inner.platform_version = lossy_string(pv.platform_version, pv.platform_version_size);
        }

        let mut ad = ffi::PJRT_Client_AddressableDevices_Args::new();
        ad.client = inner.raw;
        // SAFETY: valid client; the array is owned by the client and copied.
        unsafe {
            pjrt_call!(api, PJRT_Client_AddressableDevices, &mut ad)?;
            if !ad.addressable_devices.is_null() {
                inner.devices =
                    std::slice::from_raw_parts(ad.addressable_devices, ad.num_addressable_devices)
                        .to_vec();
            }
        }
        if inner.devices.iter().any(|d| d.is_null()) {
            return Err(Error::Internal("NULL addressable device".into()));
        }
        for &d in &inner.devices {
            // SAFETY: `d` is a live device of this client.
            let info = unsafe { device_info(api, d) }?;
            inner.device_info.push(info);
        }
        Ok(Client {
            inner: Arc::new(inner),
        })
    }

    /// Platform name, e.g. "cpu" (`PJRT_Client_PlatformName`).
    pub fn platform_name(&self) -> &str {
        &self.inner.platform_name
    }

    /// Platform version string (`PJRT_Client_PlatformVersion`).
    pub fn platform_version(&self) -> &str {
        &self.inner.platform_version
    }

    /// PJRT C API version implemented by the plugin, `(major, minor)`.
    pub fn api_version(&self) -> (i32, i32) {
        // SAFETY: the version struct is always inside the table.
        let v = unsafe { ptr::addr_of!((*self.inner.api.raw).pjrt_api_version).read() };
        (v.major_version, v.minor_version)
    }

    /// Attributes reported by `PJRT_Plugin_Attributes` (e.g. `xla_version`,
    /// `stablehlo_current_version`).
    pub fn plugin_attributes(&self) -> &[NamedValue] {
        &self.inner.plugin.attributes
    }

    /// Number of addressable devices (valid ordinals are `0..device_count()`).
    pub fn device_count(&self) -> usize {
        self.inner.devices.len()
    }

    /// All addressable devices, indexed by ordinal.
    pub fn devices(&self) -> &[DeviceInfo] {
        &self.inner.device_info
    }

    /// Description of device `ordinal`, or `None` if out of range.
    pub fn device_info(&self, ordinal: usize) -> Option<&DeviceInfo> {
        self.inner.device_info.get(ordinal)
    }

    /// Device kind of `ordinal` (empty string if out of range).
    pub fn device_kind(&self, ordinal: usize) -> String {
        self.device_info(ordinal)
            .map(|d| d.kind.clone())
            .unwrap_or_default()
    }

    /// Verbose debug description of `ordinal` (empty string if out of range).
    pub fn device_description(&self, ordinal: usize) -> String {
        self.device_info(ordinal)
            .map(|d| d.debug_string.clone())
            .unwrap_or_default()
    }

    /// Allocator statistics of device `ordinal`; `None` if out of range or
    /// the plugin does not implement them.
    pub fn device_memory_stats(&self, ordinal: usize) -> Option<MemoryStats> {
        let d = *self.inner.devices.get(ordinal)?;
        let mut a = ffi::PJRT_Device_MemoryStats_Args::new();
        a.device = d;
        // SAFETY: live device.
        unsafe { pjrt_call!(self.inner.api, PJRT_Device_MemoryStats, &mut a) }.ok()?;
        let opt = |v: i64, set: bool| set.then_some(v);
        Some(MemoryStats {
            bytes_in_use: a.bytes_in_use,
            peak_bytes_in_use: opt(a.peak_bytes_in_use, a.peak_bytes_in_use_is_set),
            num_allocs: opt(a.num_allocs, a.num_allocs_is_set),
            largest_alloc_size: opt(a.largest_alloc_size, a.largest_alloc_size_is_set),
            bytes_limit: opt(a.bytes_limit, a.bytes_limit_is_set),
            bytes_reserved: opt(a.bytes_reserved, a.bytes_reserved_is_set),
            peak_bytes_reserved: opt(a.peak_bytes_reserved, a.peak_bytes_reserved_is_set),
            bytes_reservable_limit: opt(a.bytes_reservable_limit, a.bytes_reservable_limit_is_set),
            largest_free_block_bytes: opt(
                a.largest_free_block_bytes,
                a.largest_free_block_bytes_is_set,
            ),
            pool_bytes: opt(a.pool_bytes, a.pool_bytes_is_set),
            peak_pool_bytes: opt(a.peak_pool_bytes, a.peak_pool_bytes_is_set),
        })
    }

    /// Compiles StableHLO/MHLO given as MLIR text (program format "mlir").
    ///
    /// Options are validated first so that requests the plugin would abort
    /// on (e.g. more replicas x partitions than devices) become errors.
    pub fn compile(&self, mlir_text: &str, options: &CompileOptions) -> Result<LoadedExecutable> {
        self.validate_compile_options(options)?;
        if mlir_text.trim().is_empty() {
            return Err(Error::InvalidArgument("empty MLIR program".into()));
        }
        let opts = options.encode();
        const FORMAT: &str = "mlir";
        let mut prog = ffi::PJRT_Program::new();
        // The plugin does not modify the code (in-place modification is off).
        prog.code = mlir_text.as_ptr() as *mut c_char;
        prog.code_size = mlir_text.len();
        prog.format = FORMAT.as_ptr() as *const c_char;
        prog.format_size = FORMAT.len();
        let mut a = ffi::PJRT_Client_Compile_Args::new();
        a.client = self.inner.raw;
        a.program = &prog;
        a.compile_options = opts.as_ptr() as *const c_char;
        a.compile_options_size = opts.len();
        // SAFETY: program text, format and options outlive the call.
        unsafe { pjrt_call!(self.inner.api, PJRT_Client_Compile, &mut a) }?;
        if a.executable.is_null() {
            return Err(Error::Internal("PJRT_Client_Compile returned NULL".into()));
        }
        // SAFETY: fresh executable owned by us from now on.
        unsafe { LoadedExecutable::from_raw(self.inner.clone(), a.executable) }
    }

    /// Loads an executable serialized by [`LoadedExecutable::serialize`] with the same
    /// plugin build. Corrupt bytes can crash the plugin: callers must verify a checksum of
    /// their own before calling this.
    pub fn deserialize(&self, bytes: &[u8]) -> Result<LoadedExecutable> {
        if bytes.is_empty() {
            return Err(Error::InvalidArgument("empty serialized executable".into()));
        }
        let mut a = ffi::PJRT_Executable_DeserializeAndLoad_Args::new();
        a.client = self.inner.raw;
        a.serialized_executable = bytes.as_ptr() as *const c_char;
        a.serialized_executable_size = bytes.len();
        // SAFETY: the bytes outlive the call.
        unsafe { pjrt_call!(self.inner.api, PJRT_Executable_DeserializeAndLoad, &mut a) }?;
        if a.loaded_executable.is_null() {
            return Err(Error::Internal(
                "PJRT_Executable_DeserializeAndLoad returned NULL".into(),
            ));
        }
        // SAFETY: fresh executable owned by us from now on.
        unsafe { LoadedExecutable::from_raw(self.inner.clone(), a.loaded_executable) }
    }

    fn validate_compile_options(&self, o: &CompileOptions) -> Result<()> {
        let bad = |m: String| Err(Error::InvalidArgument(m));
        if o.num_replicas < 1 || o.num_partitions < 1 {
            return bad(format!(
                "num_replicas ({}) and num_partitions ({}) must be >= 1",
                o.num_replicas, o.num_partitions
            ));
        }
        let n = self.device_count() as i64;
        match o.num_replicas.checked_mul(o.num_partitions) {
            Some(total) if total <= n => {}
            _ => {
                return bad(format!(
                    "num_replicas ({}) x num_partitions ({}) exceeds the {n} addressable devices",
                    o.num_replicas, o.num_partitions
                ))
            }
        }
        if o.portable
            && (o.num_replicas != 1 || o.num_partitions != 1 || o.device_assignment.is_some())
        {
            return bad(
                "portable executables require 1 replica, 1 partition and no device assignment"
                    .into(),
            );
        }
        if let Some(da) = &o.device_assignment {
            if da.len() as i64 != o.num_replicas
                || da.iter().any(|row| row.len() as i64 != o.num_partitions)
            {
                return bad(format!(
                    "device_assignment must be {} replicas x {} partitions",
                    o.num_replicas, o.num_partitions
                ));
            }
            let known: HashSet<i64> = self
                .inner
                .device_info
                .iter()
                .map(|d| i64::from(d.id))
                .collect();
            let mut seen = HashSet::new();
            for &id in da.iter().flatten() {
                if !known.contains(&id) {
                    return bad(format!("device_assignment names unknown device id {id}"));
                }
                if !seen.insert(id) {
                    return bad(format!("device_assignment uses device id {id} twice"));
                }
            }
        }
        Ok(())
    }

    /// Copies a dense row-major host array to device `device` (ordinal).
    /// `data.len()` must equal `product(dims) * ty.byte_size()`. The copy is
    /// complete when this returns (`kImmutableOnlyDuringCall`).
    pub fn buffer_from_host(
        &self,
        data: &[u8],
        ty: ElementType,
        dims: &[i64],
        device: usize,
    ) -> Result<Buffer> {
        // SAFETY: `data` and `dims` outlive the call; with kImmutableOnlyDuringCall the
        // plugin copies before returning.
        let (buffer, done) = unsafe {
            self.start_upload(
                data.as_ptr(),
                data.len(),
                ty,
                dims,
                device,
                ffi::PJRT_HostBufferSemantics_kImmutableOnlyDuringCall,
            )
        }?;
        if !done.is_null() {
            // SAFETY: fresh event owned by us; consumed here.
            unsafe { await_event(self.inner.api, done, "PJRT_Client_BufferFromHostBuffer") }?;
        }
        buffer
    }

    /// Checks the size and calls `PJRT_Client_BufferFromHostBuffer`. Returns the buffer (or
    /// why there is none) and the plugin's done-with-host-memory event (NULL when none), which
    /// the caller owns.
    ///
    /// # Safety
    /// `data` must point to `len` readable bytes that stay valid and unwritten for as long as
    /// `semantics` requires (until the event fires, for kImmutableUntilTransferCompletes).
    pub(crate) unsafe fn start_upload(
        &self,
        data: *const u8,
        len: usize,
        ty: ElementType,
        dims: &[i64],
        device: usize,
        semantics: ffi::PJRT_HostBufferSemantics,
    ) -> Result<(Result<Buffer>, *mut ffi::PJRT_Event)> {
        let dev = self.device_ptr(device)?;
        let expected = checked_byte_len(dims, ty)?;
        if len != expected {
            return Err(Error::InvalidArgument(format!(
                "host data has {len} bytes but {ty:?} {dims:?} needs {expected}"
            )));
        }
        let mut a = ffi::PJRT_Client_BufferFromHostBuffer_Args::new();
        a.client = self.inner.raw;
        a.data = data as *const c_void;
        a.type_ = ty.to_pjrt();
        a.dims = dims.as_ptr();
        a.num_dims = dims.len();
        a.host_buffer_semantics = semantics;
        a.device = dev;
        // SAFETY: the caller keeps `data` valid as `semantics` requires; `dims` outlives the call.
        unsafe { pjrt_call!(self.inner.api, PJRT_Client_BufferFromHostBuffer, &mut a) }?;
        let buffer = if a.buffer.is_null() {
            Err(Error::Internal(
                "PJRT_Client_BufferFromHostBuffer returned NULL".into(),
            ))
        } else {
            // SAFETY: fresh buffer owned by us.
            Ok(unsafe { Buffer::from_raw(self.inner.clone(), a.buffer, ty, dims.into(), device) })
        };
        Ok((buffer, a.done_with_host_buffer))
    }

    /// Device handle for an ordinal.
    pub(crate) fn device_ptr(&self, ordinal: usize) -> Result<*mut ffi::PJRT_Device> {
        self.inner.device_ptr(ordinal)
    }
}

impl ClientInner {
    /// Device handle for an ordinal.
    pub(crate) fn device_ptr(&self, ordinal: usize) -> Result<*mut ffi::PJRT_Device> {
        self.devices.get(ordinal).copied().ok_or_else(|| {
            Error::InvalidArgument(format!(
                "device ordinal {ordinal} out of range ({} devices)",
                self.devices.len()
            ))
        })
    }
}

/// `product(dims) * byte_size`, rejecting negative dims and overflow.
pub(crate) fn checked_byte_len(dims: &[i64], ty: ElementType) -> Result<usize> {
    let mut n: usize = ty.byte_size();
    for &d in dims {
        let d = usize::try_from(d)
            .map_err(|_| Error::InvalidArgument(format!("negative dimension in {dims:?}")))?;
        n = n
            .checked_mul(d)
            .ok_or_else(|| Error::InvalidArgument(format!("shape {dims:?} overflows")))?;
    }
    Ok(n)
}

/// Reads the static description of a device.
///
/// # Safety
/// `d` must be a live device of a client of `api`.
unsafe fn device_info(api: Api, d: *mut ffi::PJRT_Device) -> Result<DeviceInfo> {
    let mut g = ffi::PJRT_Device_GetDescription_Args::new();
    g.device = d;
    pjrt_call!(api, PJRT_Device_GetDescription, &mut g)?;
    let desc = g.device_description;
    if desc.is_null() {
        return Err(Error::Internal("NULL device description".into()));
    }
    let mut id = ffi::PJRT_DeviceDescription_Id_Args::new();
    id.device_description = desc;
    pjrt_call!(api, PJRT_DeviceDescription_Id, &mut id)?;
    let mut pi = ffi::PJRT_DeviceDescription_ProcessIndex_Args::new();
    pi.device_description = desc;
    pjrt_call!(api, PJRT_DeviceDescription_ProcessIndex, &mut pi)?;
    let mut k = ffi::PJRT_DeviceDescription_Kind_Args::new();
    k.device_description = desc;
    pjrt_call!(api, PJRT_DeviceDescription_Kind, &mut k)?;
    let mut ds = ffi::PJRT_DeviceDescription_DebugString_Args::new();
    ds.device_description = desc;
    pjrt_call!(api, PJRT_DeviceDescription_DebugString, &mut ds)?;
    let mut ts = ffi::PJRT_DeviceDescription_ToString_Args::new();
    ts.device_description = desc;
    let display = match pjrt_call!(api, PJRT_DeviceDescription_ToString, &mut ts) {
        Ok(()) => lossy_string(ts.to_string, ts.to_string_size),
        Err(_) => String::new(),
    };
    Ok(DeviceInfo {
        id: id.id,
        process_index: pi.process_index,
        kind: lossy_string(k.device_kind, k.device_kind_size),
        debug_string: lossy_string(ds.debug_string, ds.debug_string_size),
        display,
    })
}
