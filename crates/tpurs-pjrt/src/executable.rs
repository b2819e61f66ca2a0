//! Compiled, loaded executables.

use std::ptr;
use std::sync::Arc;

use crate::buffer::{query_meta, Buffer, ElementType};
use crate::client::{Api, ClientInner};
use crate::error::{Error, Result};
use crate::ffi::{self, Args};

/// Argument/output counts up to this size avoid heap-allocated pointer lists.
const INLINE: usize = 8;

/// A compiled program loaded on a client. `Send + Sync`; launches from
/// several threads are fine. Dropping it calls
/// `PJRT_LoadedExecutable_Destroy` (the runtime keeps in-flight executions
/// alive).
pub struct LoadedExecutable {
    raw: *mut ffi::PJRT_LoadedExecutable,
    client: Arc<ClientInner>,
    num_outputs: usize,
    /// Per-output (type, dims) reported at compile time; `None` if the plugin
    /// could not report them (then each output buffer is queried).
    outputs: Option<Vec<(ElementType, Arc<[i64]>)>>,
}

// SAFETY: PJRT executables are thread-safe; Rust-side fields are immutable.
unsafe impl Send for LoadedExecutable {}
// SAFETY: as above.
unsafe impl Sync for LoadedExecutable {}

impl std::fmt::Debug for LoadedExecutable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoadedExecutable")
            .field("num_outputs", &self.num_outputs)
            .finish()
    }
}

impl Drop for LoadedExecutable {
    fn drop(&mut self) {
        let mut a = ffi::PJRT_LoadedExecutable_Destroy_Args::new();
        a.executable = self.raw;
        // SAFETY: we own the executable; errors cannot be reported from drop.
        let _ = unsafe { pjrt_call!(self.client.api, PJRT_LoadedExecutable_Destroy, &mut a) };
    }
}

/// Owns a `PJRT_Executable` view and destroys it on drop.
struct ExecutableView {
    api: Api,
    raw: *mut ffi::PJRT_Executable,
}

impl ExecutableView {
    /// The unloaded executable behind `loaded`.
    ///
    /// # Safety
    /// `loaded` must be a live loaded executable of `api`'s plugin.
    unsafe fn of(api: Api, loaded: *mut ffi::PJRT_LoadedExecutable) -> Result<ExecutableView> {
        let mut g = ffi::PJRT_LoadedExecutable_GetExecutable_Args::new();
        g.loaded_executable = loaded;
        pjrt_call!(api, PJRT_LoadedExecutable_GetExecutable, &mut g)?;
        if g.executable.is_null() {
            return Err(Error::Internal(
                "PJRT_LoadedExecutable_GetExecutable returned NULL".into(),
            ));
        }
        Ok(ExecutableView {
            api,
            raw: g.executable,
        })
    }
}

impl Drop for ExecutableView {
    fn drop(&mut self) {
        let mut a = ffi::PJRT_Executable_Destroy_Args::new();
        a.executable = self.raw;
        // SAFETY: we own the view.
        let _ = unsafe { pjrt_call!(self.api, PJRT_Executable_Destroy, &mut a) };
    }
}

impl LoadedExecutable {
    /// Takes ownership of a freshly compiled executable and reads its output
    /// signature.
    ///
    /// # Safety
    /// `raw` must be a live executable of `client`, owned by the caller.
    pub(crate) unsafe fn from_raw(
        client: Arc<ClientInner>,
        raw: *mut ffi::PJRT_LoadedExecutable,
    ) -> Result<LoadedExecutable> {
        let api = client.api;
        let mut exe = LoadedExecutable {
            raw,
            client,
            num_outputs: 0,
            outputs: None,
        };
        let view = ExecutableView::of(api, raw)?;

        let mut n = ffi::PJRT_Executable_NumOutputs_Args::new();
        n.executable = view.raw;
        pjrt_call!(api, PJRT_Executable_NumOutputs, &mut n)?;
        exe.num_outputs = n.num_outputs;
        exe.outputs = output_signature(api, view.raw, n.num_outputs);
        Ok(exe)
    }

    /// The plugin's serialization of this executable (for the persistent compile cache;
    /// valid only for the same plugin build and host).
    pub fn serialize(&self) -> Result<Vec<u8>> {
        let api = self.client.api;
        // SAFETY: `raw` is a live executable owned by `self`.
        let view = unsafe { ExecutableView::of(api, self.raw)? };
        let mut a = ffi::PJRT_Executable_Serialize_Args::new();
        a.executable = view.raw;
        // SAFETY: the view is live for the call.
        unsafe { pjrt_call!(api, PJRT_Executable_Serialize, &mut a)? };
        let bytes = if a.serialized_bytes.is_null() {
            Vec::new()
        } else {
            // SAFETY: the plugin returned `serialized_bytes_size` bytes that live until the
            // deleter runs below.
            unsafe {
                std::slice::from_raw_parts(a.serialized_bytes as *const u8, a.serialized_bytes_size)
            }
            .to_vec()
        };
        if let (Some(delete), false) = (
            a.serialized_executable_deleter,
            a.serialized_executable.is_null(),
        ) {
            // SAFETY: called once on the object the plugin handed us.
            unsafe { delete(a.serialized_executable) };
        }
        if bytes.is_empty() {
            return Err(Error::Internal(
                "PJRT_Executable_Serialize returned no bytes".into(),
            ));
        }
        Ok(bytes)
    }

    /// Number of output buffers per launch.
    pub fn num_outputs(&self) -> usize {
        self.num_outputs
    }

    /// Output element types and dims as reported at compile time, if known.
    pub fn output_signature(&self) -> Option<Vec<(ElementType, Vec<i64>)>> {
        self.outputs
            .as_ref()
            .map(|v| v.iter().map(|(t, d)| (*t, d.to_vec())).collect())
    }

    /// Launches the executable on device `device` (ordinal) and returns its
    /// output buffers **without waiting** for the computation. Outputs can be
    /// fed straight into further launches; the runtime orders the work.
    /// Execution errors surface when an output is read or awaited.
    ///
    /// For portable executables (the default), any device can be chosen.
    pub fn execute(&self, args: &[&Buffer], device: usize) -> Result<Vec<Buffer>> {
        self.execute_donating(args, device, &[])
    }

    /// `execute`, donating the arguments the program aliases to an output
    /// (`tf.aliasing_output`) except those in `kept`: a donated buffer is deleted and its
    /// memory becomes the output's; a kept one is copied first and stays valid.
    pub fn execute_donating(
        &self,
        args: &[&Buffer],
        device: usize,
        kept: &[i64],
    ) -> Result<Vec<Buffer>> {
        let dev = self.client.device_ptr(device)?;
        if let Some(i) = args.iter().position(|b| !b.same_client(&self.client)) {
            return Err(Error::InvalidArgument(format!(
                "argument {i} belongs to a different client"
            )));
        }
        let api = self.client.api;

        let mut arg_inline = [ptr::null_mut::<ffi::PJRT_Buffer>(); INLINE];
        let arg_heap: Vec<*mut ffi::PJRT_Buffer>;
        let arg_ptrs: &[*mut ffi::PJRT_Buffer] = if args.len() <= INLINE {
            for (slot, b) in arg_inline.iter_mut().zip(args) {
                *slot = b.raw();
            }
            &arg_inline[..args.len()]
        } else {
            arg_heap = args.iter().map(|b| b.raw()).collect();
            &arg_heap
        };

        let n = self.num_outputs;
        let mut out_inline = [ptr::null_mut::<ffi::PJRT_Buffer>(); INLINE];
        let mut out_heap: Vec<*mut ffi::PJRT_Buffer>;
        let out_ptrs: &mut [*mut ffi::PJRT_Buffer] = if n <= INLINE {
            &mut out_inline[..n]
        } else {
            out_heap = vec![ptr::null_mut(); n];
            &mut out_heap
        };

        let arg_list: *const *mut ffi::PJRT_Buffer = arg_ptrs.as_ptr();
        let out_list: *mut *mut ffi::PJRT_Buffer = out_ptrs.as_mut_ptr();
        let mut options = ffi::PJRT_ExecuteOptions::new();
        options.non_donatable_input_indices = kept.as_ptr();
        options.num_non_donatable_input_indices = kept.len();
        let mut a = ffi::PJRT_LoadedExecutable_Execute_Args::new();
        a.executable = self.raw;
        a.options = &mut options;
        a.argument_lists = &arg_list;
        a.num_devices = 1;
        a.num_args = args.len();
        a.output_lists = &out_list;
        // NULL: no completion event is created, nothing to wait for.
        a.device_complete_events = ptr::null_mut();
        a.execute_device = dev;
        // SAFETY: the argument, output and `kept` arrays outlive the call; the output
        // array has `num_outputs` slots as reported by the plugin.
        unsafe { pjrt_call!(api, PJRT_LoadedExecutable_Execute, &mut a) }?;

        self.wrap_outputs(out_ptrs, device)
    }

    /// Launches a program compiled for `args.len()` replicas, or for that many SPMD
    /// partitions (`use_spmd_partitioning`, arguments sharded by `mhlo.sharding`): copy `r`
    /// runs on the device with ordinal `devices[r]` (the compile-time device assignment)
    /// with arguments `args[r]`. Returns each copy's outputs, without waiting.
    pub fn execute_replicated(
        &self,
        args: &[Vec<&Buffer>],
        devices: &[usize],
    ) -> Result<Vec<Vec<Buffer>>> {
        if args.len() != devices.len() || args.is_empty() {
            return Err(Error::InvalidArgument(format!(
                "{} argument lists for {} devices",
                args.len(),
                devices.len()
            )));
        }
        let num_args = args[0].len();
        for (r, list) in args.iter().enumerate() {
            if list.len() != num_args {
                return Err(Error::InvalidArgument(format!(
                    "replica {r} has {} arguments, replica 0 has {num_args}",
                    list.len()
                )));
            }
            if let Some(i) = list.iter().position(|b| !b.same_client(&self.client)) {
                return Err(Error::InvalidArgument(format!(
                    "replica {r} argument {i} belongs to a different client"
                )));
            }
        }
        let arg_ptrs: Vec<Vec<*mut ffi::PJRT_Buffer>> = args
            .iter()
            .map(|list| list.iter().map(|b| b.raw()).collect())
            .collect();
        let arg_lists: Vec<*const *mut ffi::PJRT_Buffer> =
            arg_ptrs.iter().map(|l| l.as_ptr()).collect();
        let n = self.num_outputs;
        let mut out_ptrs: Vec<Vec<*mut ffi::PJRT_Buffer>> =
            devices.iter().map(|_| vec![ptr::null_mut(); n]).collect();
        let out_lists: Vec<*mut *mut ffi::PJRT_Buffer> =
            out_ptrs.iter_mut().map(|l| l.as_mut_ptr()).collect();
        let mut options = ffi::PJRT_ExecuteOptions::new();
        let mut a = ffi::PJRT_LoadedExecutable_Execute_Args::new();
        a.executable = self.raw;
        a.options = &mut options;
        a.argument_lists = arg_lists.as_ptr();
        a.num_devices = devices.len();
        a.num_args = num_args;
        a.output_lists = out_lists.as_ptr();
        a.device_complete_events = ptr::null_mut();
        // NULL: every replica runs on its assigned device.
        a.execute_device = ptr::null_mut();
        // SAFETY: `num_devices` argument lists of `num_args` live buffers and as many output
        // arrays of `num_outputs` slots, all outliving the call.
        unsafe { pjrt_call!(self.client.api, PJRT_LoadedExecutable_Execute, &mut a) }?;
        out_ptrs
            .iter()
            .zip(devices)
            .map(|(raws, &d)| self.wrap_outputs(raws, d))
            .collect()
    }

    /// Takes ownership of the output buffers of one device's launch.
    fn wrap_outputs(&self, raws: &[*mut ffi::PJRT_Buffer], device: usize) -> Result<Vec<Buffer>> {
        let api = self.client.api;
        let mut result = Vec::with_capacity(raws.len());
        let mut failure = None;
        for (i, &raw) in raws.iter().enumerate() {
            if raw.is_null() {
                failure
                    .get_or_insert_with(|| Error::Internal(format!("execute output {i} is NULL")));
                continue;
            }
            let meta = match &self.outputs {
                Some(sig) => Ok(sig[i].clone()),
                // SAFETY: live output buffer.
                None => unsafe { query_meta(api, raw) },
            };
            match meta {
                // SAFETY: fresh output buffer owned by us.
                Ok((ty, dims)) => result
                    .push(unsafe { Buffer::from_raw(self.client.clone(), raw, ty, dims, device) }),
                Err(e) => {
                    // Still release the buffer.
                    let mut d = ffi::PJRT_Buffer_Destroy_Args::new();
                    d.buffer = raw;
                    // SAFETY: owned buffer, not used afterwards.
                    let _ = unsafe { pjrt_call!(api, PJRT_Buffer_Destroy, &mut d) };
                    failure.get_or_insert(e);
                }
            }
        }
        match failure {
            Some(e) => Err(e),
            None => Ok(result),
        }
    }
}

/// Output (type, dims) from the executable, or `None` if unavailable or
/// inconsistent.
///
/// # Safety
/// `exe` must be a live executable view of `api`'s plugin.
unsafe fn output_signature(
    api: Api,
    exe: *mut ffi::PJRT_Executable,
    num_outputs: usize,
) -> Option<Vec<(ElementType, Arc<[i64]>)>> {
    let mut t = ffi::PJRT_Executable_OutputElementTypes_Args::new();
    t.executable = exe;
    pjrt_call!(api, PJRT_Executable_OutputElementTypes, &mut t).ok()?;
    if t.num_output_types != num_outputs || (num_outputs > 0 && t.output_types.is_null()) {
        return None;
    }
    let mut d = ffi::PJRT_Executable_OutputDimensions_Args::new();
    d.executable = exe;
    pjrt_call!(api, PJRT_Executable_OutputDimensions, &mut d).ok()?;
    if d.num_outputs != num_outputs || (num_outputs > 0 && d.dim_sizes.is_null()) {
        return None;
    }
    if num_outputs == 0 {
        return Some(Vec::new());
    }
    let types = std::slice::from_raw_parts(t.output_types, num_outputs);
    let ranks = std::slice::from_raw_parts(d.dim_sizes, num_outputs);
    let total: usize = ranks.iter().sum();
    if total > 0 && d.dims.is_null() {
        return None;
    }
    let all_dims: &[i64] = if total == 0 {
        &[]
    } else {
        std::slice::from_raw_parts(d.dims, total)
    };
    let mut out = Vec::with_capacity(num_outputs);
    let mut off = 0;
    for (&ty, &rank) in types.iter().zip(ranks) {
        // Unsupported output types make the whole signature unknown; such
        // outputs then fail at execute time with a clear error.
        let ty = ElementType::from_pjrt(ty)?;
        out.push((ty, Arc::from(&all_dims[off..off + rank])));
        off += rank;
    }
    Some(out)
}
